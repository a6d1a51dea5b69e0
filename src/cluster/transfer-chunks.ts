// The storage side of transfers (docs/cluster.md, "Transfers"), a part of the cluster shell: it
// knows transfer plans and both repositories' key layouts, so it lives with the cluster, over
// the storage it reads and writes. A source reads the records of the slots a transfer moves in
// key order, one bounded chunk at a time, resuming after the last key the target made durable;
// a target stores a chunk's records under the same keys, so a chunk sent twice is stored once.
// A node drops the slots it no longer owns.
//
// Chunk bytes are the repository sublevel's [key, value] pairs, each as two length-prefixed
// UTF-8 strings (u32 big-endian byte length, then the bytes): keys already carry stream,
// partition and writeId, so the target needs nothing else, and values (JSON text) are
// copied, not escaped and parsed again. KV chunks are JSON: few, small, and structured.
//
// Both ends handle records as bytes, never as strings: the source reads keys and values as
// buffers, a batch at a time (nextv), and copies them into the chunk; the target writes
// subarrays of the chunk at the database's root, its keys prefixed with the sublevel's,
// in one synced batch (with the transfer's progress entry when one is due: store()).
// Decoding 1 MiB to strings and encoding it again, and abstract-level's per-record sublevel
// work, cost the target more CPU than LevelDB's write itself (docs/benchmarks.md, "Transfer
// and replicated ingest").

import { performance } from 'node:perf_hooks';
import type { AbstractIteratorOptions } from 'abstract-level';
import { assert, InvariantError } from '../lib/assert.js';
import type { ChunkData, DurableIncoming, Slot, TransferPlan } from '../protocol/cluster-types.js';
import type { Database, EncodedPut, Sublevel } from '../storage/database.js';
import { prefixEnd } from '../storage/database.js';
import type { DefinitionRecord } from '../storage/definition-store.js';
import { encodePartition } from '../storage/repository.js';
import { payloadsInBlockKey } from '../storage/tsr.js';
import { parseJson, stringifyJson } from '../lib/json.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import type { DigestBuild } from '../repair/stored-partitions.js';
import { slotKey } from '../cluster-core/placement.js';

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
  /** Where the partitions' key digests are kept, built here from what transfers read and store. */
  digests?: TransferDigests;
}

/**
 * Key digests of partitions built from a transfer's keys (repair/stored-partitions.ts): a
 * join's final sync compares both ends' digests of every partition moved, and a key scan
 * of each on both nodes cost it 0.3 s at 200,000 payloads. A source reads a partition whole
 * and a target that held nothing of it stores it whole, each key once and in key order, so
 * each can build the digest on the way, unless the partition changes meanwhile.
 */
export interface TransferDigests {
  begin(repo: 'ssr' | 'tsr', stream: string, partition: number): DigestBuild;
  add(build: DigestBuild, key: string): void;
  finish(build: DigestBuild): void;
  abandon(build: DigestBuild): void;
  changedByBuilds(builds: readonly DigestBuild[], change: () => void): void;
}

/** A digest built over more than one chunk: its partition's prefix, and the cursor its next chunk starts after. */
interface OpenBuild {
  prefix: string;
  /** Undefined on a target whose partition held records before the transfer: nothing is built. */
  build: DigestBuild | undefined;
  cursor: string;
}

/** Records asked of LevelDB at once while reading a chunk; the first read asks for fewer. */
const READ_BATCH_RECORDS_MAX = 1_000;
const READ_BATCH_RECORDS_FIRST = 64;
const COUNTED_RECORDS_MAX = 20_000;
/** LevelDB size estimates asked at once while a transfer's total is estimated. */
const APPROXIMATE_SIZES_IN_FLIGHT = 16;
/** Transfers with a digest open across chunks, on each side; past it, the oldest is abandoned. */
const OPEN_BUILDS_MAX = 64;
/** Transfers a source reads a chunk ahead for at once (each up to a chunk in memory); past it, others read when asked. */
const READS_AHEAD_MAX = 16;
/** A chunk read ahead this long ago is read again when asked. */
const READ_AHEAD_AGE_MS = 5_000;
/** Seeks at once that find whether a chunk's partitions hold anything yet (an ssr chunk may touch all 128). */
const EMPTINESS_CHECKS_IN_FLIGHT = 8;
/** Progress entries in the `local` sublevel: `${PROGRESS_PREFIX}${transferId}`. */
const PROGRESS_PREFIX = 'transfer-progress/';
/**
 * A transfer's progress entry is stored with a chunk once this many bytes of chunks were
 * stored without it, or this long after the last: what a crash of the target makes it
 * fetch again. Four of the node's default write buffers (DEFAULT_WRITE_BUFFER_BYTES): with
 * an entry every 32 MiB, every file still spanned from the `local` keys to the records (at
 * 1,000,000 payloads LevelDB's CPU 1.5× the records' alone); every 128 MiB, as the records'
 * alone (docs/benchmarks.md, "Transfer and replicated ingest").
 */
