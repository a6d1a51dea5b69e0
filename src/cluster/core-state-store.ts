// The cluster core's persisted state (its table, change and transfer progress), kept in the
// node's `local` sublevel and synced before the shell carries out any effect that depends on it.
// The table is copied to a file beside the database as well (as Riak keeps its ring files
// apart from the data), so that damage to the database takes neither the table nor its
// newest epoch: a node that came back with an older table than it had written could start a
// change whose epoch another node already holds with other contents (the tables fork).

import { existsSync } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import { InsufficientStorageError, type Database } from '../storage/database.js';
import { canonicalJson } from '../lib/json.js';
import type { Membership, PersistedCoreState } from '../protocol/cluster-types.js';
import { withMemberAddresses } from '../cluster-core/membership.js';

const CORE_STATE_KEY = 'cluster-core';
const MEMBER_MARKER_FILE = 'cluster-member';
const TABLE_FILE = 'cluster-table';

/** The identity of the table each open database last copied to its file. */
const copied = new WeakMap<Database, string>();

/**
 * The newest table this folder holds (newestState), with a line when the copy had to stand
 * in. The copy is brought up to the table returned (and not written again while it holds it): a crash between the database's write and
 * the copy's, or a folder from before the copy existed, leaves it behind, and damage to the
 * database could then bring the node back older than it acted.
 */
export async function loadCoreState(database: Database, log: Logger): Promise<PersistedCoreState | undefined> {
  const text = await database.local.get(CORE_STATE_KEY);
  const stored = text === undefined ? undefined : (JSON.parse(text) as PersistedCoreState);
  const copy = await readTableFile(tableFileOf(database), log);
  const newest = newestState(stored, copy);
  if (newest !== stored) {
    log.warn({ databaseEpoch: stored?.membership.epoch ?? null, fileEpoch: copy?.epoch }, 'the database lost its cluster table or holds an older one (damaged storage?): taking the copy beside it');
  }
  // What the file holds is what this open database copied last: copyTable writes only news.
  if (copy !== undefined) copied.set(database, tableIdentity(copy));
  if (newest !== undefined) await copyTable(database, newest.membership);
  // A node never comes back older than either place says it acted.
  assert(newest === undefined || newest.membership.epoch >= Math.max(stored?.membership.epoch ?? 0, copy?.epoch ?? 0), `table of epoch ${newest?.membership.epoch} loaded, older than what this folder holds`);
  return newest;
}

/**
 * The rule (the simulation applies it too): the database's state, unless it lost its table
 * or holds an older epoch than the copy (damage rolled it back), or, at one epoch, the copy
 * knows a member's newer address (addresses move without a new epoch). A table taken from the
 * copy resumes no incoming transfer (those resume from their stored chunks), and shows the
 * change as it was when its epoch began: what was merged into it since (transfers complete,
 * the final sync) comes back from the other members, and transfers resume where they stored.
 */
export function newestState(stored: PersistedCoreState | undefined, copy: Membership | undefined): PersistedCoreState | undefined {
  if (copy === undefined) return stored;
  if (stored === undefined || stored.membership.epoch < copy.epoch) return { membership: copy, incoming: [] };
  if (stored.membership.epoch > copy.epoch) return stored;
  const membership = withMemberAddresses(stored.membership, copy);
  assert(membership.epoch === stored.membership.epoch && membership.members.length === stored.membership.members.length, `addresses taken from the copy changed the table of epoch ${stored.membership.epoch}`);
  return membership === stored.membership ? stored : { ...stored, membership };
}

/**
 * How long a save waits for a disk with no room (docs/storage.md): the shell carries out no
 * later effect meanwhile, and a save that still fails then stops the node (cluster-shell.ts).
 */
const SAVE_WAIT_MS_MAX = 5 * 60_000;
const SAVE_RETRY_MS = 250;

/**
 * Saved below the disk floor too (the floor keeps room for it). While the disk has no room
 * at all, or the database awaits reopening after a failed write, the save is tried again
 * until it is made or SAVE_WAIT_MS_MAX passes.
 */
export async function saveCoreState(database: Database, state: PersistedCoreState, waitMsMax = SAVE_WAIT_MS_MAX): Promise<void> {
  const deadline = Date.now() + waitMsMax;
  assert(waitMsMax >= 0 && state.membership.epoch >= 0, `a save of epoch ${state.membership.epoch} waiting ${waitMsMax} ms`);
  for (;;) {
    try {
      await database.batch([{ type: 'put', sublevel: database.local, key: CORE_STATE_KEY, value: JSON.stringify(state) }], { sync: true, belowFloor: true });
      await markMember(database);
      await copyTable(database, state.membership);
      return;
    } catch (error) {
      if (!isNoRoom(error) || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, SAVE_RETRY_MS));
    }
  }
}

