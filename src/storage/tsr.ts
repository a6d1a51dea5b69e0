// tsr: blocks of payloads (tsr-block.ts) keyed by (stream, partition, earliest event time,
// latest event time, payload count, block id), so the payloads of one partition in a time
// range are one LevelDB range scan (DESIGN.md, "tsr"): a block holding a payload at or
// after time T starts after T - BLOCK_SPAN_MS, and its key says, without reading it,
// whether it reaches T and how many payloads it holds.
//
// A scan yields a partition's payloads in (event time, writeId) order although blocks of
// concurrent writes overlap in time: blocks are read in key order and merged, a block
// joining the merge before any payload later than its first is yielded.

import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { Repository, ScanOptions, StoredPayload, StoredRecord } from './repository.js';
import { decodeTimestamp, encodePartition, encodeTimestamp } from './repository.js';
import { holdsAnyKey, partitionKeySuffixes, partitionRanges, streamPrefix, valuesAt } from './scans.js';
import { BadBlockError, type Block, BLOCK_SPAN_MS, blockHeader, blockPayload, decodeBlock } from './tsr-block.js';
import { BadRequestError, TributaryError } from '../errors.js';

const TIMESTAMP_DIGITS = 14;
const COUNT_DIGITS = 4;
/** A key's suffix after "<stream>/<partition>/": "<min>/<max>/<count>/<block id>". */
const ID_OFFSET = 2 * (TIMESTAMP_DIGITS + 1) + COUNT_DIGITS + 1;
/** Blocks asked of LevelDB at once while scanning. */
const READ_BATCH_BLOCKS = 64;
/** Digits of a payload's place in its write, in its writeId ("<write id>:<place>"). */
const POSITION_DIGITS = 7;

export class TimeSeriesRepository implements Repository {
  readonly name = 'tsr' as const;
  private readonly sublevel: Sublevel;

  constructor(database: Database) {
    this.sublevel = database.tsr;
  }

  /** Throws BadRequestError for a record that is not a block (a peer's write is checked here). */
  writeOperations(records: readonly StoredRecord[]): BatchOperation[] {
    return records.map((record) => ({ type: 'put', sublevel: this.sublevel, key: blockKey(record), value: record.value }));
  }