export const PROGRESS_EVERY_BYTES = 128 * 1024 * 1024;
export const PROGRESS_EVERY_MS = 10_000;
/** Transfers whose unsaved progress is counted; a cluster change runs far fewer at once. */
const UNSAVED_PROGRESS_MAX = 1_024;

/** Chunk bytes a target stored since it last stored the transfer's progress entry, and since when (`now()`'s clock). */
interface UnsavedProgress {
  bytes: number;
  since: number;
}

/** A chunk read ahead (read()): where it starts, of which plan, when it was read, and the read (undefined if it failed). */
interface ReadAhead {
  cursor: string | undefined;
  slots: string;
  at: number;
  read: Promise<ChunkRead | undefined>;
}

type BytePair = [Buffer, Buffer];

export class TransferChunks {
  /** Sources' transfers by id: the records each moves, or its count under way (totalSoFar()). */
  private readonly totals = new Map<string, number | Promise<void>>();
  /** Digests a source builds from its reads, by transfer. */
  private readonly readBuilds = new Map<string, OpenBuild>();
  /** Digests a target builds from its stores, by transfer. */
  private readonly storeBuilds = new Map<string, OpenBuild>();

  /** Sources' transfers by id: the chunk read ahead (read()). */
  private readonly readAhead = new Map<string, ReadAhead>();
  /** Targets' transfers by id: what they stored since their progress entry (store()). */
  private readonly unsavedProgress = new Map<string, UnsavedProgress>();

  constructor(
    private readonly database: Database,
    private readonly sources: TransferChunkSources,
    private readonly chunkBytesMax: number,
    /** Records a transfer's total counts exactly before it estimates the rest (total()). */
    private readonly countedRecordsMax = COUNTED_RECORDS_MAX,
    /** How often a target stores a transfer's progress entry (store()). */
    private readonly progressEvery = { bytes: PROGRESS_EVERY_BYTES, ms: PROGRESS_EVERY_MS },
    private readonly now: () => number = () => performance.now(),
  ) {
    assert(chunkBytesMax > 0 && countedRecordsMax > 0, `transfer chunks of ${chunkBytesMax} bytes, ${countedRecordsMax} records counted`);
    assert(progressEvery.bytes >= 0 && progressEvery.ms >= 0, `progress stored every ${progressEvery.bytes} bytes, ${progressEvery.ms} ms`);
  }

  /**
   * The chunk after `after`. A source reads each ssr/tsr chunk ahead, as soon as it has
   * read the one before: the core asks for a chunk only once it sent the last (one read in
   * flight per transfer), and reading and sending in turn left each half of the source's
   * time to the other (a chunk every 12 ms where the bare pipeline takes 8). A chunk read
   * ahead is as good as one read when asked: the data a transfer moves is read at some time
   * after its change began, and every write since goes to the target too (docs/cluster.md,
   * "Transfers"). It is used only for a read from where it starts, within READ_AHEAD_AGE_MS
   * (a chunk that waited longer, for a target that stalled, is read again); any other read
   * waits for it first, so that no two reads of a transfer run at once. forgetReadsAhead()
   * drops them all (the database reopened, the node found its data damaged).
   */
  async read(transfer: TransferPlan, after: string | undefined): Promise<ChunkRead> {
    // An empty cursor is where a transfer starts, the same as none.
    const cursor = after === '' ? undefined : after;
    if (transfer.repo === 'KV') return this.readDefinitions(cursor);
    const ahead = this.readAhead.get(transfer.id);
    this.readAhead.delete(transfer.id);
    const early = ahead === undefined ? undefined : await ahead.read;
    const fits = ahead !== undefined && ahead.cursor === cursor && ahead.slots === slotsKey(transfer) && this.now() - ahead.at <= READ_AHEAD_AGE_MS;
    const read = fits && early !== undefined ? early : await this.readNow(transfer, cursor);
    if (!read.last && this.readAhead.size < READS_AHEAD_MAX) {
      // A failed read ahead is read again when asked (the error is the asking read's), unless an invariant broke.
      const next = this.readNow(transfer, read.chunk.cursor).catch((error: unknown) => {
        if (error instanceof InvariantError) throw error;
        return undefined;
      });
      this.readAhead.set(transfer.id, { cursor: read.chunk.cursor, slots: slotsKey(transfer), at: this.now(), read: next });
    }
    assert(this.readAhead.size <= READS_AHEAD_MAX, () => `${this.readAhead.size} transfers read ahead`);
    return read;
  }

  /** Resolves once the transfer's total is counted, or its count failed (the next read starts it again). */
  async whenCounted(transferId: string): Promise<void> {
    await this.totals.get(transferId);
  }

  /** Drops every chunk read ahead: none is given to a read after this. */
  forgetReadsAhead(): void {
    this.readAhead.clear();
  }

