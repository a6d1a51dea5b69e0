// Hinted hand-off (docs/cluster.md, "Hints"): records meant for an owner that could not be
// reached are kept durably on the node that received the write, and replayed once the
// owner answers again. The buffer is bounded per node in bytes; a write that would pass
// the bound is refused for that owner (the client sees which payloads failed).
//
// The counts follow what is stored: a hint counts once its batch is durable, and no longer
// once its removal is; a hint whose commit fails never counts. Bytes of hints on their way
// to disk are held against the bound meanwhile, so concurrent writes cannot pass it together.

import { assert } from '../lib/assert.js';
import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { DefinitionRecord } from './definition-store.js';
import type { RepositoryName, StoredRecord } from './repository.js';
import { parseJson, stringifyJson } from '../lib/json.js';

/** Stream records for a repository, or definition records for the KV repo. */
export type HintPayload = { repository: RepositoryName; records: StoredRecord[] } | { repository: 'KV'; records: DefinitionRecord[] };

export type Hint = HintPayload & {
  key: string;
  target: string;
  bytes: number;
};

export interface HintStats {
  target: string;
  hints: number;
  records: number;
  bytes: number;
}

export class HintBufferFullError extends Error {
  override name = 'HintBufferFullError';
}

export class HintBuffer {
  private readonly sublevel: Sublevel;
  private readonly stats = new Map<string, HintStats>();
  private sequence = 0;
  private bytesTotal = 0;
  /** Bytes of hints added and not yet settled (committed or failed). */
  private bytesPending = 0;

  private constructor(
    database: Database,
    private readonly hintBufferBytesMax: number,
  ) {
    assert(hintBufferBytesMax > 0, `hintBufferBytesMax ${hintBufferBytesMax}`);
    this.sublevel = database.hints;
  }

  static async open(database: Database, hintBufferBytesMax: number): Promise<HintBuffer> {
    const buffer = new HintBuffer(database, hintBufferBytesMax);
    await buffer.recount();
    assert(buffer.bytesPending === 0, `${buffer.bytesPending} hint bytes pending before the buffer opened`);
    // A write refused while a failed one was in flight may still have stored its hints.
    database.onReopen(() => buffer.recount());
    return buffer;
  }

  /** The counts read again from what is stored (at open, and after the database reopens). */
  async recount(): Promise<void> {
    this.stats.clear();
    this.bytesTotal = 0;
    for await (const [key, value] of this.sublevel.iterator()) {
      const hint = parseHint(key, value);
      this.count(hint, +1);
      this.sequence = Math.max(this.sequence, parseInt(key.slice(key.lastIndexOf('/') + 1), 16) + 1);
    }
    // Keys are this buffer's own (target/sequence in hex): the next sequence is a number past them all.
    assert(Number.isSafeInteger(this.sequence) && this.sequence >= 0, `hint sequence ${this.sequence} after a recount`);
  }

  /** Operations that store a hint; commit them before acknowledging the write. It counts once they are durable. */
  add(target: string, payload: HintPayload): BatchOperation[] {
    const value = stringifyJson(payload);
    assert(this.bytesTotal >= 0 && this.bytesPending >= 0, () => `hint bytes ${this.bytesTotal} stored, ${this.bytesPending} pending`);
    if (this.bytesTotal + this.bytesPending + value.length > this.hintBufferBytesMax) {
      throw new HintBufferFullError(`the hint buffer is full (${this.hintBufferBytesMax} bytes): owner ${target} is down`);
    }
    const key = `${target}/${(this.sequence++).toString(16).padStart(12, '0')}`;
    const hint: Hint = { key, target, bytes: value.length, ...payload };
    this.bytesPending += hint.bytes;
    let settled = false;
    const settle = (committed: boolean) => {
      if (settled) return;
      settled = true;
      this.bytesPending -= hint.bytes;
      assert(this.bytesPending >= 0, () => `hint bytes pending ${this.bytesPending}`);
      if (committed) this.count(hint, +1);
    };
    return [{ type: 'put', sublevel: this.sublevel, key, value, settled: settle }];
  }

  /** Operations add() made that will not be committed: their bytes no longer count against the bound. */
  abandon(operations: readonly unknown[]): void {
    assert((operations as readonly BatchOperation[]).every((operation) => operation.type === 'put' && operation.sublevel === this.sublevel), 'abandoned operations that are not hint puts');
    for (const operation of operations as readonly BatchOperation[]) operation.settled?.(false);
  }

  targets(): string[] {
    // A target is listed while it has hints, and only then (count() drops it at zero).
    assert([...this.stats.values()].every((stats) => stats.hints > 0), 'a hint target with no hints listed');
    return [...this.stats.keys()];
  }

  /** The oldest hints for `target`, at most `limit`. */
  async oldest(target: string, limit: number): Promise<Hint[]> {
    const prefix = `${target}/`;
    const entries = await this.sublevel.iterator({ gte: prefix, lt: prefixEnd(prefix), limit }).all();
    assert(entries.length <= limit, `${entries.length} hints read for a limit of ${limit}`);
    return entries.map(([key, value]) => parseHint(key, value));
  }

  /** Operations that delete replayed hints; they stop counting once the deletion is durable. */
  remove(hints: readonly Hint[]): BatchOperation[] {
    assert(hints.every((hint) => hint.key.startsWith(`${hint.target}/`)), 'a hint removed under a key of another target');
    return hints.map((hint) => ({ type: 'del', sublevel: this.sublevel, key: hint.key, settled: (committed: boolean) => committed && this.count(hint, -1) }));
  }

  snapshot(): HintStats[] {
    let bytes = 0;
    for (const stats of this.stats.values()) bytes += stats.bytes;
    assert(bytes === this.bytesTotal, `hint bytes ${this.bytesTotal} in total, ${bytes} by target`);
    return [...this.stats.values()].map((stats) => ({ ...stats }));
  }

  private count(hint: Hint, sign: 1 | -1): void {
    const stats = this.stats.get(hint.target) ?? { target: hint.target, hints: 0, records: 0, bytes: 0 };
    stats.hints += sign;
    stats.records += sign * hint.records.length;
    stats.bytes += sign * hint.bytes;
    this.bytesTotal += sign * hint.bytes;
    // Counts follow what is stored: never below zero, whatever order commits settle in.
    assert(stats.hints >= 0 && stats.records >= 0 && stats.bytes >= 0 && this.bytesTotal >= 0, () => `hint counts of ${hint.target} below zero: ${stats.hints} hints, ${stats.records} records, ${stats.bytes} bytes`);
    if (stats.hints === 0) this.stats.delete(hint.target);
    else this.stats.set(hint.target, stats);
  }
}

function parseHint(key: string, value: string): Hint {
  // Keys are written by add() alone: a target, a slash, a sequence.
  assert(key.lastIndexOf('/') > 0, () => `a hint key without a target: ${key}`);
  const parsed = parseJson(value) as HintPayload;
  return { key, target: key.slice(0, key.lastIndexOf('/')), ...parsed, bytes: value.length };
}
