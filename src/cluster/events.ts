// Cluster events (spec, "Events"): one discriminated union, offered to each subscriber as
// an async iterable in the order published (as a nats.js subscription is). A subscriber that
// falls more than `queueEventsMax` behind is dropped rather than buffering without end.

import { assert } from '../lib/assert.js';
import type { ClusterDocument, NodeState } from './node-table.js';

export type ClusterEvent =
  | { type: 'CLUSTER_STATE'; state: ClusterDocument }
  | { type: 'NODE_STATE_UPDATED'; node: string; state: NodeState }
  | { type: 'TENANT_ADDED'; tenant: { name: string } };

export interface Subscription extends AsyncIterable<ClusterEvent> {
  /** Ends the iteration; idempotent. */
  close(): void;
}

export class ClusterEventBus {
  private readonly subscribers = new Set<Subscriber>();

  constructor(private readonly queueEventsMax = 1_000) {
    assert(Number.isInteger(queueEventsMax) && queueEventsMax >= 1, `queueEventsMax ${queueEventsMax}`);
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  publish(event: ClusterEvent): void {
    for (const subscriber of this.subscribers) {
      if (!subscriber.push(event, this.queueEventsMax)) this.subscribers.delete(subscriber);
    }
  }

  subscribe(): Subscription {
    const subscriber = new Subscriber(() => this.subscribers.delete(subscriber));
    assert(!this.subscribers.has(subscriber), 'a subscriber added twice');
    this.subscribers.add(subscriber);
    return subscriber;
  }
}

class Subscriber implements Subscription {
  private readonly queue: ClusterEvent[] = [];
  private waiting: ((result: IteratorResult<ClusterEvent>) => void) | undefined;
  private closed = false;

  constructor(private readonly onClose: () => void) {}

  /** False when the subscriber is too far behind and has been closed. */
  push(event: ClusterEvent, queueEventsMax: number): boolean {
    if (this.closed) return false;
    // A reader waits only when nothing is queued for it: events reach it in the order published.
    assert(this.waiting === undefined || this.queue.length === 0, `a waiting subscriber with ${this.queue.length} events queued`);
    if (this.waiting !== undefined) {
      const resolve = this.waiting;
      this.waiting = undefined;
      resolve({ value: event, done: false });
      return true;
    }
    if (this.queue.length >= queueEventsMax) {
      this.close();
      return false;
    }
    this.queue.push(event);
    assert(this.queue.length <= queueEventsMax, `${this.queue.length} events queued for a subscriber, above ${queueEventsMax}`);
    return true;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    assert(this.waiting === undefined || this.queue.length === 0, 'a closed subscriber waiting with events queued');
    this.waiting?.({ value: undefined, done: true });
    this.waiting = undefined;
  }

  [Symbol.asyncIterator](): AsyncIterator<ClusterEvent> {
    return {
      next: () => {
        const event = this.queue.shift();
        if (event !== undefined) return Promise.resolve({ value: event, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        // One read waits at a time (for await): a second would take the first one's event.
        assert(this.waiting === undefined, 'two reads of one subscriber wait at once');
        return new Promise((resolve) => (this.waiting = resolve));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
