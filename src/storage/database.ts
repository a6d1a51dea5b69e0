// One classic-level database per node (docs/storage.md, "One database per node"): sublevels for
// definitions (kv), the two stream repositories (ssr, tsr) and node-local metadata. One process
// per data folder: the LOCK file refuses a second one.
//
// Every synced batch carries a rising sequence number (a key of its own, so batches that
// LevelDB applies out of order still leave the highest one), and once it is durable the
// number goes to the commit ledger, a small file beside the database. A database that
// opens with a lower number than the ledger lost batches that were acknowledged: its newest
// file was truncated or damaged (storage-integrity.ts). The one exception is a write whose
// loss its writer makes good by itself (`outsideLedger`: a transfer's chunk, which the
// target asks for again from the progress entry a later numbered batch stores).
//
// A failed write (a full disk, an I/O error) ends writing to this database until it is
// opened again (docs/storage.md): LevelDB's log writer has then written part of a record
// and counts the whole, so every record it appends later sits past a torn one and is
// dropped at the next open ("checksum mismatch"), acknowledged or not. Every write is
// refused from the failure on, and reopen() (which DiskWatch calls once the disk has room)
// closes and opens LevelDB, which replays the log up to the torn record and starts a new one.

import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AbstractSublevel } from 'abstract-level';
import { type ChainedBatch, ClassicLevel } from 'classic-level';
import { assert } from '../lib/assert.js';
import { StartupError, TributaryError } from '../lib/errors.js';

const SUBLEVEL_OPTIONS = { keyEncoding: 'utf8', valueEncoding: 'utf8' } as const;
/** Options of an operation whose key and value are bytes already (batchEncoded). */
const BUFFERS = { keyEncoding: 'buffer', valueEncoding: 'buffer' } as const;

// Written out (abstract-level is classic-level's own base): src is built with declarations
// (tsconfig.src.json), and an inferred type from a package the code does not name cannot be.
export type Sublevel = AbstractSublevel<ClassicLevel<string, string>, string | Buffer | Uint8Array, string, string>;

function openSublevel(level: ClassicLevel<string, string>, name: string): Sublevel {
  return level.sublevel<string, string>(name, SUBLEVEL_OPTIONS);
}
export type BatchOperation = (
  | { type: 'put'; sublevel: Sublevel; key: string; value: string }
  | { type: 'del'; sublevel: Sublevel; key: string }
) & {
  /**
   * Told once whether the batch holding the operation became durable (true) or not: state
   * kept in memory about stored data (hint counts) follows the store only then.
   */
  settled?: (committed: boolean) => void;
};
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
  /** The node's name, in the messages of refused writes. */
  nodeName?: string;
}

/** How a batch is written: `sync` for anything acknowledged. */
export interface WriteOptions {
  sync: boolean;
  /**
   * A small record the node needs to go on (its cluster state, a transfer's progress) or
   * deletions: written even below the disk floor, whose room is kept for these. Not after
   * a failed write: nothing is.
   */
  belowFloor?: boolean;
  /**
   * A synced write that carries no sequence number: its loss at the log's tail is not
   * detected by the ledger, so only a writer that makes such a loss good by itself may ask
   * (a transfer's chunk: the target resumes from its last stored progress entry, written in
   * a numbered batch after the chunks it covers). What it saves: the `local` keys in every
   * batch, which make each of LevelDB's files span from them to the records and so
   * compact a stream of chunks again and again (docs/cluster.md, "Transfers").
   */
  outsideLedger?: boolean;
}

/**
 * This node cannot write: a write failed (until the database is reopened) or the disk is
 * below its floor. Answered 507 Insufficient Storage; its message names the node and the folder.
 */
export class InsufficientStorageError extends TributaryError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(507, 'INSUFFICIENT_STORAGE', message, options);
  }
}

/** Why writes are refused, and since when (epoch ms). */
export interface WriteRefusal {
  reason: string;
  sinceMs: number;
}

/** How long reopen() waits for writes in flight to settle before it closes LevelDB. */
const SETTLE_WAIT_MS_MAX = 10_000;

/** Sequence keys kept in the database: older ones are deleted by later batches. */
const SEQUENCE_KEYS_KEPT = 256;
const SEQUENCE_PREFIX = 'commit-seq/';
const SEQUENCE_DIGITS = 16;
export const LEDGER_FILE = 'commit-ledger';

