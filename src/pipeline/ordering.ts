// `order by` and `take` (docs/query-language.md, "Grammar"). Two forms:
// - LiveOrder keeps an ordered table and emits the changes of its visible top `take`
//   rows: a row that enters the top is added, one pushed out of it is removed, and an
//   update within the top stays an update. Over a live stream (each row its own key, no
//   row ever leaves) it holds only the top `take` rows, as a row below them can never
//   rise. Without take, every row is visible and changes pass through in order, while
//   snapshot() lists the table ordered.
// - HistoricalOrder, for bounded input, collects and sorts once at finish(). With take N
//   it keeps at most 2N rows, sorting and cutting back to N when full, so a bounded query
//   over many rows holds little.
// Order: by each key in turn, ascending unless `desc`; values compare as `orderValues`
// says (null first ascending, last descending); ties keep arrival order. A take with no
// order by keeps arrival order alone.

import type { PlanStep } from '../query/index.js';
import { compile, datetimeMs, type CompileOptions, type Evaluator, type Value } from '../expression/index.js';
import { rowOptions } from './scopes.js';
import type { Budget, Delta, OutputRow, RowConsumer } from './types.js';
import { orderValues } from './values.js';

export type OrderStep = Extract<PlanStep, { kind: 'order' }>;

export interface OrderKey {
  readonly evaluate: Evaluator;
  readonly descending: boolean;
}

export function compileOrderKeys(step: OrderStep | undefined, base: CompileOptions): OrderKey[] {
  if (step === undefined) return [];
  const options = rowOptions(base, step.input);
  return step.keys.map((key) => ({ evaluate: compile(key.expression, options), descending: key.direction === 'desc' }));
}

interface Entry {
  /** The row's key in its table: the upstream key, or the entry itself for a stream row. */
  key: unknown;
  data: OutputRow;
  sortValues: Value[];
  /** The instant of each sort value that is a datetime string, parsed once, not per comparison. */
  instants: Array<number | undefined>;
  readonly seq: number;
}

class EntryOrder {
  private seq = 0;

  constructor(private readonly keys: readonly OrderKey[]) {}

  entry(key: unknown, data: OutputRow): Entry {
    const entry: Entry = { key, data, sortValues: [], instants: [], seq: this.seq++ };
    this.evaluate(entry, data);
    if (key === undefined) entry.key = entry;
    return entry;
  }

  /** Sets an entry's row and what it sorts by. */
  evaluate(entry: Entry, data: OutputRow): void {
    entry.data = data;
    entry.sortValues = this.keys.map((key) => key.evaluate(data));
    entry.instants = entry.sortValues.map((value) => (typeof value === 'string' ? datetimeMs(value) : undefined));
  }

  readonly compare = (a: Entry, b: Entry): number => {
    for (let i = 0; i < this.keys.length; i++) {
      const instantA = a.instants[i];
      const instantB = b.instants[i];
      // Two datetime strings compare as instants, as orderValues would, without re-parsing.
      const order =
        instantA !== undefined && instantB !== undefined
          ? Math.sign(instantA - instantB)
          : orderValues(a.sortValues[i] as Value, b.sortValues[i] as Value);
      if (order !== 0) return (this.keys[i] as OrderKey).descending ? -order : order;
    }
    return a.seq - b.seq;
  };
}

const added = (entry: Entry): Delta => ({ action: 'add', key: entry.key, data: entry.data });
const removed = (entry: Entry, data: OutputRow = entry.data): Delta => ({ action: 'remove', key: entry.key, data });

export class LiveOrder implements RowConsumer {
  private readonly order: EntryOrder;
  private readonly entries: Entry[] = [];
  private readonly byKey = new Map<unknown, Entry>();

  constructor(
    keys: readonly OrderKey[],
    private readonly limit: number,
    private readonly budget: Budget,
  ) {
    this.order = new EntryOrder(keys);
  }

  pushRows(rows: readonly unknown[]): Delta[] {
    const out: Delta[] = [];
    for (const row of rows) this.insert(this.order.entry(undefined, row as OutputRow), true, out);
    return out;
  }

  push(deltas: readonly Delta[]): Delta[] {
    const out: Delta[] = [];
    for (const delta of deltas) {
      const entry = this.byKey.get(delta.key);
      if (delta.action === 'add' || entry === undefined) {
        if (delta.action !== 'remove') this.insert(this.order.entry(delta.key, delta.data), false, out);
      } else if (delta.action === 'update') {
        this.update(entry, delta.data, out);
      } else {
        this.remove(entry, out);
      }
    }
    return out;
  }

  tick(): Delta[] {
    return [];
  }

  finish(deltas: readonly Delta[]): Delta[] {
    this.push(deltas);
    return this.snapshot();
  }

