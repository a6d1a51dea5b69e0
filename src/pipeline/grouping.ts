// A grouping stage: `group by k1..kn [window …]` (or `window …`, or aggregates alone) and
// the select after it (docs/query-language.md, "Grouping and windows"). Rows (or the changes of
// a table before it) go in; changes of one row per group come out.
//
// Decisions the language leaves open:
// - Changes are coalesced: a group that several rows change gives one add or update, with
//   its state when it goes out; an update equal to the row last emitted is not sent. Live,
//   they go out at most once per emission interval (live-clock.ts): at once after a quiet
//   spell, else at the first push or tick an interval after the last. Changes come out in
//   the order the groups first changed, a window's pending change and remove when the
//   watermark closes it.
// - Windows follow event time. The watermark is the latest event time the stage has seen,
//   moved on by the node's clock once no row has come for a while (live-clock.ts, the idle
//   watermark); a window [start, start + size) closes when the watermark reaches its end.
// - A row is late when one of its windows has closed: it still counts in its windows that
//   are open (hopping windows), is dropped from the closed ones, and counts once in
//   lateRows. A row whose window key is null or not a datetime (ISO string or epoch
//   milliseconds) is dropped.
// - A historical (bounded) grouping emits nothing until finish(): windows never close and
//   no row is late, as stored rows need not arrive in event-time order. finish() gives
//   every group's final row, by key order (window key by start), and the pipeline orders
//   them further when the query says so. All groups are held until then (groupsMax).
// - A select with aggregates and no keys is one group: live, it appears with the first
//   row; bounded, it is emitted even over no rows (count() is then 0), as SQL does.
// - Over a table (a grouping after a grouping), the stage keeps each input row by its key
//   in its groups; a row that changes or goes leaves its groups, which are rebuilt from
//   their remaining rows, so every aggregate (min, first, …) is right after retractions. A
//   keyed group left with no rows is removed.

import { BadRequestError } from '../lib/errors.js';
import { windowHopsMax } from '../query/index.js';
import type { CompileOptions, Value } from '../expression/index.js';
import { createAccumulators, planGrouping, type GroupingPlan, type SelectStep } from './grouping-plan.js';
import { type Accumulator, NUMBER_SUMMARY_WIDTH, summarizeNumber, summarizes, summaryAccumulator } from './aggregates.js';
import { compareGroups, GroupIndex, WindowEnds, type Group, type GroupOutput } from './group-store.js';
import type { GroupView } from './scopes.js';
import type { Budget, ColumnBatch, ColumnFields, ColumnView, Delta, OutputRow, RowConsumer } from './types.js';
import { assert } from '../lib/assert.js';
import { ByteSlab } from '../lib/byte-slab.js';
import { isoString } from '../lib/iso-time.js';
import { eventTimeMs, mapKey, rowsEqual } from './values.js';
import { LiveClock } from './live-clock.js';

export class GroupingOperator implements RowConsumer {
  private readonly plan: GroupingPlan;
  private readonly index: GroupIndex;
  private readonly groups = new Set<Group>();
  private readonly windows = new WindowEnds();
  private readonly dirtyGroups: Group[] = [];
  /** For a table input: the groups each input row (by its key) belongs to. */
  private readonly memberships = new Map<unknown, Group[]>();
  private readonly keyScratch: Value[];
  private readonly firstArguments: Value[];
  private readonly secondArguments: Value[];
  private watermarkMs = -Infinity;
  private readonly clock: LiveClock;
  /** Changes made (windows closed) but not yet emitted: live changes go out once per emission interval. */
  private pending: Delta[] = [];
  /** Column batches: per last level of groups, the window its rows last went into. */
  private readonly cachedLeaves = new Map<Map<unknown, Group>, CachedLeaf>();
  /** Column batches: the groups' number summaries, side by side in shared slabs (not an ArrayBuffer each); made at the first. */
  private summaries: ByteSlab | undefined;
  /** What a group without accumulators of its own is read through (summaryView). */
  private scratchAccumulators: Accumulator[] | undefined;
  lateRows = 0;