  private async readNow(transfer: TransferPlan, cursor: string | undefined): Promise<ChunkRead> {
    assert(transfer.repo !== 'KV', `transfer ${transfer.id} of definitions read as records`);
    const sublevel = this.sublevelOf(transfer.repo);
    const ranges = this.ranges(transfer.slots);
    const totalEstimate = this.totalSoFar(transfer, sublevel, ranges);
    const taken: BytePair[] = [];
    const state = { bytes: 0, full: false };
    // A read goes on from the cursor the last one ended at, unless the target asked for another start.
    const continued = takeOpen(this.readBuilds, transfer.id, (open) => open.cursor === cursor, this.sources.digests);
    let building: { prefix: string; build: DigestBuild } | undefined;
    let kept: DigestBuild | undefined;
    try {
      for (let index = 0; index < ranges.length; ) {
        const prefix = ranges[index]!;
        if (cursor !== undefined && prefixEnd(prefix) <= cursor) {
          index += 1;
          continue;
        }
        const whole = cursor === undefined || cursor < prefix;
        const from = whole ? { gte: Buffer.from(prefix) } : { gt: Buffer.from(cursor) };
        building = this.digestOfRange(transfer.repo, prefix, whole, continued);
        const before = taken.length;
        await this.readRange(sublevel, { ...from, lt: Buffer.from(prefixEnd(prefix)) }, taken, state, building);
        if (state.full) break;
        if (building !== undefined) this.sources.digests!.finish(building.build);
        building = undefined;
        index = taken.length > before ? index + 1 : await this.nextRangeHolding(sublevel, ranges, index);
      }
      // A chunk starts after its cursor: nothing the target has is sent again.
      assert(cursor === undefined || taken.length === 0 || Buffer.compare(taken[0]![0], Buffer.from(cursor)) > 0, () => `transfer ${transfer.id} reads from before its cursor ${cursor}`);
      const read = this.chunk(taken, !state.full, totalEstimate, transfer.repo === 'tsr');
      if (building !== undefined) keepOpen(this.readBuilds, transfer.id, { ...building, cursor: read.chunk.cursor }, this.sources.digests!);
      kept = building?.build;
      return read;
    } finally {
      // Whatever is neither kept open for the next chunk nor finished ends here unkept (a throw, a read that did not go on).
      for (const left of [building?.build, continued?.build]) if (left !== undefined && left !== kept) this.sources.digests!.abandon(left);
    }
  }

  /**
   * The digest a read of the range under `prefix` builds: a new one when it reads the range
   * from its first key (`whole`), the one the chunk before left open when it goes on in that
   * range, else none (it reads only part of the range).
   */
  private digestOfRange(repo: 'ssr' | 'tsr', prefix: string, whole: boolean, continued: OpenBuild | undefined): { prefix: string; build: DigestBuild } | undefined {
    const digests = this.sources.digests;
    if (digests === undefined) return undefined;
    if (!whole) return continued?.prefix === prefix && continued.build !== undefined ? { prefix, build: continued.build } : undefined;
    const { stream, partition } = partitionOf(prefix);
    assert(prefix === `${stream}/${encodePartition(partition)}/`, `a digest of ${prefix} as ${stream} ${partition}`);
    return { prefix, build: digests.begin(repo, stream, partition) };
  }

  /**
   * Appends the range's records to `taken` until the chunk is full. A record that does not
   * fit is left for the next chunk (the cursor stays before it), unless it is the only one.
   * Batches are sized to what the chunk still holds, so little is read and left unused.
   */
  private async readRange(
    sublevel: Sublevel,
    range: { gt?: Buffer; gte?: Buffer; lt: Buffer },
    taken: BytePair[],
    state: { bytes: number; full: boolean },
    building: { prefix: string; build: DigestBuild } | undefined,
  ): Promise<void> {
    // A batch may hold the whole chunk: past classic-level's default of 16 KiB a batch, nextv
    // stops short, and a chunk of 1 MiB took ~57 trips to LevelDB's thread (10 ms a chunk).
    // (An option of classic-level's, which the sublevel hands on to it.)
    const options: AbstractIteratorOptions<Buffer, Buffer> & { highWaterMarkBytes: number } = {
      ...range,
      keyEncoding: 'buffer',
      valueEncoding: 'buffer',
      highWaterMarkBytes: this.chunkBytesMax,
    };
    const iterator = sublevel.iterator<Buffer, Buffer>(options);
    const prefixBytes = building === undefined ? 0 : Buffer.byteLength(building.prefix);
    try {
      let batchRecords = READ_BATCH_RECORDS_FIRST;
      for (let entries = await iterator.nextv(batchRecords); entries.length > 0; entries = await iterator.nextv(batchRecords)) {
        for (const [key, value] of entries) {
          const size = pairBytes(key, value);
          if (taken.length > 0 && state.bytes + size > this.chunkBytesMax) {
            state.full = true;
            return;
          }
          taken.push([key, value]);
          state.bytes += size;
          if (building !== undefined) this.sources.digests!.add(building.build, key.toString('utf8', prefixBytes));
        }
        // A chunk is within its bound, unless its only record alone is larger.
        assert(state.bytes <= this.chunkBytesMax || taken.length === 1, () => `a transfer chunk of ${taken.length} records holds ${state.bytes} bytes, above ${this.chunkBytesMax}`);
        const averageBytes = state.bytes / taken.length;
        batchRecords = Math.min(READ_BATCH_RECORDS_MAX, Math.max(1, Math.ceil((this.chunkBytesMax - state.bytes) / averageBytes) + 1));
      }
    } finally {
      await iterator.close();
    }
  }

