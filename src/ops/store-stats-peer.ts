// What other nodes store, for the operators' views (GET /_cat/*): StoreStatsRead asks a
// node for its counts, answered from its StoreStatsCache.

import { EMPTY_CODEC, bool, int, list, optionalInt, optionalMessage, optionalStr, str, type BodyCodec } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { StoreStats, StoreStatsCache } from './store-stats.js';

const storeStatsReply: BodyCodec<StoreStats> = {
  toProto: (value) => ({
    records: value.records,
    bytes: value.bytes,
    countedAtMs: value.countedAtMs,
    disk:
      value.disk === undefined
        ? null
        : { freeBytes: value.disk.freeBytes ?? undefined, totalBytes: value.disk.totalBytes ?? undefined, writable: value.disk.writable, reason: value.disk.reason ?? undefined },
    partitions: Object.entries(value.partitions).flatMap(([stream, counts]) =>
      Object.entries(counts).map(([partition, records]) => ({ stream, partition: Number(partition), records })),
    ),
  }),
  fromProto: (object) => {
    // Keyed by stream name, which may be any name a client chose: no prototype to collide with.
    const partitions: Record<string, Record<string, number>> = Object.create(null) as Record<string, Record<string, number>>;
    for (const entry of list(object, 'partitions', (item) => ({ stream: str(item, 'stream'), partition: int(item, 'partition'), records: int(item, 'records') }))) {
      partitions[entry.stream] ??= {};
      partitions[entry.stream]![String(entry.partition)] = entry.records;
    }
    const disk = optionalMessage(object, 'disk');
    const stats: StoreStats = { records: int(object, 'records'), bytes: int(object, 'bytes'), countedAtMs: int(object, 'countedAtMs'), partitions };
    if (disk !== undefined) {
      stats.disk = { freeBytes: optionalInt(disk, 'freeBytes') ?? null, totalBytes: optionalInt(disk, 'totalBytes') ?? null, writable: bool(disk, 'writable'), reason: optionalStr(disk, 'reason') ?? null };
    }
    return stats;
  },
};

export const STORE_STATS_READ = definePeerKind({ name: 'StoreStatsRead', request: EMPTY_CODEC, reply: { type: 'StoreStatsReply', codec: storeStatsReply } });

export function serveStoreStats(endpoint: PeerEndpoint, stats: Pick<StoreStatsCache, 'get'>): void {
  endpoint.handle(STORE_STATS_READ, () => stats.get());
}

export function remoteStoreStats(endpoint: PeerEndpoint, deadlineMs: number): (node: string) => Promise<StoreStats> {
  return (node) => endpoint.call(node, STORE_STATS_READ, {}, { deadlineMs });
}