  async *scan(stream: string, options: ScanOptions = {}): AsyncIterable<StoredPayload> {
    let remaining = options.limit ?? Infinity;
    if (remaining <= 0) return;
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, options.partition)) {
      for await (const payload of this.scanPartition(stream, partition, prefix, options)) {
        yield payload;
        remaining -= 1;
        if (remaining <= 0) return;
      }
    }
  }

  /** The blocks of one partition that may hold payloads in [fromMs, toMs], in key order, decoded. */
  async *blocks(stream: string, partition: number, fromMs = -Infinity, toMs = Infinity): AsyncIterable<KeyedBlock> {
    const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
    for await (const [key, value] of this.blockEntries(prefix, fromMs, toMs)) yield { writeId: key.slice(prefix.length + ID_OFFSET), block: decoded(value, key) };
  }

  private async *scanPartition(stream: string, partition: number, prefix: string, options: ScanOptions): AsyncIterable<StoredPayload> {
    const after = options.after;
    const fromMs = Math.max(options.fromTimestamp ?? -Infinity, after?.timestamp ?? -Infinity);
    const toMs = options.toTimestamp ?? Infinity;
    const merge = new BlockMerge();
    const entries = this.blockEntries(prefix, fromMs, toMs)[Symbol.asyncIterator]();
    try {
      let next = await entries.next();
      for (;;) {
        // A block joins before any payload later than its first leaves: blocks come in the
        // order of their first payloads, so what is merged is in order.
        while (!next.done && (merge.size === 0 || minTsOf(next.value[0], prefix) <= merge.peekTimestamp())) {
          const [key, value] = next.value;
          merge.add(key.slice(prefix.length + ID_OFFSET), decoded(value, key));
          next = await entries.next();
        }
        if (merge.size === 0) return;
        const { block, blockId, index } = merge.pop();
        const timestamp = block.timestamps[index]!;
        if (timestamp > toMs) return;
        if (timestamp < fromMs) continue;
        const writeId = payloadWriteId(blockId, block.positions[index]!);
        if (after !== undefined && timestamp === after.timestamp && writeId <= after.writeId) continue;
        yield { stream, partition, timestamp, writeId, payload: blockPayload(block, index) };
      }
    } finally {
      // A reader that stops early leaves the block iterator open: close it.
      await entries.return?.(undefined);
    }
  }

  /** The [key, value] of each block that may hold payloads in [fromMs, toMs], in key order. */
  private async *blockEntries(prefix: string, fromMs: number, toMs: number): AsyncIterable<[string, string]> {
    const range = {
      gte: fromMs === -Infinity ? prefix : prefix + encodeTimestamp(Math.max(fromMs - BLOCK_SPAN_MS + 1, -(2 ** 52))),
      lt: toMs === Infinity ? prefixEnd(prefix) : prefix + encodeTimestamp(toMs + 1),
    };
    const iterator = this.sublevel.iterator(range);
    try {
      for (let entries = await iterator.nextv(READ_BATCH_BLOCKS); entries.length > 0; entries = await iterator.nextv(READ_BATCH_BLOCKS)) {
        for (const entry of entries) {
          // Its key says when a block ends: one that ends before the range is not read.
          if (fromMs !== -Infinity && maxTsOf(entry[0], prefix) < fromMs) continue;
          yield entry;
        }
      }
    } finally {
      await iterator.close();
    }
  }

  /** Payloads per partition, from the keys alone. */
  async countByPartition(stream: string): Promise<Map<number, number>> {
    const counts = new Map<number, number>();
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, undefined)) {
      let count = 0;
      const iterator = this.sublevel.keys({ gte: prefix, lt: prefixEnd(prefix) });
      try {
        for (let keys = await iterator.nextv(1000); keys.length > 0; keys = await iterator.nextv(1000)) {
          for (const key of keys) count += countOf(key, prefix);
        }
      } finally {
        await iterator.close();
      }
      counts.set(partition, count);
    }
    return counts;
  }

  hasData(stream: string): Promise<boolean> {
    return holdsAnyKey(this.sublevel, stream);
  }

  partitionKeys(stream: string, partition: number): Promise<string[]> {
    return partitionKeySuffixes(this.sublevel, stream, partition);
  }

  async recordsAt(stream: string, partition: number, keys: readonly string[]): Promise<StoredRecord[]> {
    const values = await valuesAt(this.sublevel, stream, partition, keys);
    const records: StoredRecord[] = [];
    values.forEach((value, index) => {
      if (value === undefined) return;
      const suffix = keys[index]!;
      records.push({ stream, partition, timestamp: decodeTimestamp(suffix.slice(0, TIMESTAMP_DIGITS)), writeId: suffix.slice(ID_OFFSET), value });
    });
    return records;
  }
}

export interface KeyedBlock {
  /** The block's record writeId. */
  readonly writeId: string;
  readonly block: Block;
}

/**
 * A payload's writeId: its write's id (its block's record writeId is that id, a dot and the
 * block's ordinal in the write) and its place in the write, so payloads of one moment sort
 * in the order they arrived, whatever their partitions.
 */
export function payloadWriteId(blockWriteId: string, position: number): string {
  const dot = blockWriteId.lastIndexOf('.');
  return `${dot < 0 ? blockWriteId : blockWriteId.slice(0, dot)}:${position.toString(16).padStart(POSITION_DIGITS, '0')}`;
}

