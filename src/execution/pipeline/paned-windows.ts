// Hopping windows with many windows per row: `window of 24 hour every 10 seconds` puts each row
// into 8,640 windows. As stream processors do ("no pane, no gain"), time is cut into panes of
// gcd(size, hop); a row goes into its one pane, per key, and a window's aggregates are its
// panes' aggregates combined (as Accumulator.merge does; aggregate-states.ts keeps them). The
// panes of the window being computed sit in a two-stack queue (the older stack keeps suffix
// aggregates, the newer one running aggregate), so sliding by a hop costs O(1) amortized per
// pane and per row, whatever the number of windows a row falls into.
//
// Decisions (docs/query-language.md, "Live windows", repeats them):
// - Live, the table holds per key its trailing window: the oldest window the watermark has
//   not closed, which holds the last `size` of event time. It is added when it first holds
//   data, updated as rows change its aggregates, and replaced (a remove of the old row, an
//   add of the new) when the watermark closes it; a key whose trailing window is empty (its
//   rows slid out) is removed. Changes go out at most once per hop of wall-clock time
//   (live-clock.ts): a dashboard sees the trailing window every `every`, however many rows
//   and windows a key has, and several windows closing between two emissions give the
//   latest only. The watermark moves on with the node's clock when no row comes
//   (live-clock.ts, the idle watermark), so windows close without a later event.
// - A row counts in every open window that holds it, as before; one that a closed window
//   also held is late (counted once), and dropped when its pane is in closed windows only.
// - Historical (bounded), finish() gives every window that holds data, by key then start.
// - Panes count against `groupsMax` while held, and so do the windows a bounded query emits.
// - Grouping over a table (a grouping after a grouping) keeps one group per window
//   (grouping.ts), bounded by windowHopsMax.

import { assert } from '../../assert.js';
import type { Value } from '../../expression/index.js';
import { aggregateStates, type AggregateStates } from './aggregate-states.js';
import { WindowEnds } from './group-store.js';
import type { GroupingPlan } from './grouping-plan.js';
import type { Budget, Delta, OutputRow, RowConsumer } from './types.js';
import { eventTimeMs, mapKey, orderValues, rowsEqual } from './values.js';
import { LiveClock } from './live-clock.js';

/** Hops shorter than this are emitted at this pace at most. */
const EMIT_INTERVAL_MIN_MS = 100;
/**
 * Panes that slid out kept for new ones (live): with a payload or two per pane, a pane's
 * objects were most of what a row cost to make and to collect.
 */
const FREE_PANES_MAX = 4096;

interface Pane {
  /** Set again when a pane that slid out is used for a new one (live). */
  index: number;
  /** Its aggregates (aggregate-states.ts); a pane reused keeps its state. */
  readonly state: number;
  /** In the window's queue (older or newer stack) or waiting beyond the window's end. */
  where: 'front' | 'back' | 'pending';
}

/**
 * The panes of one window, oldest first, as two stacks. `front` holds the older panes with,
 * for each, the aggregate of it and every pane after it in `front`; `back` the newer ones
 * with one running aggregate of its first `backMerged` panes, brought up to date when the
 * window is read: the panes since then are merged once, whole (rows mostly go to the
 * newest pane, and a window is read once per emission). A value added to a merged back
 * pane is added to the running aggregate too; one added to a front pane (a row out of
 * order) marks the suffixes stale.
 */
class PaneQueue {
  private front: FrontEntry[] = [];
  private head = 0;
  private frontStale = false;
  private back: Pane[] = [];
  /**
   * The states of `back`'s panes, side by side: a window read merges the panes since the
   * last read from here, without reading each pane object (spread over the heap).
   */
  private backStates: number[] = [];
  private readonly backAggregate: number;
  /** The panes at the start of `back` that are in `backAggregate`. */
  private backMerged = 0;
  /** The index of the last of those panes, -Infinity for none: a back pane is merged when its index is at most this. */
  private mergedThrough = -Infinity;
  /** Entries of panes evicted from the front, their suffix aggregates reused by the next flip. */
  private readonly spare: FrontEntry[] = [];

