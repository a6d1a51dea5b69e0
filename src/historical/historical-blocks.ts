// Reads a tsr stream's stored blocks for a historical query planned by block-row-plan.ts:
// each partition's blocks a page at a time from one of its owners (this node
// when it is one), decoded here, and their payloads merged across every partition in
// (event time, writeId) order, the order of historical-reader.ts. Each row holds only the
// fields the plan names, read from the blocks' columns: no payload object, no timestamp
// text parsed again for a window.

import { datetimeMs, type Value } from '../expression/index.js';
import { TributaryError } from '../lib/errors.js';
import type { BlockPage, StoredBlock } from '../storage/tsr.js';
import { BadBlockError, type Block, blockHeader, columnValue, decodeBlock } from '../storage/tsr-block.js';
import { BlockMerge } from '../storage/tsr-order.js';
import type { BlockRowPlan } from './block-row-plan.js';
import type { ColumnBatch, ColumnView } from '../pipeline/types.js';
import { fromAnOwner, type HistoricalSource, type OwnerChoice } from './historical-reader.js';
import { MinHeap } from '../lib/min-heap.js';
import { setField } from '../lib/json.js';

export interface BlockPageRequest {
  readonly stream: string;
  readonly partition: number;
  /** Inclusive bounds of the payloads wanted, epoch milliseconds. */
  readonly fromMs?: number;
  readonly toMs?: number;
  /** The `after` of the page before; absent for the first. */
  readonly after?: string;
  /** About how many characters of blocks the page holds (at least one block). */
  readonly charsMax: number;
}

export interface HistoricalBlockDeps extends OwnerChoice {
  blocksLocal(request: BlockPageRequest): Promise<BlockPage>;
  blocksRemote(node: string, request: BlockPageRequest): Promise<BlockPage>;
}

/** First pages asked at once when the read starts. */
const FIRST_PAGE_CONCURRENCY = 32;
/** Characters of a partition's first page: nothing is merged before every partition has one, so they are small. */
const FIRST_PAGE_CHARS = 16 * 1024;
/** Characters of blocks a page asks for, at most. */
const BLOCK_PAGE_CHARS = 1024 * 1024;
/** Characters of blocks a read holds at once, two pages of every partition (about). */
const BLOCK_READ_CHARS = 32 * 1024 * 1024;

/** The characters a page of one partition asks for when a read holds a page of each of `ringSize`. */
export function blockPageChars(ringSize: number): number {
  return Math.max(4096, Math.min(BLOCK_PAGE_CHARS, Math.floor(BLOCK_READ_CHARS / Math.max(1, ringSize))));
}
/** The most an owner puts in one page, whatever it is asked (a page is one peer message). */
export const BLOCK_PAGE_CHARS_MAX = 4 * 1024 * 1024;

/** One partition's blocks not yet taken. */
interface PartitionFeed {
  readonly partition: number;
  page: BlockPage;
  /** The next block of the page. */
  at: number;
  /** Time of the next block's first payload. */
  nextMinTs: number;
  /** The page after this one, asked for once half of this one is taken. */
  nextPage: Promise<BlockPage> | undefined;
}

