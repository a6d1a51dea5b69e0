// Cluster events (spec, "Events"): one discriminated union, delivered to subscribers in
// the order published. The SSE route of the cluster issue only serialises these.

import type { ClusterDocument, NodeState } from './node-table.js';

export type ClusterEvent =
  | { type: 'CLUSTER_STATE'; state: ClusterDocument }
  | { type: 'NODE_STATE_UPDATED'; node: string; state: NodeState }
  | { type: 'TENANT_ADDED'; tenant: { name: string } };

export type ClusterEventListener = (event: ClusterEvent) => void;

export class ClusterEventBus {
  private readonly listeners = new Set<ClusterEventListener>();

  publish(event: ClusterEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  subscribe(listener: ClusterEventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