function isNoRoom(error: unknown): boolean {
  const code = (error as { code?: unknown }).code;
  return error instanceof InsufficientStorageError || code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * What a copy must follow: the epoch and every field of each member (addresses included),
 * not progress within an epoch; as canonical JSON, so tables decoded from peers or files,
 * whose keys come in another order, compare equal (an absent incarnation is 0, as decoders
 * leave it out).
 */
export function tableIdentity(membership: Membership): string {
  return canonicalJson([membership.epoch, membership.members.map((member) => ({ ...member, incarnation: member.incarnation ?? 0 }))]);
}

/**
 * Writes the table to its file when its epoch or members changed: a new file, fsynced, then
 * renamed over the old and the folder fsynced, so a crash leaves the old copy or the new.
 */
async function copyTable(database: Database, membership: Membership): Promise<void> {
  const identity = tableIdentity(membership);
  if (copied.get(database) === identity) return;
  const path = tableFileOf(database);
  const body = JSON.stringify(membership);
  // Read back as written: a field JSON cannot hold (undefined, NaN) would make the copy another table.
  assert(tableIdentity(JSON.parse(body) as Membership) === identity, () => `the table of epoch ${membership.epoch} does not survive JSON`);
  await writeSynced(`${path}.new`, `${checksumOf(body)}\n${body}`);
  await rename(`${path}.new`, path);
  await writeSynced(dirname(path));
  copied.set(database, identity);
}

/** Writes `text` to the file (or, with none, opens the folder) and fsyncs it. */
async function writeSynced(path: string, text?: string): Promise<void> {
  const handle = await open(path, text === undefined ? 'r' : 'w');
  try {
    if (text !== undefined) await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The copy, or undefined when there is none, it cannot be read or it does not match its checksum (logged). */
async function readTableFile(path: string, log: Logger): Promise<Membership | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    // On a damaged disk the database's table may still be whole: the copy is only a spare.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') log.error({ err: error, path }, 'the cluster table file cannot be read: ignored');
    return undefined;
  }
  const newline = text.indexOf('\n');
  const body = text.slice(newline + 1);
  if (newline < 0 || text.slice(0, newline) !== checksumOf(body)) {
    log.error({ path }, 'the cluster table file does not match its checksum: ignored');
    return undefined;
  }
  return JSON.parse(body) as Membership;
}

function checksumOf(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}

function tableFileOf(database: Database): string {
  return join(dirname(database.location), TABLE_FILE);
}

/**
 * A file beside the database, written once the first table is durable: this folder's node
 * has been in a cluster. It lives outside the database so that damage to the database
 * cannot take it with the table.
 */
function markerOf(database: Database): string {
  return join(dirname(database.location), MEMBER_MARKER_FILE);
}

/** Databases whose folder is known to carry the marker (the check runs once per open). */
const marked = new WeakSet<Database>();

async function markMember(database: Database): Promise<void> {
  if (marked.has(database)) return;
  const path = markerOf(database);
  if (!existsSync(path)) {
    await writeSynced(path, `${new Date().toISOString()}\n`);
    // The new name must survive a power cut too.
    await writeSynced(dirname(path));
  }
  marked.add(database);
}

/** This folder's node has been in a cluster: its first table was durable once. */
export function wasMember(database: Database): boolean {
  return existsSync(markerOf(database));
}

/**
 * A node started without --join whose data folder had a table (the marker says so) but holds
 * none has lost it (damaged storage). Starting a cluster of its own would split the
 * cluster in two, so it starts as --join does and waits for a member to admit it again, which
 * members do when it refuses them as strangers (cluster-shell.ts, readmit).
 */
export function joinIfTableLost<T extends { join: boolean }>(config: T, folder: { wasMember: boolean; hasTable: boolean }, log: Logger): T {
  if (config.join || !tableLost(folder)) return config;
  log.error('this data folder had a cluster table and holds none now (damaged storage?): this node starts no cluster of its own and waits for a member to admit it again');
  return { ...config, join: true };
}

/** The rule itself (the simulation applies it too): it was a member and holds no table. */
export function tableLost(folder: { wasMember: boolean; hasTable: boolean }): boolean {
  return folder.wasMember && !folder.hasTable;
}