  constructor(
    step: SelectStep,
    compileOptions: CompileOptions,
    private readonly historical: boolean,
    /** Whether the input is a table's changes (rows are kept per group) rather than rows. */
    private readonly tableInput: boolean,
    private readonly budget: Budget,
    /** Live: the wall-clock time over which changes are coalesced (live-clock.ts); undefined: none. */
    emitIntervalMs?: number,
  ) {
    this.clock = new LiveClock(emitIntervalMs);
    this.plan = planGrouping(step, compileOptions);
    const window = this.plan.window;
    // Rows go into every window holding them here (a table's rows may change or go); the
    // pane-based path (paned-windows.ts) serves the other hopping windows.
    if (window !== undefined && Math.ceil(window.sizeMs / window.hopMs) > windowHopsMax) {
      throw new BadRequestError(`grouping grouped rows into a window of ${window.sizeMs} ms every ${window.hopMs} ms puts each row into more than ${windowHopsMax} windows`);
    }
    this.index = new GroupIndex(this.plan.keyNames.length);
    this.keyScratch = new Array<Value>(this.plan.keyNames.length).fill(null);
    this.firstArguments = new Array<Value>(this.plan.slots.length).fill(null);
    this.secondArguments = new Array<Value>(this.plan.slots.length).fill(null);
  }

  pushRows(rows: readonly unknown[], nowMs: number): Delta[] {
    const out = this.pending;
    for (let i = 0; i < rows.length; i++) this.place(rows[i], undefined, out);
    if (rows.length > 0) this.clock.arrived(nowMs, this.watermarkMs);
    return this.emitDue(nowMs);
  }

  push(deltas: readonly Delta[], nowMs: number): Delta[] {
    const out = this.pending;
    for (const delta of deltas) {
      if (delta.action !== 'add') this.retract(delta.key);
      if (delta.action !== 'remove') this.place(delta.data, delta.key, out);
    }
    if (deltas.length > 0) this.clock.arrived(nowMs, this.watermarkMs);
    return this.emitDue(nowMs);
  }

  /**
   * A bounded input's rows as columns: the same groups and aggregates as rows
   * holding just those fields would give, without a row object each. Keys, window and
   * aggregate arguments must be the top-level fields `fields` names, in the plan's order.
   */
  placeColumns(batch: ColumnBatch, fields: ColumnFields): void {
    const plan = this.plan;
    assert(this.historical && !this.tableInput && fields.keys.length === plan.plainKeys.length && fields.slots.length === plan.slots.length, 'columns placed into a grouping that does not take them');
    assert(plan.window === undefined || (fields.window !== undefined && plan.window.hopMs === plan.window.sizeMs), 'columns placed into a grouping whose window is not a tumbling one on a field');
    const keyViews = fields.keys.map((field) => batch.column(field));
    const firstViews = fields.slots.map((args) => (args[0] === undefined ? undefined : batch.column(args[0])));
    const secondViews = fields.slots.map((args) => (args[1] === undefined ? undefined : batch.column(args[1])));
    const windowView = fields.window === undefined ? undefined : batch.column(fields.window);
    const sizeMs = plan.window?.sizeMs ?? 0;
    const keep = batch.keep;
    // How each aggregate takes this batch's values: counted, summarized as numbers, or added.
    const modes = plan.slots.map((slot, s) => {
      if (!summarizes(slot.name, slot.argCount)) return ADDED;
      if (slot.argCount === 0) return ROWS;
      const view = firstViews[s];
      return view?.kind === 'values' && view.values instanceof Float64Array ? NUMBERS : ADDED;
    });
    const summarized = modes.some((mode) => mode !== ADDED);
    const leaves = new LeafCache(this.index, this.cachedLeaves, keyViews, batch, this.keyScratch);
    for (let row = 0; row < batch.count; row++) {
      if (keep !== undefined && !keep(row)) continue;
      const leaf = leaves.of(row);
      let group: Group;
      if (windowView === undefined) {
        leaves.keysOf(row);
        const key = mapKey(this.keyScratch[this.keyScratch.length - 1]);
        group = leaf.leaf.get(key) ?? this.create(leaf.leaf, key, NaN);
      } else {
        const eventMs = windowView.kind === 'timestamp' ? eventTimeMs(batch.timestamps[row]!) : eventTimeMs(viewValue(windowView, batch, row));
        if (eventMs === undefined) continue;
        // A tumbling window: the one window holding the event (placeInWindows, hop = size).
        const window = Math.floor(eventMs / sizeMs);
        // Rows of a key mostly follow each other in time: the last window of the key first;
        // then the key's windows by number (an array, not a Map: a bounded query's windows
        // of one key are mostly all there, and an index is cheaper than a hash per row).
        if (leaf.group !== undefined && leaf.window === window) group = leaf.group;
        else {
          let found = leaf.windowAt(window);
          if (found === undefined) {
            const start = window * sizeMs;
            leaves.keysOf(row);
            found = leaf.leaf.get(start) ?? this.create(leaf.leaf, start, start);
            leaf.keep(window, found);
          }
          group = found;
          leaf.window = window;
          leaf.group = group;
        }
      }
      // Numbers go into the group's summary (aggregates.ts): no call, no boxed number per row.
      let summary = group.summary;
      if (summary === undefined && summarized) {
        const { buffer, offset } = (this.summaries ??= new ByteSlab(SUMMARY_SLAB_BYTES)).carve(plan.slots.length * NUMBER_SUMMARY_WIDTH * Float64Array.BYTES_PER_ELEMENT);
        summary = group.summary = new Float64Array(buffer, offset, plan.slots.length * NUMBER_SUMMARY_WIDTH);
      }
      for (let s = 0; s < modes.length; s++) {
        const mode = modes[s]!;
        if (mode === ROWS) summary![s * NUMBER_SUMMARY_WIDTH]! += 1;
        else if (mode === NUMBERS) summarizeNumber(summary!, s * NUMBER_SUMMARY_WIDTH, (firstViews[s] as NumberView).values[row]!);
        else {
          const first = firstViews[s];
          const second = secondViews[s];
          this.outputOf(group).accumulators[s]!.add(first === undefined ? null : viewValue(first, batch, row), second === undefined ? null : viewValue(second, batch, row));
        }
      }
    }
  }

