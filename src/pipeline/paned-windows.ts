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

import { assert } from '../lib/assert.js';
import type { Value } from '../expression/index.js';
import { aggregateStates, type AggregateStates } from './aggregate-states.js';
import { WindowEnds } from './group-store.js';
import type { GroupingPlan } from './grouping-plan.js';
import type { Budget, Delta, OutputRow, RowConsumer } from './types.js';
import { eventTimeMs, mapKey, orderValues, rowsEqual } from './values.js';
import { LiveClock } from './live-clock.js';

/** Hops shorter than this are emitted at this pace at most. */
const EMIT_INTERVAL_MIN_MS = 100;

/** A pane: its index (its start over the pane length) and its state (aggregate-states.ts). */
interface PaneRef {
  readonly index: number;
  readonly state: number;
}

/**
 * The panes of one window, oldest first, as two stacks, each pane an index and a state side
 * by side in arrays (no object per pane: with about a payload per pane live, its objects
 * were most of what a row cost to make, to keep and to collect). `front` holds the older
 * panes with, for each, the aggregate of it and every pane after it in `front`; `back` the
 * newer ones with one running aggregate of its first `backMerged` panes, brought up to date
 * when the window is read: the panes since then are merged once, whole (rows mostly go to
 * the newest pane, and a window is read once per emission). A value added to a merged back
 * pane is added to the running aggregate too; one added to a front pane (a row out of
 * order) marks the suffixes stale. Every front pane is older than every back pane.
 */
class PaneQueue {
  private frontIndexes: number[] = [];
  private frontStates: number[] = [];
  /** Per front pane, the aggregate of it and every front pane after it; NO_STATE before the first rebuild. */
  private frontSuffixes: number[] = [];
  private head = 0;
  private frontStale = false;
  private backIndexes: number[] = [];
  private backStates: number[] = [];
  private readonly backAggregate: number;
  /** The panes at the start of `back` that are in `backAggregate`. */
  private backMerged = 0;
  /** The index of the last of those panes, -Infinity for none: a back pane is merged when its index is at most this. */
  private mergedThrough = -Infinity;
  /** Suffix states of panes evicted from the front, reused by the next flip. */
  private readonly spare: number[] = [];

  constructor(private readonly states: AggregateStates) {
    this.backAggregate = states.take();
  }

  get empty(): boolean {
    return this.head >= this.frontIndexes.length && this.backIndexes.length === 0;
  }

  /** Adds a pane that lies inside the window (its values are merged in, unless it is `empty`). */
  insert(index: number, state: number, empty = false): void {
    if (index < this.lastFrontIndex()) {
      // Older than the newest front pane: a row far out of order. Rare; rebuilt on read.
      let at = this.frontIndexes.length;
      while (at > this.head && this.frontIndexes[at - 1]! > index) at--;
      this.frontIndexes.splice(at, 0, index);
      this.frontStates.splice(at, 0, state);
      this.frontSuffixes.splice(at, 0, NO_STATE);
      this.frontStale = true;
      return;
    }
    const at = insertSorted(this.backIndexes, index);
    if (at === this.backStates.length) this.backStates.push(state);
    else this.backStates.splice(at, 0, state);
    // Before the end of the merged panes (a row out of order): merged now, as they are.
    if (at < this.backMerged) {
      this.backMerged++;
      if (!empty) this.states.merge(this.backAggregate, state);
    }
  }

  /** A value was added to the pane of `index`, which is in this queue. */
  added(index: number, slot: number, first: Value, second: Value): void {
    if (index <= this.lastFrontIndex()) this.frontStale = true;
    else if (index <= this.mergedThrough) this.states.add(this.backAggregate, slot, first, second);
  }

  /** The state of the pane of `index` in this queue, or NO_STATE (both stacks are in index order). */
  find(index: number): number {
    const inBack = findSorted(this.backIndexes, index, 0);
    if (inBack >= 0) return this.backStates[inBack]!;
    const inFront = findSorted(this.frontIndexes, index, this.head);
    return inFront >= 0 ? this.frontStates[inFront]! : NO_STATE;
  }

  /** Every pane in the queue, oldest first. */
  panes(out: PaneRef[]): void {
    for (let at = this.head; at < this.frontIndexes.length; at++) out.push({ index: this.frontIndexes[at]!, state: this.frontStates[at]! });
    for (let at = 0; at < this.backIndexes.length; at++) out.push({ index: this.backIndexes[at]!, state: this.backStates[at]! });
  }

  /** Takes out the panes before `index`, oldest first, their states into `taken`. */
  evictBefore(index: number, taken: number[]): void {
    for (;;) {
      if (this.head >= this.frontIndexes.length) {
        if (this.backIndexes.length === 0 || this.backIndexes[0]! >= index) return;
        this.flip();
      }
      if (this.frontIndexes[this.head]! >= index) return;
      taken.push(this.frontStates[this.head]!);
      const suffix = this.frontSuffixes[this.head]!;
      this.head++;
      if (suffix === NO_STATE) continue;
      if (this.spare.length < SPARE_SUFFIXES_MAX) this.spare.push(suffix);
      else this.states.give(suffix);
    }
  }

