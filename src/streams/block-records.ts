// The tsr records of one write: its payloads grouped by partition, each group
// packed into blocks (storage/tsr-block.ts), each block a record. Pure: ingest makes a
// write's records with it, and the benchmarks make the same records to compare with.

import type { StoredRecord } from '../storage/repository.js';
import { type BlockEntry, packBlocks } from '../storage/tsr-block.js';
import { partitionOf } from './partitioner.js';
import type { DistributionPolicy } from './policy.js';

/** A payload of the write, with its place in the write (the POST's batch) and its event time. */
export interface WrittenPayload {
  readonly payload: Record<string, unknown>;
  readonly position: number;
  readonly timestamp: number;
}

/** Records to write, and for each the places (in the payloads given) of the payloads it holds. */
export interface PackedRecords {
  readonly records: StoredRecord[];
  readonly members: number[][];
}

/**
 * The write's records. A block's id is `base` (the write's id) and its place among its
 * partition's blocks: the same on a retry with the same idempotency key, as the blocks are.
 */
export function blockRecords(stream: string, policy: DistributionPolicy, payloads: readonly WrittenPayload[], base: string): PackedRecords {
  const byPartition = new Map<number, { entries: BlockEntry[]; places: number[] }>();
  payloads.forEach((written, place) => {
    const partition = partitionOf(written.payload, policy);
    let group = byPartition.get(partition);
    if (group === undefined) byPartition.set(partition, (group = { entries: [], places: [] }));
    // A written payload is a block entry as it is: no second object per payload.
    group.entries.push(written);
    group.places.push(place);
  });
  const records: StoredRecord[] = [];
  const members: number[][] = [];
  for (const [partition, group] of byPartition) {
    packBlocks(group.entries).forEach((block, ordinal) => {
      records.push({ stream, partition, timestamp: block.minTs, writeId: `${base}.${ordinal}`, value: block.text });
      members.push(block.members.map((member) => group.places[member]!));
    });
  }
  return { records, members };
}
