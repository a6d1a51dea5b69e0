// This node's partitions as anti-entropy sees them: digests of the keys
// each holds, kept current by writes (a write, transfer, repair or drop marks its
// partition's digest stale; the next exchange rebuilds it from a key scan), the keys, and
// the records under keys.

import { assert } from '../lib/assert.js';
import type { LocalReplica } from '../storage/local-replica.js';
import { encodePartition, type Repository, type RepositoryName, type StoredRecord } from '../storage/repository.js';
import { blockKey } from '../storage/tsr.js';
import { digestKeys } from './key-digest.js';
import type { LocalPartitions, RepairPartitionRef } from './partition-sync.js';

/** Digests kept at once; the least recently used goes first. */
const DIGESTS_MAX = 4_096;

export class StoredPartitions implements LocalPartitions {
  private readonly digests = new Map<string, Uint32Array>();
  /**
   * Key scans under way, by partition, and whether their partition changed meanwhile: a
   * digest scanned while its partition changed is used once, not kept. Per partition, so
   * that writes elsewhere (hints, repairs, follow-ups after faults) do not make every
   * exchange scan again; shared, so that the exchanges of one partition with each of its
   * owners scan it once.
   */
  private readonly scans = new Map<string, { digest: Promise<Uint32Array>; changed: boolean }>();

  constructor(
    private readonly repositories: Record<RepositoryName, Repository>,
    private readonly replica: LocalReplica,
  ) {}

  async digest(part: RepairPartitionRef): Promise<Uint32Array> {
    const key = digestKey(part.repo, part.stream, part.partition);
    const known = this.digests.get(key);
    if (known !== undefined) {
      this.digests.delete(key);
      this.digests.set(key, known);
      return known;
    }
    const running = this.scans.get(key);
    if (running !== undefined) return running.digest;
    const scan = { digest: this.keys(part).then(digestKeys), changed: false };
    this.scans.set(key, scan);
    try {
      const digest = await scan.digest;
      // A write during the scan may or may not be in it: such a digest is used once, not kept.
      if (!scan.changed) this.remember(key, digest);
      return digest;
    } finally {
      this.scans.delete(key);
    }
  }

  keys(part: RepairPartitionRef): Promise<string[]> {
    return this.repositories[part.repo].partitionKeys(part.stream, part.partition);
  }

  records(part: RepairPartitionRef, keys: readonly string[]): Promise<StoredRecord[]> {
    return this.repositories[part.repo].recordsAt(part.stream, part.partition, keys);
  }

  /** The key under which records() finds `record`: ssr keys a record by its writeId, tsr by its block's times, count and id. */
  keyOf(repo: RepositoryName, record: StoredRecord): string {
    if (repo === 'ssr') return record.writeId;
    const key = blockKey(record);
    const prefix = `${record.stream}/${encodePartition(record.partition)}/`;
    assert(key.startsWith(prefix), () => `tsr block key ${key} outside ${prefix}`);
    return key.slice(prefix.length);
  }

  store(repo: RepositoryName, records: readonly StoredRecord[]): Promise<void> {
    return this.replica.store(repo, records);
  }

  /** The partition's data changed: its digest is rebuilt when next asked for. */
  stale(repo: RepositoryName, stream: string, partition: number): void {
    this.forget(digestKey(repo, stream, partition));
  }

  /** Records were stored (by any path): their partitions' digests are stale. */
  staleRecords(repo: RepositoryName, records: readonly StoredRecord[]): void {
    let last = '';
    for (const record of records) {
      const key = digestKey(repo, record.stream, record.partition);
      if (key === last) continue;
      last = key;
      this.forget(key);
    }
  }

  private forget(key: string): void {
    this.digests.delete(key);
    const scan = this.scans.get(key);
    if (scan !== undefined) scan.changed = true;
  }

  private remember(key: string, digest: Uint32Array): void {
    this.digests.set(key, digest);
    while (this.digests.size > DIGESTS_MAX) this.digests.delete(this.digests.keys().next().value!);
  }
}

function digestKey(repo: RepositoryName, stream: string, partition: number): string {
  return `${repo}\n${stream}\n${partition}`;
}
