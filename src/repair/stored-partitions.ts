// This node's partitions as anti-entropy sees them: digests of the keys
// each holds, kept current by writes (a write, transfer, repair or drop marks its
// partition's digest stale; the next exchange rebuilds it from a key scan), the keys, and
// the records under keys.

import { assert } from '../lib/assert.js';
import type { LocalReplica } from '../storage/local-replica.js';
import { encodePartition, type Repository, type RepositoryName, type StoredRecord } from '../storage/repository.js';
import { blockKey } from '../storage/tsr.js';
import { addKey, digestKeys, SEGMENT_FIELDS, SEGMENTS } from './key-digest.js';
import type { LocalPartitions, RepairPartitionRef } from './partition-sync.js';

/** Digests kept at once; the least recently used goes first. */
const DIGESTS_MAX = 4_096;
/**
 * Digests built from transfers at once: a source builds one at a time, a target one per
 * partition of the chunk it stores and one left open for the next chunk. Past it, a build
 * is born spoiled and nothing of it is kept.
 */
const BUILDS_MAX = 256;

/**
 * A partition's digest built from the keys a transfer reads (its source) or stores (its
 * target), each key once and in key order, instead of a key scan later: a join's final sync
 * scanned every partition it moved on both nodes, 0.3 s of a 200,000-payload join.
 * `spoiled` once the partition changed by another hand (forget): the keys fed are then
 * not all it holds, and the digest is not kept.
 */
export interface DigestBuild {
  readonly key: string;
  readonly digest: Uint32Array;
  spoiled: boolean;
}

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
  /** Digests being built from transfers, by partition (begin()). */
  private readonly builds = new Map<string, Set<DigestBuild>>();
  private buildsOpen = 0;

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

  /**
   * Starts a digest of the partition from keys given to add() in key order, each once; the
   * partition must hold nothing but them by finish(), or have held them all at begin() (a
   * source that reads it whole). A change of the partition meanwhile spoils it.
   */
  begin(repo: RepositoryName, stream: string, partition: number): DigestBuild {
    const key = digestKey(repo, stream, partition);
    const build: DigestBuild = { key, digest: new Uint32Array(SEGMENTS * SEGMENT_FIELDS), spoiled: false };
    // Too many open (builds left unfinished): this one is born spoiled and never kept.
    if (this.buildsOpen >= BUILDS_MAX) return { ...build, spoiled: true };
    let open = this.builds.get(key);
    if (open === undefined) this.builds.set(key, (open = new Set()));
    open.add(build);
    this.buildsOpen += 1;
    assert(this.buildsOpen <= BUILDS_MAX, () => `${this.buildsOpen} digest builds open`);
    return build;
  }

  /** Adds a key (without its partition's prefix) to the build. */
  add(build: DigestBuild, key: string): void {
    if (!build.spoiled) addKey(build.digest, key);
  }

  /** Ends the build: its digest is the partition's, kept as a scan's would be, unless spoiled. */
  finish(build: DigestBuild): void {
    const ended = this.end(build);
    // A build ends once: a second finish would keep a digest its partition may have moved past.
    assert(ended || build.spoiled, () => `the digest build of ${build.key} finished twice`);
    // A copy: nothing added to the build by mistake afterwards changes what is kept.
    if (ended && !build.spoiled) this.remember(build.key, build.digest.slice());
  }

  /** Ends the build without keeping it (it may have ended already). */
  abandon(build: DigestBuild): void {
    this.end(build);
    build.spoiled = true;
  }

  /**
   * Runs `change`, the builds' own transfer telling that it stored into their partitions:
   * it forgets their digests as any change does, but does not spoil the builds. A change
   * that throws leaves them spoiled.
   */
  changedByBuilds(builds: readonly DigestBuild[], change: () => void): void {
    const spoiled = builds.map((build) => build.spoiled);
    change();
    builds.forEach((build, index) => (build.spoiled = spoiled[index]!));
    assert(builds.every((build, index) => build.spoiled === spoiled[index]), 'a digest build spoiled by its own transfer');
  }

  /**
   * Forgets every digest and spoils every scan and build under way: the database was opened
   * again after a failed write, and may have lost batches it had acknowledged (docs/storage.md),
   * so no digest of what it held before says what it holds now.
   */
  forgetAll(): void {
    this.digests.clear();
    for (const scan of this.scans.values()) scan.changed = true;
    for (const builds of this.builds.values()) for (const build of builds) build.spoiled = true;
    assert(this.digests.size === 0, 'digests kept across a reopen');
  }

  private end(build: DigestBuild): boolean {
    const open = this.builds.get(build.key);
    if (open === undefined || !open.delete(build)) return false;
    if (open.size === 0) this.builds.delete(build.key);
    this.buildsOpen -= 1;
    assert(this.buildsOpen >= 0, () => `${this.buildsOpen} digest builds open`);
    return true;
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
    for (const build of this.builds.get(key) ?? []) build.spoiled = true;
  }

  private remember(key: string, digest: Uint32Array): void {
    this.digests.set(key, digest);
    while (this.digests.size > DIGESTS_MAX) this.digests.delete(this.digests.keys().next().value!);
  }
}

function digestKey(repo: RepositoryName, stream: string, partition: number): string {
  return `${repo}\n${stream}\n${partition}`;
}