  /**
   * Stores a chunk's records in one synced batch: when it resolves, they are durable. The
   * transfer's `progress` entry goes into the same batch when it is due: with the
   * transfer's last chunk, and otherwise once per PROGRESS_EVERY_BYTES of chunks or
   * PROGRESS_EVERY_MS. The batches between carry neither it nor a sequence number
   * (`outsideLedger`), so their files hold nothing but records: a `local` key in every
   * batch made LevelDB compact a transfer's records 1.5× over (docs/cluster.md,
   * "Transfers"). A stored entry is never ahead of the records (it is written with the
   * chunk it names, after every chunk before it is durable): a restart of the target
   * resumes from it and asks for the chunks since again (a chunk stored twice is stored
   * once). That also makes good a chunk a disk lost after syncing it, which the ledger no
   * longer sees: LevelDB replays its log in order, so what follows it is lost too, and the
   * last chunk, the one the transfer completes with, is numbered.
   */
  async store(transfer: TransferPlan, chunk: ChunkData, progress: DurableIncoming, last: boolean): Promise<void> {
    assertProgress(progress);
    const progressPut: EncodedPut = {
      type: 'put',
      key: Buffer.concat([this.database.prefixOf(this.database.local), Buffer.from(progressKey(progress.transferId))]),
      value: Buffer.from(JSON.stringify(progress)),
    };
    if (transfer.repo === 'KV') {
      // Definitions go through their own store (versions, listeners): a KV chunk is small,
      // and its progress is written after it.
      await this.sources.applyDefinitions(parseJson(Buffer.from(chunk.bytes).toString('utf8')) as DefinitionRecord[]);
      // Progress only: the floor keeps room for it (docs/storage.md).
      await this.database.batchEncoded([progressPut], { sync: true, belowFloor: true });
      return;
    }
    const pairs = decodePairs(chunk.bytes);
    const groups = byPartition(pairs);
    assert(groups.length <= pairs.length, `${pairs.length} records touch ${groups.length} partitions`);
    const puts = prefixedPuts(this.database.prefixOf(this.sublevelOf(transfer.repo)), pairs);
    const unsaved = this.unsavedWith(transfer.id, chunk.bytes.length);
    const withProgress = last || unsaved.bytes >= this.progressEvery.bytes || this.now() - unsaved.since >= this.progressEvery.ms;
    if (withProgress) puts.push(progressPut);
    const builds = await this.storeDigests(transfer, groups);
    try {
      await this.database.batchEncoded(puts, { sync: true, outsideLedger: !withProgress });
    } catch (error) {
      for (const build of builds) if (build !== undefined) this.sources.digests!.abandon(build);
      throw error;
    }
    this.noteStored(transfer.id, withProgress ? { bytes: 0, since: this.now() } : unsaved);
    this.storedDigests(transfer, groups, builds, progress.cursor ?? '');
  }

  /** The chunk bytes stored since the transfer's progress entry was, with a chunk of `bytes`; a transfer new here counts from now. */
  private unsavedWith(transferId: string, bytes: number): UnsavedProgress {
    assert(Number.isSafeInteger(bytes) && bytes >= 0, `a chunk of ${bytes} bytes`);
    const unsaved = this.unsavedProgress.get(transferId) ?? { bytes: 0, since: this.now() };
    return { bytes: unsaved.bytes + bytes, since: unsaved.since };
  }

  /** Keeps the transfer's unsaved progress, the most recently stored last; past UNSAVED_PROGRESS_MAX the stalest is forgotten (it counts from zero again). */
  private noteStored(transferId: string, unsaved: UnsavedProgress): void {
    this.unsavedProgress.delete(transferId);
    if (this.unsavedProgress.size >= UNSAVED_PROGRESS_MAX) this.unsavedProgress.delete(this.unsavedProgress.keys().next().value as string);
    this.unsavedProgress.set(transferId, unsaved);
    assert(this.unsavedProgress.size <= UNSAVED_PROGRESS_MAX, `${this.unsavedProgress.size} transfers' progress counted`);
  }