  snapshot(): Delta[] {
    return this.entries.slice(0, this.limit).map(added);
  }

  /** Adds an entry; a stream row (`fromStream`) that lands below the top is not kept. */
  private insert(entry: Entry, fromStream: boolean, out: Delta[]): void {
    const position = this.upperBound(entry);
    if (fromStream && position >= this.limit) return;
    this.entries.splice(position, 0, entry);
    this.byKey.set(entry.key, entry);
    if (position < this.limit) {
      out.push(added(entry));
      const pushedOut = this.entries[this.limit];
      if (pushedOut !== undefined) {
        out.push(removed(pushedOut));
        // A stream row pushed out of the top can never come back: it is not kept.
        if (fromStream) this.drop(this.limit);
      }
    }
    // Counted after the drop, so that a top N over a stream fits a rowsHeldMax of N.
    this.budget.addRows(1);
  }

  private remove(entry: Entry, out: Delta[]): void {
    const position = this.positionOf(entry);
    this.drop(position);
    if (position >= this.limit) return;
    out.push(removed(entry));
    const risen = this.entries[this.limit - 1];
    if (risen !== undefined && this.entries.length >= this.limit) out.push(added(risen));
  }

  private update(entry: Entry, data: OutputRow, out: Delta[]): void {
    const old = entry.data;
    const oldPosition = this.positionOf(entry);
    this.entries.splice(oldPosition, 1);
    this.order.evaluate(entry, data);
    const position = this.upperBound(entry);
    this.entries.splice(position, 0, entry);
    const wasVisible = oldPosition < this.limit;
    const isVisible = position < this.limit;
    if (wasVisible && isVisible) {
      out.push({ action: 'update', key: entry.key, data, old });
    } else if (wasVisible) {
      out.push(removed(entry, old));
      const risen = this.entries[this.limit - 1];
      if (risen !== undefined) out.push(added(risen));
    } else if (isVisible) {
      out.push(added(entry));
      const pushedOut = this.entries[this.limit];
      if (pushedOut !== undefined) out.push(removed(pushedOut));
    }
  }

  private drop(position: number): void {
    const [entry] = this.entries.splice(position, 1);
    if (entry === undefined) return;
    this.byKey.delete(entry.key);
    this.budget.releaseRows(1);
  }

  /** The first position whose entry sorts after `entry`. */
  private upperBound(entry: Entry): number {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.order.compare(this.entries[middle] as Entry, entry) <= 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private positionOf(entry: Entry): number {
    // Values of mixed kinds may compare inconsistently (datetime strings among others);
    // then the binary search can miss, and a scan finds the entry anyway.
    const position = this.upperBound(entry) - 1;
    return this.entries[position] === entry ? position : this.entries.indexOf(entry);
  }
}

export class HistoricalOrder implements RowConsumer {
  private readonly order: EntryOrder;
  private readonly rows: Entry[] = [];
  private readonly byKey = new Map<unknown, Entry>();
  private sorted: Entry[] | undefined;

  constructor(
    keys: readonly OrderKey[],
    private readonly limit: number,
    private readonly budget: Budget,
  ) {
    this.order = new EntryOrder(keys);
  }

  pushRows(rows: readonly unknown[]): Delta[] {
    for (const row of rows) {
      this.rows.push(this.order.entry(undefined, row as OutputRow));
      this.budget.addRows(1);
      if (this.rows.length >= 2 * this.limit) this.cut();
    }
    return [];
  }

  push(deltas: readonly Delta[]): Delta[] {
    for (const delta of deltas) {
      const entry = this.byKey.get(delta.key);
      if (entry !== undefined) {
        this.byKey.delete(delta.key);
        this.budget.releaseRows(1);
      }
      if (delta.action === 'remove') continue;
      this.byKey.set(delta.key, this.order.entry(delta.key, delta.data));
      this.budget.addRows(1);
    }
    return [];
  }

  tick(): Delta[] {
    return [];
  }

  finish(deltas: readonly Delta[]): Delta[] {
    this.push(deltas);
    this.rows.push(...this.byKey.values());
    this.byKey.clear();
    this.cut();
    this.sorted = this.rows;
    return this.snapshot();
  }

  snapshot(): Delta[] {
    const entries = this.sorted ?? [...this.rows, ...this.byKey.values()].sort(this.order.compare).slice(0, this.limit);
    return entries.map(added);
  }

  /** Sorts the rows held and keeps the first `limit`. */
  private cut(): void {
    this.rows.sort(this.order.compare);
    if (this.rows.length <= this.limit) return;
    this.budget.releaseRows(this.rows.length - this.limit);
    this.rows.length = this.limit;
  }
}
