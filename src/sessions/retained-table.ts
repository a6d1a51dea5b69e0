// The table an output channel keeps for a subscriber that connects late (output-channel.ts):
// a table query's rows by key, in the order their keys first came, within a row bound and
// a byte bound (a row costs its JSON text and its key's).
//
// Keying a row costs its key's JSON text and a Map entry. A query whose changes are only
// adds does not need them: a bounded grouped query gives its whole result at the end, one
// add per group (a 1M-point windowed read: 33,350 adds, ~6% of the query). So
// adds wait in order, unkeyed, and are keyed when an update or a remove must find its row
// or when the state is asked for, going then through the same steps in the same order: the
// table is always the one keying every change as it came would have made. What waits is
// bounded as the table is (rows, and bytes of their JSON text): past either, adds are
// keyed as they come.

import { stringifyJson } from '../lib/json.js';

/** An item of an increment (output-channel.ts): a row added, updated or removed. */
export interface ChangeItem {
  readonly action: 'add' | 'update' | 'remove';
  readonly data: Record<string, unknown>;
}

export interface RetainedTableLimits {
  readonly rowsMax: number;
  /** Bytes of JSON of the rows and their keys. */
  readonly bytesMax: number;
}

export class RetainedTable {
  private readonly rows = new Map<string, Record<string, unknown>>();
  private readonly rowBytes = new Map<string, number>();
  /** Bytes of the keyed rows and their keys. */
  private bytes = 0;
  /** Adds not keyed yet, in order, and the length of each one's JSON text. */
  private waiting: Array<Record<string, unknown>> = [];
  private waitingSizes: number[] = [];
  /** Bytes of the waiting adds' JSON text. */
  private waitingBytes = 0;

  constructor(
    /** The key fields (the schema's config.key); none: a row is its own key. */
    private readonly keys: readonly string[],
    private readonly limits: RetainedTableLimits,
  ) {}

  /** Applies changes in order; `rowJson[i]` is the JSON text of `items[i].data`. */
  apply(items: readonly ChangeItem[], rowJson: readonly string[]): void {
    for (let index = 0; index < items.length; index++) {
      const item = items[index]!;
      const size = rowJson[index]!.length;
      if (item.action === 'add' && this.mayWait(size)) {
        this.waiting.push(item.data);
        this.waitingSizes.push(size);
        this.waitingBytes += size;
        continue;
      }
      this.keyWaiting();
      this.change(item.action, item.data, size);
    }
  }

  /** The rows, in the order their keys first came. */
  held(): Array<Record<string, unknown>> {
    this.keyWaiting();
    return [...this.rows.values()];
  }

  /** Whether one more add may wait: the table and what waits stay within both bounds. */
  private mayWait(size: number): boolean {
    return this.rows.size + this.waiting.length < this.limits.rowsMax && this.bytes + this.waitingBytes + size <= this.limits.bytesMax;
  }

  private keyWaiting(): void {
    if (this.waiting.length === 0) return;
    const waiting = this.waiting;
    const sizes = this.waitingSizes;
    this.waiting = [];
    this.waitingSizes = [];
    this.waitingBytes = 0;
    for (let index = 0; index < waiting.length; index++) this.change('add', waiting[index]!, sizes[index]!);
  }

  /** One change to the keyed rows. */
  private change(action: ChangeItem['action'], data: Record<string, unknown>, size: number): void {
    const key = this.keyOf(data);
    if (action === 'remove') this.set(key, undefined, 0);
    else if (action === 'update' && this.keys.length === 0 && this.rows.size === 1) this.set([...this.rows.keys()][0]!, data, size);
    else if (this.rows.size < this.limits.rowsMax || this.rows.has(key)) this.set(key, data, size);
  }

  /** Sets (or with undefined, removes) a row, unless it would pass the byte bound. */
  private set(key: string, data: Record<string, unknown> | undefined, dataBytes: number): void {
    const before = this.rowBytes.get(key) ?? 0;
    const after = data === undefined ? 0 : dataBytes + key.length;
    if (after > before && this.bytes - before + after > this.limits.bytesMax) return;
    this.bytes += after - before;
    if (data === undefined) {
      this.rows.delete(key);
      this.rowBytes.delete(key);
    } else {
      this.rows.set(key, data);
      this.rowBytes.set(key, after);
    }
  }

  /** A row's identity: its key fields, or (no keys) the whole row. */
  private keyOf(data: Record<string, unknown>): string {
    if (this.keys.length === 0) return stringifyJson(data);
    return stringifyJson(this.keys.map((key) => data[key] ?? null));
  }
}