  tick(nowMs: number): Delta[] {
    if (this.historical) return [];
    const idleMs = this.clock.idleWatermark(nowMs);
    if (this.plan.window !== undefined && idleMs > this.watermarkMs) {
      this.watermarkMs = idleMs;
      if (this.windows.due(idleMs)) this.closeDue(this.pending);
    }
    return this.emitDue(nowMs);
  }

  /** What is waiting to go out, when the emission interval allows: closes first, then the groups changed since. */
  private emitDue(nowMs: number): Delta[] {
    if (this.historical || !this.clock.due(nowMs)) return [];
    const out = this.flush(this.pending);
    this.pending = [];
    if (out.length > 0) this.clock.emitted(nowMs);
    return out;
  }

  finish(deltas: readonly Delta[]): Delta[] {
    this.push(deltas, 0);
    if (this.plan.keyNames.length === 0 && this.groups.size === 0) this.create(this.index.leaf(this.keyScratch), undefined, NaN);
    return this.ordered().flatMap((group) => {
      if (group.members !== undefined && group.members.size === 0 && this.plan.keyNames.length > 0) return [];
      group.emitted = this.outputRow(group);
      return [{ action: 'add' as const, key: group, data: group.emitted }];
    });
  }

  snapshot(): Delta[] {
    return this.ordered().flatMap((group) => {
      const data = this.historical ? this.outputRow(group) : group.emitted;
      return data === undefined ? [] : [{ action: 'add' as const, key: group, data }];
    });
  }

  private ordered(): Group[] {
    return [...this.groups].sort(compareGroups);
  }

  /** Puts one input row (of a table when `identity` is set) into its groups. */
  private place(row: unknown, identity: unknown, out: Delta[]): void {
    const plan = this.plan;
    const keys = this.keyScratch;
    for (let i = 0; i < plan.plainKeys.length; i++) keys[i] = (plan.plainKeys[i] as (row: unknown) => Value)(row);
    for (let s = 0; s < plan.slots.length; s++) {
      const slot = plan.slots[s] as GroupingPlan['slots'][number];
      this.firstArguments[s] = slot.first(row);
      this.secondArguments[s] = slot.second(row);
    }
    const member = identity === undefined ? undefined : { identity, row, groups: [] as Group[] };
    if (plan.window === undefined) {
      const leaf = this.index.leaf(keys);
      const key = mapKey(keys[keys.length - 1]);
      this.include(leaf.get(key) ?? this.create(leaf, key, NaN), member);
    } else {
      const eventMs = eventTimeMs(plan.window.eventTime(row));
      if (eventMs === undefined) return;
      this.placeInWindows(eventMs, member, out);
    }
    if (member !== undefined && member.groups.length > 0) {
      this.memberships.set(identity, member.groups);
      this.budget.addRows(1);
    }
  }