  /** Gives back the states the queue itself holds (not its panes'): it is no longer used. */
  release(): void {
    this.states.give(this.backAggregate);
    for (let at = this.head; at < this.frontSuffixes.length; at++) if (this.frontSuffixes[at] !== NO_STATE) this.states.give(this.frontSuffixes[at]!);
    for (const suffix of this.spare) this.states.give(suffix);
    this.frontIndexes = [];
    this.frontStates = [];
    this.frontSuffixes = [];
    this.head = 0;
    this.spare.length = 0;
  }

  /** The window's aggregates, every pane's values combined, into `result` (reset first). */
  aggregate(result: number): number {
    if (this.frontStale) this.rebuildFront();
    if (this.backMerged < this.backStates.length) {
      for (; this.backMerged < this.backStates.length; this.backMerged++) this.states.merge(this.backAggregate, this.backStates[this.backMerged]!);
      this.mergedThrough = this.backIndexes[this.backMerged - 1]!;
    }
    this.states.reset(result);
    if (this.head < this.frontSuffixes.length) this.states.merge(result, this.frontSuffixes[this.head]!);
    this.states.merge(result, this.backAggregate);
    return result;
  }

  private lastFrontIndex(): number {
    return this.head < this.frontIndexes.length ? this.frontIndexes[this.frontIndexes.length - 1]! : -Infinity;
  }

  /** Moves the newer stack under the older one, computing the suffix aggregates once. */
  private flip(): void {
    this.frontIndexes = this.backIndexes;
    this.frontStates = this.backStates;
    const suffixes = new Array<number>(this.frontIndexes.length);
    for (let at = 0; at < suffixes.length; at++) suffixes[at] = this.spare.pop() ?? NO_STATE;
    this.frontSuffixes = suffixes;
    this.head = 0;
    this.backIndexes = [];
    this.backStates = [];
    this.backMerged = 0;
    this.mergedThrough = -Infinity;
    this.states.reset(this.backAggregate);
    this.rebuildFront();
  }

  private rebuildFront(): void {
    let next = NO_STATE;
    for (let at = this.frontSuffixes.length - 1; at >= this.head; at--) {
      // A reused suffix is reset, not taken again.
      let suffix = this.frontSuffixes[at]!;
      if (suffix === NO_STATE) this.frontSuffixes[at] = suffix = this.states.take();
      else this.states.reset(suffix);
      this.states.merge(suffix, this.frontStates[at]!);
      if (next !== NO_STATE) this.states.merge(suffix, next);
      next = suffix;
    }
    if (this.head > 1024 && this.head * 2 > this.frontIndexes.length) {
      this.frontIndexes = this.frontIndexes.slice(this.head);
      this.frontStates = this.frontStates.slice(this.head);
      this.frontSuffixes = this.frontSuffixes.slice(this.head);
      this.head = 0;
    }
    this.frontStale = false;
  }
}

/** No state: a front pane's suffix before its first rebuild, or a pane not found. */
const NO_STATE = -1;

/** Suffix states a queue keeps for reuse: a window's worth at most. */
const SPARE_SUFFIXES_MAX = 8_640;