  constructor(private readonly states: AggregateStates) {
    this.backAggregate = states.take();
  }

  get empty(): boolean {
    return this.head >= this.front.length && this.back.length === 0;
  }

  /** Adds a pane that lies inside the window (its values are merged in, unless it is `empty`). */
  insert(pane: Pane, empty = false): void {
    const lastFront = this.front.length > this.head ? this.front[this.front.length - 1]!.pane.index : -Infinity;
    if (pane.index < lastFront) {
      // Older than the newest front pane: a row far out of order. Rare; rebuilt on read.
      let at = this.front.length;
      while (at > this.head && this.front[at - 1]!.pane.index > pane.index) at--;
      this.front.splice(at, 0, { pane, suffix: NO_STATE });
      pane.where = 'front';
      this.frontStale = true;
      return;
    }
    const at = insertSorted(this.back, pane);
    if (at === this.backStates.length) this.backStates.push(pane.state);
    else this.backStates.splice(at, 0, pane.state);
    pane.where = 'back';
    // Before the end of the merged panes (a row out of order): merged now, as they are.
    if (at < this.backMerged) {
      this.backMerged++;
      if (!empty) this.states.merge(this.backAggregate, pane.state);
    }
  }

  /** A value was added to `pane`, which is in this queue. */
  added(pane: Pane, slot: number, first: Value, second: Value): void {
    if (pane.where === 'front') this.frontStale = true;
    else if (pane.index <= this.mergedThrough) this.states.add(this.backAggregate, slot, first, second);
  }

  /** The pane of `index` in this queue, if any (both stacks are in index order). */
  find(index: number): Pane | undefined {
    const inBack = findSorted(this.back, index, 0, (pane) => pane);
    if (inBack !== undefined) return inBack;
    return findSorted(this.front, index, this.head, (entry) => entry.pane)?.pane;
  }

  /** Every pane in the queue, oldest first. */
  panes(): Pane[] {
    const out: Pane[] = [];
    for (let at = this.head; at < this.front.length; at++) out.push(this.front[at]!.pane);
    return out.concat(this.back);
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
      if (this.spare.length < SPARE_ENTRIES_MAX) this.spare.push(entry);
      else if (entry.suffix !== NO_STATE) this.states.give(entry.suffix);
    }
  }

  /** Gives back the states the queue itself holds (not its panes'): it is no longer used. */
  release(): void {
    this.states.give(this.backAggregate);
    for (let at = this.head; at < this.front.length; at++) if (this.front[at]!.suffix !== NO_STATE) this.states.give(this.front[at]!.suffix);
    for (const entry of this.spare) if (entry.suffix !== NO_STATE) this.states.give(entry.suffix);
    this.front = [];
    this.head = 0;
    this.spare.length = 0;
  }

  /** The window's aggregates, every pane's values combined, into `result` (reset first). */
  aggregate(result: number): number {
    if (this.frontStale) this.rebuildFront();
    if (this.backMerged < this.backStates.length) {
      for (; this.backMerged < this.backStates.length; this.backMerged++) this.states.merge(this.backAggregate, this.backStates[this.backMerged]!);
      this.mergedThrough = this.back[this.backMerged - 1]!.index;
    }
    this.states.reset(result);
    if (this.head < this.front.length) this.states.merge(result, this.front[this.head]!.suffix);
    this.states.merge(result, this.backAggregate);
    return result;
  }

  /** Moves the newer stack under the older one, computing the suffix aggregates once. */
  private flip(): void {
    const panes = this.back;
    this.back = [];
    this.backStates = [];
    this.backMerged = 0;
    this.mergedThrough = -Infinity;
    this.states.reset(this.backAggregate);
    const front = new Array<FrontEntry>(panes.length);
    for (let at = 0; at < panes.length; at++) {
      const entry = this.spare.pop();
      if (entry === undefined) front[at] = { pane: panes[at]!, suffix: NO_STATE };
      else {
        entry.pane = panes[at]!;
        front[at] = entry;
      }
    }
    this.front = front;
    this.head = 0;
    this.rebuildFront();
    for (const pane of panes) pane.where = 'front';
  }

  private rebuildFront(): void {
    let next = NO_STATE;
    for (let at = this.front.length - 1; at >= this.head; at--) {
      const entry = this.front[at]!;
      // A reused entry's state is reset, not taken again.
      if (entry.suffix === NO_STATE) entry.suffix = this.states.take();
      else this.states.reset(entry.suffix);
      this.states.merge(entry.suffix, entry.pane.state);
      if (next !== NO_STATE) this.states.merge(entry.suffix, next);
      next = entry.suffix;
    }
    if (this.head > 1024 && this.head * 2 > this.front.length) {
      this.front = this.front.slice(this.head);
      this.head = 0;
    }
    this.frontStale = false;
  }
}

