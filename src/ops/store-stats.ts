// What a node stores, for status views: records per stream and partition (a key scan of
// each persisted stream) and the size of its database files. Counting is not free (a
// million keys take about a second), so a count is kept for `ttlMs` and callers that ask
// meanwhile share it; nothing is counted unless someone asks.

import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface StoreStats {
  records: number;
  bytes: number;
  /** stream key → partition → records this node holds. */
  partitions: Record<string, Record<string, number>>;
  countedAtMs: number;
  /** The data folder's filesystem and whether the node takes writes, as of the answer (not the count). */
  disk?: DiskReading;
}

export interface DiskReading {
  freeBytes: number | null;
  totalBytes: number | null;
  writable: boolean;
  reason: string | null;
}

export interface StoreStatsSources {
  /** The folder of the node's database files. */
  databaseDir: string;
  streams(): ReadonlyArray<{ key: string; repo: 'ssr' | 'tsr' }>;
  countByPartition(repo: 'ssr' | 'tsr', stream: string): Promise<Map<number, number>>;
  /** Read at each answer: disk space changes faster than counts are kept. */
  disk?: () => DiskReading;
  clock?: () => number;
}

export class StoreStatsCache {
  private last: StoreStats | undefined;
  private running: Promise<StoreStats> | undefined;

  constructor(
    private readonly sources: StoreStatsSources,
    private readonly ttlMs: number,
  ) {}

  get(): Promise<StoreStats> {
    const disk = this.sources.disk;
    return disk === undefined ? this.counted() : this.counted().then((stats) => ({ ...stats, disk: disk() }));
  }

  private counted(): Promise<StoreStats> {
    const now = (this.sources.clock ?? Date.now)();
    if (this.last !== undefined && now - this.last.countedAtMs < this.ttlMs) return Promise.resolve(this.last);
    this.running ??= countStore(this.sources).then(
      (stats) => {
        this.last = stats;
        this.running = undefined;
        return stats;
      },
      (error: unknown) => {
        this.running = undefined;
        throw error;
      },
    );
    return this.running;
  }
}

async function countStore(sources: StoreStatsSources): Promise<StoreStats> {
  const partitions: StoreStats['partitions'] = {};
  let records = 0;
  for (const stream of sources.streams()) {
    const counts = await sources.countByPartition(stream.repo, stream.key);
    if (counts.size === 0) continue;
    const entry: Record<string, number> = {};
    for (const [partition, count] of counts) {
      entry[String(partition)] = count;
      records += count;
    }
    partitions[stream.key] = entry;
  }
  return { records, bytes: await folderBytes(sources.databaseDir), partitions, countedAtMs: (sources.clock ?? Date.now)() };
}

/** Total size of the files in a folder (LevelDB keeps its files flat). */
export async function folderBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const info = await stat(join(dir, name)).catch(() => undefined);
    if (info?.isFile()) total += info.size;
  }
  return total;
}