  private placeInWindows(eventMs: number, member: Member | undefined, out: Delta[]): void {
    const { sizeMs, hopMs } = this.plan.window as NonNullable<GroupingPlan['window']>;
    const leaf = this.index.leaf(this.keyScratch);
    let late = false;
    // The windows holding the event start at the multiples of the hop in (event - size,
    // event], oldest first: src/query/windows.ts windowStartsMs, without its array.
    for (let start = (Math.floor((eventMs - sizeMs) / hopMs) + 1) * hopMs; start <= eventMs; start += hopMs) {
      if (!this.historical && start + sizeMs <= this.watermarkMs) {
        late = true;
        continue;
      }
      this.include(leaf.get(start) ?? this.create(leaf, start, start), member);
    }
    if (late) this.lateRows++;
    if (!this.historical && eventMs > this.watermarkMs) {
      this.watermarkMs = eventMs;
      if (this.windows.due(eventMs)) this.closeDue(out);
    }
  }

  private include(group: Group, member: Member | undefined): void {
    if (member !== undefined) {
      group.members?.set(member.identity, member.row);
      member.groups.push(group);
    }
    if (!group.stale) {
      const accumulators = this.outputOf(group).accumulators;
      for (let s = 0; s < accumulators.length; s++) {
        accumulators[s]!.add(this.firstArguments[s] as Value, this.secondArguments[s] as Value);
      }
    }
    if (!group.dirty && !this.historical) {
      group.dirty = true;
      this.dirtyGroups.push(group);
    }
  }

  /** A new group for the key values in keyScratch, with `windowStartMs` as its window key (NaN: none). */
  private create(leaf: Map<unknown, Group>, key: unknown, windowStartMs: number): Group {
    this.budget.addGroup();
    const plan = this.plan;
    const keyValues: Value[] = this.keyScratch.slice(0, plan.plainKeys.length);
    const windowed = plan.window !== undefined;
    if (windowed) keyValues.push(windowStartMs);
    const group: Group = {
      keyValues,
      output: undefined,
      windowEndMs: windowed ? windowStartMs + (plan.window?.sizeMs ?? 0) : Infinity,
      members: this.tableInput ? new Map() : undefined,
      dirty: false,
      stale: false,
      closed: false,
      emitted: undefined,
      summary: undefined,
    };
    leaf.set(key, group);
    this.groups.add(group);
    // Bounded, windows never close: nothing waits for their ends.
    if (windowed && !this.historical) this.windows.add(group.windowEndMs, group);
    return group;
  }

  /** The group's key row and accumulators, made the first time they are needed. */
  private outputOf(group: Group): GroupOutput {
    if (group.output !== undefined) return group.output;
    const plan = this.plan;
    group.output = { view: { keys: this.keyRowOf(group), aggregates: new Array<Value>(plan.slots.length).fill(null) }, accumulators: createAccumulators(plan) };
    return group.output;
  }

  /** The group's key values by name; a window's start as its ISO text. */
  private keyRowOf(group: Group): Record<string, Value> {
    const plan = this.plan;
    const keyRow: Record<string, Value> = {};
    const plainKeys = plan.plainKeys.length;
    for (let index = 0; index < plainKeys; index++) keyRow[plan.keyNames[index] as string] = group.keyValues[index] as Value;
    if (plan.window !== undefined) keyRow[plan.keyNames[plainKeys] as string] = isoString(group.keyValues[plainKeys] as number);
    return keyRow;
  }

  /** Takes an input row of a table out of its groups, which are rebuilt when next read. */
  private retract(identity: unknown): void {
    const groups = this.memberships.get(identity);
    if (groups === undefined) return;
    this.memberships.delete(identity);
    this.budget.releaseRows(1);
    for (const group of groups) {
      if (group.closed) continue;
      group.members?.delete(identity);
      group.stale = true;
      if (!group.dirty && !this.historical) {
        group.dirty = true;
        this.dirtyGroups.push(group);
      }
    }
  }

  /** Emits the groups the push changed, in the order they first changed. */
  private flush(out: Delta[]): Delta[] {
    const keyed = this.plan.keyNames.length > 0;
    for (const group of this.dirtyGroups) {
      if (group.closed || !group.dirty) continue;
      group.dirty = false;
      if (keyed && group.members !== undefined && group.members.size === 0) {
        if (group.emitted !== undefined) out.push({ action: 'remove', key: group, data: group.emitted });
        this.discard(group);
      } else {
        this.emit(group, out);
      }
    }
    this.dirtyGroups.length = 0;
    return out;
  }

