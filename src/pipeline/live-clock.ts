// How a live grouping follows the node's clock (docs/query-language.md, "Live windows"):
// when its changes may go out, and how far its watermark gets while no row arrives. Pure:
// the wall-clock time is what push() and tick() are given.
//
// - Emission: the changes of many pushes are coalesced, and go out at most once per
//   `emitIntervalMs` of wall-clock time: the first change after a quiet spell at once (in
//   the push that made it), later ones at the first push or tick an interval after the
//   last emission. Undefined: every push and tick emits (tests of the operators' changes).
// - Idle watermark: event time moves on with the node's clock from the watermark the last
//   rows left, once IDLE_GRACE_MS has passed without a row. Windows then close on the
//   node's clock when no event comes, whatever the offset between event time and the
//   clock (a replay of 2017's payloads moves at the clock's pace from 2017).

import { assert } from '../lib/assert.js';

/** Quiet wall-clock time before the watermark moves with the clock: a payload a little late over the network still counts. */
export const IDLE_GRACE_MS = 1_000;

export class LiveClock {
  private lastEmitMs = -Infinity;
  private lastArrivalMs: number | undefined;
  private arrivalWatermarkMs = -Infinity;

  constructor(private readonly emitIntervalMs: number | undefined) {
    assert(emitIntervalMs === undefined || (Number.isFinite(emitIntervalMs) && emitIntervalMs >= 0), `emit interval ${emitIntervalMs} ms`);
  }

  /** Rows arrived at `nowMs`, leaving the watermark at `watermarkMs`. */
  arrived(nowMs: number, watermarkMs: number): void {
    this.lastArrivalMs = nowMs;
    this.arrivalWatermarkMs = watermarkMs;
  }

  /** The watermark the clock gives at `nowMs`: -Infinity before any row, the last rows' before the grace is over. */
  idleWatermark(nowMs: number): number {
    if (this.lastArrivalMs === undefined || this.arrivalWatermarkMs === -Infinity) return -Infinity;
    return this.arrivalWatermarkMs + Math.max(0, nowMs - this.lastArrivalMs - IDLE_GRACE_MS);
  }

  /** Whether changes may go out at `nowMs`. */
  due(nowMs: number): boolean {
    return this.emitIntervalMs === undefined || nowMs - this.lastEmitMs >= this.emitIntervalMs;
  }

  /** Changes went out at `nowMs`. */
  emitted(nowMs: number): void {
    this.lastEmitMs = nowMs;
  }
}
