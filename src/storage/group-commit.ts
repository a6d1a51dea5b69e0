// Group commit: writes that arrive while a synced batch is in flight are merged into the
// next one, so concurrent requests share one fsync instead of queueing one each. Every
// caller's promise resolves only after the batch holding its operations is durable.

import { performance } from 'node:perf_hooks';
import { assert } from '../lib/assert.js';
import type { BatchOperation, Database } from './database.js';

interface Waiter {
  operations: BatchOperation[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class GroupCommitter {
  private queue: Waiter[] = [];
  private flushing = false;

  constructor(
    private readonly database: Database,
    /** Upper bound of operations merged into one batch. */
    private readonly batchOperationsMax = 50_000,
    /** Told how long each commit took, from queued to durable (metrics). */
    private readonly onCommitted?: (seconds: number) => void,
  ) {
    assert(Number.isInteger(batchOperationsMax) && batchOperationsMax > 0, `batchOperationsMax ${batchOperationsMax}`);
  }

  commit(operations: BatchOperation[]): Promise<void> {
    if (operations.length === 0) return Promise.resolve();
    const started = performance.now();
    const committed = new Promise<void>((resolve, reject) => {
      assert(this.flushing || this.queue.length === 0, () => `${this.queue.length} commits queued with no flush to take them`);
      this.queue.push({ operations, resolve, reject });
      if (!this.flushing) void this.flush();
    });
    const observe = this.onCommitted;
    return observe === undefined ? committed : committed.then(() => observe((performance.now() - started) / 1000));
  }

  private async flush(): Promise<void> {
    // One flush at a time: a second would sync batches out of the order they were queued in.
    assert(!this.flushing, 'a group commit flush started while another runs');
    this.flushing = true;
    while (this.queue.length > 0) {
      const group = this.takeGroup();
      try {
        await this.database.batch(
          group.flatMap((waiter) => waiter.operations),
          { sync: true },
        );
        for (const waiter of group) waiter.resolve();
      } catch (error) {
        for (const waiter of group) waiter.reject(error);
      }
    }
    this.flushing = false;
  }

  private takeGroup(): Waiter[] {
    let count = 0;
    let taken = 0;
    while (taken < this.queue.length && (taken === 0 || count + this.queue[taken]!.operations.length <= this.batchOperationsMax)) {
      count += this.queue[taken]!.operations.length;
      taken += 1;
    }
    // At least one waiter per group (the loop ends), and a group within the bound unless one caller's operations alone exceed it.
    assert(taken >= 1 && (count <= this.batchOperationsMax || taken === 1), `a group of ${taken} commits holds ${count} operations, above ${this.batchOperationsMax}`);
    return this.queue.splice(0, taken);
  }
}
