// One classic-level database per node (DESIGN.md): sublevels for definitions (kv), the two
// stream repositories (ssr, tsr) and node-local metadata. One process per data folder: the
// LOCK file refuses a second one.
//
// Every synced batch carries a rising sequence number (a key of its own, so batches that
// LevelDB applies out of order still leave the highest one), and once it is durable the
// number goes to the commit ledger, a small file beside the database. A database that
// opens with a lower number than the ledger lost batches that were acknowledged: its newest
// file was truncated or damaged (storage-integrity.ts).

import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AbstractSublevel } from 'abstract-level';
import { type ChainedBatch, ClassicLevel } from 'classic-level';
import { StartupError } from '../errors.js';

const SUBLEVEL_OPTIONS = { keyEncoding: 'utf8', valueEncoding: 'utf8' } as const;
/** Options of an operation whose key and value are bytes already (batchEncoded). */
const BUFFERS = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

// Written out (abstract-level is classic-level's own base): src is built with declarations
// (tsconfig.src.json), and an inferred type from a package the code does not name cannot be.
export type Sublevel = AbstractSublevel<ClassicLevel<string, string>, string | Buffer | Uint8Array, string, string>;

function openSublevel(level: ClassicLevel<string, string>, name: string): Sublevel {
  return level.sublevel<string, string>(name, SUBLEVEL_OPTIONS);
}
export type BatchOperation =
  | { type: 'put'; sublevel: Sublevel; key: string; value: string }
  | { type: 'del'; sublevel: Sublevel; key: string };
/** A put at the root, already encoded: the key carries its sublevel's prefix (prefixOf). */
export interface EncodedPut {
  type: 'put';
  key: Buffer;
  value: Buffer;
}

/** Told how long each synced batch took (metrics: fsync latency). */
export type SyncedBatchObserver = (seconds: number) => void;

export interface DatabaseOptions {
  /** Told each synced batch's time to durable (the node's metrics). */
  onSyncedBatch?: SyncedBatchObserver;
  /** LevelDB's write buffer (memtable), storage.writeBufferBytes; DEFAULT_WRITE_BUFFER_BYTES if not given. */
  writeBufferBytes?: number;
}

/** Sequence keys kept in the database: older ones are deleted by later batches. */
const SEQUENCE_KEYS_KEPT = 256;
const SEQUENCE_PREFIX = 'commit-seq/';
const SEQUENCE_DIGITS = 16;
export const LEDGER_FILE = 'commit-ledger';

/**
 * LevelDB's write buffer: 32 MiB, not its 4 MiB default (issue 17). With 4 MiB, a stream of
 * synced batches fills a buffer every few hundred milliseconds, each flush adds a level-0
 * file, and level 0 past 8 files slows every write (past 12 it stops them) while
 * compaction catches up: ~1 KiB payloads into one node, 1.2-1.6 s at p99 and ~55 us of
 * CPU a payload; with 32 MiB, 0.12 s and ~39 us. Costs up to twice this in memory (the
 * buffer and the one being flushed) and the replay of up to this much log after a crash.
 */
export const DEFAULT_WRITE_BUFFER_BYTES = 32 * 1024 * 1024;

/** The database could not be opened because another process holds its lock (an expected start-up failure). */
export class DatabaseLockedError extends StartupError {
  override name = 'DatabaseLockedError';
}

export class Database {
  readonly kv: Sublevel;
  readonly ssr: Sublevel;
  readonly tsr: Sublevel;
  readonly local: Sublevel;
  readonly hints: Sublevel;
  /** The sequence of the last synced batch issued (its number is durable once it resolves). */
  private sequence: number;
  private ledgerHighest: number;
  private readonly ledgerFd: number;

  private constructor(
    private readonly level: ClassicLevel<string, string>,
    readonly location: string,
    /** The highest batch sequence the database holds, as opened. */
    readonly storedSequence: number,
    /** The highest batch sequence acknowledged before the last stop, per the ledger. */
    readonly ledgerSequence: number,
    ledgerPath: string,
    private readonly onSyncedBatch: SyncedBatchObserver | undefined,
  ) {
    this.kv = openSublevel(level, 'kv');
    this.ssr = openSublevel(level, 'ssr');
    this.tsr = openSublevel(level, 'tsr');
    this.local = openSublevel(level, 'local');
    this.hints = openSublevel(level, 'hints');
    this.sequence = Math.max(storedSequence, ledgerSequence);
    this.ledgerHighest = this.sequence;
    // Not 'a': with O_APPEND, Linux writes at the end whatever the position given.
    if (!existsSync(ledgerPath)) writeFileSync(ledgerPath, '');
    this.ledgerFd = openSync(ledgerPath, 'r+');
  }

