// A node's durable repositories in the simulation: what survives a crash. ssr and tsr hold
// record ids per slot, KV a set of definition keys. It carries out the core's read-chunk,
// store-chunk and drop effects the way the shell does with LevelDB: a chunk is the next
// `chunkRecords` keys after the cursor, in key order.

import { slotKey } from '../../src/cluster-core/placement.js';
import type { ChunkData, Slot, TransferPlan } from '../../src/protocol/cluster-types.js';

export type DataRepo = 'ssr' | 'tsr';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class FakeStorage {
  readonly data: Record<DataRepo, Map<string, Set<string>>> = { ssr: new Map(), tsr: new Map() };
  readonly kv = new Set<string>();

  store(repo: DataRepo, slot: string, recordId: string): void {
    let records = this.data[repo].get(slot);
    if (records === undefined) this.data[repo].set(slot, (records = new Set()));
    records.add(recordId);
  }

  has(repo: DataRepo, slot: string, recordId: string): boolean {
    return this.data[repo].get(slot)?.has(recordId) ?? false;
  }

  drop(repo: DataRepo, slots: readonly Slot[]): void {
    for (const slot of slots) this.data[repo].delete(slotKey(slot));
  }

  /** Keys of a transfer in order: `${slot}|${record}` for ssr/tsr, the key itself for KV. */
  private keysOf(transfer: TransferPlan): string[] {
    if (transfer.repo === 'KV') return [...this.kv].sort();
    const keys: string[] = [];
    for (const slot of transfer.slots) {
      const key = slotKey(slot);
      for (const record of this.data[transfer.repo].get(key) ?? []) keys.push(`${key}|${record}`);
    }
    return keys.sort();
  }

  readChunk(transfer: TransferPlan, cursor: string | undefined, chunkRecords: number): { chunk: ChunkData; last: boolean; totalEstimate: number } {
    const keys = this.keysOf(transfer);
    const after = cursor === undefined ? keys : keys.filter((key) => key > cursor);
    const taken = after.slice(0, chunkRecords);
    const chunk: ChunkData = {
      bytes: encoder.encode(JSON.stringify(taken)),
      records: taken.length,
      cursor: taken.length > 0 ? taken[taken.length - 1]! : cursor ?? '',
    };
    return { chunk, last: after.length <= chunkRecords, totalEstimate: keys.length };
  }

  storeChunk(transfer: TransferPlan, chunk: ChunkData): string[] {
    const keys = JSON.parse(decoder.decode(chunk.bytes)) as string[];
    for (const key of keys) {
      if (transfer.repo === 'KV') this.kv.add(key);
      else {
        const at = key.indexOf('|');
        this.store(transfer.repo, key.slice(0, at), key.slice(at + 1));
      }
    }
    return keys;
  }

  recordCount(): number {
    let count = 0;
    for (const repo of ['ssr', 'tsr'] as const) for (const records of this.data[repo].values()) count += records.size;
    return count;
  }
}
