// One classic-level database per node (DESIGN.md): sublevels for definitions (kv), the two
// stream repositories (ssr, tsr) and node-local metadata. One process per data folder: the
// LOCK file refuses a second one.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClassicLevel } from 'classic-level';
import { StartupError } from '../errors.js';

const SUBLEVEL_OPTIONS = { keyEncoding: 'utf8', valueEncoding: 'utf8' } as const;

function openSublevel(level: ClassicLevel<string, string>, name: string) {
  return level.sublevel<string, string>(name, SUBLEVEL_OPTIONS);
}

export type Sublevel = ReturnType<typeof openSublevel>;
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

export class Database {
  readonly kv: Sublevel;
  readonly ssr: Sublevel;
  readonly tsr: Sublevel;
  readonly local: Sublevel;
  readonly hints: Sublevel;

  private constructor(
    private readonly level: ClassicLevel<string, string>,
    private readonly onSyncedBatch: SyncedBatchObserver | undefined,
  ) {
    this.kv = openSublevel(level, 'kv');
    this.ssr = openSublevel(level, 'ssr');
    this.tsr = openSublevel(level, 'tsr');
    this.local = openSublevel(level, 'local');
    this.hints = openSublevel(level, 'hints');
  }

  static async open(dataDir: string, onSyncedBatch?: SyncedBatchObserver): Promise<Database> {
    const location = join(dataDir, 'db');
    mkdirSync(location, { recursive: true });
    const level = new ClassicLevel<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    try {
      await level.open();
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? '';
      throw new StartupError(`cannot open database in ${location} (is another node using this data folder?) ${cause}`.trim(), {
        cause: error,
      });
    }
    return new Database(level, onSyncedBatch);
  }

  /** Commits the operations atomically. `sync` fsyncs before resolving: use it for anything acknowledged. */
  async batch(operations: BatchOperation[], options: { sync: boolean }): Promise<void> {
    if (operations.length === 0) return;
    const started = performance.now();
    // Sublevel operations carry their own encodings; the root's typings cannot say so.
    await this.level.batch(operations as never, { sync: options.sync });
    if (options.sync) this.onSyncedBatch?.((performance.now() - started) / 1000);
  }

  /**
   * Like batch(), for bytes that are already keys and values at the root: abstract-level
   * then neither encodes nor prefixes each operation (transfers write 1,000 records a chunk).
   */
  async batchEncoded(puts: EncodedPut[], options: { sync: boolean }): Promise<void> {
    if (puts.length === 0) return;
    const started = performance.now();
    await this.level.batch<Buffer, Buffer>(puts, { sync: options.sync, keyEncoding: 'buffer', valueEncoding: 'buffer' });
    if (options.sync) this.onSyncedBatch?.((performance.now() - started) / 1000);
  }

  /** Open and not closing: /ready asks. */
  get isOpen(): boolean {
    return this.level.status === 'open';
  }

  /** The bytes that start every root key of the sublevel's records. */
  prefixOf(sublevel: Sublevel): Buffer {
    return Buffer.from(sublevel.prefix, 'utf8');
  }

  async close(): Promise<void> {
    await this.level.close();
  }
}

/** Upper bound for a range scan of keys that start with `prefix` and continue in ASCII. */
export function prefixEnd(prefix: string): string {
  return prefix + '\u007f';
}
