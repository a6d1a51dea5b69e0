// Hopping windows with many windows per row (issue 13 item 3f): `window of 24 hour every
// 10 seconds` puts each row into 8,640 windows. As stream processors do ("no pane, no
// gain"), time is cut into panes of gcd(size, hop); a row goes into its one pane, per key,
// and a window's aggregates are its panes' aggregates combined (Accumulator.merge). The
// panes of the window being computed sit in a two-stack queue (the older stack keeps suffix
// aggregates, the newer one running aggregate), so sliding by a hop costs O(1) amortized
// per pane and per row, whatever the number of windows a row falls into.
//
// Decisions (the README repeats them):
// - Live, a window is emitted once, when it closes (the watermark, the latest event time
//   seen, reaches its end), as Flink's sliding windows fire: the table holds, per key, the
//   row of its latest closed window that holds data; a newer one replaces it (an add of the
//   new row, a remove of the old), and when the latest closed window is empty (the key's
//   rows have slid out) the key's row is removed. Several windows closing in one push give
//   the latest only. A tick after a window length of quiet closes every window (removes).
// - A row counts in every open window that holds it, as before; one that a closed window
//   also held is late (counted once), and dropped when its pane is in closed windows only.
// - Historical (bounded), finish() gives every window that holds data, by key then start.
// - Panes count against `groupsMax` while held, and so do the windows a bounded query emits.
// - Grouping over a table (a grouping after a grouping) keeps one group per window
//   (grouping.ts), bounded by windowHopsMax.

import type { Value } from '../../expression/index.js';
import type { Accumulator } from './aggregates.js';
import { WindowEnds } from './group-store.js';
import { createAccumulators, type GroupingPlan } from './grouping-plan.js';
import type { Budget, Delta, OutputRow, RowConsumer } from './types.js';
import { eventTimeMs, mapKey, orderValues } from './values.js';

interface Pane {
  readonly index: number;
  readonly accumulators: Accumulator[];
  /** In the window's queue (older or newer stack) or waiting beyond the window's end. */
  where: 'front' | 'back' | 'pending';
}

/**
 * The panes of one window, oldest first, as two stacks. `front` holds the older panes with,
 * for each, the aggregate of it and every pane after it in `front`; `back` the newer ones
 * with one running aggregate. A value added to a back pane is added to the running
 * aggregate too; one added to a front pane (a row out of order) marks the suffixes stale.
 */
class PaneQueue {
  private front: Array<{ pane: Pane; suffix: Accumulator[] }> = [];
  private head = 0;
  private frontStale = false;
  private back: Pane[] = [];
  private backAggregate: Accumulator[];

  constructor(private readonly fresh: () => Accumulator[]) {
    this.backAggregate = fresh();
  }

  get empty(): boolean {
    return this.head >= this.front.length && this.back.length === 0;
  }

  /** Adds a pane that lies inside the window (its values are merged in). */
  insert(pane: Pane): void {
    const lastFront = this.front.length > this.head ? this.front[this.front.length - 1]!.pane.index : -Infinity;
    if (pane.index < lastFront) {
      // Older than the newest front pane: a row far out of order. Rare; rebuilt on read.
      let at = this.front.length;
      while (at > this.head && this.front[at - 1]!.pane.index > pane.index) at--;
      this.front.splice(at, 0, { pane, suffix: [] });
      pane.where = 'front';
      this.frontStale = true;
      return;
    }
    let at = this.back.length;
    while (at > 0 && this.back[at - 1]!.index > pane.index) at--;
    this.back.splice(at, 0, pane);
    pane.where = 'back';
    mergeAll(this.backAggregate, pane.accumulators);
  }

  /** A value was added to `pane`, which is in this queue. */
  added(pane: Pane, slot: number, first: Value, second: Value): void {
    if (pane.where === 'back') this.backAggregate[slot]!.add(first, second);
    else this.frontStale = true;
  }

  /** Takes out the panes before `index`, oldest first; returns them. */
  evictBefore(index: number, taken: Pane[]): void {
    for (;;) {
      if (this.head >= this.front.length) {
        if (this.back.length === 0 || this.back[0]!.index >= index) return;
        this.flip();
      }
      const entry = this.front[this.head]!;
      if (entry.pane.index >= index) return;
      this.front[this.head] = undefined as never;
      this.head++;
      taken.push(entry.pane);
    }
  }

