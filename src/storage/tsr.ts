// tsr: payloads keyed by (stream, partition, timestamp, writeId), so the payloads of one
// partition in a time range are one LevelDB range scan (DESIGN.md, "tsr").

import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { Repository, ScanOptions, StoredRecord } from './repository.js';
import { decodeTimestamp, encodePartition, encodeTimestamp } from './repository.js';
import { countKeysByPartition, holdsAnyKey, partitionKeySuffixes, partitionRanges, valuesAt } from './scans.js';

export class TimeSeriesRepository implements Repository {
  readonly name = 'tsr' as const;
  private readonly sublevel: Sublevel;

  constructor(database: Database) {
    this.sublevel = database.tsr;
  }

  writeOperations(records: readonly StoredRecord[]): BatchOperation[] {
    return records.map((record) => ({
      type: 'put',
      sublevel: this.sublevel,
      key: `${record.stream}/${encodePartition(record.partition)}/${encodeTimestamp(record.timestamp)}/${record.writeId}`,
      value: record.payloadJson,
    }));
  }

  async *scan(stream: string, options: ScanOptions = {}): AsyncIterable<StoredRecord> {
    let remaining = options.limit ?? Infinity;
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, options.partition)) {
      const after = options.after === undefined ? undefined : `${prefix}${encodeTimestamp(options.after.timestamp)}/${options.after.writeId}`;
      const from = options.fromTimestamp === undefined ? prefix : prefix + encodeTimestamp(options.fromTimestamp);
      const range = {
        ...(after !== undefined && after >= from ? { gt: after } : { gte: from }),
        lt: options.toTimestamp === undefined ? prefixEnd(prefix) : prefix + encodeTimestamp(options.toTimestamp + 1),
      };
      for await (const [key, value] of this.sublevel.iterator(range)) {
        if (remaining <= 0) return;
        remaining -= 1;
        const rest = key.slice(prefix.length);
        const slash = rest.indexOf('/');
        yield {
          stream,
          partition,
          timestamp: decodeTimestamp(rest.slice(0, slash)),
          writeId: rest.slice(slash + 1),
          payloadJson: value,
        };
      }
    }
  }

  countByPartition(stream: string): Promise<Map<number, number>> {
    return countKeysByPartition(this.sublevel, stream);
  }

  hasData(stream: string): Promise<boolean> {
    return holdsAnyKey(this.sublevel, stream);
  }

  partitionKeys(stream: string, partition: number): Promise<string[]> {
    return partitionKeySuffixes(this.sublevel, stream, partition);
  }

  /** A key is "<timestamp hex>/<writeId>" (see writeOperations). */
  async recordsAt(stream: string, partition: number, keys: readonly string[]): Promise<StoredRecord[]> {
    const values = await valuesAt(this.sublevel, stream, partition, keys);
    const records: StoredRecord[] = [];
    values.forEach((value, index) => {
      if (value === undefined) return;
      const key = keys[index]!;
      const slash = key.indexOf('/');
      records.push({ stream, partition, timestamp: decodeTimestamp(key.slice(0, slash)), writeId: key.slice(slash + 1), payloadJson: value });
    });
    return records;
  }

}
