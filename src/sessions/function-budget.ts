// The CPU a query's session functions may use: a per-call limit stops one
// runaway call, but a function that takes 40 ms on every row held the event loop for the
// whole of a query. Each query gets a budget of milliseconds per second of wall time (a
// token bucket holding at most one second's worth); its runner charges every call and,
// when the bucket is empty, waits for it to fill before feeding more rows, so the query
// runs at that share of a core and the node keeps answering. Pure apart from the clock.

import { performance } from 'node:perf_hooks';

export class FunctionBudget {
  private tokensMs: number;
  private refilledAt: number;
  private calls = 0;

  constructor(
    /** Milliseconds of function time per second of wall time (config execution.functionBudgetMs). */
    readonly budgetMsPerSecond: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    if (!(budgetMsPerSecond > 0)) throw new Error(`functionBudgetMs must be positive, got ${budgetMsPerSecond}`);
    this.tokensMs = budgetMsPerSecond;
    this.refilledAt = clock();
  }

  /** Whether any function call was charged: a query without calls is never paced. */
  get charged(): boolean {
    return this.calls > 0;
  }

  /** Runs one call of a session function and charges the time it took. */
  charge<T>(call: () => T): T {
    this.refill();
    const started = this.clock();
    try {
      return call();
    } finally {
      this.calls += 1;
      this.tokensMs -= this.clock() - started;
    }
  }

  /** How long to wait before running more calls: 0 while the bucket holds time. */
  waitMs(): number {
    this.refill();
    return this.tokensMs >= 0 ? 0 : Math.ceil((-this.tokensMs * 1_000) / this.budgetMsPerSecond);
  }

  /** Adds the time earned since the last refill, up to one second's worth. */
  private refill(): void {
    const now = this.clock();
    this.tokensMs = Math.min(this.budgetMsPerSecond, this.tokensMs + ((now - this.refilledAt) * this.budgetMsPerSecond) / 1_000);
    this.refilledAt = now;
  }
}