/**
 * LevelDB's write buffer: 32 MiB, not its 4 MiB default. With 4 MiB, a stream of
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
  /** A write failed: nothing more is written until reopen(). */
  private failedWrite: WriteRefusal | undefined;
  /** The disk is below its floor (DiskWatch): only writes allowed below it are made. */
  private lowDisk: WriteRefusal | undefined;
  /** Failed writes so far: a write that overlapped one of them is not acknowledged. */
  private writesFailed = 0;
  private writesInFlight = 0;
  private readonly reopenHooks: Array<() => Promise<void>> = [];

  private constructor(
    private readonly level: ClassicLevel<string, string>,
    readonly location: string,
    /** The highest batch sequence the database holds, as opened. */
    readonly storedSequence: number,
    /** The highest batch sequence acknowledged before the last stop, per the ledger. */
    readonly ledgerSequence: number,
    ledgerPath: string,
    private readonly onSyncedBatch: SyncedBatchObserver | undefined,
    private readonly nodeName: string,
  ) {
    this.kv = openSublevel(level, 'kv');
    this.ssr = openSublevel(level, 'ssr');
    this.tsr = openSublevel(level, 'tsr');
    this.local = openSublevel(level, 'local');
    this.hints = openSublevel(level, 'hints');
    assert(Number.isSafeInteger(storedSequence) && storedSequence >= 0 && Number.isSafeInteger(ledgerSequence) && ledgerSequence >= 0, `batch sequences ${storedSequence} stored, ${ledgerSequence} in the ledger`);
    this.sequence = Math.max(storedSequence, ledgerSequence);
    this.ledgerHighest = this.sequence;
    // Not 'a': with O_APPEND, Linux writes at the end whatever the position given.
    if (!existsSync(ledgerPath)) writeFileSync(ledgerPath, '');
    this.ledgerFd = openSync(ledgerPath, 'r+');
  }

  static async open(dataDir: string, options: DatabaseOptions = {}): Promise<Database> {
    const { onSyncedBatch, writeBufferBytes = DEFAULT_WRITE_BUFFER_BYTES, nodeName = 'this node' } = options;
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
    const storedSequence = await highestSequence(openSublevel(level, 'local'));
    const ledgerPath = join(dataDir, LEDGER_FILE);
    return new Database(level, location, storedSequence, readLedger(ledgerPath), ledgerPath, onSyncedBatch, nodeName);
  }

  /**
   * Commits the operations atomically. `sync` fsyncs before resolving: use it for anything
   * acknowledged. Each operation's `settled` is told the outcome, whatever it is.
   */
  async batch(operations: BatchOperation[], options: WriteOptions): Promise<void> {
    if (operations.length === 0) return;
    const grows = options.belowFloor !== true && operations.some((operation) => operation.type === 'put');
    try {
      await this.write(durabilityOf(options), grows, (batch) => {
        for (const operation of operations) {
          // Anything but a put is written as a delete below: an operation of another type would delete its key.
          assert(operation.type === 'put' || operation.type === 'del', () => `a batch operation of type ${(operation as { type: unknown }).type}`);
          const key = operation.sublevel.prefix + operation.key;
          if (operation.type === 'put') batch.put(key, operation.value);
          else batch.del(key);
        }
      });
    } catch (error) {
      settle(operations, false);
      throw error;
    }
    settle(operations, true);
  }

  /**
   * Like batch(), for bytes that are already keys and values at the root: abstract-level
   * then neither encodes nor prefixes each operation (transfers write 1,000 records a chunk).
   */
  async batchEncoded(puts: EncodedPut[], options: WriteOptions): Promise<void> {
    if (puts.length === 0) return;
    await this.write(durabilityOf(options), options.belowFloor !== true, (batch) => {
      for (const put of puts) {
        // Keys come prefixed with their sublevel ('!name!'): a bare key would land outside every repository.
        assert(put.key[0] === 0x21, () => `an encoded put under the bare key ${put.key.subarray(0, 40).toString('utf8')}`);
        batch.put<Buffer, Buffer>(put.key, put.value, BUFFERS);
      }
    });
  }

  /**
   * One atomic write of what `fill` adds, with the batch's sequence number when numbered. A
   * chained batch of keys already prefixed at the root: an array batch of sublevel
   * operations made abstract-level look up each operation's sublevel and copy it, about
   * twice the main-thread time per record (28 -> 14 µs for a 1 KiB put).
   *
   * A write that was in flight while another failed is refused too, durable or not: LevelDB
   * may have appended it after the torn record, where the next open drops it.
   */
  private async write(durability: Durability, grows: boolean, fill: (batch: ChainedBatch<ClassicLevel<string, string>, string, string>) => void): Promise<void> {
    const refusal = this.writeRefusal(grows);
    if (refusal !== undefined) throw refusal;
    const batch = this.level.batch();
    const sync = durability !== 'unsynced';
    let sequence: number | undefined;
    try {
      fill(batch);
      if (durability === 'numbered') {
        sequence = this.nextSequence();
        const keys = sequenceKeysOf(this.local.prefix, sequence);
        batch.put(keys.put, '');
        if (keys.del !== undefined) batch.del(keys.del);
      }
    } catch (error) {
      await batch.close();
      throw error;
    }
    const started = performance.now();
    const failedBefore = this.writesFailed;
    this.writesInFlight += 1;
    try {
      await batch.write({ sync });
    } catch (error) {
      throw this.writeFailed(error);
    } finally {
      this.writesInFlight -= 1;
      assert(this.writesInFlight >= 0, () => `${this.writesInFlight} writes in flight`);
    }
    if (this.writesFailed !== failedBefore) {
      throw new InsufficientStorageError(`${this.nodeName} could not write to ${this.location}: a write that failed alongside this one leaves it unknown whether this one lasts (${this.failedWrite?.reason ?? 'failed write'})`);
    }
    if (sync) this.onSyncedBatch?.((performance.now() - started) / 1000);
    if (sequence !== undefined) this.recordDurable(sequence);
  }

  /** The error a write would be refused with now, or undefined when it would be made. `grows`: it adds data (not allowed below the floor). */
  writeRefusal(grows = true): InsufficientStorageError | undefined {
    if (this.failedWrite !== undefined) {
      return new InsufficientStorageError(`${this.nodeName} takes no writes: ${this.failedWrite.reason}; writing resumes by itself once the disk has room`);
    }
    if (grows && this.lowDisk !== undefined) return new InsufficientStorageError(`${this.nodeName} takes no writes: ${this.lowDisk.reason}`);
    return undefined;
  }

  /** Why writes are refused now (a failed write first), or undefined. */
  get refusal(): WriteRefusal | undefined {
    return this.failedWrite ?? this.lowDisk;
  }

  /** Whether a write failed and the database waits to be reopened. */
  get needsReopen(): boolean {
    return this.failedWrite !== undefined;
  }

  /** DiskWatch: the disk is below its floor (a reason), or no longer (undefined). */
  setLowDisk(reason: string | undefined): void {
    assert(reason === undefined || reason.length > 0, 'the disk is low for no reason');
    if (reason === undefined) this.lowDisk = undefined;
    else this.lowDisk = { reason, sinceMs: this.lowDisk?.sinceMs ?? Date.now() };
  }

  private writeFailed(error: unknown): InsufficientStorageError {
    // Called from a write's catch, while that write still counts as in flight (reopen waits for it).
    assert(this.writesInFlight > 0, 'a write failed with none in flight');
    this.writesFailed += 1;
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    const reason = `a write to ${this.location} failed (${cause})`;
    this.failedWrite ??= { reason, sinceMs: Date.now() };
    return new InsufficientStorageError(`${this.nodeName} could not write to ${this.location}: ${cause}; it takes no writes until the disk has room again`, { cause: error });
  }

  /** Run by reopen() after LevelDB opened again and before writes resume (hint counts are read again). */
  onReopen(hook: () => Promise<void>): void {
    this.reopenHooks.push(hook);
  }

  /**
   * After a failed write: closes LevelDB and opens it again, so that writes go to a new log
   * (the header of this file). Reads wait while it opens; an iterator open at the time
   * ends with an error. Returns the acknowledged batches the reopened database lacks
   * (undefined: none; the ledger says what was acknowledged). Throws when LevelDB does not
   * open (the disk still has no room for the table it writes then): the database stays
   * closed, and the next call tries again.
   */
  async reopen(): Promise<string | undefined> {
    assert(this.failedWrite !== undefined, 'reopen() follows a failed write');
    const settleDeadline = performance.now() + SETTLE_WAIT_MS_MAX;
    while (this.writesInFlight > 0 && performance.now() < settleDeadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.level.close();
    const opened = this.level.open();
    // Sublevels close with their parent; opened now, their reads wait for it instead of failing.
    const sublevels = [this.kv, this.ssr, this.tsr, this.local, this.hints].map((sublevel) => sublevel.open().catch((error: unknown) => error));
    await opened;
    await Promise.all(sublevels);
    const stored = await highestSequence(this.local);
    for (const hook of this.reopenHooks) await hook();
    this.failedWrite = undefined;
    return stored < this.ledgerHighest ? `acknowledged batches ${stored + 1} to ${this.ledgerHighest} are missing after the database was reopened` : undefined;
  }

  private nextSequence(): number {
    // Sequences only grow: the ledger and the sequence keys both compare them.
    assert(this.sequence >= this.ledgerHighest, `batch sequence ${this.sequence} behind the ledger's ${this.ledgerHighest}`);
    this.sequence += 1;
    return this.sequence;
  }

  /**
   * The batch is durable: the ledger learns its number. Written in place and not synced:
   * a ledger behind the database only misses a loss, never invents one.
   */
  private recordDurable(sequence: number): void {
    assert(sequence <= this.sequence, () => `batch ${sequence} durable before it was issued (last issued ${this.sequence})`);
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

/** How a batch is written: synced with a sequence number for the ledger, synced without one, or not synced. */
type Durability = 'numbered' | 'synced' | 'unsynced';

function durabilityOf(options: WriteOptions): Durability {
  assert(options.sync || options.outsideLedger !== true, 'an unsynced write asked to be outside the ledger (only synced ones are numbered)');
  if (!options.sync) return 'unsynced';
  return options.outsideLedger === true ? 'synced' : 'numbered';
}

/** The highest batch sequence the database holds (0: none). */
async function highestSequence(local: Sublevel): Promise<number> {
  const stored = await local.keys({ gte: SEQUENCE_PREFIX, lt: prefixEnd(SEQUENCE_PREFIX), reverse: true, limit: 1 }).all();
  const highest = stored[0] === undefined ? 0 : parseInt(stored[0].slice(SEQUENCE_PREFIX.length), 10);
  assert(Number.isSafeInteger(highest) && highest >= 0, `sequence key ${stored[0]} holds no sequence`);
  return highest;
}

function settle(operations: readonly BatchOperation[], committed: boolean): void {
  for (const operation of operations) operation.settled?.(committed);
}

/** Upper bound for a range scan of keys that start with `prefix` and continue in ASCII. */
export function prefixEnd(prefix: string): string {
  return prefix + '\u007f';
}

/**
 * The root keys a numbered batch of this sequence carries besides its own (`localPrefix`,
 * the local sublevel's): its sequence key, and the delete of the one SEQUENCE_KEYS_KEPT
 * before. Every numbered batch thus writes into the local sublevel, apart from its records:
 * LevelDB's files then span both, which costs compaction (docs/benchmarks.md, "Transfer";
 * why transfer chunks are mostly written `outsideLedger`).
 */
export function sequenceKeysOf(localPrefix: string, sequence: number): { put: string; del: string | undefined } {
  assert(localPrefix.startsWith('!') && localPrefix.endsWith('!'), `sublevel prefix ${localPrefix}`);
  return {
    put: localPrefix + sequenceKey(sequence),
    del: sequence > SEQUENCE_KEYS_KEPT ? localPrefix + sequenceKey(sequence - SEQUENCE_KEYS_KEPT) : undefined,
  };
}

function sequenceKey(sequence: number): string {
  // Fixed width, so the keys sort as the numbers do (highestSequence reads the last).
  assert(Number.isSafeInteger(sequence) && sequence > 0 && String(sequence).length <= SEQUENCE_DIGITS, () => `batch sequence ${sequence}`);
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
