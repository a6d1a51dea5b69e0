// One classic-level database per node (DESIGN.md): sublevels for definitions (kv), the two
// stream repositories (ssr, tsr) and node-local metadata. One process per data folder: the
// LOCK file refuses a second one.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';

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

export class Database {
  readonly kv: Sublevel;
  readonly ssr: Sublevel;
  readonly tsr: Sublevel;
  readonly local: Sublevel;
  readonly hints: Sublevel;

  private constructor(private readonly level: ClassicLevel<string, string>) {
    this.kv = openSublevel(level, 'kv');
    this.ssr = openSublevel(level, 'ssr');
    this.tsr = openSublevel(level, 'tsr');
    this.local = openSublevel(level, 'local');
    this.hints = openSublevel(level, 'hints');
  }

  static async open(dataDir: string): Promise<Database> {
    const location = join(dataDir, 'db');
    mkdirSync(location, { recursive: true });
    const level = new ClassicLevel<string, string>(location, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    try {
      await level.open();
    } catch (error) {
      const cause = (error as { cause?: { message?: string } }).cause?.message ?? '';
      throw new Error(`cannot open database in ${location} (is another node using this data folder?) ${cause}`, {
        cause: error,
      });
    }
    return new Database(level);
  }

  /** Commits the operations atomically. `sync` fsyncs before resolving: use it for anything acknowledged. */
  async batch(operations: BatchOperation[], options: { sync: boolean }): Promise<void> {
    if (operations.length === 0) return;
    // Sublevel operations carry their own encodings; the root's typings cannot say so.
    await this.level.batch(operations as never, { sync: options.sync });
  }

  /**
   * Like batch(), for bytes that are already keys and values at the root: abstract-level
   * then neither encodes nor prefixes each operation (transfers write 1,000 records a chunk).
   */
  async batchEncoded(puts: EncodedPut[], options: { sync: boolean }): Promise<void> {
    if (puts.length === 0) return;
    await this.level.batch<Buffer, Buffer>(puts, { sync: options.sync, keyEncoding: 'buffer', valueEncoding: 'buffer' });
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