  /**
   * The digests the chunk's partitions are built into, by group: the one an earlier chunk
   * of the transfer left open, or one begun now if the partition holds nothing yet (checked
   * before the chunk is written, after the build began: a record stored meanwhile spoils it).
   */
  private async storeDigests(transfer: TransferPlan, groups: readonly PartitionGroup[]): Promise<Array<DigestBuild | undefined>> {
    const digests = this.sources.digests;
    const first = groups[0];
    if (digests === undefined || first === undefined) return groups.map(() => undefined);
    // The chunk goes on in the partition the last one ended in, its first key past that chunk's cursor (never one stored twice).
    const continued = takeOpen(this.storeBuilds, transfer.id, (open) => open.prefix === first.prefix && first.keys[0]!.toString('utf8') > open.cursor, digests);
    const goesOn = continued !== undefined;
    const sublevel = this.sublevelOf(transfer.repo as 'ssr' | 'tsr');
    // Begun before the checks: a record stored into a partition after its check spoils its build.
    const builds: Array<DigestBuild | undefined> = groups.map((group, index) => {
      if (index === 0 && goesOn) return continued.build;
      const { stream, partition } = partitionOf(group.prefix);
      return digests.begin(transfer.repo as 'ssr' | 'tsr', stream, partition);
    });
    try {
      await forEachLimited([...builds.keys()], EMPTINESS_CHECKS_IN_FLIGHT, async (index) => {
        const build = builds[index];
        if (build === undefined || build.spoiled || (index === 0 && goesOn)) return;
        const prefix = groups[index]!.prefix;
        const [held] = await sublevel.keys({ gte: prefix, lt: prefixEnd(prefix), limit: 1 }).all();
        if (held === undefined) return;
        digests.abandon(build);
        builds[index] = undefined;
      });
    } catch (error) {
      for (const build of builds) if (build !== undefined) digests.abandon(build);
      throw error;
    }
    assert(builds.length === groups.length, `${builds.length} digests for ${groups.length} partitions`);
    return builds;
  }

  /**
   * The chunk is durable: its partitions are told changed (their digests and indexes are
   * stale) without spoiling the builds, which take its keys; every partition but the last
   * is whole here, and its digest kept; the last one's build waits for the next chunk.
   */
  private storedDigests(transfer: TransferPlan, groups: readonly PartitionGroup[], builds: ReadonlyArray<DigestBuild | undefined>, cursor: string): void {
    const repo = transfer.repo as 'ssr' | 'tsr';
    const digests = this.sources.digests;
    assert(builds.length === groups.length, `${builds.length} digests for ${groups.length} partitions stored`);
    const tellAll = () => {
      for (const group of groups) this.tellChanged(repo, group.prefix);
    };
    if (digests === undefined) return tellAll();
    const live = builds.filter((build): build is DigestBuild => build !== undefined);
    try {
      digests.changedByBuilds(live, tellAll);
      groups.forEach((group, index) => {
        const build = builds[index];
        if (build === undefined) return;
        const prefixBytes = Buffer.byteLength(group.prefix);
        for (const key of group.keys) digests.add(build, key.toString('utf8', prefixBytes));
        if (index < groups.length - 1) digests.finish(build);
      });
    } catch (error) {
      for (const build of live) digests.abandon(build);
      throw error;
    }
    // A chunk of nothing (an empty transfer's only one) leaves nothing open.
    const last = groups.at(-1);
    if (last !== undefined) keepOpen(this.storeBuilds, transfer.id, { prefix: last.prefix, build: builds.at(-1), cursor }, digests);
  }

  /** Every progress entry stored with a chunk: what the core resumes from after a restart. */
  async storedProgress(): Promise<DurableIncoming[]> {
    const entries: DurableIncoming[] = [];
    for await (const [key, value] of this.database.local.iterator({ gte: PROGRESS_PREFIX, lt: prefixEnd(PROGRESS_PREFIX) })) {
      const entry = JSON.parse(value) as DurableIncoming;
      assertProgress(entry);
      if (key !== progressKey(entry.transferId)) throw new Error(`transfer progress under '${key}' is for ${entry.transferId}`);
      entries.push(entry);
    }
    return entries;
  }

  /** Deletes the progress entries of transfers outside the change in flight (they have ended). */
  async forgetProgress(changeId: string | undefined): Promise<void> {
    // A transfer id starts with its change's id (`${changeId}/…`).
    const ended = (transferId: string) => changeId === undefined || !transferId.startsWith(`${changeId}/`);
    const stale: string[] = [];
    for await (const key of this.database.local.keys({ gte: PROGRESS_PREFIX, lt: prefixEnd(PROGRESS_PREFIX) })) {
      if (ended(key.slice(PROGRESS_PREFIX.length))) stale.push(key);
    }
    assert(stale.every((key) => key.startsWith(PROGRESS_PREFIX)), 'a key outside the transfer progress entries forgotten');
    // Not synced: an entry that survives a crash is forgotten by the core and deleted again.
    await this.database.batch(stale.map((key) => ({ type: 'del', sublevel: this.database.local, key })), { sync: false });
    for (const counted of [this.unsavedProgress, this.readAhead, this.totals]) for (const transferId of counted.keys()) if (ended(transferId)) counted.delete(transferId);
    // Digests left open by transfers that have ended (a target's last partition, a source cut off) are of no use.
    for (const open of [this.readBuilds, this.storeBuilds]) {
      for (const [transferId, build] of open) {
        if (!ended(transferId)) continue;
        open.delete(transferId);
        if (build.build !== undefined) this.sources.digests?.abandon(build.build);
      }
    }
  }

