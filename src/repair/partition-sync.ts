// One anti-entropy exchange: this node and one other owner of a partition compare digests
// (key-digest.ts), then the keys of the segments that differ, and each gets what it lacks: this
// node pushes records the peer lacks (a replica write, fenced and owner-checked like any other)
// and, unless only pushing, fetches the records it lacks. The same exchange, push only, is how
// a node hands a partition off before it drops it, and how a leaving node makes sure the next
// owners hold all it holds; pull only, how a joining node makes sure it holds all the current
// owners hold.

import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import { differingSegments, keyDifference, keysInSegments } from './key-digest.js';

export interface RepairPartitionRef {
  repo: RepositoryName;
  stream: string;
  partition: number;
}

/** This node's side. */
export interface LocalPartitions {
  digest(part: RepairPartitionRef): Promise<ArrayLike<number>>;
  keys(part: RepairPartitionRef): Promise<string[]>;
  records(part: RepairPartitionRef, keys: readonly string[]): Promise<StoredRecord[]>;
  /** Stores records fetched from a peer (durably, indexes kept current). */
  store(repo: RepositoryName, records: readonly StoredRecord[]): Promise<void>;
}

/** The peer's side, over the peer port. */
export interface PeerPartitions {
  digest(peer: string, part: RepairPartitionRef): Promise<number[]>;
  keys(peer: string, part: RepairPartitionRef, segments: readonly number[]): Promise<string[]>;
  fetch(peer: string, part: RepairPartitionRef, keys: readonly string[]): Promise<StoredRecord[]>;
  push(peer: string, part: RepairPartitionRef, replicas: number, records: readonly StoredRecord[]): Promise<void>;
}

export interface SyncResult {
  /** Segments whose digests differed. */
  segments: number;
  sent: number;
  received: number;
}

/** Keys moved per push or fetch: bounds one peer message. */
const KEYS_PER_MESSAGE_MAX = 500;

export async function syncPartition(
  local: LocalPartitions,
  peers: PeerPartitions,
  peer: string,
  part: RepairPartitionRef,
  replicas: number,
  mode: 'both' | 'push' | 'pull',
  /** The peer's digest when already read (a final sync reads many at once: RepairDigests). */
  theirDigest?: ArrayLike<number>,
): Promise<SyncResult> {
  const [mine, theirs] = await Promise.all([local.digest(part), theirDigest ?? peers.digest(peer, part)]);
  const segments = differingSegments(mine, theirs);
  if (segments.length === 0) return { segments: 0, sent: 0, received: 0 };
  const [myKeys, theirKeys] = await Promise.all([local.keys(part).then((keys) => keysInSegments(keys, segments)), peers.keys(peer, part, segments)]);
  const { onlyMine, onlyTheirs } = keyDifference(myKeys, theirKeys);
  let sent = 0;
  for (let start = 0; mode !== 'pull' && start < onlyMine.length; start += KEYS_PER_MESSAGE_MAX) {
    const records = await local.records(part, onlyMine.slice(start, start + KEYS_PER_MESSAGE_MAX));
    if (records.length > 0) await peers.push(peer, part, replicas, records);
    sent += records.length;
  }
  let received = 0;
  if (mode !== 'push') {
    for (let start = 0; start < onlyTheirs.length; start += KEYS_PER_MESSAGE_MAX) {
      const wanted = onlyTheirs.slice(start, start + KEYS_PER_MESSAGE_MAX);
      const records = checkFetched(await peers.fetch(peer, part, wanted), part, peer);
      if (records.length > 0) await local.store(part.repo, records);
      received += records.length;
    }
  }
  return { segments: segments.length, sent, received };
}

/** A peer's records must be of the partition asked for: anything else is refused. */
function checkFetched(records: StoredRecord[], part: RepairPartitionRef, peer: string): StoredRecord[] {
  for (const record of records) {
    if (record.stream !== part.stream || record.partition !== part.partition) {
      throw new Error(`${peer} answered a repair fetch of ${part.stream}/${part.partition} with a record of ${record.stream}/${record.partition}`);
    }
  }
  return records;
}

/**
 * One holder of a partition, this node or a peer, as an exchange between two holders that
 * may both be remote sees it (follow-ups of uncertain writes: the node that saw the write
 * fail need not own the partition).
 */
export interface PartitionHolder {
  name: string;
  digest(part: RepairPartitionRef): Promise<ArrayLike<number>>;
  keys(part: RepairPartitionRef, segments: readonly number[]): Promise<string[]>;
  records(part: RepairPartitionRef, keys: readonly string[]): Promise<StoredRecord[]>;
  /** Stores records another holder has (a replica write when remote: fenced and owner-checked). */
  store(part: RepairPartitionRef, replicas: number, records: readonly StoredRecord[]): Promise<void>;
}

export function localHolder(name: string, local: LocalPartitions): PartitionHolder {
  return {
    name,
    digest: (part) => local.digest(part),
    keys: async (part, segments) => keysInSegments(await local.keys(part), segments),
    records: (part, keys) => local.records(part, keys),
    store: (part, _replicas, records) => local.store(part.repo, records),
  };
}

export function peerHolder(name: string, peers: PeerPartitions): PartitionHolder {
  return {
    name,
    digest: (part) => peers.digest(name, part),
    keys: (part, segments) => peers.keys(name, part, segments),
    records: async (part, keys) => checkFetched(await peers.fetch(name, part, keys), part, name),
    store: (part, replicas, records) => peers.push(name, part, replicas, records),
  };
}

/** Each of the two holders gets what only the other holds of the partition; returns the records moved. */
export async function exchangeBetween(a: PartitionHolder, b: PartitionHolder, part: RepairPartitionRef, replicas: number): Promise<number> {
  const [digestA, digestB] = await Promise.all([a.digest(part), b.digest(part)]);
  const segments = differingSegments(digestA, digestB);
  if (segments.length === 0) return 0;
  const [keysA, keysB] = await Promise.all([a.keys(part, segments), b.keys(part, segments)]);
  const { onlyMine, onlyTheirs } = keyDifference(keysA, keysB);
  let moved = 0;
  for (const [from, to, keys] of [[a, b, onlyMine], [b, a, onlyTheirs]] as const) {
    for (let start = 0; start < keys.length; start += KEYS_PER_MESSAGE_MAX) {
      const records = await from.records(part, keys.slice(start, start + KEYS_PER_MESSAGE_MAX));
      if (records.length > 0) await to.store(part, replicas, records);
      moved += records.length;
    }
  }
  return moved;
}