/** A pane at the front of a window's queue, with the aggregate of it and every front pane after it. */
interface FrontEntry {
  pane: Pane;
  /** A state (aggregate-states.ts), or NO_STATE before the entry's first flip. */
  suffix: number;
}

const NO_STATE = -1;

/** Front entries a queue keeps for reuse: a window's worth at most. */
const SPARE_ENTRIES_MAX = 8_640;

/** One key's panes and what its table row shows. */
interface Series {
  readonly keyValues: Value[];
  /** Bounded input: every pane, by index. Live, the panes are in `queue` and `pending` only. */
  readonly panes: Map<number, Pane>;
  /** Panes held (live): in `queue` or `pending`. */
  paneCount: number;
  /** The panes beyond the end of the key's next window (live), by index, which slide() moves into the queue. */
  readonly pending: Pane[];
  /** Start (ms) of the key's next window to close; its panes are in `queue`. Live only. */
  windowStartMs: number;
  readonly queue: PaneQueue;
  /** The row of the trailing window as last emitted, with that window's start. */
  emitted: { key: object; data: OutputRow; startMs: number } | undefined;
  /** Changed since last emitted: a row came, or its trailing window moved (live). */
  changed: boolean;
  /** Gone from the grouping (forget). */
  forgotten: boolean;
  /** Where it waits to close, or undefined when not scheduled. */
  dueAtMs: number | undefined;
  /** Highest pane index seen. */
  newestPane: number;
  /** The pane the last row went into: rows mostly come in time order. */
  lastPane: Pane | undefined;
  /** What the select's items read, refilled for each row emitted: keys, then aggregates. */
  readonly view: { readonly keys: Record<string, Value>; readonly aggregates: Value[] };
}

export class PanedWindowGrouping implements RowConsumer {
  private readonly paneMs: number;
  private readonly sizeMs: number;
  private readonly hopMs: number;
  private readonly root = new Map<unknown, unknown>();
  private readonly series: Series[] = [];
  private readonly due = new WindowEnds<Series>();
  private readonly keyScratch: Value[];
  /** A window's aggregates as they are computed for its row. */
  private readonly aggregateScratch: number;
  private readonly states: AggregateStates;
  private readonly goneScratch: Pane[] = [];
  private readonly freePanes: Pane[] = [];
  /** The last window start written as the window key, and how. */
  private startShownMs = NaN;
  private startShown = '';
  private watermarkMs = -Infinity;
  private readonly clock: LiveClock;
  /** Live: the series changed since the last emission, in the order they first changed. */
  private changed: Series[] = [];
  lateRows = 0;