  /** The window's aggregates: every pane's values combined. */
  aggregate(): Accumulator[] {
    if (this.frontStale) this.rebuildFront();
    const result = this.fresh();
    if (this.head < this.front.length) mergeAll(result, this.front[this.head]!.suffix);
    mergeAll(result, this.backAggregate);
    return result;
  }

  /** Moves the newer stack under the older one, computing the suffix aggregates once. */
  private flip(): void {
    const panes = this.back;
    this.back = [];
    this.backAggregate = this.fresh();
    this.front = panes.map((pane) => ({ pane, suffix: [] as Accumulator[] }));
    this.head = 0;
    this.rebuildFront();
    for (const pane of panes) pane.where = 'front';
  }

  private rebuildFront(): void {
    let next: Accumulator[] | undefined;
    for (let at = this.front.length - 1; at >= this.head; at--) {
      const entry = this.front[at]!;
      const suffix = this.fresh();
      mergeAll(suffix, entry.pane.accumulators);
      if (next !== undefined) mergeAll(suffix, next);
      entry.suffix = suffix;
      next = suffix;
    }
    if (this.head > 1024 && this.head * 2 > this.front.length) {
      this.front = this.front.slice(this.head);
      this.head = 0;
    }
    this.frontStale = false;
  }
}

function mergeAll(into: Accumulator[], from: readonly Accumulator[]): void {
  for (let slot = 0; slot < into.length; slot++) into[slot]!.merge(from[slot]!);
}

/** One key's panes and what its table row shows. */
interface Series {
  readonly keyValues: Value[];
  readonly panes: Map<number, Pane>;
  /** The panes beyond the end of the key's next window (live), by index, which slide() moves into the queue. */
  readonly pending: Pane[];
  /** Start (ms) of the key's next window to close; its panes are in `queue`. Live only. */
  windowStartMs: number;
  readonly queue: PaneQueue;
  /** The row of the latest closed window that held data, as emitted. */
  emitted: { key: object; data: OutputRow } | undefined;
  /** Where it waits to close, or undefined when not scheduled. */
  dueAtMs: number | undefined;
  /** Highest pane index seen. */
  newestPane: number;
}

export class PanedWindowGrouping implements RowConsumer {
  private readonly paneMs: number;
  private readonly sizeMs: number;
  private readonly hopMs: number;
  private readonly root = new Map<unknown, unknown>();
  private readonly series: Series[] = [];
  private readonly due = new WindowEnds<Series>();
  private readonly keyScratch: Value[];
  private watermarkMs = -Infinity;
  private lastArrivalMs: number | undefined;
  lateRows = 0;

  constructor(
    private readonly plan: GroupingPlan,
    private readonly historical: boolean,
    private readonly budget: Budget,
  ) {
    const window = plan.window!;
    this.sizeMs = window.sizeMs;
    this.hopMs = window.hopMs;
    this.paneMs = gcd(window.sizeMs, window.hopMs);
    this.keyScratch = new Array<Value>(plan.plainKeys.length).fill(null);
  }

  /** Whether a window is best computed from panes: hopping, with more than one window per row. */
  static suits(plan: GroupingPlan, tableInput: boolean): boolean {
    return !tableInput && plan.window !== undefined && plan.window.hopMs < plan.window.sizeMs;
  }

  pushRows(rows: readonly unknown[], nowMs: number): Delta[] {
    if (rows.length > 0) this.lastArrivalMs = nowMs;
    for (let i = 0; i < rows.length; i++) this.place(rows[i]);
    const out: Delta[] = [];
    if (!this.historical) this.closeDue(this.watermarkMs, out);
    return out;
  }

  push(): Delta[] {
    throw new Error('paned windows take rows, not a table: grouping.ts groups tables');
  }

  tick(nowMs: number): Delta[] {
    const out: Delta[] = [];
    if (this.historical || this.lastArrivalMs === undefined || nowMs - this.lastArrivalMs < this.sizeMs) return out;
    // Quiet for a window length: every window closes.
    this.closeDue(Infinity, out);
    return out;
  }

  finish(): Delta[] {
    const out: Delta[] = [];
    for (const series of this.ordered()) this.sweep(series, out, true);
    return out;
  }

  snapshot(): Delta[] {
    if (this.historical) {
      const out: Delta[] = [];
      for (const series of this.ordered()) this.sweep(series, out, false);
      return out;
    }
    return this.ordered().flatMap((series) => (series.emitted === undefined ? [] : [{ action: 'add' as const, key: series.emitted.key, data: series.emitted.data }]));
  }