  /** Deletes this node's records of the slots (it no longer owns them). */
  async drop(repo: 'ssr' | 'tsr', slots: readonly Slot[]): Promise<void> {
    const sublevel = this.sublevelOf(repo);
    assert(slots.every((slot) => Number.isInteger(slot.partition) && slot.partition >= 0 && slot.replicas >= 1), `${repo} slots to drop outside every ring`);
    for (const prefix of this.ranges(slots)) {
      await sublevel.clear({ gte: prefix, lt: prefixEnd(prefix) });
      this.tellChanged(repo, prefix);
    }
  }

  /** Deletes this node's records of one partition of one stream. */
  async dropPartition(repo: 'ssr' | 'tsr', stream: string, partition: number): Promise<void> {
    const prefix = `${stream}/${encodePartition(partition)}/`;
    // A stream key is "tenant/collection/name": the prefix names one partition, never a whole stream.
    assert(prefix.split('/').length === 5, `partition prefix ${prefix}`);
    await this.sublevelOf(repo).clear({ gte: prefix, lt: prefixEnd(prefix) });
    this.tellChanged(repo, prefix);
  }

  /** `prefix` is "tenant/collection/name/<partition hex>/". */
  private tellChanged(repo: 'ssr' | 'tsr', prefix: string): void {
    const { stream, partition } = partitionOf(prefix);
    this.sources.partitionChanged(repo, stream, partition);
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
    assert([...partitionsByReplicas.keys()].every((replicas) => replicas >= 1), 'slots of no replicas');
    for (const stream of this.sources.streams()) {
      for (const partition of partitionsByReplicas.get(stream.replicas) ?? []) {
        prefixes.push(`${stream.key}/${encodePartition(partition)}/`);
      }
    }
    return prefixes.sort();
  }

  /**
   * The records the transfer moves, for its percentComplete, or 0 while they are being
   * counted: the first read starts the count and no read waits for it (counting the first
   * 20,000 payloads held a join's first chunk back ~75 ms); the core shows no percentage
   * until a chunk brings the total (transfers.ts). Counted while they are few; past
   * countedRecordsMax, the rest is estimated from LevelDB's approximate sizes, scaled by
   * the records counted per approximate byte so far. A count that fails is started again
   * by the next read; one that breaks an invariant is not swallowed.
   */
  private totalSoFar(transfer: TransferPlan, sublevel: Sublevel, ranges: string[]): number {
    const total = this.totals.get(transfer.id);
    if (typeof total === 'number') return total;
    if (total === undefined) {
      const counting = this.countOrEstimate(sublevel, ranges).then(
        (counted) => {
          assert(Number.isSafeInteger(counted) && counted >= 0, `transfer ${transfer.id}: ${counted} records in total`);
          // Kept unless forgetProgress dropped the transfer meanwhile.
          if (this.totals.get(transfer.id) === counting) this.totals.set(transfer.id, counted);
        },
        (error: unknown) => {
          if (error instanceof InvariantError) throw error;
          if (this.totals.get(transfer.id) === counting) this.totals.delete(transfer.id);
        },
      );
      this.totals.set(transfer.id, counting);
    }
    return 0;
  }

  private async countOrEstimate(sublevel: Sublevel, ranges: string[]): Promise<number> {
    // The estimate scales what lies before and after a key: the ranges are in key order (ranges()).
    assert(ranges.every((prefix, index) => index === 0 || ranges[index - 1]! < prefix), 'transfer ranges out of key order');
    let counted = 0;
    let estimated = false;
    for (let index = 0; index < ranges.length; ) {
      const prefix = ranges[index]!;
      const iterator = sublevel.keys({ gte: prefix, lt: prefixEnd(prefix) });
      let held = false;
      try {
        for (let keys = await iterator.nextv(1000); keys.length > 0; keys = await iterator.nextv(1000)) {
          held = true;
          for (const key of keys) counted += payloadsOf(sublevel === this.database.tsr, key);
          if (estimated || counted < this.countedRecordsMax) continue;
          estimated = true;
          const total = await this.estimateTotal(sublevel, ranges, index, keys.at(-1)!, counted);
          if (total !== undefined) return total;
        }
      } finally {
        await iterator.close();
      }
      index = held ? index + 1 : await this.nextRangeHolding(sublevel, ranges, index);
    }
    return counted;
  }

  /**
   * `counted` records of the ranges read so far, the last of them `lastKey` in
   * `ranges[index]`: the rest scaled by the records counted per approximate byte, or
   * undefined when all counted is still in the memory table (nothing to scale by).
   */
  private async estimateTotal(sublevel: Sublevel, ranges: string[], index: number, lastKey: string, counted: number): Promise<number | undefined> {
    const prefix = ranges[index]!;
    const after = lastKey + '\u0000';
    const countedBytes = (await this.approximateBytes(sublevel, ranges.slice(0, index))) + (await this.database.approximateBytes(sublevel, prefix, after));
    if (countedBytes === 0) return undefined;
    assert(counted > 0 && countedBytes > 0, `an estimate from ${counted} records in ${countedBytes} bytes`);
    const restBytes = (await this.database.approximateBytes(sublevel, after, prefixEnd(prefix))) + (await this.approximateBytes(sublevel, ranges.slice(index + 1)));
    return counted + Math.round((counted * restBytes) / countedBytes);
  }

