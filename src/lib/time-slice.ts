// Long computations hand the event loop back now and then, so that one large search or query
// cannot hold every other request (and the node's heartbeats) for longer than a slice. A loop
// asks `due()` cheaply as it goes and awaits `pause()` when it is; the other requests run in
// between.

import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Work done in one go before the event loop gets a turn. */
export const SLICE_MS = 20;
/** Iterations of forEach between two looks at the clock. */
const CLOCK_EVERY = 1_024;

export class TimeSlice {
  private sliceEnd: number;

  constructor(private readonly sliceMs = SLICE_MS) {
    this.sliceEnd = performance.now() + sliceMs;
  }

  /** Whether this slice is used up (a loop calls it every so many iterations). */
  due(): boolean {
    return performance.now() >= this.sliceEnd;
  }

  /** Gives the event loop a turn if the slice is used up; a new slice starts after. */
  async pause(): Promise<void> {
    if (!this.due()) return;
    await nextTurn();
    this.sliceEnd = performance.now() + this.sliceMs;
  }

  /**
   * Calls `visit` for each position in [from, to), looking at the clock every
   * `clockEvery` positions; when the slice is used up, the rest runs after the event loop
   * had a turn (the promise returned). undefined: every position was visited without a
   * turn, so a caller of many short loops awaits nothing.
   */
  forEach(from: number, to: number, visit: (at: number) => void, clockEvery = CLOCK_EVERY): Promise<void> | undefined {
    const stopped = this.visitUntilDue(from, to, visit, clockEvery);
    return stopped === to ? undefined : this.visitAfterTurns(stopped, to, visit, clockEvery);
  }

  private async visitAfterTurns(from: number, to: number, visit: (at: number) => void, clockEvery: number): Promise<void> {
    for (let at = from; at < to; ) {
      await this.pause();
      at = this.visitUntilDue(at, to, visit, clockEvery);
    }
  }

  /** Visits positions from `from` until `to` or a used-up slice; returns the first not visited. */
  private visitUntilDue(from: number, to: number, visit: (at: number) => void, clockEvery: number): number {
    for (let at = from; at < to; at++) {
      if (at > from && (at - from) % clockEvery === 0 && this.due()) return at;
      visit(at);
    }
    return to;
  }
}