/** One key's panes and what its table row shows. */
interface Series {
  readonly keyValues: Value[];
  /** Bounded input: every pane's state, by index. Live, the panes are in `queue` and `pending` only. */
  readonly panes: Map<number, number>;
  /** Panes held (live): in `queue` or `pending`. */
  paneCount: number;
  /** The panes beyond the end of the key's next window (live), by index, which slide() moves into the queue. */
  readonly pendingIndexes: number[];
  /** Their states, side by side. */
  readonly pendingStates: number[];
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
  /** The pane the last row went into, NaN for none, and its state: rows mostly come in time order. */
  lastIndex: number;
  lastState: number;
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
  private readonly goneScratch: number[] = [];
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
    let state = series.lastIndex === index ? series.lastState : this.findPane(series, index);
    if (state === NO_STATE) state = this.createPane(series, index);
    series.lastIndex = index;
    series.lastState = state;
    // Live, the panes before the end of the key's next window are in its queue, the others pending.
    const queued = !this.historical && index * this.paneMs < series.windowStartMs + this.sizeMs;
    for (let s = 0; s < plan.slots.length; s++) {
      const slot = plan.slots[s]!;
      const first = slot.first(row);
      const second = slot.second(row);
      this.states.add(state, s, first, second);
      if (queued) series.queue.added(index, s, first, second);
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

  /** The state of the key's pane of `index`, or NO_STATE: a row newer than every pane needs a new one, as most rows do live. */
  private findPane(series: Series, index: number): number {
    if (this.historical) return series.panes.get(index) ?? NO_STATE;
    if (index > series.newestPane) return NO_STATE;
    const pending = findSorted(series.pendingIndexes, index, 0);
    return pending >= 0 ? series.pendingStates[pending]! : series.queue.find(index);
  }

  /** A new pane's state (states that slid out are taken again first). */
  private createPane(series: Series, index: number): number {
    this.budget.addGroup();
    const state = this.states.take();
    if (this.historical) {
      series.panes.set(index, state);
      return state;
    }
    series.paneCount++;
    if (index * this.paneMs < series.windowStartMs + this.sizeMs) series.queue.insert(index, state, true);
    else {
      const at = insertSorted(series.pendingIndexes, index);
      if (at === series.pendingStates.length) series.pendingStates.push(state);
      else series.pendingStates.splice(at, 0, state);
    }
    // A key whose panes had all slid out waits for its window to close again.
    if (series.dueAtMs === undefined) this.schedule(series);
    return state;
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
        pendingIndexes: [],
        pendingStates: [],
        windowStartMs: this.historical ? -Infinity : this.firstOpenWindowMs(eventMs),
        queue: new PaneQueue(this.states),
        emitted: undefined,
        changed: false,
        forgotten: false,
        dueAtMs: undefined,
        newestPane: -Infinity,
        lastIndex: NaN,
        lastState: NO_STATE,
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
      for (let state = gone.pop(); state !== undefined; state = gone.pop()) {
        series.paneCount--;
        // Its state is taken again by the next new pane.
        if (series.lastState === state) series.lastIndex = NaN;
        this.budget.releaseGroup();
        this.states.give(state);
      }
      assert(series.paneCount >= series.pendingIndexes.length, `a key holds ${series.paneCount} panes, fewer than its ${series.pendingIndexes.length} pending`);
    }
    const endIndex = Math.ceil((startMs + this.sizeMs) / this.paneMs);
    const indexes = series.pendingIndexes;
    const states = series.pendingStates;
    let taken = 0;
    for (; taken < indexes.length && indexes[taken]! < endIndex; taken++) series.queue.insert(indexes[taken]!, states[taken]!);
    if (taken === 0) return;
    // Mostly the one pane a hop brings: popped, as setting an array's length costs a runtime call.
    if (taken === indexes.length) {
      for (let i = 0; i < taken; i++) {
        indexes.pop();
        states.pop();
      }
    } else {
      indexes.splice(0, taken);
      states.splice(0, taken);
    }
  }

  /** Every window of a bounded input that holds data, oldest first, from a queue of its own. */
  private sweep(series: Series, out: Delta[], counted: boolean): void {
    const panes: PaneRef[] = [];
    if (this.historical) for (const [index, state] of series.panes) panes.push({ index, state });
    else {
      series.queue.panes(panes);
      for (let at = 0; at < series.pendingIndexes.length; at++) panes.push({ index: series.pendingIndexes[at]!, state: series.pendingStates[at]! });
    }
    panes.sort((a, b) => a.index - b.index);
    if (panes.length === 0) return;
    const queue = new PaneQueue(this.states);
    let next = 0;
    let startMs = (Math.floor((panes[0]!.index * this.paneMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs;
    // The series' panes stay its own: their states are not given back here.
    const gone: number[] = [];
    while (next < panes.length || !queue.empty) {
      if (queue.empty) startMs = Math.max(startMs, (Math.floor((panes[next]!.index * this.paneMs - this.sizeMs) / this.hopMs) + 1) * this.hopMs);
      gone.length = 0;
      queue.evictBefore(Math.ceil(startMs / this.paneMs), gone);
      const endIndex = Math.ceil((startMs + this.sizeMs) / this.paneMs);
      for (; next < panes.length && panes[next]!.index < endIndex; next++) queue.insert(panes[next]!.index, panes[next]!.state);
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
    for (const state of series.panes.values()) this.states.give(state);
    for (const state of series.pendingStates) this.states.give(state);
    series.queue.release();
    series.panes.clear();
    series.paneCount = 0;
    series.lastIndex = NaN;
    series.pendingIndexes.length = 0;
    series.pendingStates.length = 0;
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
function insertSorted(indexes: number[], index: number): number {
  let at = indexes.length;
  while (at > 0 && indexes[at - 1]! > index) at--;
  if (at === indexes.length) indexes.push(index);
  else indexes.splice(at, 0, index);
  return at;
}

/** Binary search of an ordered array of pane indexes from `from`: where `index` is, or -1. */
function findSorted(indexes: readonly number[], index: number, from: number): number {
  let low = from;
  let high = indexes.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    const found = indexes[middle]!;
    if (found === index) return middle;
    if (found < index) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}
