// Where paned windows (paned-windows.ts) keep the aggregates of their panes and windows: a
// state per pane, per front entry of a window's queue and per running aggregate, named by a
// number. Live, a key has about a payload per pane, so a pane's objects (an array and an
// accumulator per aggregate) were most of what a row cost to make, to keep and to collect,
// and reading a window merged thousands of them scattered over the heap.
//
// - NumberStates: when every aggregate is count, sum or avg (their state is a count and a
//   total), the states are two numbers per aggregate side by side in Float64Arrays of
//   CHUNK_STATES states each (more are added as needed; none is copied). They add, merge and give results exactly as the accumulators of
//   aggregates.ts do (the same operations on the same doubles, in the same order).
// - AccumulatorStates: any other select keeps an Accumulator[] per state.
// States given back are taken again first, so either holds as many states as were held at
// once at most (the panes a grouping holds are bounded by groupsMax).

import { assert } from '../lib/assert.js';
import type { Value } from '../expression/index.js';
import type { Accumulator } from './aggregates.js';
import { createAccumulators, type GroupingPlan } from './grouping-plan.js';

export interface AggregateStates {
  /** A state with no values in it. */
  take(): number;
  /** A state no longer used, to be taken again. */
  give(state: number): void;
  /** Back to no values. */
  reset(state: number): void;
  /** One row's argument values for aggregate `slot`. */
  add(state: number, slot: number, first: Value, second: Value): void;
  /** Adds what `from` holds to `into`, as Accumulator.merge does. */
  merge(into: number, from: number): void;
  /** Each aggregate's value into `out`, by slot. */
  read(state: number, out: Value[]): void;
}

export function aggregateStates(plan: GroupingPlan): AggregateStates {
  const kinds = plan.slots.map((slot) => numberKind(slot.name, slot.argCount));
  if (kinds.every((kind) => kind !== undefined)) return new NumberStates(Uint8Array.from(kinds as number[]));
  return new AccumulatorStates(plan);
}

/** How a count, sum or avg reads its state: rows counted, non-null values counted, numbers summed, numbers averaged. */
const COUNT_ROWS = 0;
const COUNT_VALUES = 1;
const SUM = 2;
const AVERAGE = 3;

function numberKind(name: string, argCount: number): number | undefined {
  if (name === 'count') return argCount === 0 ? COUNT_ROWS : argCount === 1 ? COUNT_VALUES : undefined;
  if (argCount !== 1) return undefined;
  return name === 'sum' ? SUM : name === 'avg' ? AVERAGE : undefined;
}

/** States per chunk of NumberStates (a power of two): a new chunk is 128 KiB for two aggregates. */
const CHUNK_BITS = 12;
const CHUNK_STATES = 1 << CHUNK_BITS;

/** Per aggregate: its count at 2 * slot, its total at 2 * slot + 1, of the state's place in its chunk. */
class NumberStates implements AggregateStates {
  private readonly width: number;
  private readonly chunks: Float64Array[] = [];
  private used = 0;
  private readonly free: number[] = [];

  constructor(private readonly kinds: Uint8Array) {
    this.width = 2 * kinds.length;
  }

  take(): number {
    const given = this.free.pop();
    if (given !== undefined) {
      this.reset(given);
      return given;
    }
    if (this.used === this.chunks.length * CHUNK_STATES) this.chunks.push(new Float64Array(CHUNK_STATES * this.width));
    // Never used: zero already.
    return this.used++;
  }

  give(state: number): void {
    assert(state >= 0 && state < this.used, `aggregate state ${state} given back, of ${this.used}`);
    this.free.push(state);
  }

  reset(state: number): void {
    const at = (state & (CHUNK_STATES - 1)) * this.width;
    this.chunks[state >>> CHUNK_BITS]!.fill(0, at, at + this.width);
  }

  add(state: number, slot: number, first: Value): void {
    const values = this.chunks[state >>> CHUNK_BITS]!;
    const at = (state & (CHUNK_STATES - 1)) * this.width + 2 * slot;
    const kind = this.kinds[slot]!;
    if (kind === COUNT_ROWS) values[at]! += 1;
    else if (kind === COUNT_VALUES) {
      if (first !== null) values[at]! += 1;
    } else {
      // As SumOrAverage: a long beyond 2^53 (BigInt) is summed as a double; other values are skipped.
      const number = typeof first === 'bigint' ? Number(first) : first;
      if (typeof number !== 'number') return;
      values[at + 1]! += number;
      values[at]! += 1;
    }
  }

  merge(into: number, from: number): void {
    const target = this.chunks[into >>> CHUNK_BITS]!;
    const source = this.chunks[from >>> CHUNK_BITS]!;
    const to = (into & (CHUNK_STATES - 1)) * this.width;
    const at = (from & (CHUNK_STATES - 1)) * this.width;
    for (let i = 0; i < this.width; i++) target[to + i]! += source[at + i]!;
  }

  read(state: number, out: Value[]): void {
    const values = this.chunks[state >>> CHUNK_BITS]!;
    const at = (state & (CHUNK_STATES - 1)) * this.width;
    for (let slot = 0; slot < this.kinds.length; slot++) {
      const count = values[at + 2 * slot]!;
      const total = values[at + 2 * slot + 1]!;
      const kind = this.kinds[slot]!;
      if (kind === COUNT_ROWS || kind === COUNT_VALUES) out[slot] = count;
      else if (count === 0) out[slot] = null;
      else out[slot] = kind === AVERAGE ? total / count : total;
    }
  }
}

class AccumulatorStates implements AggregateStates {
  private readonly states: Accumulator[][] = [];
  private readonly free: number[] = [];

  constructor(private readonly plan: GroupingPlan) {}

  take(): number {
    const given = this.free.pop();
    if (given !== undefined) {
      this.reset(given);
      return given;
    }
    this.states.push(createAccumulators(this.plan));
    return this.states.length - 1;
  }

  give(state: number): void {
    assert(state >= 0 && state < this.states.length, `aggregate state ${state} given back, of ${this.states.length}`);
    this.free.push(state);
  }

  reset(state: number): void {
    for (const accumulator of this.states[state]!) accumulator.reset();
  }

  add(state: number, slot: number, first: Value, second: Value): void {
    this.states[state]![slot]!.add(first, second);
  }

  merge(into: number, from: number): void {
    const target = this.states[into]!;
    const source = this.states[from]!;
    for (let slot = 0; slot < target.length; slot++) target[slot]!.merge(source[slot]!);
  }

  read(state: number, out: Value[]): void {
    const accumulators = this.states[state]!;
    for (let slot = 0; slot < accumulators.length; slot++) out[slot] = accumulators[slot]!.result();
  }
}
