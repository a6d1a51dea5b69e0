// tsr: blocks of payloads (tsr-block.ts) keyed by (stream, partition, earliest event time,
// latest event time, payload count, block id), so the payloads of one partition in a time range
// are one LevelDB range scan (docs/storage.md, "tsr stores blocks"): a block holding a payload
// at or after time T starts after T - BLOCK_SPAN_MS, and its key says, without reading it,
// whether it reaches T and how many payloads it holds.
//
// A scan yields a partition's payloads in (event time, writeId) order although blocks of
// concurrent writes overlap in time: blocks are read in key order and merged, a block
// joining the merge before any payload later than its first is yielded.

import { assert } from '../lib/assert.js';
import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { Repository, ScanOptions, StoredPayload, StoredRecord } from './repository.js';
import { decodeTimestamp, encodePartition, encodeTimestamp } from './repository.js';
import { deleteOperations, entriesAfter, holdsAnyKey, partitionKeySuffixes, partitionRanges, streamPrefix, valuesAt } from './scans.js';
import { BadBlockError, type Block, BLOCK_SPAN_MS, blockHeader, blockPayload, decodeBlock } from './tsr-block.js';
import { BlockMerge, payloadWriteId } from './tsr-order.js';
import { BadRequestError, TributaryError } from '../lib/errors.js';

const TIMESTAMP_DIGITS = 14;
const COUNT_DIGITS = 4;
/** A key's suffix after "<stream>/<partition>/": "<min>/<max>/<count>/<block id>". */
const ID_OFFSET = 2 * (TIMESTAMP_DIGITS + 1) + COUNT_DIGITS + 1;
/** Blocks asked of LevelDB at once while scanning. */
const READ_BATCH_BLOCKS = 64;

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
    assert(options.partition === undefined || (Number.isInteger(options.partition) && options.partition >= 0), `scan of partition ${options.partition}`);
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, options.partition)) {
      for await (const payload of this.scanPartition(stream, partition, prefix, options)) {
        yield payload;
        remaining -= 1;
        if (remaining <= 0) return;
      }
    }
  }

  /**
   * A page of the blocks of one partition that may hold payloads in [fromMs, toMs], in key
   * order, as stored (a historical query decodes them where it runs): blocks after `after`
   * (a page's cursor), until about `charsMax` characters of them are read.
   */
  async blockPage(stream: string, partition: number, options: BlockPageOptions): Promise<BlockPage> {
    const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
    const blocks: StoredBlock[] = [];
    let chars = 0;
    let after = options.after;
    for await (const [key, value] of this.blockEntries(prefix, options.fromMs ?? -Infinity, options.toMs ?? Infinity, options.after)) {
      if (blocks.length > 0 && chars + value.length > options.charsMax) {
        // A page that is not the last holds at least one block, and its cursor is the last block's key.
        assert(after !== undefined, 'a block page cut with no cursor');
        return { blocks, after, done: false };
      }
      blocks.push({ writeId: key.slice(prefix.length + ID_OFFSET), value });
      chars += value.length;
      after = key.slice(prefix.length);
    }
    return { blocks, after: after ?? '', done: true };
  }

  private async *scanPartition(stream: string, partition: number, prefix: string, options: ScanOptions): AsyncIterable<StoredPayload> {
    const after = options.after;
    const fromMs = Math.max(options.fromTimestamp ?? -Infinity, after?.timestamp ?? -Infinity);
    const toMs = options.toTimestamp ?? Infinity;
    const merge = new BlockMerge();
    let lastTimestamp = -Infinity;
    let lastWriteId = '';
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
        const { block, blockId, index } = merge.top();
        merge.advance();
        const timestamp = block.timestamps[index]!;
        if (timestamp > toMs) return;
        if (timestamp < fromMs) continue;
        const writeId = payloadWriteId(blockId, block.positions[index]!);
        if (after !== undefined && timestamp === after.timestamp && writeId <= after.writeId) continue;
        // The merge yields in (event time, writeId) order: what a cursor (`after`) relies on.
        assert(timestamp > lastTimestamp || (timestamp === lastTimestamp && writeId >= lastWriteId), () => `tsr scan of ${stream}/${partition} went back from ${lastTimestamp} ${lastWriteId} to ${timestamp} ${writeId}`);
        lastTimestamp = timestamp;
        lastWriteId = writeId;
        yield { stream, partition, timestamp, writeId, payload: blockPayload(block, index) };
      }
    } finally {
      // A reader that stops early leaves the block iterator open: close it.
      await entries.return?.(undefined);
    }
  }

  /** The [key, value] of each block that may hold payloads in [fromMs, toMs], in key order (after the key suffix `after`). */
  private async *blockEntries(prefix: string, fromMs: number, toMs: number, after?: string): AsyncIterable<[string, string]> {
    const from = fromMs === -Infinity ? prefix : prefix + encodeTimestamp(Math.max(fromMs - BLOCK_SPAN_MS + 1, -(2 ** 52)));
    const range = {
      ...(after !== undefined && prefix + after >= from ? { gt: prefix + after } : { gte: from }),
      lt: toMs === Infinity ? prefixEnd(prefix) : prefix + encodeTimestamp(toMs + 1),
    };
    // The range starts at the prefix or after it: a scan never reads another partition's blocks.
    assert(((range as { gt?: string }).gt ?? (range as { gte?: string }).gte ?? '').startsWith(prefix), `a block range outside ${prefix}`);
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
      assert(count >= 0, `${count} payloads counted in partition ${partition} of ${stream}`);
      counts.set(partition, count);
    }
    return counts;
  }

  /**
   * Every stored block of one partition with its time span, from its key: in key order
   * (by first payload), or newest first.
   */
  async *partitionBlocks(stream: string, partition: number, newestFirst: boolean): AsyncIterable<SpannedBlock> {
    const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
    const iterator = this.sublevel.iterator({ gte: prefix, lt: prefixEnd(prefix), reverse: newestFirst });
    // Newest first, a reader mostly stops after a few blocks: it asks for few, then more.
    let batch = newestFirst ? 4 : READ_BATCH_BLOCKS;
    assert(Number.isInteger(partition) && partition >= 0, `blocks of partition ${partition}`);
    try {
      for (let entries = await iterator.nextv(batch); entries.length > 0; entries = await iterator.nextv((batch = Math.min(READ_BATCH_BLOCKS, batch * 2)))) {
        for (const [key, value] of entries) yield { writeId: key.slice(prefix.length + ID_OFFSET), value, minTs: minTsOf(key, prefix), maxTs: maxTsOf(key, prefix) };
      }
    } finally {
      await iterator.close();
    }
  }

  hasData(stream: string): Promise<boolean> {
    return holdsAnyKey(this.sublevel, stream);
  }

  partitionKeys(stream: string, partition: number): Promise<string[]> {
    return partitionKeySuffixes(this.sublevel, stream, partition);
  }

  async recordsAt(stream: string, partition: number, keys: readonly string[]): Promise<StoredRecord[]> {
    const values = await valuesAt(this.sublevel, stream, partition, keys);
    assert(values.length === keys.length, `${values.length} values read for ${keys.length} keys`);
    const records: StoredRecord[] = [];
    values.forEach((value, index) => {
      if (value === undefined) return;
      records.push(recordOf(stream, partition, keys[index]!, value));
    });
    return records;
  }

  async partitionsHeld(stream: string): Promise<number[]> {
    return (await partitionRanges(this.sublevel, stream, undefined)).map(([partition]) => partition);
  }

  async recordPage(stream: string, partition: number, after: string | undefined, limit: number): Promise<Array<{ key: string; record: StoredRecord }>> {
    return (await entriesAfter(this.sublevel, stream, partition, after, limit)).map(([key, value]) => ({ key, record: recordOf(stream, partition, key, value) }));
  }

  deleteOperations(stream: string, partition: number, keys: readonly string[]): BatchOperation[] {
    return deleteOperations(this.sublevel, stream, partition, keys);
  }
}