  private place(row: unknown): void {
    const plan = this.plan;
    const eventMs = eventTimeMs(plan.window!.eventTime(row));
    if (eventMs === undefined) return;
    const keys = this.keyScratch;
    for (let i = 0; i < plan.plainKeys.length; i++) keys[i] = plan.plainKeys[i]!(row);
    const series = this.seriesFor(keys, eventMs);
    const index = Math.floor(eventMs / this.paneMs);
    if (!this.historical && (Math.floor((eventMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs < series.windowStartMs) {
      // One of its windows has closed: late, counted once; it still counts in the open ones.
      this.lateRows++;
      if (index * this.paneMs < series.windowStartMs) return;
    }
    let pane = series.panes.get(index);
    if (pane === undefined) pane = this.createPane(series, index);
    for (let s = 0; s < plan.slots.length; s++) {
      const slot = plan.slots[s]!;
      const first = slot.first(row);
      const second = slot.second(row);
      pane.accumulators[s]!.add(first, second);
      if (pane.where !== 'pending') series.queue.added(pane, s, first, second);
    }
    if (index > series.newestPane) series.newestPane = index;
    if (eventMs > this.watermarkMs && !this.historical) this.watermarkMs = eventMs;
  }

  private createPane(series: Series, index: number): Pane {
    this.budget.addGroup();
    const pane: Pane = { index, accumulators: createAccumulators(this.plan), where: 'pending' };
    series.panes.set(index, pane);
    if (this.historical) return pane;
    if (index * this.paneMs < series.windowStartMs + this.sizeMs) series.queue.insert(pane);
    else insertSorted(series.pending, pane);
    return pane;
  }

  /** The key's series; a new one starts at the first open window that holds the event. */
  private seriesFor(keys: readonly Value[], eventMs: number): Series {
    let level = this.root;
    for (let i = 0; i < keys.length; i++) {
      const key = mapKey(keys[i]);
      let next = level.get(key) as Map<unknown, unknown> | undefined;
      if (next === undefined) level.set(key, (next = new Map()));
      level = next;
    }
    let series = level.get(SERIES) as Series | undefined;
    if (series === undefined) {
      series = {
        keyValues: keys.slice(),
        panes: new Map(),
        pending: [],
        windowStartMs: this.historical ? -Infinity : this.firstOpenWindowMs(eventMs),
        queue: new PaneQueue(() => createAccumulators(this.plan)),
        emitted: undefined,
        dueAtMs: undefined,
        newestPane: -Infinity,
      };
      level.set(SERIES, series);
      this.series.push(series);
      if (!this.historical) this.schedule(series);
    }
    return series;
  }

  /** The earliest window holding `eventMs` that the watermark has not closed. */
  private firstOpenWindowMs(eventMs: number): number {
    const holding = (Math.floor((eventMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs;
    const open = this.watermarkMs === -Infinity ? -Infinity : (Math.floor((this.watermarkMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs;
    return Math.max(holding, open);
  }

  private schedule(series: Series): void {
    series.dueAtMs = series.windowStartMs + this.sizeMs;
    this.due.add(series.dueAtMs, series);
  }

  /** Emits, for each key whose next window the watermark closed, its latest closed window. */
  private closeDue(watermarkMs: number, out: Delta[]): void {
    for (const series of this.due.takeDue(watermarkMs)) {
      series.dueAtMs = undefined;
      const latestStartMs = watermarkMs === Infinity ? Infinity : Math.floor((watermarkMs - this.sizeMs) / this.hopMs) * this.hopMs;
      let data: OutputRow | undefined;
      if (latestStartMs !== Infinity) {
        this.slide(series, latestStartMs);
        data = series.queue.empty ? undefined : this.outputRow(series, latestStartMs, series.queue.aggregate());
        this.slide(series, latestStartMs + this.hopMs);
      }
      if (series.emitted !== undefined) out.push({ action: 'remove', key: series.emitted.key, data: series.emitted.data });
      series.emitted = data === undefined ? undefined : { key: {}, data };
      if (series.emitted !== undefined) out.push({ action: 'add', key: series.emitted.key, data: series.emitted.data });
      if (latestStartMs !== Infinity && (series.panes.size > 0 || series.emitted !== undefined)) this.schedule(series);
      else this.forget(series);
    }
  }

  /** Moves the key's queue to the window starting at `startMs`: older panes go, pending ones in it come. */
  private slide(series: Series, startMs: number): void {
    if (startMs <= series.windowStartMs) return;
    series.windowStartMs = startMs;
    const gone: Pane[] = [];
    series.queue.evictBefore(Math.ceil(startMs / this.paneMs), gone);
    for (const pane of gone) {
      series.panes.delete(pane.index);
      this.budget.releaseGroup();
    }
    const endIndex = Math.ceil((startMs + this.sizeMs) / this.paneMs);
    const pending = series.pending;
    let taken = 0;
    while (taken < pending.length && pending[taken]!.index < endIndex) series.queue.insert(pending[taken++]!);
    if (taken > 0) pending.splice(0, taken);
  }

  /** Every window of a bounded input that holds data, oldest first, from a queue of its own. */
  private sweep(series: Series, out: Delta[], counted: boolean): void {
    const panes = [...series.panes.values()].sort((a, b) => a.index - b.index);
    if (panes.length === 0) return;
    const queue = new PaneQueue(() => createAccumulators(this.plan));
    let next = 0;
    let startMs = (Math.floor((panes[0]!.index * this.paneMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs;
    const gone: Pane[] = [];
    while (next < panes.length || !queue.empty) {
      if (queue.empty) startMs = Math.max(startMs, (Math.floor((panes[next]!.index * this.paneMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs);
      gone.length = 0;
      queue.evictBefore(Math.ceil(startMs / this.paneMs), gone);
      const endIndex = Math.ceil((startMs + this.sizeMs) / this.paneMs);
      for (; next < panes.length && panes[next]!.index < endIndex; next++) {
        // The series' panes stay as they are: the queue holds copies whose `where` it may change.
        queue.insert({ index: panes[next]!.index, accumulators: panes[next]!.accumulators, where: 'pending' });
      }
      if (!queue.empty) {
        if (counted) this.budget.addGroup();
        out.push({ action: 'add', key: {}, data: this.outputRow(series, startMs, queue.aggregate()) });
      }
      startMs += this.hopMs;
    }
  }

  private outputRow(series: Series, windowStartMs: number, accumulators: Accumulator[]): OutputRow {
    const plan = this.plan;
    const keys: Record<string, Value> = {};
    for (let i = 0; i < series.keyValues.length; i++) keys[plan.keyNames[i]!] = series.keyValues[i]!;
    keys[plan.keyNames[plan.keyNames.length - 1]!] = new Date(windowStartMs).toISOString();
    const aggregates: Value[] = new Array<Value>(accumulators.length);
    for (let slot = 0; slot < accumulators.length; slot++) aggregates[slot] = accumulators[slot]!.result();
    const view = { keys, aggregates };
    const row: OutputRow = {};
    for (let i = 0; i < plan.items.length; i++) row[plan.itemNames[i]!] = plan.items[i]!(view);
    return row;
  }

  private forget(series: Series): void {
    for (let i = 0; i < series.panes.size; i++) this.budget.releaseGroup();
    series.panes.clear();
    series.pending.length = 0;
    const at = this.series.indexOf(series);
    if (at >= 0) this.series.splice(at, 1);
    let level = this.root;
    const path: Array<Map<unknown, unknown>> = [];
    for (const value of series.keyValues) {
      path.push(level);
      level = level.get(mapKey(value)) as Map<unknown, unknown>;
    }
    level.delete(SERIES);
    for (let i = path.length - 1; i >= 0 && level.size === 0; i--) {
      path[i]!.delete(mapKey(series.keyValues[i]));
      level = path[i]!;
    }
  }

  /** Series by key values, for listing a table by key. */
  private ordered(): Series[] {
    return [...this.series].sort((a, b) => {
      for (let i = 0; i < a.keyValues.length; i++) {
        const order = orderValues(a.keyValues[i]!, b.keyValues[i]!);
        if (order !== 0) return order;
      }
      return 0;
    });
  }
}

/** The Map entry holding a key's series, below its key levels (no key value is this object). */
const SERIES = Symbol('series');

/** Panes mostly come in time order: search from the back. */
function insertSorted(panes: Pane[], pane: Pane): void {
  let at = panes.length;
  while (at > 0 && panes[at - 1]!.index > pane.index) at--;
  panes.splice(at, 0, pane);
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