  private emit(group: Group, out: Delta[]): void {
    const data = this.outputRow(group);
    const old = group.emitted;
    if (old === undefined) out.push({ action: 'add', key: group, data });
    else if (!rowsEqual(old, data, this.plan.itemNames)) out.push({ action: 'update', key: group, data, old });
    else return;
    group.emitted = data;
  }

  /** Closes the windows the watermark has reached: their pending change, then their remove. */
  private closeDue(out: Delta[]): void {
    for (const group of this.windows.takeDue(this.watermarkMs)) {
      if (group.closed) continue;
      if (group.dirty) {
        group.dirty = false;
        this.emit(group, out);
      }
      if (group.emitted !== undefined) out.push({ action: 'remove', key: group, data: group.emitted });
      this.discard(group);
    }
  }

  /** Forgets a group; input rows of a table that belonged to no other group are released. */
  private discard(group: Group): void {
    group.closed = true;
    this.index.delete(group);
    this.groups.delete(group);
    this.budget.releaseGroup();
    for (const identity of group.members?.keys() ?? []) {
      const groups = this.memberships.get(identity);
      if (groups === undefined) continue;
      const remaining = groups.filter((other) => other !== group);
      if (remaining.length > 0) {
        this.memberships.set(identity, remaining);
      } else {
        this.memberships.delete(identity);
        this.budget.releaseRows(1);
      }
    }
  }

  private outputRow(group: Group): OutputRow {
    const view = group.output === undefined ? this.summaryView(group) : this.accumulatedView(group, group.output);
    const plan = this.plan;
    const row: OutputRow = {};
    for (let i = 0; i < plan.items.length; i++) row[plan.itemNames[i] as string] = (plan.items[i] as (view: unknown) => Value)(view);
    return row;
  }

  private accumulatedView(group: Group, output: GroupOutput): GroupView {
    if (group.stale) this.rebuild(group, output.accumulators);
    if (group.summary !== undefined) this.foldSummary(group, group.summary, output.accumulators);
    const aggregates = output.view.aggregates;
    for (let s = 0; s < aggregates.length; s++) aggregates[s] = output.accumulators[s]!.result();
    return output.view;
  }

  /**
   * A group placed from columns alone (no accumulators of its own): its aggregates are its
   * summary merged into the grouping's scratch accumulators, each reset first. The summary
   * stays: a late subscriber's snapshot may read the group before the end does.
   */
  private summaryView(group: Group): GroupView {
    assert(!group.stale, 'a group without accumulators is stale');
    const slots = this.plan.slots;
    const scratch = (this.scratchAccumulators ??= createAccumulators(this.plan));
    const summary = group.summary;
    const aggregates = new Array<Value>(slots.length);
    for (let s = 0; s < slots.length; s++) {
      const slot = slots[s]!;
      const accumulator = scratch[s]!;
      accumulator.reset();
      const at = s * NUMBER_SUMMARY_WIDTH;
      if (summary !== undefined && summarizes(slot.name, slot.argCount) && summary[at]! > 0) accumulator.merge(summaryAccumulator(slot.name, slot.argCount, summary, at));
      aggregates[s] = accumulator.result();
    }
    return { keys: this.keyRowOf(group), aggregates };
  }

  /** Merges what columns summarized into the group's accumulators, once. */
  private foldSummary(group: Group, summary: Float64Array, accumulators: Accumulator[]): void {
    const slots = this.plan.slots;
    for (let s = 0; s < slots.length; s++) {
      const slot = slots[s]!;
      const at = s * NUMBER_SUMMARY_WIDTH;
      if (summarizes(slot.name, slot.argCount) && summary[at]! > 0) accumulators[s]!.merge(summaryAccumulator(slot.name, slot.argCount, summary, at));
    }
    group.summary = undefined;
  }

  /** Recomputes a group's aggregates from its remaining input rows after a retraction. */
  private rebuild(group: Group, accumulators: Accumulator[]): void {
    for (const accumulator of accumulators) accumulator.reset();
    const slots = this.plan.slots;
    for (const row of group.members?.values() ?? []) {
      for (let s = 0; s < slots.length; s++) {
        const slot = slots[s] as GroupingPlan['slots'][number];
        accumulators[s]!.add(slot.first(row), slot.second(row));
      }
    }
    group.stale = false;
  }
}

