// The storage side of transfers (DESIGN.md, "Cluster"): a source reads the records of the
// slots a transfer moves in key order, one bounded chunk at a time, resuming after the last
// key the target made durable; a target stores a chunk's records under the same keys, so a
// chunk sent twice is stored once. A node drops the slots it no longer owns.
//
// Chunk bytes are the repository sublevel's [key, value] pairs, each as two length-prefixed
// UTF-8 strings (u32 big-endian byte length, then the bytes): keys already carry stream,
// partition and writeId, so the target needs nothing else, and values (JSON text) are
// copied, not escaped and parsed again. KV chunks are JSON: few, small, and structured.

import type { ChunkData, Slot, TransferPlan } from '../cluster/core/types.js';
import type { Database, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import type { DefinitionRecord } from './definitions.js';
import { encodePartition } from './repository.js';

/** A persisted stream: its storage key and its replicas (from its policy). */
export interface StoredStream {
  key: string;
  replicas: number;
}

export interface ChunkRead {
  chunk: ChunkData;
  last: boolean;
  totalEstimate: number;
}

export interface TransferChunkSources {
  /** Every stream whose data may be in the repositories. */
  streams(): StoredStream[];
  /** Every definition with its version, tombstones included. */
  definitionRecords(): DefinitionRecord[];
  /** Stores definition records received in a KV transfer. */
  applyDefinitions(records: DefinitionRecord[]): Promise<void>;
  /** A partition's stored data changed under a transfer or a drop (indexes over it are stale). */
  partitionChanged(repo: 'ssr' | 'tsr', stream: string, partition: number): void;
}

export class TransferChunks {
  private readonly totals = new Map<string, number>();

  constructor(
    private readonly database: Database,
    private readonly sources: TransferChunkSources,
    private readonly chunkBytesMax: number,
  ) {}

  async read(transfer: TransferPlan, after: string | undefined): Promise<ChunkRead> {
    // An empty cursor is where a transfer starts, the same as none.
    const cursor = after === '' ? undefined : after;
    if (transfer.repo === 'KV') return this.readDefinitions(cursor);
    const sublevel = this.sublevelOf(transfer.repo);
    const ranges = this.ranges(transfer.slots);
    const totalEstimate = await this.total(transfer, sublevel, ranges);
    const pairs: Array<[string, string]> = [];
    let bytes = 0;
    for (const prefix of ranges) {
      if (cursor !== undefined && prefixEnd(prefix) <= cursor) continue;
      const range = cursor !== undefined && cursor >= prefix ? { gt: cursor, lt: prefixEnd(prefix) } : { gte: prefix, lt: prefixEnd(prefix) };
      for await (const [key, value] of sublevel.iterator(range)) {
        // A record that does not fit is left for the next chunk (the cursor stays before
        // it), unless it is the only one.
        const size = pairBytes(key, value);
        if (pairs.length > 0 && bytes + size > this.chunkBytesMax) return this.chunk(pairs, false, totalEstimate);
        pairs.push([key, value]);
        bytes += size;
      }
    }
    return this.chunk(pairs, true, totalEstimate);
  }

  /** Stores a chunk's records durably (synced) under their keys. */
  async store(transfer: TransferPlan, chunk: ChunkData): Promise<void> {
    if (transfer.repo === 'KV') {
      await this.sources.applyDefinitions(JSON.parse(Buffer.from(chunk.bytes).toString('utf8')) as DefinitionRecord[]);
      return;
    }
    const sublevel = this.sublevelOf(transfer.repo);
    const pairs = decodePairs(chunk.bytes);
    await this.database.batch(
      pairs.map(([key, value]) => ({ type: 'put', sublevel, key, value })),
      { sync: true },
    );
    const touched = new Set(pairs.map(([key]) => `${key.split('/', 4).join('/')}/`));
    for (const prefix of touched) this.tellChanged(transfer.repo, prefix);
  }

  /** Deletes this node's records of the slots (it no longer owns them). */
  async drop(repo: 'ssr' | 'tsr', slots: readonly Slot[]): Promise<void> {
    const sublevel = this.sublevelOf(repo);
    for (const prefix of this.ranges(slots)) {
      await sublevel.clear({ gte: prefix, lt: prefixEnd(prefix) });
      this.tellChanged(repo, prefix);
    }
  }

  /** `prefix` is "tenant/collection/name/<partition hex>/". */
  private tellChanged(repo: 'ssr' | 'tsr', prefix: string): void {
    const parts = prefix.split('/');
    this.sources.partitionChanged(repo, parts.slice(0, 3).join('/'), parseInt(parts[3]!, 16));
  }

  /** The key prefixes of every (stream, partition) of the slots, in key order. */
  private ranges(slots: readonly Slot[]): string[] {
    const partitionsByReplicas = new Map<number, Set<number>>();
    for (const slot of slots) {
      let partitions = partitionsByReplicas.get(slot.replicas);
      if (partitions === undefined) partitionsByReplicas.set(slot.replicas, (partitions = new Set()));
      partitions.add(slot.partition);
    }
    const prefixes: string[] = [];
    for (const stream of this.sources.streams()) {
      for (const partition of partitionsByReplicas.get(stream.replicas) ?? []) {
        prefixes.push(`${stream.key}/${encodePartition(partition)}/`);
      }
    }
    return prefixes.sort();
  }

  private async total(transfer: TransferPlan, sublevel: Sublevel, ranges: string[]): Promise<number> {
    let total = this.totals.get(transfer.id);
    if (total !== undefined) return total;
    total = 0;
    for (const prefix of ranges) {
      const iterator = sublevel.keys({ gte: prefix, lt: prefixEnd(prefix) });
      try {
        for (let keys = await iterator.nextv(1000); keys.length > 0; keys = await iterator.nextv(1000)) total += keys.length;
      } finally {
        await iterator.close();
      }
    }
    this.totals.set(transfer.id, total);
    return total;
  }

  private readDefinitions(cursor: string | undefined): ChunkRead {
    const all = this.sources.definitionRecords();
    const records = all
      .filter((record) => cursor === undefined || record.key > cursor)
      .sort((a, b) => (a.key < b.key ? -1 : 1));
    const taken: DefinitionRecord[] = [];
    let bytes = 0;
    for (const record of records) {
      taken.push(record);
      bytes += JSON.stringify(record).length;
      if (bytes >= this.chunkBytesMax) break;
    }
    const last = taken.length === records.length;
    const chunk: ChunkData = {
      bytes: Buffer.from(JSON.stringify(taken), 'utf8'),
      records: taken.length,
      cursor: taken.at(-1)?.key ?? cursor ?? '',
    };
    return { chunk, last, totalEstimate: all.length };
  }

  private chunk(pairs: Array<[string, string]>, last: boolean, totalEstimate: number): ChunkRead {
    return {
      chunk: { bytes: encodePairs(pairs), records: pairs.length, cursor: pairs.at(-1)?.[0] ?? '' },
      last,
      totalEstimate,
    };
  }

  private sublevelOf(repo: 'ssr' | 'tsr'): Sublevel {
    return repo === 'ssr' ? this.database.ssr : this.database.tsr;
  }
}

const LENGTH_BYTES = 4;

function pairBytes(key: string, value: string): number {
  return 2 * LENGTH_BYTES + Buffer.byteLength(key) + Buffer.byteLength(value);
}

export function encodePairs(pairs: ReadonlyArray<readonly [string, string]>): Buffer {
  let size = 0;
  for (const [key, value] of pairs) size += pairBytes(key, value);
  const buffer = Buffer.allocUnsafe(size);
  let offset = 0;
  const put = (text: string) => {
    const length = buffer.write(text, offset + LENGTH_BYTES, 'utf8');
    buffer.writeUInt32BE(length, offset);
    offset += LENGTH_BYTES + length;
  };
  for (const [key, value] of pairs) {
    put(key);
    put(value);
  }
  return buffer;
}

/** The inverse of encodePairs; throws on bytes that are not a whole number of pairs. */
export function decodePairs(bytes: Uint8Array): Array<[string, string]> {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const pairs: Array<[string, string]> = [];
  let offset = 0;
  const take = (): string => {
    if (offset + LENGTH_BYTES > buffer.length) throw new Error('transfer chunk: truncated length');
    const length = buffer.readUInt32BE(offset);
    const end = offset + LENGTH_BYTES + length;
    if (end > buffer.length) throw new Error('transfer chunk: truncated string');
    const text = buffer.toString('utf8', offset + LENGTH_BYTES, end);
    offset = end;
    return text;
  };
  while (offset < buffer.length) pairs.push([take(), take()]);
  return pairs;
}
