// The ssr full-text indexes of this node, one per (stream, partition) it holds. Nothing is
// loaded at start: a partition is indexed from LevelDB the first time a search touches it
// (so a node starts at once whatever it stores) and kept current by ingest from then on.
// A transfer or a drop that changes a partition's data invalidates its index, which the
// next search rebuilds.

import type { Repository, StoredRecord } from '../storage/repository.js';
import type { Analyzer } from './expression/patterns.js';
import { PartitionIndex } from './partition-index.js';

export class SsrIndex {
  private readonly indexes = new Map<string, Promise<PartitionIndex>>();

  constructor(
    private readonly repository: Repository,
    private readonly analyzerOf: (stream: string) => Analyzer,
  ) {}

  /** The partition's index, built on first use. */
  partition(stream: string, partition: number): Promise<PartitionIndex> {
    const key = `${stream}/${partition}`;
    let index = this.indexes.get(key);
    if (index === undefined) {
      index = this.build(stream, partition);
      this.indexes.set(key, index);
      index.catch(() => this.indexes.get(key) === index && this.indexes.delete(key));
    }
    return index;
  }

  /** Records of this node's ssr just made durable (ingest): indexed where an index exists. */
  onStored(records: readonly StoredRecord[]): void {
    for (const record of records) {
      const index = this.indexes.get(`${record.stream}/${record.partition}`);
      if (index === undefined) continue;
      void index.then((built) => built.add(toDocument(record)), () => undefined);
    }
  }

  /** The partition's data changed under the index (transfer, drop): rebuild on next use. */
  invalidate(stream: string, partition: number): void {
    this.indexes.delete(`${stream}/${partition}`);
  }

  invalidateAll(): void {
    this.indexes.clear();
  }

  private async build(stream: string, partition: number): Promise<PartitionIndex> {
    const index = new PartitionIndex(this.analyzerOf(stream));
    // The index is registered (by partition()) before this scan starts, so a record stored
    // while it runs is added by onStored if the scan's snapshot misses it; add() dedupes.
    for await (const record of this.repository.scan(stream, { partition })) index.add(toDocument(record));
    return index;
  }
}

function toDocument(record: StoredRecord) {
  return {
    writeId: record.writeId,
    partition: record.partition,
    timestamp: record.timestamp,
    payload: JSON.parse(record.payloadJson) as Record<string, unknown>,
  };
}
