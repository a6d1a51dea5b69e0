// Long computations hand the event loop back now and then (issue 15, item 4), so that one
// large search or query cannot hold every other request (and the node's heartbeats) for
// longer than a slice. A loop asks `due()` cheaply as it goes and awaits `pause()` when it
// is; the other requests run in between.

import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Work done in one go before the event loop gets a turn. */
export const SLICE_MS = 20;

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
}