  /** Each range's size is asked of LevelDB with others in flight: one after another, 128 of them held a join's first chunk back ~60 ms. */
  private async approximateBytes(sublevel: Sublevel, ranges: readonly string[]): Promise<number> {
    let bytes = 0;
    await forEachLimited(ranges, APPROXIMATE_SIZES_IN_FLIGHT, async (prefix) => {
      // Added once it is known: `bytes += await …` would read `bytes` before the wait.
      const size = await this.database.approximateBytes(sublevel, prefix, prefixEnd(prefix));
      bytes += size;
    });
    assert(Number.isFinite(bytes) && bytes >= 0, `${bytes} approximate bytes in ${ranges.length} ranges`);
    return bytes;
  }

  /**
   * Range `index` holds nothing (after the cursor): the index of the next range that may
   * hold a record, found by one seek from its end over the rest of the ranges (they are in
   * key order, ranges()), or ranges.length when none does. A run of empty ranges costs one
   * seek, not a read each: an empty repository's transfer read 128 ranges to count and 128
   * to read, ~130 ms of a join's start.
   */
  private async nextRangeHolding(sublevel: Sublevel, ranges: readonly string[], index: number): Promise<number> {
    const [next] = await sublevel.keys({ gte: prefixEnd(ranges[index]!), lt: prefixEnd(ranges.at(-1)!), limit: 1 }).all();
    if (next === undefined) return ranges.length;
    let holding = index + 1;
    while (holding < ranges.length && prefixEnd(ranges[holding]!) <= next) holding += 1;
    assert(holding > index && holding <= ranges.length, () => `after range ${index}, range ${holding} of ${ranges.length} holds ${next}`);
    return holding;
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
      bytes += stringifyJson(record).length;
      if (bytes >= this.chunkBytesMax) break;
    }
    // Every chunk moves at least one definition while any is left, so a KV transfer ends.
    assert(taken.length > 0 || records.length === 0, 'a definitions chunk that moves nothing');
    const last = taken.length === records.length;
    const chunk: ChunkData = {
      bytes: Buffer.from(stringifyJson(taken), 'utf8'),
      records: taken.length,
      cursor: taken.at(-1)?.key ?? cursor ?? '',
    };
    return { chunk, last, totalEstimate: all.length };
  }

  private chunk(pairs: readonly BytePair[], last: boolean, totalEstimate: number, tsr: boolean): ChunkRead {
    let payloads = 0;
    for (const [key] of pairs) payloads += payloadsOf(tsr, key);
    // A chunk that is not the last moves something: the transfer makes progress.
    assert(last || pairs.length > 0, 'a transfer chunk that moves nothing and is not the last');
    return {
      chunk: { bytes: encodePairs(pairs), records: payloads, cursor: pairs.at(-1)?.[0].toString('utf8') ?? '' },
      last,
      totalEstimate,
    };
  }

  private sublevelOf(repo: 'ssr' | 'tsr'): Sublevel {
    return repo === 'ssr' ? this.database.ssr : this.database.tsr;
  }
}

/** The key of a transfer's progress entry in the `local` sublevel. */
export function progressKey(transferId: string): string {
  return PROGRESS_PREFIX + transferId;
}

const LENGTH_BYTES = 4;
const SLASH = 0x2f;

/**
 * The payloads a record of a transfer holds, which its progress counts: one in ssr, its
 * block's count in tsr (read from its key, tsr.ts).
 */
function payloadsOf(tsr: boolean, key: string | Uint8Array): number {
  return tsr ? payloadsInBlockKey(typeof key === 'string' ? key : Buffer.from(key.buffer, key.byteOffset, key.length).toString('latin1')) : 1;
}

function pairBytes(key: Uint8Array, value: Uint8Array): number {
  return 2 * LENGTH_BYTES + key.length + value.length;
}

/** [key, value] byte pairs (UTF-8 text) as the chunk format; see the top of this file. */
export function encodePairs(pairs: ReadonlyArray<readonly [Uint8Array, Uint8Array]>): Buffer {
  let size = 0;
  for (const [key, value] of pairs) size += pairBytes(key, value);
  const buffer = Buffer.allocUnsafe(size);
  let offset = 0;
  const put = (bytes: Uint8Array) => {
    buffer.writeUInt32BE(bytes.length, offset);
    buffer.set(bytes, offset + LENGTH_BYTES);
    offset += LENGTH_BYTES + bytes.length;
  };
  for (const [key, value] of pairs) {
    put(key);
    put(value);
  }
  assert(offset === size, `a transfer chunk of ${size} bytes written to ${offset}`);
  return buffer;
}

/**
 * The inverse of encodePairs, as subarrays of `bytes` (no copies); throws on bytes that are
 * not a whole number of pairs.
 */