/** A block record from its key suffix ("<min>/<max>/<count>/<id>") and its text. */
function recordOf(stream: string, partition: number, suffix: string, value: string): StoredRecord {
  assert(suffix.length > ID_OFFSET, () => `a tsr key suffix '${suffix}' without a block id`);
  return { stream, partition, timestamp: decodeTimestamp(suffix.slice(0, TIMESTAMP_DIGITS)), writeId: suffix.slice(ID_OFFSET), value };
}

export interface BlockPageOptions {
  /** Inclusive bounds of the payloads wanted, epoch milliseconds. */
  readonly fromMs?: number;
  readonly toMs?: number;
  /** The `after` of the page before. */
  readonly after?: string;
  /** About how many characters of blocks a page holds (at least one block). */
  readonly charsMax: number;
}

/** A stored block: its record's writeId and its text (tsr-block.ts). */
export interface StoredBlock {
  readonly writeId: string;
  readonly value: string;
}

/** A stored block with the span of its payloads' event times (from its key). */
export interface SpannedBlock extends StoredBlock {
  readonly minTs: number;
  readonly maxTs: number;
}

export interface BlockPage {
  readonly blocks: readonly StoredBlock[];
  /** Where the next page starts (opaque); '' for a page that is empty. */
  readonly after: string;
  /** No blocks after these. */
  readonly done: boolean;
}

/** The key of a block record (within the tsr sublevel); throws BadRequestError for a record that is not one. */
export function blockKey(record: StoredRecord): string {
  let header;
  try {
    header = blockHeader(record.value);
  } catch (error) {
    throw new BadRequestError(`tsr record ${record.writeId}: ${(error as Error).message}`);
  }
  if (record.timestamp !== header.minTs) throw new BadRequestError(`tsr record ${record.writeId}: its timestamp ${record.timestamp} is not its block's first, ${header.minTs}`);
  if (record.writeId.length === 0 || record.writeId.includes('/')) throw new BadRequestError(`tsr record: writeId '${record.writeId}' is empty or holds a '/'`);
  const count = header.count.toString(16).padStart(COUNT_DIGITS, '0');
  // The key says how many payloads the block holds without reading it (counts, _cat): BLOCK_PAYLOADS_MAX fits its digits.
  assert(count.length === COUNT_DIGITS, `a block of ${header.count} payloads: its count does not fit a key`);
  return `${record.stream}/${encodePartition(record.partition)}/${encodeTimestamp(header.minTs)}/${encodeTimestamp(header.maxTs)}/${count}/${record.writeId}`;
}

/**
 * The payloads of a block from its key within the sublevel,
 * "<tenant>/<collection>/<name>/<partition>/<min>/<max>/<count>/<id>" (names hold no '/').
 */
export function payloadsInBlockKey(key: string): number {
  let at = -1;
  for (let slash = 0; slash < 6; slash += 1) {
    at = key.indexOf('/', at + 1);
    if (at < 0) return 1;
  }
  const count = parseInt(key.slice(at + 1, at + 1 + COUNT_DIGITS), 16);
  return Number.isSafeInteger(count) && count > 0 ? count : 1;
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
    if (error instanceof BadBlockError) throw new TributaryError(500, 'DAMAGED_DATA', `${error.message} (stored under ${key})`);
    throw error;
  }
}