  static async open(dataDir: string, options: DatabaseOptions = {}): Promise<Database> {
    const { onSyncedBatch, writeBufferBytes = DEFAULT_WRITE_BUFFER_BYTES } = options;
    const location = join(dataDir, 'db');
    mkdirSync(location, { recursive: true });
    const level = new ClassicLevel<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8', writeBufferSize: writeBufferBytes });
    try {
      await level.open();
    } catch (error) {
      const cause = (error as { cause?: { message?: string; code?: string } }).cause;
      if (/lock/i.test(cause?.message ?? '')) {
        throw new DatabaseLockedError(`cannot open database in ${location} (is another node using this data folder?) ${cause?.message ?? ''}`.trim(), { cause: error });
      }
      throw new Error(`cannot open database in ${location}: ${cause?.message ?? (error as Error).message}`, { cause: error });
    }
    const local = openSublevel(level, 'local');
    const stored = await local.keys({ gte: SEQUENCE_PREFIX, lt: prefixEnd(SEQUENCE_PREFIX), reverse: true, limit: 1 }).all();
    const storedSequence = stored[0] === undefined ? 0 : parseInt(stored[0].slice(SEQUENCE_PREFIX.length), 10);
    const ledgerPath = join(dataDir, LEDGER_FILE);
    return new Database(level, location, storedSequence, readLedger(ledgerPath), ledgerPath, onSyncedBatch);
  }

  /** Commits the operations atomically. `sync` fsyncs before resolving: use it for anything acknowledged. */
  async batch(operations: BatchOperation[], options: { sync: boolean }): Promise<void> {
    if (operations.length === 0) return;
    await this.write(options.sync, (batch) => {
      for (const operation of operations) {
        const key = operation.sublevel.prefix + operation.key;
        if (operation.type === 'put') batch.put(key, operation.value);
        else batch.del(key);
      }
    });
  }

  /**
   * Like batch(), for bytes that are already keys and values at the root: abstract-level
   * then neither encodes nor prefixes each operation (transfers write 1,000 records a chunk).
   */
  async batchEncoded(puts: EncodedPut[], options: { sync: boolean }): Promise<void> {
    if (puts.length === 0) return;
    await this.write(options.sync, (batch) => {
      for (const put of puts) batch.put<Buffer, Buffer>(put.key, put.value, BUFFERS);
    });
  }

  /**
   * One atomic write of what `fill` adds, with the batch's sequence number when synced. A
   * chained batch of keys already prefixed at the root: an array batch of sublevel
   * operations made abstract-level look up each operation's sublevel and copy it, about
   * twice the main-thread time per record (issue 17: 28 -> 14 µs for a 1 KiB put).
   */
  private async write(sync: boolean, fill: (batch: ChainedBatch<ClassicLevel<string, string>, string, string>) => void): Promise<void> {
    const batch = this.level.batch();
    let sequence: number | undefined;
    try {
      fill(batch);
      if (sync) {
        sequence = this.nextSequence();
        batch.put(this.local.prefix + sequenceKey(sequence), '');
        if (sequence > SEQUENCE_KEYS_KEPT) batch.del(this.local.prefix + sequenceKey(sequence - SEQUENCE_KEYS_KEPT));
      }
    } catch (error) {
      await batch.close();
      throw error;
    }
    const started = performance.now();
    await batch.write({ sync });
    if (sequence !== undefined) this.recordDurable(sequence, started);
  }

  private nextSequence(): number {
    this.sequence += 1;
    return this.sequence;
  }

  /**
   * The batch is durable: the ledger learns its number. Written in place and not synced:
   * a ledger behind the database only misses a loss, never invents one.
   */
  private recordDurable(sequence: number, startedMs: number): void {
    this.onSyncedBatch?.((performance.now() - startedMs) / 1000);
    if (sequence <= this.ledgerHighest) return;
    this.ledgerHighest = sequence;
    const text = Buffer.from(String(sequence).padStart(SEQUENCE_DIGITS, '0'));
    try {
      writeSync(this.ledgerFd, text, 0, text.length, 0);
    } catch {
      // The ledger only detects damage; the batch itself is durable.
    }
  }

  /**
   * LevelDB's estimate of the bytes on disk of the sublevel's keys in [gte, lt): from its
   * file index, without reading the records; what sits in the memory table is not counted.
   */
  approximateBytes(sublevel: Sublevel, gte: string, lt: string): Promise<number> {
    return this.level.approximateSize(sublevel.prefix + gte, sublevel.prefix + lt);
  }

  /** The bytes that start every root key of the sublevel's records. */
  prefixOf(sublevel: Sublevel): Buffer {
    return Buffer.from(sublevel.prefix, 'utf8');
  }

  /** Open and not closing: /ready asks. */
  get isOpen(): boolean {
    return this.level.status === 'open';
  }

  /** Every key and value of the database read once: throws on what LevelDB cannot read. */
  async verify(): Promise<number> {
    let entries = 0;
    const iterator = this.level.iterator<Buffer, Buffer>({ keyEncoding: 'buffer', valueEncoding: 'buffer' });
    try {
      for (let batch = await iterator.nextv(1000); batch.length > 0; batch = await iterator.nextv(1000)) entries += batch.length;
    } finally {
      await iterator.close();
    }
    return entries;
  }

  async close(): Promise<void> {
    await this.level.close();
    closeSync(this.ledgerFd);
  }
}

/** Upper bound for a range scan of keys that start with `prefix` and continue in ASCII. */
export function prefixEnd(prefix: string): string {
  return prefix + '\u007f';
}

function sequenceKey(sequence: number): string {
  return SEQUENCE_PREFIX + String(sequence).padStart(SEQUENCE_DIGITS, '0');
}

function readLedger(path: string): number {
  try {
    const text = readFileSync(path, 'utf8').trim();
    const value = Number(text);
    return Number.isSafeInteger(value) && value >= 0 ? value : 0;
  } catch {
    return 0;
  }
}