export function decodePairs(bytes: Uint8Array): BytePair[] {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const pairs: BytePair[] = [];
  let offset = 0;
  const take = (): Buffer => {
    if (offset + LENGTH_BYTES > buffer.length) throw new Error('transfer chunk: truncated length');
    const length = buffer.readUInt32BE(offset);
    const end = offset + LENGTH_BYTES + length;
    if (end > buffer.length) throw new Error('transfer chunk: truncated string');
    const text = buffer.subarray(offset + LENGTH_BYTES, end);
    offset = end;
    return text;
  };
  while (offset < buffer.length) pairs.push([take(), take()]);
  assert(offset === buffer.length, `transfer chunk read to ${offset} of ${buffer.length} bytes`);
  return pairs;
}

/** Root-level puts of the pairs under the sublevel `prefix`; the prefixed keys share one allocation. */
function prefixedPuts(prefix: Buffer, pairs: readonly BytePair[]): EncodedPut[] {
  let keyBytes = 0;
  for (const [key] of pairs) keyBytes += prefix.length + key.length;
  const keys = Buffer.allocUnsafe(keyBytes);
  let offset = 0;
  return pairs.map(([key, value]) => {
    const start = offset;
    prefix.copy(keys, offset);
    key.copy(keys, offset + prefix.length);
    offset += prefix.length + key.length;
    assert(offset <= keys.length, () => `prefixed keys written past their ${keys.length} bytes`);
    return { type: 'put', key: keys.subarray(start, offset), value };
  });
}

/** The keys of one partition in a chunk: its "tenant/collection/name/<partition hex>/" prefix, and its keys in order. */
interface PartitionGroup {
  prefix: string;
  keys: Buffer[];
}

/**
 * The keys of the pairs by partition, in key order. Keys come in key order, so a key is
 * compared with the last prefix before it is split; a partition's keys are together.
 */
function byPartition(pairs: readonly BytePair[]): PartitionGroup[] {
  const groups: PartitionGroup[] = [];
  let last: Buffer | undefined;
  for (const [key] of pairs) {
    if (last !== undefined && key.length > last.length && key.compare(last, 0, last.length, 0, last.length) === 0) {
      groups.at(-1)!.keys.push(key);
      continue;
    }
    let end = -1;
    for (let slashes = 0; slashes < 4; slashes += 1) {
      end = key.indexOf(SLASH, end + 1);
      if (end < 0) throw new Error(`transfer chunk: key '${key.toString('utf8')}' has no partition`);
    }
    const previous = last;
    last = key.subarray(0, end + 1);
    const prefix = last.toString('utf8');
    // In key order (LevelDB's, of bytes), each partition's prefix sorts after the one before: none comes back.
    if (previous !== undefined && Buffer.compare(last, previous) <= 0) throw new Error(`transfer chunk: the keys of ${prefix} come after those of ${previous.toString('utf8')}`);
    groups.push({ prefix, keys: [key] });
  }
  assert(groups.reduce((keys, group) => keys + group.keys.length, 0) === pairs.length, `${pairs.length} keys grouped into other counts`);
  return groups;
}

/** The stream and partition of a "tenant/collection/name/<partition hex>/" prefix. */
function partitionOf(prefix: string): { stream: string; partition: number } {
  const parts = prefix.split('/');
  assert(parts.length === 5 && parts[4] === '', `partition prefix ${prefix}`);
  return { stream: parts.slice(0, 3).join('/'), partition: parseInt(parts[3]!, 16) };
}

/** What a plan's chunks are read from: a read ahead for one plan is no read for another with the same id. */
function slotsKey(transfer: TransferPlan): string {
  return transfer.slots.map(slotKey).join(',');
}

/** The build the transfer left open, taken out: as it was when `goesOn` takes it, else abandoned. */
function takeOpen(open: Map<string, OpenBuild>, transferId: string, goesOn: (build: OpenBuild) => boolean, digests: TransferDigests | undefined): OpenBuild | undefined {
  const build = open.get(transferId);
  open.delete(transferId);
  assert(build === undefined || build.prefix.endsWith('/'), () => `transfer ${transferId} left a digest open under ${build?.prefix}`);
  if (build === undefined || goesOn(build)) return build;
  if (build.build !== undefined) digests?.abandon(build.build);
  return undefined;
}

/** Leaves a build open for the transfer's next chunk; the oldest open one goes past OPEN_BUILDS_MAX. */
function keepOpen(open: Map<string, OpenBuild>, transferId: string, build: OpenBuild, digests: TransferDigests): void {
  const replaced = open.get(transferId)?.build;
  if (replaced !== undefined && replaced !== build.build) digests.abandon(replaced);
  open.set(transferId, build);
  while (open.size > OPEN_BUILDS_MAX) {
    const [oldest, left] = open.entries().next().value!;
    open.delete(oldest);
    if (left.build !== undefined) digests.abandon(left.build);
  }
  assert(open.size <= OPEN_BUILDS_MAX, () => `${open.size} transfers with a digest open`);
}

function assertProgress(entry: DurableIncoming): void {
  const valid = typeof entry.transferId === 'string' && Number.isInteger(entry.seqAcked) && entry.seqAcked >= 1 && (entry.cursor === undefined || typeof entry.cursor === 'string');
  if (!valid) throw new Error(`transfer progress entry is malformed: ${JSON.stringify(entry)}`);
}
