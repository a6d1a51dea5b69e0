// ssr: documents keyed by (stream, partition, writeId), each stored with its timestamp so
// histograms need no parse of the payload (DESIGN.md, "ssr"). The full-text index over
// these documents is built by the search issue; this module is what it indexes from.

import type { BatchOperation, Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { Repository, ScanOptions, StoredRecord } from './repository.js';
import { encodePartition } from './repository.js';
import { countKeysByPartition, holdsAnyKey, partitionRanges } from './scans.js';

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
      value: `{"t":${Math.trunc(record.timestamp)},"p":${record.payloadJson}}`,
    }));
  }

  async *scan(stream: string, options: ScanOptions = {}): AsyncIterable<StoredRecord> {
    let remaining = options.limit ?? Infinity;
    for (const [partition, prefix] of await partitionRanges(this.sublevel, stream, options.partition)) {
      const start = options.after === undefined ? { gte: prefix } : { gt: prefix + options.after.writeId };
      for await (const [key, value] of this.sublevel.iterator({ ...start, lt: prefixEnd(prefix) })) {
        const timestamp = Number(value.slice(5, value.indexOf(',')));
        if (options.fromTimestamp !== undefined && timestamp < options.fromTimestamp) continue;
        if (options.toTimestamp !== undefined && timestamp > options.toTimestamp) continue;
        if (remaining <= 0) return;
        remaining -= 1;
        const payloadStart = value.indexOf(',"p":') + 5;
        yield {
          stream,
          partition,
          timestamp,
          writeId: key.slice(prefix.length),
          payloadJson: value.slice(payloadStart, -1),
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

}
