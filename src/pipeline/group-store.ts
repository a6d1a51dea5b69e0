// Where a grouping stage keeps its groups: found by key through nested Maps (one level per
// key, so a row's lookup builds no string), and, for windows, listed by the end of their
// window so that closing the windows a watermark has passed touches only those.

import type { Value } from '../expression/index.js';
import type { Accumulator } from './aggregates.js';
import type { GroupView } from './scopes.js';
import type { OutputRow } from './types.js';
import { mapKey, orderValues } from './values.js';

export interface Group {
  /** The key values as rows gave them, the window key as its start in epoch milliseconds. */
  readonly keyValues: readonly Value[];
  /**
   * Made when first needed (grouping.ts, outputOf): a historical grouping fed columns needs
   * it only for the group's row at the end, and until then its objects would be copied by
   * every young collection of a read that holds tens of thousands of groups.
   */
  output: GroupOutput | undefined;
  /** The end of the group's window; Infinity without a window. */
  readonly windowEndMs: number;
  /** Input rows by their key, when the input is a table whose rows may change or go. */
  readonly members: Map<unknown, unknown> | undefined;
  /** Changed since last emitted. */
  dirty: boolean;
  /** A member left: the accumulators must be rebuilt from the members before reading. */
  stale: boolean;
  /** Its window closed (or it emptied): gone from the store. */
  closed: boolean;
  /** The row last emitted for it, which an update replaces and a remove names. */
  emitted: OutputRow | undefined;
  /** Numbers placed from columns, not yet in the accumulators (grouping.ts, placeColumns). */
  summary: Float64Array | undefined;
}

/** What a group's row is made from: its key values by name and its aggregates' accumulators. */
export interface GroupOutput {
  readonly view: GroupView;
  readonly accumulators: Accumulator[];
}

type Level = Map<unknown, unknown>;

/** Groups by key, one Map level per key; the window start is the last level's key. */
export class GroupIndex {
  private readonly root: Level = new Map();

  constructor(private readonly depth: number) {}

  /** The last level's Map for the first depth - 1 key values, created on the way. */
  leaf(keys: readonly Value[]): Map<unknown, Group> {
    let level = this.root;
    for (let i = 0; i < this.depth - 1; i++) {
      const key = mapKey(keys[i]);
      let next = level.get(key) as Level | undefined;
      if (next === undefined) {
        next = new Map();
        level.set(key, next);
      }
      level = next;
    }
    return level as Map<unknown, Group>;
  }

  /** Removes a group, and the levels it leaves empty so that old keys do not pile up. */
  delete(group: Group): void {
    const path: Level[] = [];
    let level = this.root;
    for (let i = 0; i < this.depth - 1; i++) {
      path.push(level);
      const next = level.get(mapKey(group.keyValues[i])) as Level | undefined;
      if (next === undefined) return;
      level = next;
    }
    level.delete(mapKey(group.keyValues[this.depth - 1]));
    for (let i = path.length - 1; i >= 0 && level.size === 0; i--) {
      const parent = path[i] as Level;
      parent.delete(mapKey(group.keyValues[i]));
      level = parent;
    }
  }
}

/** Groups by key values, for listing a table by key. */
export function compareGroups(a: Group, b: Group): number {
  for (let i = 0; i < a.keyValues.length; i++) {
    const order = orderValues(a.keyValues[i] as Value, b.keyValues[i] as Value);
    if (order !== 0) return order;
  }
  return 0;
}

/** Open windows (groups, or a key's next window of panes) by window end, ends in ascending order. */
export class WindowEnds<T = Group> {
  private readonly ends: number[] = [];
  private readonly groupsByEnd = new Map<number, T[]>();

  add(end: number, group: T): void {
    const groups = this.groupsByEnd.get(end);
    if (groups !== undefined) {
      groups.push(group);
      return;
    }
    this.groupsByEnd.set(end, [group]);
    // Ends are nearly always new maxima (event time moves forward): search from the back.
    let index = this.ends.length;
    while (index > 0 && (this.ends[index - 1] as number) > end) index--;
    this.ends.splice(index, 0, end);
  }

  /** The latest end of an open window, or -Infinity. */
  latestEnd(): number {
    return this.ends.length === 0 ? -Infinity : (this.ends[this.ends.length - 1] as number);
  }

  /** Whether a window ends at or before `watermarkMs`. */
  due(watermarkMs: number): boolean {
    return this.ends.length > 0 && (this.ends[0] as number) <= watermarkMs;
  }

  /** Takes out the groups of windows ending at or before `watermarkMs`, earliest end first. */
  takeDue(watermarkMs: number): T[] {
    const due: T[] = [];
    while (this.due(watermarkMs)) {
      const end = this.ends.shift() as number;
      for (const group of this.groupsByEnd.get(end) ?? []) due.push(group);
      this.groupsByEnd.delete(end);
    }
    return due;
  }
}
