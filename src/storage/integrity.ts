// Does this node's own data hold everything it acknowledged? (docs/cluster.md, "Damaged
// data") Checked
// each time the database opens, before the node serves anything:
// - the database opens at all (a truncated or damaged table can make LevelDB refuse);
// - LevelDB's recovery did not drop damaged log records (it says so in its LOG file);
// - it holds the highest batch number the commit ledger recorded as durable (a truncated
//   write-ahead log loses the newest batches without a word; database.ts);
// - after a stop that was not clean, every key and value can be read.
// On any of these the database is repaired (LevelDB's RepairDB keeps what it can read)
// and the node starts damaged: it serves no reads from its data until it has refilled
// every partition from the other owners (src/repair).

import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import { assert } from '../lib/assert.js';
import { StartupError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { Database, DatabaseLockedError, type DatabaseOptions } from './database.js';

/** Why this node's data cannot be trusted until it is refilled. */
export interface StorageDamage {
  reason: string;
  sinceMs: number;
}

/** Written at a clean stop, removed at open: its absence means the last stop was a crash. */
const CLEAN_STOP_FILE = 'clean-stop';
const LOG_DAMAGE = /corruption|dropping \d+ bytes|checksum mismatch|bad record length|missing start of fragmented record/i;

export async function openChecked(dataDir: string, log: Logger, options: DatabaseOptions = {}): Promise<{ database: Database; damage: StorageDamage | undefined }> {
  const cleanStop = join(dataDir, CLEAN_STOP_FILE);
  // A database LevelDB has never made has had no stop, clean or not: nothing to read back.
  const fresh = !existsSync(join(dataDir, 'db', 'CURRENT'));
  const stoppedCleanly = fresh || existsSync(cleanStop);
  rmSync(cleanStop, { force: true });
  const reasons: string[] = [];
  let database: Database;
  try {
    database = await Database.open(dataDir, options);
  } catch (error) {
    if (error instanceof DatabaseLockedError) throw error;
    // A full disk is no damage, and repairing on it loses data: LevelDB's repair moves a
    // log it could not turn into a table aside (docs/storage.md).
    if (/no space left on device|ENOSPC|quota exceeded/i.test((error as Error).message)) {
      throw new StartupError(`the database in ${dataDir} cannot open: its disk is full (${(error as Error).message}); free some space and start the node again`, { cause: error });
    }
    reasons.push(`the database did not open (${(error as Error).message})`);
    database = await repairAndOpen(dataDir, log, options);
  }
  reasons.push(...damageInLevelLog(database.location));
  if (database.storedSequence < database.ledgerSequence) {
    reasons.push(`acknowledged batches ${database.storedSequence + 1} to ${database.ledgerSequence} are missing (the newest data file was cut short)`);
  }
  if (!stoppedCleanly) {
    const started = performance.now();
    try {
      const entries = await database.verify();
      log.info({ entries, ms: Math.round(performance.now() - started) }, 'the last stop was not clean: every record was read back');
    } catch (error) {
      reasons.push(`a record cannot be read (${(error as Error).message})`);
      await database.close();
      database = await repairAndOpen(dataDir, log, options);
    }
  }
  // Whichever way it went (opened, repaired, read back), the database handed on is open.
  assert(database.isOpen, `the database in ${dataDir} is not open after its checks`);
  if (reasons.length === 0) return { database, damage: undefined };
  const reason = reasons.join('; ');
  log.warn({ reason }, 'local data is damaged');
  return { database, damage: { reason, sinceMs: Date.now() } };
}

/** After the database closed at a clean stop. */
export function markCleanStop(dataDir: string): void {
  writeFileSync(join(dataDir, CLEAN_STOP_FILE), `${new Date().toISOString()}\n`);
}

async function repairAndOpen(dataDir: string, log: Logger, options: DatabaseOptions): Promise<Database> {
  const location = join(dataDir, 'db');
  log.warn({ location }, 'repairing the database: what can be read is kept, the rest is refilled from other owners');
  await ClassicLevel.repair(location);
  return Database.open(dataDir, options);
}

/** Lines of LevelDB's own LOG (written while it opened) that report damaged data. */
function damageInLevelLog(location: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(location, 'LOG'), 'utf8');
  } catch {
    return [];
  }
  const lines = text.split('\n').filter((line) => LOG_DAMAGE.test(line));
  return lines.length === 0 ? [] : [`LevelDB dropped damaged data while opening: ${lines.slice(0, 3).map((line) => line.replace(/^\S+ \S+ /, '')).join(' | ')}`];
}
