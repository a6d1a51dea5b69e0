// ssr: documents keyed by (stream, partition, writeId), each stored with its timestamp so
// histograms need no parse of the payload (docs/storage.md, "One database per node"). The
// full-text index over these documents is built by src/search (partition-index.ts); this module is
// what it indexes from.

import { assert } from '../lib/assert.js';
import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { Repository, ScanOptions, StoredPayload, StoredRecord } from './repository.js';
import { isPlainObject, parseJson } from '../lib/json.js';
import { TributaryError } from '../lib/errors.js';
import { encodePartition } from './repository.js';
import { countKeysByPartition, deleteOperations, entriesAfter, holdsAnyKey, partitionKeySuffixes, partitionRanges, valuesAt } from './scans.js';

/** Bounds the bytes one batch of scanPartitionBatches reads ahead. */
const SCAN_BATCH_BYTES_MAX = 4 * 1024 * 1024;

export class SearchableRepository implements Repository {
  readonly name = 'ssr' as const;
  private readonly sublevel: Sublevel;

  constructor(database: Database) {
    this.sublevel = database.ssr;
  }

  writeOperations(records: readonly StoredRecord[]): BatchOperation[] {
    return records.map((record) => ({
      type: 'put',
      sublevel: this.sublevel,
      key: `${record.stream}/${encodePartition(record.partition)}/${record.writeId}`,
      // The payload text is spliced in, not re-serialised: it is already canonical JSON.
      value: `{"t":${Math.trunc(record.timestamp)},"p":${record.value}}`,
    }));
  }

  async *scan(stream: string, options: ScanOptions = {}): AsyncIterable<StoredPayload> {
    let remaining = options.limit ?? Infinity;
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, options.partition)) {
      const start = options.after === undefined ? { gte: prefix } : { gt: prefix + options.after.writeId };
      for await (const [key, value] of this.sublevel.iterator({ ...start, lt: prefixEnd(prefix) })) {
        const timestamp = timestampOf(value);
        if (options.fromTimestamp !== undefined && timestamp < options.fromTimestamp) continue;
        if (options.toTimestamp !== undefined && timestamp > options.toTimestamp) continue;
        if (remaining <= 0) return;
        remaining -= 1;
        assert(key.startsWith(prefix), () => `ssr scan of ${prefix} read ${key}`);
        yield toPayload(stream, partition, prefix, key, value);
      }
    }
  }

  /**
   * Every record of one partition in key order, in batches of up to `batchRecords`. The
   * next batch is read from LevelDB (off the main thread) while the caller handles one, so
   * a caller that indexes what it reads (the search index's build) does not wait for reads.
   */
  async *scanPartitionBatches(stream: string, partition: number, batchRecords: number): AsyncIterable<StoredPayload[]> {
    const prefix = `${stream}/${encodePartition(partition)}/`;
    assert(Number.isInteger(batchRecords) && batchRecords > 0, `batches of ${batchRecords} records`);
    // classic-level's own option, which the sublevel passes on but does not declare.
    const options = { gte: prefix, lt: prefixEnd(prefix), highWaterMarkBytes: SCAN_BATCH_BYTES_MAX };
    const iterator = this.sublevel.iterator(options);
    let next: Promise<Array<[string, string]>> | undefined = iterator.nextv(batchRecords);
    try {
      for (;;) {
        const entries: Array<[string, string]> = await next;
        next = undefined;
        if (entries.length === 0) return;
        next = iterator.nextv(batchRecords);
        yield entries.map(([key, value]) => toPayload(stream, partition, prefix, key, value));
      }
    } finally {
      // A caller that stops early leaves a read in flight: it must end before the close.
      await next?.catch(() => undefined);
      await iterator.close();
    }
  }

  countByPartition(stream: string): Promise<Map<number, number>> {
    assert(stream.length > 0, 'a count of no stream');
    return countKeysByPartition(this.sublevel, stream);
  }

  hasData(stream: string): Promise<boolean> {
    return holdsAnyKey(this.sublevel, stream);
  }

  partitionKeys(stream: string, partition: number): Promise<string[]> {
    return partitionKeySuffixes(this.sublevel, stream, partition);
  }

  async recordsAt(stream: string, partition: number, keys: readonly string[]): Promise<StoredRecord[]> {
    const values = await valuesAt(this.sublevel, stream, partition, keys);
    const prefix = `${stream}/${encodePartition(partition)}/`;
    assert(values.length === keys.length, `${values.length} values read for ${keys.length} keys`);
    const records: StoredRecord[] = [];
    values.forEach((value, index) => {
      if (value !== undefined) records.push(toRecord(stream, partition, prefix, prefix + keys[index]!, value));
    });
    return records;
  }

  async partitionsHeld(stream: string): Promise<number[]> {
    return (await partitionRanges(this.sublevel, stream, undefined)).map(([partition]) => partition);
  }

  async recordPage(stream: string, partition: number, after: string | undefined, limit: number): Promise<Array<{ key: string; record: StoredRecord }>> {
    const prefix = `${stream}/${encodePartition(partition)}/`;
    return (await entriesAfter(this.sublevel, stream, partition, after, limit)).map(([key, value]) => ({ key, record: toRecord(stream, partition, prefix, prefix + key, value) }));
  }

  deleteOperations(stream: string, partition: number, keys: readonly string[]): BatchOperation[] {
    return deleteOperations(this.sublevel, stream, partition, keys);
  }
}

/** The stored timestamp of a value `{"t":<ms>,"p":<payload>}`. */
function timestampOf(value: string): number {
  // writeOperations' layout: `{"t":` is five characters.
  assert(value.startsWith('{"t":'), 'an ssr value without its timestamp');
  return Number(value.slice(5, value.indexOf(',')));
}

/** A stored document as a record; see writeOperations for the value's layout. */
function toRecord(stream: string, partition: number, prefix: string, key: string, value: string): StoredRecord {
  assert(key.length > prefix.length && key.startsWith(prefix), () => `ssr key ${key} outside ${prefix}`);
  return { stream, partition, timestamp: timestampOf(value), writeId: key.slice(prefix.length), value: payloadTextOf(value) };
}

/** A stored document as a payload; ingest stores JSON objects only, so anything else is damage. */
function toPayload(stream: string, partition: number, prefix: string, key: string, value: string): StoredPayload {
  assert(key.length > prefix.length && key.startsWith(prefix), () => `ssr key ${key} outside ${prefix}`);
  const writeId = key.slice(prefix.length);
  const payload = parseJson(payloadTextOf(value));
  if (!isPlainObject(payload)) throw new TributaryError(500, 'DAMAGED_DATA', `stored payload ${writeId} is not a JSON object`);
  return { stream, partition, timestamp: timestampOf(value), writeId, payload };
}

function payloadTextOf(value: string): string {
  return value.slice(value.indexOf(',"p":') + 5, -1);
}