  constructor(
    private readonly plan: GroupingPlan,
    private readonly historical: boolean,
    private readonly budget: Budget,
    /** Live: when defined, changes are coalesced over a hop of wall-clock time (at least this long's minimum, EMIT_INTERVAL_MIN_MS). */
    emitIntervalMs?: number,
  ) {
    const window = plan.window!;
    this.sizeMs = window.sizeMs;
    this.hopMs = window.hopMs;
    this.clock = new LiveClock(emitIntervalMs === undefined ? undefined : Math.max(window.hopMs, EMIT_INTERVAL_MIN_MS));
    this.paneMs = gcd(window.sizeMs, window.hopMs);
    this.keyScratch = new Array<Value>(plan.plainKeys.length).fill(null);
    this.states = aggregateStates(plan);
    this.aggregateScratch = this.states.take();
  }

  /** Whether a window is best computed from panes: hopping, with more than one window per row. */
  static suits(plan: GroupingPlan, tableInput: boolean): boolean {
    return !tableInput && plan.window !== undefined && plan.window.hopMs < plan.window.sizeMs;
  }

  pushRows(rows: readonly unknown[], nowMs: number): Delta[] {
    for (let i = 0; i < rows.length; i++) this.place(rows[i]);
    if (this.historical) return [];
    if (rows.length > 0) this.clock.arrived(nowMs, this.watermarkMs);
    this.closeDue(this.watermarkMs);
    return this.emitDue(nowMs);
  }

  push(): Delta[] {
    throw new Error('paned windows take rows, not a table: grouping.ts groups tables');
  }

  tick(nowMs: number): Delta[] {
    if (this.historical) return [];
    const idleMs = this.clock.idleWatermark(nowMs);
    if (idleMs > this.watermarkMs) {
      this.watermarkMs = idleMs;
      this.closeDue(idleMs);
    }
    return this.emitDue(nowMs);
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
    let pane = series.lastPane !== undefined && series.lastPane.index === index ? series.lastPane : this.findPane(series, index);
    if (pane === undefined) pane = this.createPane(series, index);
    series.lastPane = pane;
    for (let s = 0; s < plan.slots.length; s++) {
      const slot = plan.slots[s]!;
      const first = slot.first(row);
      const second = slot.second(row);
      this.states.add(pane.state, s, first, second);
      if (pane.where !== 'pending') series.queue.added(pane, s, first, second);
    }
    if (index > series.newestPane) series.newestPane = index;
    if (this.historical) return;
    if (eventMs > this.watermarkMs) this.watermarkMs = eventMs;
    this.markChanged(series);
  }

  private markChanged(series: Series): void {
    if (series.changed) return;
    series.changed = true;
    this.changed.push(series);
  }

  /** The key's pane of `index`: a row newer than every pane needs a new one, as most rows do live. */
  private findPane(series: Series, index: number): Pane | undefined {
    if (this.historical) return series.panes.get(index);
    if (index > series.newestPane) return undefined;
    return findSorted(series.pending, index, 0, (pane) => pane) ?? series.queue.find(index);
  }

  private createPane(series: Series, index: number): Pane {
    this.budget.addGroup();
    let pane = this.freePanes.pop();
    if (pane === undefined) pane = { index, state: this.states.take(), where: 'pending' };
    else {
      pane.index = index;
      pane.where = 'pending';
      this.states.reset(pane.state);
    }
    if (this.historical) {
      series.panes.set(index, pane);
      return pane;
    }
    series.paneCount++;
    if (index * this.paneMs < series.windowStartMs + this.sizeMs) series.queue.insert(pane, true);
    else insertSorted(series.pending, pane);
    // A key whose panes had all slid out waits for its window to close again.
    if (series.dueAtMs === undefined) this.schedule(series);
    return pane;
  }