/**
 * A key's last level of groups, its groups by window number in an array from the first
 * window kept, and the window its rows last went into. The array stays at most
 * DENSE_SLOTS_PER_GROUP slots per group it holds (plus DENSE_SLOTS_FREE): a window further
 * out is not kept there, and the leaf's Map by start finds it.
 */
class CachedLeaf {
  private byWindow: Array<Group | undefined> = [];
  private firstWindow = 0;
  private kept = 0;
  window = NaN;
  group: Group | undefined = undefined;

  constructor(readonly leaf: Map<unknown, Group>) {}

  windowAt(window: number): Group | undefined {
    const at = window - this.firstWindow;
    return at >= 0 && at < this.byWindow.length ? this.byWindow[at] : undefined;
  }

  keep(window: number, group: Group): void {
    const windows = this.byWindow;
    const first = windows.length === 0 ? window : Math.min(this.firstWindow, window);
    const last = windows.length === 0 ? window : Math.max(this.firstWindow + windows.length - 1, window);
    if (last - first + 1 > DENSE_SLOTS_FREE + DENSE_SLOTS_PER_GROUP * (this.kept + 1)) return;
    if (windows.length === 0) this.firstWindow = window;
    else if (window < this.firstWindow) {
      this.byWindow = new Array<Group | undefined>(this.firstWindow - window).fill(undefined).concat(windows);
      this.firstWindow = window;
    } else {
      while (this.firstWindow + windows.length <= window) windows.push(undefined);
    }
    this.byWindow[window - this.firstWindow] = group;
    this.kept += 1;
  }
}

/** 64 KiB: the summaries of ~450 groups of three aggregates. */
const SUMMARY_SLAB_BYTES = 64 * 1024;

/** Bounds of a CachedLeaf's array: its slots per group held, and slots beyond those. */
const DENSE_SLOTS_PER_GROUP = 8;
const DENSE_SLOTS_FREE = 64;

/** How an aggregate takes a column batch (placeColumns): added value by value, rows counted, numbers summarized. */
const ADDED = 0;
const ROWS = 1;
const NUMBERS = 2;

type NumberView = Extract<ColumnView, { kind: 'values' }> & { values: Float64Array };

/**
 * The leaf of each row's plain keys, for one batch: by code when the one key is coded (a
 * dictionary column), else looked up. keyScratch holds the row's keys after of() or keysOf().
 */
class LeafCache {
  private readonly byCode: Array<CachedLeaf | undefined> | undefined;

  constructor(
    private readonly index: GroupIndex,
    /** Kept by the grouping from batch to batch. */
    private readonly looked: Map<Map<unknown, Group>, CachedLeaf>,
    private readonly views: readonly ColumnView[],
    private readonly batch: ColumnBatch,
    private readonly keys: Value[],
  ) {
    const only = views.length === 1 ? views[0] : undefined;
    this.byCode = only?.kind === 'codes' ? new Array<CachedLeaf | undefined>(only.distinct.length) : undefined;
  }

  of(row: number): CachedLeaf {
    if (this.byCode !== undefined) {
      const code = (this.views[0] as Extract<ColumnView, { kind: 'codes' }>).codes[row]!;
      const cached = this.byCode[code];
      if (cached !== undefined) return cached;
      return (this.byCode[code] = this.lookUp(row));
    }
    return this.lookUp(row);
  }

  /** Puts the row's plain keys into keyScratch (a new group takes them from there). */
  keysOf(row: number): void {
    for (let k = 0; k < this.views.length; k++) this.keys[k] = viewValue(this.views[k]!, this.batch, row);
  }

  private lookUp(row: number): CachedLeaf {
    this.keysOf(row);
    const leaf = this.index.leaf(this.keys);
    let cached = this.looked.get(leaf);
    if (cached === undefined) this.looked.set(leaf, (cached = new CachedLeaf(leaf)));
    return cached;
  }
}

/** One row's value in a column view (types.ts). */
function viewValue(view: ColumnView, batch: ColumnBatch, row: number): Value {
  switch (view.kind) {
    case 'codes':
      return view.distinct[view.codes[row]!]!;
    case 'values':
      return view.values[row]!;
    default:
      return isoString(batch.timestamps[row]!);
  }
}

interface Member {
  readonly identity: unknown;
  readonly row: unknown;
  readonly groups: Group[];
}
