// What other nodes store, for the operators' views (GET /_cat/*): StoreStatsRead asks a
// node for its counts, answered from its StoreStatsCache.

import type { PeerEndpoint } from '../peer/endpoint.js';
import type { StoreStats, StoreStatsCache } from './store-stats.js';

export function serveStoreStats(endpoint: PeerEndpoint, stats: Pick<StoreStatsCache, 'get'>): void {
  endpoint.handle('StoreStatsRead', () => stats.get());
}

export function remoteStoreStats(endpoint: PeerEndpoint, deadlineMs: number): (node: string) => Promise<StoreStats> {
  return (node) => endpoint.call(node, 'StoreStatsRead', {}, { deadlineMs });
}
