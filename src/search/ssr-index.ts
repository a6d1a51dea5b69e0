// The ssr full-text indexes of this node, one per (stream, partition) it holds. Nothing is
// loaded at start: a partition is indexed from LevelDB the first time a search touches it
// (so a node starts at once whatever it stores) and kept current by ingest from then on.
// A transfer or a drop that changes a partition's data invalidates its index, which the
// next search rebuilds. The build reads the partition in batches, the next batch read
// while one is indexed (the first search after a restart pays for every build).

import type { Repository, StoredPayload, StoredRecord } from '../storage/repository.js';
import type { Analyzer } from '../expression/patterns.js';
import { PartitionIndex, PathDictionary, pathKey, type SsrDocument } from './partition-index.js';
import { parseJson } from '../lib/json.js';

/** Records per batch read while building an index. */
const SCAN_BATCH_RECORDS = 2_000;

/** A repository that can read one partition in batches (the ssr's; fakes may not). */
interface PartitionBatchScanner {
  scanPartitionBatches(stream: string, partition: number, batchRecords: number): AsyncIterable<StoredPayload[]>;
}

/** Where a partition's documents are read from to build its index. */
export type IndexSource = Pick<Repository, 'scan'> & Partial<PartitionBatchScanner>;

/** Path dictionaries kept; past it, all are dropped (columns built with them are built again when next used). */
const DICTIONARIES_MAX = 1_024;

export class SsrIndex {
  /** The paths of each (stream, taxonomy levels), shared by the stream's partitions here (partition-index.ts, pathCodes). */
  private readonly dictionaries = new Map<string, PathDictionary>();
  /** Builds under way; an invalidated build finishes but is not kept. */
  private readonly building = new Map<string, Promise<PartitionIndex>>();
  /** Built indexes by stream, then partition: a search looks up each of a stream's partitions. */
  private readonly ready = new Map<string, Map<number, PartitionIndex>>();

  constructor(
    /**
     * The repository a stream's documents are read from: the ssr, or while this node moves
     * the stream from tsr to ssr and has not copied it all, the tsr (repository-mover.ts).
     */
    private readonly sourceOf: (stream: string) => IndexSource,
    private readonly analyzerOf: (stream: string) => Analyzer,
  ) {}

  /** The path dictionary of a stream's taxonomy levels: codes that mean the same path in every partition here. */
  dictionary(stream: string, levels: readonly string[]): PathDictionary {
    const key = pathKey([stream, ...levels]);
    let dictionary = this.dictionaries.get(key);
    if (dictionary === undefined) {
      if (this.dictionaries.size >= DICTIONARIES_MAX) this.dictionaries.clear();
      this.dictionaries.set(key, (dictionary = new PathDictionary()));
    }
    return dictionary;
  }

  /** The partition's index when it is built already: a search need not await it. */
  built(stream: string, partition: number): PartitionIndex | undefined {
    return this.ready.get(stream)?.get(partition);
  }

  /** The partition's index, built on first use. */
  partition(stream: string, partition: number): Promise<PartitionIndex> {
    const ready = this.built(stream, partition);
    if (ready !== undefined) return Promise.resolve(ready);
    const key = `${stream}/${partition}`;
    let index = this.building.get(key);
    if (index === undefined) {
      const build = this.build(stream, partition);
      index = build;
      this.building.set(key, build);
      build.then(
        (built) => {
          if (this.building.get(key) !== build) return;
          this.building.delete(key);
          let partitions = this.ready.get(stream);
          if (partitions === undefined) this.ready.set(stream, (partitions = new Map()));
          partitions.set(partition, built);
        },
        () => this.building.get(key) === build && this.building.delete(key),
      );
    }
    return index;
  }

  /** Records of this node's ssr just made durable (ingest): indexed where an index exists. */
  onStored(records: readonly StoredRecord[]): void {
    for (const record of records) {
      const ready = this.built(record.stream, record.partition);
      if (ready !== undefined) {
        ready.add(storedDocument(record));
        continue;
      }
      // The build registered before its scan started: a record its snapshot misses is added
      // when it ends (add() ignores one it has).
      void this.building.get(`${record.stream}/${record.partition}`)?.then((built) => built.add(storedDocument(record)), () => undefined);
    }
  }

  /** Which partitions of the stream have an index built or being built, and the built ones' bytes (monitoring). */
  status(stream: string): { built: number[]; building: number[]; indexBytes: number } {
    const prefix = `${stream}/`;
    const built: number[] = [];
    const building: number[] = [];
    let indexBytes = 0;
    for (const [partition, index] of this.ready.get(stream) ?? []) {
      built.push(partition);
      indexBytes += index.indexBytes;
    }
    for (const key of this.building.keys()) if (key.startsWith(prefix)) building.push(Number(key.slice(prefix.length)));
    return { built: built.sort((a, b) => a - b), building: building.sort((a, b) => a - b), indexBytes };
  }

  /** The partition's data changed under the index (transfer, drop): rebuild on next use. */
  invalidate(stream: string, partition: number): void {
    this.building.delete(`${stream}/${partition}`);
    const partitions = this.ready.get(stream);
    partitions?.delete(partition);
    if (partitions?.size === 0) this.ready.delete(stream);
  }

  invalidateAll(): void {
    this.building.clear();
    this.ready.clear();
  }

  private async build(stream: string, partition: number): Promise<PartitionIndex> {
    const index = new PartitionIndex(this.analyzerOf(stream));
    const source = this.sourceOf(stream);
    if (isBatchScanner(source)) {
      for await (const batch of source.scanPartitionBatches(stream, partition, SCAN_BATCH_RECORDS)) {
        for (const record of batch) index.add(toDocument(record));
      }
    } else {
      for await (const record of source.scan(stream, { partition })) index.add(toDocument(record));
    }
    index.compact();
    return index;
  }
}

function isBatchScanner(source: IndexSource): source is IndexSource & PartitionBatchScanner {
  return typeof source.scanPartitionBatches === 'function';
}

/** The document of an ssr record just stored: its value is the payload's canonical JSON. */
function storedDocument(record: StoredRecord): SsrDocument {
  return {
    writeId: record.writeId,
    timestamp: record.timestamp,
    payload: parseJson(record.value) as Record<string, unknown>,
  };
}

function toDocument(stored: StoredPayload): SsrDocument {
  return { writeId: stored.writeId, timestamp: stored.timestamp, payload: stored.payload };
}