/** Yields rows of the plan's fields in batches of about `batchRows`, oldest first. */
export async function* readBlockRows(deps: HistoricalBlockDeps, source: HistoricalSource, plan: BlockRowPlan, batchRows: number): AsyncGenerator<Record<string, unknown>[]> {
  const feed = await BlockFeed.open(deps, source, blockPageChars(source.ringSize));
  const merge = new BlockMerge();
  const rows = new RowMaker(plan);
  let batch: Record<string, unknown>[] = [];
  for (;;) {
    // A block joins before any payload later than its first leaves (tsr-order.ts).
    while (!feed.empty && (merge.size === 0 || feed.nextMinTs() <= merge.peekTimestamp())) {
      const { partition, stored } = await feed.take();
      merge.add(stored.writeId, decoded(stored.value, source.stream, partition));
    }
    if (merge.size === 0) break;
    const cursor = merge.top();
    const row = rows.make(cursor.block, cursor.index);
    merge.advance();
    if (row === undefined) continue;
    batch.push(row);
    if (batch.length >= batchRows) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * Yields the plan's blocks as column batches (the grouping takes them whole:
 * block-row-plan.ts, `columns`), in the order of their first payloads across partitions:
 * rows of one time then meet the same few groups one after another, which a grouping reads
 * far faster than groups spread over the whole read (each partition holds every key).
 */
export async function* readBlockColumns(deps: HistoricalBlockDeps, source: HistoricalSource, plan: BlockRowPlan): AsyncGenerator<ColumnBatch> {
  const feed = await BlockFeed.open(deps, source, blockPageChars(source.ringSize));
  while (!feed.empty) {
    const { partition, stored } = await feed.take();
    yield new BlockColumns(decoded(stored.value, source.stream, partition), plan.absorbed);
  }
}

/** Every partition's stored blocks, one page of each at a time, taken in the order of their first payloads. */
class BlockFeed {
  private readonly pending = new MinHeap(before);

  private constructor(
    private readonly deps: HistoricalBlockDeps,
    private readonly source: HistoricalSource,
    private readonly pageChars: number,
  ) {}

  static async open(deps: HistoricalBlockDeps, source: HistoricalSource, pageChars: number): Promise<BlockFeed> {
    const feed = new BlockFeed(deps, source, pageChars);
    for (let start = 0; start < source.ringSize; start += FIRST_PAGE_CONCURRENCY) {
      const partitions = Array.from({ length: Math.min(FIRST_PAGE_CONCURRENCY, source.ringSize - start) }, (_, offset) => start + offset);
      const pages = await Promise.all(partitions.map((partition) => fetchPage(deps, source, partition, undefined, Math.min(pageChars, FIRST_PAGE_CHARS))));
      partitions.forEach((partition, index) => {
        const page = pages[index]!;
        if (page.blocks.length > 0) feed.pending.push({ partition, page, at: 0, nextMinTs: minTsOf(page, 0), nextPage: undefined });
      });
    }
    return feed;
  }

  get empty(): boolean {
    return this.pending.size === 0;
  }

  /** The time of the next block's first payload; only when not empty. */
  nextMinTs(): number {
    return this.pending.peek().nextMinTs;
  }

  /** The next block, and its partition; only when not empty. */
  async take(): Promise<{ partition: number; stored: StoredBlock }> {
    const feed = this.pending.peek();
    const stored = feed.page.blocks[feed.at]!;
    feed.at += 1;
    if (!feed.page.done && feed.nextPage === undefined && feed.at * 2 >= feed.page.blocks.length) {
      feed.nextPage = fetchPage(this.deps, this.source, feed.partition, feed.page.after, this.pageChars);
      // Awaited below; until then a failure must not go unheard.
      feed.nextPage.catch(() => undefined);
    }
    if (feed.at === feed.page.blocks.length && feed.nextPage !== undefined) {
      feed.page = await feed.nextPage;
      feed.nextPage = undefined;
      feed.at = 0;
    }
    if (feed.at < feed.page.blocks.length) {
      feed.nextMinTs = minTsOf(feed.page, feed.at);
      this.pending.topChanged();
    } else this.pending.pop();
    return { partition: feed.partition, stored };
  }
}

/** A block as the grouping reads it (pipeline/types.ts, ColumnBatch). */
class BlockColumns implements ColumnBatch {
  readonly count: number;
  readonly timestamps: Float64Array;
  readonly keep: ((index: number) => boolean) | undefined;
  private readonly views = new Map<string, ColumnView>();

  constructor(
    private readonly block: Block,
    absorbed: BlockRowPlan['absorbed'],
  ) {
    this.count = block.count;
    this.timestamps = block.timestamps;
    const fromMs = absorbed?.bounds.fromMs ?? -Infinity;
    const toMs = absorbed?.bounds.toMs ?? Infinity;
    // A block whose timestamp field is its timestamps and lies within the bounds keeps every row.
    const whole = (absorbed === undefined ? undefined : block.column(absorbed.field))?.kind === 'iso' && block.minTs >= fromMs && block.maxTs <= toMs;
    this.keep = absorbed === undefined || whole ? undefined : keepsOf(block, absorbed.field, fromMs, toMs);
  }

  column(field: string): ColumnView {
    let view = this.views.get(field);
    if (view === undefined) this.views.set(field, (view = columnView(this.block, field)));
    return view;
  }
}

function columnView(block: Block, field: string): ColumnView {
  const column = block.column(field);
  switch (column?.kind) {
    case 'dictionary':
      return { kind: 'codes', distinct: column.distinct, codes: column.indices };
    case 'iso':
      return { kind: 'timestamp' };
    case undefined: {
      const rest = block.rest;
      const values = new Array<Value>(block.count);
      for (let index = 0; index < block.count; index += 1) values[index] = rest !== undefined && Object.hasOwn(rest[index]!, field) ? ((rest[index]![field] ?? null) as Value) : null;
      return { kind: 'values', values };
    }
    default:
      return { kind: 'values', values: column!.values };
  }
}

function fetchPage(deps: HistoricalBlockDeps, source: HistoricalSource, partition: number, after: string | undefined, charsMax: number): Promise<BlockPage> {
  const request: BlockPageRequest = {
    stream: source.stream,
    partition,
    charsMax,
    ...(source.fromMs === undefined ? {} : { fromMs: source.fromMs }),
    ...(source.toMs === undefined ? {} : { toMs: source.toMs }),
    ...(after === undefined ? {} : { after }),
  };
  return fromAnOwner(deps, partition, source, () => deps.blocksLocal(request), (owner) => deps.blocksRemote(owner, request));
}

function minTsOf(page: BlockPage, at: number): number {
  try {
    return blockHeader(page.blocks[at]!.value).minTs;
  } catch (error) {
    throw damaged(error, page.blocks[at]!.writeId);
  }
}

function decoded(value: string, stream: string, partition: number): Block {
  try {
    return decodeBlock(value);
  } catch (error) {
    throw damaged(error, `of partition ${partition} of ${stream}`);
  }
}

function damaged(error: unknown, which: string): unknown {
  return error instanceof BadBlockError ? new TributaryError(500, 'DAMAGED_DATA', `${error.message} (block ${which})`) : error;
}

/** Reads one field of a block's payloads: its value, or undefined where a payload lacks it. */
type FieldReader = (index: number) => unknown;

/** The rows of the plan, made from blocks. */
class RowMaker {
  private block: Block | undefined;
  private readers: FieldReader[] = [];
  /** Whether a payload passes the absorbed wheres; undefined when there are none. */
  private keeps: ((index: number) => boolean) | undefined;

  constructor(private readonly plan: BlockRowPlan) {}

  /** The row of payload `index`, or undefined when the absorbed wheres drop it. */
  make(block: Block, index: number): Record<string, unknown> | undefined {
    if (block !== this.block) this.prepare(block);
    if (this.keeps !== undefined && !this.keeps(index)) return undefined;
    const row: Record<string, unknown> = {};
    const fields = this.plan.fields;
    for (let f = 0; f < fields.length; f += 1) {
      const value = this.readers[f]!(index);
      if (value !== undefined) setField(row, fields[f]!, value);
    }
    if (this.plan.timestampAsMs !== undefined) setField(row, this.plan.timestampAsMs, block.timestamps[index]!);
    return row;
  }

  private prepare(block: Block): void {
    this.block = block;
    this.readers = this.plan.fields.map((field) => fieldReader(block, field));
    const absorbed = this.plan.absorbed;
    this.keeps = absorbed === undefined ? undefined : keepsOf(block, absorbed.field, absorbed.bounds.fromMs ?? -Infinity, absorbed.bounds.toMs ?? Infinity);
  }
}

function fieldReader(block: Block, field: string): FieldReader {
  const column = block.column(field);
  if (column !== undefined) {
    switch (column.kind) {
      case 'dictionary':
        return (index) => column.distinct[column.indices[index]!];
      case 'iso':
        return (index) => columnValue(column, block, index);
      default:
        return (index) => column.values[index];
    }
  }
  const rest = block.rest;
  if (rest === undefined) return () => undefined;
  return (index) => (Object.hasOwn(rest[index]!, field) ? rest[index]![field] : undefined);
}

/**
 * Whether a payload's timestamp field holds a datetime within the bounds: what the wheres
 * the reader replaces keep (block-row-plan.ts). An 'iso' column is its payload's own
 * timestamp, so no text is parsed for it.
 */
function keepsOf(block: Block, field: string, fromMs: number, toMs: number): (index: number) => boolean {
  const column = block.column(field);
  if (column?.kind === 'iso') {
    return (index) => {
      const ms = block.timestamps[index]!;
      return ms >= fromMs && ms <= toMs;
    };
  }
  const read = fieldReader(block, field);
  return (index) => {
    const value = read(index);
    const ms = typeof value === 'string' ? datetimeMs(value) : undefined;
    return ms !== undefined && ms >= fromMs && ms <= toMs;
  };
}

/** Partitions by the time of their next block, then by partition. */
function before(a: PartitionFeed, b: PartitionFeed): boolean {
  return a.nextMinTs < b.nextMinTs || (a.nextMinTs === b.nextMinTs && a.partition < b.partition);
}