/** The key of a block record; throws BadRequestError for a record that is not one. */
function blockKey(record: StoredRecord): string {
  let header;
  try {
    header = blockHeader(record.value);
  } catch (error) {
    throw new BadRequestError(`tsr record ${record.writeId}: ${(error as Error).message}`);
  }
  if (record.timestamp !== header.minTs) throw new BadRequestError(`tsr record ${record.writeId}: its timestamp ${record.timestamp} is not its block's first, ${header.minTs}`);
  if (record.writeId.length === 0 || record.writeId.includes('/')) throw new BadRequestError(`tsr record: writeId '${record.writeId}' is empty or holds a '/'`);
  const count = header.count.toString(16).padStart(COUNT_DIGITS, '0');
  return `${record.stream}/${encodePartition(record.partition)}/${encodeTimestamp(header.minTs)}/${encodeTimestamp(header.maxTs)}/${count}/${record.writeId}`;
}

function minTsOf(key: string, prefix: string): number {
  return decodeTimestamp(key.slice(prefix.length, prefix.length + TIMESTAMP_DIGITS));
}

function maxTsOf(key: string, prefix: string): number {
  const start = prefix.length + TIMESTAMP_DIGITS + 1;
  return decodeTimestamp(key.slice(start, start + TIMESTAMP_DIGITS));
}

function countOf(key: string, prefix: string): number {
  const start = prefix.length + 2 * (TIMESTAMP_DIGITS + 1);
  return parseInt(key.slice(start, start + COUNT_DIGITS), 16);
}

/** A stored block, or the error of stored data that is not one. */
function decoded(value: string, key: string): Block {
  try {
    return decodeBlock(value);
  } catch (error) {
    if (error instanceof BadBlockError) throw new TributaryError(500, 'DAMAGED_DATA', `stored tsr block ${key} is damaged: ${error.message}`);
    throw error;
  }
}

interface Cursor {
  readonly block: Block;
  readonly blockId: string;
  index: number;
  /** The writeId of the payload at `index`, made when it is compared with another block's. */
  writeId: string | undefined;
}

/**
 * A min-heap of block cursors by (timestamp, writeId) of each one's next payload. Blocks
 * of one write rarely overlap another's, so it mostly holds one or two.
 */
class BlockMerge {
  private readonly cursors: Cursor[] = [];

  get size(): number {
    return this.cursors.length;
  }

  add(blockId: string, block: Block): void {
    this.cursors.push({ block, blockId, index: 0, writeId: undefined });
    this.siftUp(this.cursors.length - 1);
  }

  peekTimestamp(): number {
    const top = this.cursors[0]!;
    return top.block.timestamps[top.index]!;
  }

  /** The next payload's place; its cursor moves on. */
  pop(): { block: Block; blockId: string; index: number } {
    const top = this.cursors[0]!;
    const taken = { block: top.block, blockId: top.blockId, index: top.index };
    top.index += 1;
    top.writeId = undefined;
    if (top.index === top.block.count) {
      const last = this.cursors.pop()!;
      if (this.cursors.length === 0) return taken;
      this.cursors[0] = last;
    }
    this.siftDown(0);
    return taken;
  }

  private before(a: Cursor, b: Cursor): boolean {
    const x = a.block.timestamps[a.index]!;
    const y = b.block.timestamps[b.index]!;
    if (x !== y) return x < y;
    a.writeId ??= payloadWriteId(a.blockId, a.block.positions[a.index]!);
    b.writeId ??= payloadWriteId(b.blockId, b.block.positions[b.index]!);
    return a.writeId < b.writeId;
  }

  private siftUp(start: number): void {
    const cursors = this.cursors;
    let index = start;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(cursors[index]!, cursors[parent]!)) return;
      [cursors[index], cursors[parent]] = [cursors[parent]!, cursors[index]!];
      index = parent;
    }
  }

  private siftDown(start: number): void {
    const cursors = this.cursors;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < cursors.length && this.before(cursors[left]!, cursors[smallest]!)) smallest = left;
      if (right < cursors.length && this.before(cursors[right]!, cursors[smallest]!)) smallest = right;
      if (smallest === index) return;
      [cursors[index], cursors[smallest]] = [cursors[smallest]!, cursors[index]!];
      index = smallest;
    }
  }
}
