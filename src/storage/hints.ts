// Hinted hand-off (DESIGN.md, "Writes"): records meant for an owner that could not be
// reached are kept durably on the node that received the write, and replayed once the
// owner answers again. The buffer is bounded per node in bytes; a write that would pass
// the bound is refused for that owner (the client sees which payloads failed).

import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { DefinitionRecord } from './definitions.js';
import type { RepositoryName, StoredRecord } from './repository.js';
import { parseJson, stringifyJson } from '../json.js';

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

  private constructor(
    database: Database,
    private readonly hintBufferBytesMax: number,
  ) {
    this.sublevel = database.hints;
  }

  static async open(database: Database, hintBufferBytesMax: number): Promise<HintBuffer> {
    const buffer = new HintBuffer(database, hintBufferBytesMax);
    for await (const [key, value] of database.hints.iterator()) {
      const hint = parseHint(key, value);
      buffer.count(hint, +1);
      buffer.sequence = Math.max(buffer.sequence, parseInt(key.slice(key.lastIndexOf('/') + 1), 16) + 1);
    }
    return buffer;
  }

  /** Operations that store a hint; commit them before acknowledging the write. */
  add(target: string, payload: HintPayload): BatchOperation[] {
    const value = stringifyJson(payload);
    if (this.bytesTotal + value.length > this.hintBufferBytesMax) {
      throw new HintBufferFullError(`the hint buffer is full (${this.hintBufferBytesMax} bytes): owner ${target} is down`);
    }
    const key = `${target}/${(this.sequence++).toString(16).padStart(12, '0')}`;
    this.count({ key, target, bytes: value.length, ...payload }, +1);
    return [{ type: 'put', sublevel: this.sublevel, key, value }];
  }

  targets(): string[] {
    return [...this.stats.keys()];
  }

  /** The oldest hints for `target`, at most `limit`. */
  async oldest(target: string, limit: number): Promise<Hint[]> {
    const prefix = `${target}/`;
    const entries = await this.sublevel.iterator({ gte: prefix, lt: prefixEnd(prefix), limit }).all();
    return entries.map(([key, value]) => parseHint(key, value));
  }

  /** Operations that delete replayed hints. */
  remove(hints: readonly Hint[]): BatchOperation[] {
    for (const hint of hints) this.count(hint, -1);
    return hints.map((hint) => ({ type: 'del', sublevel: this.sublevel, key: hint.key }));
  }

  snapshot(): HintStats[] {
    return [...this.stats.values()].map((stats) => ({ ...stats }));
  }

  private count(hint: Hint, sign: 1 | -1): void {
    const stats = this.stats.get(hint.target) ?? { target: hint.target, hints: 0, records: 0, bytes: 0 };
    stats.hints += sign;
    stats.records += sign * hint.records.length;
    stats.bytes += sign * hint.bytes;
    this.bytesTotal += sign * hint.bytes;
    if (stats.hints === 0) this.stats.delete(hint.target);
    else this.stats.set(hint.target, stats);
  }
}

function parseHint(key: string, value: string): Hint {
  const parsed = parseJson(value) as HintPayload;
  return { key, target: key.slice(0, key.lastIndexOf('/')), ...parsed, bytes: value.length };
}
