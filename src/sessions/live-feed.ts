// How payloads reach live queries: accepted payloads are also published to live queries on
// every node that has one reading that stream (docs/platform-decisions.md, "Live input"). The
// node that accepts a batch hands it to its own live queries (LiveFeed) and forwards it to each
// other node hosting one (LiveForwarder): one call in flight per node, so a node's batches
// arrive in the order it accepted them, and a bounded queue per node, so a slow or dead
// host costs dropped (and counted) payloads, never the ingest path's memory or latency.

import type { Logger } from '../lib/log.js';

export type Payload = Record<string, unknown>;
export type LiveListener = (payloads: readonly Payload[]) => void;

export class LiveFeed {
  private readonly listeners = new Map<string, Set<LiveListener>>();

  /** Listens to the payloads accepted for `stream` ("tenant/collection/name"). */
  subscribe(stream: string, listener: LiveListener): () => void {
    let set = this.listeners.get(stream);
    if (set === undefined) this.listeners.set(stream, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(stream) === set) this.listeners.delete(stream);
    };
  }

  /** Whether a live query of this node reads `stream`. */
  reads(stream: string): boolean {
    return this.listeners.has(stream);
  }

  deliver(stream: string, payloads: readonly Payload[]): void {
    const set = this.listeners.get(stream);
    if (set === undefined) return;
    for (const listener of set) listener(payloads);
  }
}

export interface ForwarderDeps {
  /** Other nodes hosting a live query that reads `stream`. */
  hostsReading(stream: string): readonly string[];
  send(node: string, stream: string, payloads: readonly Payload[]): Promise<void>;
  queuePayloadsMax: number;
  log: Logger;
}

interface Queue {
  batches: Array<{ stream: string; payloads: readonly Payload[] }>;
  payloads: number;
  sending: boolean;
}

export class LiveForwarder {
  private readonly queues = new Map<string, Queue>();
  /** Payloads dropped because a node's queue was full or the node could not be reached. */
  dropped = 0;

  constructor(private readonly deps: ForwarderDeps) {}

  /** Payloads waiting per node (monitoring). */
  queueDepths(): Array<{ node: string; queuedPayloads: number; sending: boolean }> {
    return [...this.queues].map(([node, queue]) => ({ node, queuedPayloads: queue.payloads, sending: queue.sending }));
  }

  forward(stream: string, payloads: readonly Payload[]): void {
    for (const node of this.deps.hostsReading(stream)) {
      let queue = this.queues.get(node);
      if (queue === undefined) this.queues.set(node, (queue = { batches: [], payloads: 0, sending: false }));
      if (queue.payloads + payloads.length > this.deps.queuePayloadsMax) {
        this.dropped += payloads.length;
        continue;
      }
      queue.batches.push({ stream, payloads });
      queue.payloads += payloads.length;
      if (!queue.sending) void this.drain(node, queue);
    }
  }

  private async drain(node: string, queue: Queue): Promise<void> {
    queue.sending = true;
    try {
      while (queue.batches.length > 0) {
        // Consecutive batches of one stream travel as one call.
        const first = queue.batches.shift()!;
        let payloads = [...first.payloads];
        while (queue.batches[0]?.stream === first.stream) payloads = payloads.concat(queue.batches.shift()!.payloads);
        queue.payloads -= payloads.length;
        try {
          await this.deps.send(node, first.stream, payloads);
        } catch (error) {
          this.dropped += payloads.length;
          this.deps.log.warn({ peer: node, stream: first.stream, payloads: payloads.length, err: (error as Error).message }, 'live payloads not delivered');
        }
      }
    } finally {
      queue.sending = false;
    }
  }
}

/** The logical streams of one session: rows written `into x`, read `from x`. */
export interface LogicalListener {
  rows(rows: readonly Payload[]): void;
  /** A bounded writer has written everything. */
  end(writerId: string): void;
}

export class LogicalBus {
  private readonly listeners = new Map<string, Set<LogicalListener>>();

  subscribe(name: string, listener: LogicalListener): () => void {
    let set = this.listeners.get(name);
    if (set === undefined) this.listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  publish(name: string, rows: readonly Payload[]): void {
    for (const listener of this.listeners.get(name) ?? []) listener.rows(rows);
  }

  end(name: string, writerId: string): void {
    for (const listener of this.listeners.get(name) ?? []) listener.end(writerId);
  }
}
