// What one node stores of a stream in one repository, for the `ssr` and `tsr` monitoring
// services: records, payload bytes, the partitions held, the oldest and
// newest stored timestamps. Counted by a scan of the stream's records on this node (keys
// and values), which costs about a second per million records; an answer is kept until the
// stream's records change here, at most `cacheMs`, so that polling an idle stream does not
// rescan it.

import type { Repository } from '../storage/repository.js';
import { canonicalJson } from '../lib/json.js';

export interface StoredStreamStats {
  records: number;
  /** UTF-8 bytes of the stored payloads (canonical JSON). */
  payloadBytes: number;
  partitions: number[];
  /** ISO timestamps of the oldest and newest stored payloads; null without any. */
  oldest: string | null;
  newest: string | null;
}

export class RepositoryStats {
  private readonly cache = new Map<string, { atMs: number; stats: Promise<StoredStreamStats> }>();

  constructor(
    private readonly repository: Repository,
    private readonly cacheMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The stream's records changed here (a write, a transfer, a drop): count again when next asked. */
  invalidate(stream: string): void {
    this.cache.delete(stream);
  }

  of(stream: string): Promise<StoredStreamStats> {
    const cached = this.cache.get(stream);
    if (cached !== undefined && this.nowMs() - cached.atMs < this.cacheMs) return cached.stats;
    const stats = count(this.repository, stream);
    this.cache.set(stream, { atMs: this.nowMs(), stats });
    stats.catch(() => this.cache.get(stream)?.stats === stats && this.cache.delete(stream));
    // Streams that are gone must not pile up in the cache.
    for (const [key, entry] of this.cache) if (this.nowMs() - entry.atMs >= this.cacheMs) this.cache.delete(key);
    return stats;
  }
}

async function count(repository: Repository, stream: string): Promise<StoredStreamStats> {
  let records = 0;
  let payloadBytes = 0;
  let oldest = Infinity;
  let newest = -Infinity;
  const partitions = new Set<number>();
  for await (const record of repository.scan(stream)) {
    records += 1;
    payloadBytes += Buffer.byteLength(canonicalJson(record.payload), 'utf8');
    partitions.add(record.partition);
    if (record.timestamp < oldest) oldest = record.timestamp;
    if (record.timestamp > newest) newest = record.timestamp;
  }
  return {
    records,
    payloadBytes,
    partitions: [...partitions].sort((a, b) => a - b),
    oldest: records === 0 ? null : new Date(oldest).toISOString(),
    newest: records === 0 ? null : new Date(newest).toISOString(),
  };
}