  /** The key's series; a new one starts at the first open window that holds the event. */
  private seriesFor(keys: readonly Value[], eventMs: number): Series {
    let level = this.root;
    for (let i = 0; i < keys.length - 1; i++) {
      const key = mapKey(keys[i]);
      let next = level.get(key) as Map<unknown, unknown> | undefined;
      if (next === undefined) level.set(key, (next = new Map()));
      level = next;
    }
    const last = seriesEntry(keys);
    let series = level.get(last) as Series | undefined;
    if (series === undefined) {
      const view = { keys: {} as Record<string, Value>, aggregates: new Array<Value>(this.plan.slots.length).fill(null) };
      for (let i = 0; i < keys.length; i++) view.keys[this.plan.keyNames[i]!] = keys[i]!;
      series = {
        keyValues: keys.slice(),
        panes: new Map(),
        paneCount: 0,
        pending: [],
        windowStartMs: this.historical ? -Infinity : this.firstOpenWindowMs(eventMs),
        queue: new PaneQueue(this.states),
        emitted: undefined,
        changed: false,
        forgotten: false,
        dueAtMs: undefined,
        newestPane: -Infinity,
        lastPane: undefined,
        view,
      };
      level.set(last, series);
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

  /**
   * Moves each key whose trailing window the watermark closed to its new trailing window:
   * the oldest open one at `watermarkMs`. Nothing is emitted here (emitDue does, per hop).
   */
  private closeDue(watermarkMs: number): void {
    if (!this.due.due(watermarkMs)) return;
    const trailingStartMs = (Math.floor((watermarkMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs;
    for (const series of this.due.takeDue(watermarkMs)) {
      series.dueAtMs = undefined;
      this.slide(series, trailingStartMs);
      this.markChanged(series);
      if (series.paneCount > 0) this.schedule(series);
    }
  }

  /**
   * The changed keys' trailing windows, when the emission interval allows: per key, an add
   * of a window that first holds data, an update of one whose aggregates changed, a remove
   * and an add when it moved to the next window, a remove when it is empty (the key goes).
   */
  private emitDue(nowMs: number): Delta[] {
    const out: Delta[] = [];
    if (this.changed.length === 0 || !this.clock.due(nowMs)) return out;
    const changed = this.changed;
    this.changed = [];
    for (const series of changed) {
      series.changed = false;
      if (series.forgotten) continue;
      this.emitTrailing(series, out);
    }
    if (out.length > 0) this.clock.emitted(nowMs);
    return out;
  }

  private emitTrailing(series: Series, out: Delta[]): void {
    const startMs = series.windowStartMs;
    const data = series.queue.empty ? undefined : this.outputRow(series, startMs, series.queue.aggregate(this.aggregateScratch));
    let emitted = series.emitted;
    if (emitted !== undefined && (emitted.startMs !== startMs || data === undefined)) {
      out.push({ action: 'remove', key: emitted.key, data: emitted.data });
      emitted = series.emitted = undefined;
    }
    if (data === undefined) {
      if (series.paneCount === 0 && series.dueAtMs === undefined) this.forget(series);
      return;
    }
    if (emitted === undefined) {
      series.emitted = { key: {}, data, startMs };
      out.push({ action: 'add', key: series.emitted.key, data });
    } else if (!rowsEqual(emitted.data, data, this.plan.itemNames)) {
      out.push({ action: 'update', key: emitted.key, data, old: emitted.data });
      series.emitted = { key: emitted.key, data, startMs };
    }
  }

  /** Moves the key's queue to the window starting at `startMs`: older panes go, pending ones in it come. */
  private slide(series: Series, startMs: number): void {
    if (startMs <= series.windowStartMs) return;
    series.windowStartMs = startMs;
    // Left empty after each use.
    const gone = this.goneScratch;
    series.queue.evictBefore(Math.ceil(startMs / this.paneMs), gone);
    if (gone.length > 0) {
      // Popped empty: setting its length to 0 would free its store for the next push to make again.
      for (let pane = gone.pop(); pane !== undefined; pane = gone.pop()) {
        series.paneCount--;
        if (series.lastPane === pane) series.lastPane = undefined;
        this.budget.releaseGroup();
        if (this.freePanes.length < FREE_PANES_MAX) this.freePanes.push(pane);
        else this.states.give(pane.state);
      }
      assert(series.paneCount >= series.pending.length, `a key holds ${series.paneCount} panes, fewer than its ${series.pending.length} pending`);
    }
    const endIndex = Math.ceil((startMs + this.sizeMs) / this.paneMs);
    const pending = series.pending;
    let taken = 0;
    while (taken < pending.length && pending[taken]!.index < endIndex) series.queue.insert(pending[taken++]!);
    if (taken === 0) return;
    // Mostly the one pane a hop brings: popped, as setting an array's length costs a runtime call.
    if (taken === pending.length) for (let i = 0; i < taken; i++) pending.pop();
    else pending.splice(0, taken);
  }

  /** Every window of a bounded input that holds data, oldest first, from a queue of its own. */
  private sweep(series: Series, out: Delta[], counted: boolean): void {
    const held = this.historical ? [...series.panes.values()] : series.queue.panes().concat(series.pending);
    const panes = held.sort((a, b) => a.index - b.index);
    if (panes.length === 0) return;
    const queue = new PaneQueue(this.states);
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
        queue.insert({ index: panes[next]!.index, state: panes[next]!.state, where: 'pending' });
      }
      if (!queue.empty) {
        if (counted) this.budget.addGroup();
        out.push({ action: 'add', key: {}, data: this.outputRow(series, startMs, queue.aggregate(this.aggregateScratch)) });
      }
      startMs += this.hopMs;
    }
    queue.release();
  }

  private outputRow(series: Series, windowStartMs: number, state: number): OutputRow {
    const plan = this.plan;
    const view = series.view;
    if (windowStartMs !== this.startShownMs) {
      // Every key whose window closes in one push shows the same start: formatted once.
      this.startShownMs = windowStartMs;
      this.startShown = new Date(windowStartMs).toISOString();
    }
    view.keys[plan.keyNames[plan.keyNames.length - 1]!] = this.startShown;
    this.states.read(state, view.aggregates);
    const row: OutputRow = {};
    for (let i = 0; i < plan.items.length; i++) row[plan.itemNames[i]!] = plan.items[i]!(view);
    return row;
  }

  private forget(series: Series): void {
    series.forgotten = true;
    const held = this.historical ? series.panes.size : series.paneCount;
    for (let i = 0; i < held; i++) this.budget.releaseGroup();
    for (const pane of series.panes.values()) this.states.give(pane.state);
    for (const pane of series.pending) this.states.give(pane.state);
    series.queue.release();
    series.panes.clear();
    series.paneCount = 0;
    series.lastPane = undefined;
    series.pending.length = 0;
    const at = this.series.indexOf(series);
    if (at >= 0) this.series.splice(at, 1);
    let level = this.root;
    const path: Array<Map<unknown, unknown>> = [];
    for (let i = 0; i < series.keyValues.length - 1; i++) {
      path.push(level);
      level = level.get(mapKey(series.keyValues[i])) as Map<unknown, unknown>;
    }
    level.delete(seriesEntry(series.keyValues));
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

/** The Map entry of a grouping without keys besides the window (no key value is this object). */
const SERIES = Symbol('series');

/** A series is the entry of its last key value in the level of the keys before it (a row's lookup: one Map per key). */
function seriesEntry(keys: readonly Value[]): unknown {
  return keys.length === 0 ? SERIES : mapKey(keys[keys.length - 1]);
}

/** Panes mostly come in time order: search from the back, and append without splice's garbage. Returns where it went. */
function insertSorted(panes: Pane[], pane: Pane): number {
  let at = panes.length;
  while (at > 0 && panes[at - 1]!.index > pane.index) at--;
  if (at === panes.length) panes.push(pane);
  else panes.splice(at, 0, pane);
  return at;
}

/** Binary search of an index-ordered array from `from`: the item whose pane has `index`. */
function findSorted<T>(items: readonly T[], index: number, from: number, paneOf: (item: T) => Pane): T | undefined {
  let low = from;
  let high = items.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = paneOf(items[middle]!).index;
    if (found === index) return items[middle];
    if (found < index) low = middle + 1;
    else high = middle - 1;
  }
  return undefined;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
