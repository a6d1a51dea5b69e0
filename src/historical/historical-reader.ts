// Reads a stream's stored payloads for a historical query: each partition
// from one of its owners (this node when it is one, else the first available), a page at a
// time, merged across partitions by event time so that `first`/`last` and windows see the
// payloads in time order (a tsr partition is in time order; an ssr partition in order of
// receipt, which the merge keeps). A bound on the timestamp narrows each partition's scan.

import type { RepositoryName, StoredPayload } from '../storage/repository.js';
import type { BlockRowPlan } from './block-row-plan.js';
import { MinHeap } from '../lib/min-heap.js';

export interface ScanRequest {
  readonly repo: RepositoryName;
  readonly stream: string;
  readonly partition: number;
  readonly fromMs?: number;
  readonly toMs?: number;
  readonly after?: { readonly timestamp: number; readonly writeId: string };
  readonly limit: number;
}

export interface ScannedRecord {
  readonly timestamp: number;
  readonly writeId: string;
  /** Parsed where the page was read: by scanPage here, by the peer codec from another owner. */
  readonly payload: Record<string, unknown>;
}

export interface ScanPage {
  readonly records: readonly ScannedRecord[];
  /** No records after these. */
  readonly done: boolean;
  /**
   * The repository the page was read from, when the owner chose it: while a stream moves
   * to another repository (docs/storage.md), the read's later pages of the partition ask
   * for it, as the two repositories order a partition differently.
   */
  readonly repo?: RepositoryName;
}

export interface HistoricalDeps extends OwnerChoice {
  scanLocal(request: ScanRequest): Promise<ScanPage>;
  scanRemote(node: string, request: ScanRequest): Promise<ScanPage>;
}

export interface HistoricalSource {
  readonly stream: string;
  readonly repo: RepositoryName;
  readonly ringSize: number;
  readonly replicas: number;
  readonly fromMs?: number;
  readonly toMs?: number;
  /** Set when the query reads a tsr stream's blocks column by column (historical-blocks.ts): the rows it needs. */
  readonly rows?: BlockRowPlan;
}

interface Cursor {
  readonly partition: number;
  /** The repository its pages come from. */
  readonly repo: RepositoryName;
  records: readonly ScannedRecord[];
  index: number;
  done: boolean;
}

/** Pages fetched at once when the read starts. */
const FIRST_PAGE_CONCURRENCY = 8;

/** Yields the payloads in batches of about `pageRecords`, oldest first. */
export async function* readHistorical(deps: HistoricalDeps, source: HistoricalSource, pageRecords: number): AsyncGenerator<Record<string, unknown>[]> {
  const cursors: Cursor[] = [];
  const partitions = Array.from({ length: source.ringSize }, (_, partition) => partition);
  for (let start = 0; start < partitions.length; start += FIRST_PAGE_CONCURRENCY) {
    const batch = partitions.slice(start, start + FIRST_PAGE_CONCURRENCY);
    const pages = await Promise.all(batch.map((partition) => fetchPage(deps, source, source.repo, partition, undefined, pageRecords)));
    batch.forEach((partition, index) => {
      const page = pages[index]!;
      if (page.records.length > 0) cursors.push({ partition, repo: page.repo ?? source.repo, records: page.records, index: 0, done: page.done });
    });
  }
  const heap = new MinHeap(before, cursors);
  let batch: Record<string, unknown>[] = [];
  while (heap.size > 0) {
    const cursor = heap.peek();
    const record = cursor.records[cursor.index]!;
    batch.push(record.payload);
    cursor.index += 1;
    if (cursor.index === cursor.records.length) {
      if (cursor.done) heap.pop();
      else {
        const page = await fetchPage(deps, source, cursor.repo, cursor.partition, record, pageRecords);
        if (page.records.length === 0) heap.pop();
        else {
          cursor.records = page.records;
          cursor.index = 0;
          cursor.done = page.done;
          heap.topChanged();
        }
      }
    } else heap.topChanged();
    if (batch.length >= pageRecords) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

async function fetchPage(deps: HistoricalDeps, source: HistoricalSource, repo: RepositoryName, partition: number, after: ScannedRecord | undefined, limit: number): Promise<ScanPage> {
  const request: ScanRequest = {
    repo,
    stream: source.stream,
    partition,
    limit,
    ...(source.fromMs === undefined ? {} : { fromMs: source.fromMs }),
    ...(source.toMs === undefined ? {} : { toMs: source.toMs }),
    ...(after === undefined ? {} : { after: { timestamp: after.timestamp, writeId: after.writeId } }),
  };
  return fromAnOwner(deps, partition, source, () => deps.scanLocal(request), (owner) => deps.scanRemote(owner, request));
}

/** Where a partition is read from, for any kind of read. */
export interface OwnerChoice {
  readonly localName: string;
  ownersOf(partition: number, replicas: number): readonly string[];
  available(node: string): boolean;
}

/**
 * A read of one partition from this node when it owns the partition, else (or when it
 * cannot answer: it may be refilling damaged data) from another owner.
 */
export async function fromAnOwner<T>(deps: OwnerChoice, partition: number, source: { readonly stream: string; readonly replicas: number }, local: () => Promise<T>, remote: (owner: string) => Promise<T>): Promise<T> {
  const owners = deps.ownersOf(partition, source.replicas);
  let lastError: unknown = new Error(`no owner of partition ${partition} of ${source.stream} is available`);
  if (owners.includes(deps.localName)) {
    try {
      return await local();
    } catch (error) {
      lastError = error;
    }
  }
  for (const owner of owners.filter((name) => name !== deps.localName && deps.available(name))) {
    try {
      return await remote(owner);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** Cursors by their current record's (timestamp, writeId). */
function before(a: Cursor, b: Cursor): boolean {
  const x = a.records[a.index]!;
  const y = b.records[b.index]!;
  return x.timestamp < y.timestamp || (x.timestamp === y.timestamp && x.writeId < y.writeId);
}

/** The owner side: one page of one partition from a local repository's scan. */
export async function scanPage(
  scan: (stream: string, options: { partition: number; fromTimestamp?: number; toTimestamp?: number; limit: number; after?: { timestamp: number; writeId: string } }) => AsyncIterable<StoredPayload>,
  request: ScanRequest,
  limitMax: number,
): Promise<ScanPage> {
  const limit = Math.max(1, Math.min(request.limit, limitMax));
  const records: ScannedRecord[] = [];
  const options = {
    partition: request.partition,
    limit: limit + 1,
    ...(request.fromMs === undefined ? {} : { fromTimestamp: request.fromMs }),
    ...(request.toMs === undefined ? {} : { toTimestamp: request.toMs }),
    ...(request.after === undefined ? {} : { after: request.after }),
  };
  for await (const record of scan(request.stream, options)) {
    records.push({ timestamp: record.timestamp, writeId: record.writeId, payload: record.payload });
  }
  const done = records.length <= limit;
  return { records: done ? records : records.slice(0, limit), done };
}
