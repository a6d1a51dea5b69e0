// Records a failed write may have left on fewer owners than it should (docs/cluster.md,
// "Writes of unknown outcome"). A record whose write failed (its batch answered 500 listing
// it) may still sit on one owner: a replica write that timed out may have landed, and one
// owner may have stored it while no hint could be kept for the others. No hint exists for
// such a record (a write that failed is not brought back behind the client's back), so
// before this only the background repair sweep (every cluster.repairIntervalMs, 10 min)
// made the owners agree, and meanwhile two nodes could answer different totals. The node
// that saw the failure notes the records' keys here, durably before the 500 is answered;
// once every owner of their partition answers, it reads those keys from each owner and
// gives each owner the ones it lacks (nothing moves that no owner stored, so a failed write
// is never created, only completed where one owner has it). Only the keys noted move: the
// records that hints bring are left to them.
//
// A note is kept in the node's database (FollowUpStorage) with the failed write, so a node
// killed before its follow-ups ran still runs them after its restart: the chaos suite found
// totals 4 and 84 apart once settled, each from a failed write noted by a node killed soon
// after. A successful write notes nothing and writes nothing more.

import type { Logger } from '../lib/log.js';
import type { Membership } from '../protocol/cluster-types.js';
import { exchangeBetween, type PartitionHolder, type RepairPartitionRef } from '../repair/partition-sync.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Timer, Timers } from '../lib/timers.js';
import { assert } from '../lib/assert.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import { memberNamed } from '../cluster-core/membership.js';
import { writeOwners } from '../cluster-core/placement.js';
import type { FollowUpPart } from './write-messages.js';
import type { RecentReceipts } from './recent-receipts.js';

/** Where the router reports records whose write failed with an uncertain outcome. */
export interface UncertainWrites {
  /** Resolves once the note is durable (or could not be made so: then it is kept in memory, logged). */
  note(repo: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void>;
  /**
   * Before a write: the records this node is about to store while every other owner is known
   * down are noted first (see WriteFollowUps.intend). Undefined when there are none.
   */
  intend?(repo: RepositoryName, replicas: number, records: readonly StoredRecord[], positions: readonly number[], ownersOf: (position: number) => readonly string[]): Promise<WriteIntent | undefined>;
}

/** Notes made before a write, dropped once it is known which of its records did not fail. */
export interface WriteIntent {
  /** `unsettled`: the records that failed (or must be routed again): their notes stay. */
  settle(unsettled: ReadonlySet<StoredRecord>): void;
}

/** A note as the database holds it, under a key of its own. */
export interface StoredFollowUp {
  key: string;
  part: FollowUpPart;
}

/**
 * The durable notes (follow-up-store.ts; the simulation's own): add and remove return
 * storage operations that take effect once a Committer commits them.
 */
export interface FollowUpStorage {
  add(part: FollowUpPart): { key: string; operations: readonly unknown[] };
  remove(keys: readonly string[]): readonly unknown[];
}

export interface WriteFollowUpsDeps {
  localName: string;
  membership(): Membership;
  available(node: string): boolean;
  /** This node's partitions or a peer's, by node name. */
  holder(node: string): PartitionHolder;
  /** The key under which a holder's records() finds the record (ssr: its writeId; tsr: its block's key). */
  keyOf(repo: RepositoryName, record: StoredRecord): string;
  storage: FollowUpStorage;
  /** Makes storage operations durable together (the group commit, as hint-keeper.ts's Committer). */
  committer: { commit(operations: readonly unknown[]): Promise<void> };
  /** The notes the database held at start: followed up as if just noted. */
  stored: readonly StoredFollowUp[];
  /**
   * Records this node stored lately for other coordinators (recent-receipts.ts): those of a
   * sender seen unavailable are noted, as a write it was making when it died may sit here only.
   */
  receipts?: RecentReceipts;
  /**
   * Hands the follow-ups waiting to another member (FollowUpsTake), forgetting those taken;
   * whether none is left. What a node that has left does with them.
   */
  handOver?(): Promise<boolean>;
  timers: Timers;
  intervalMs: number;
  log: Logger;
}

/** What one note asks for: some keys of the partition, or all of it (undefined). */
interface Note {
  keys: ReadonlySet<string> | undefined;
  /** Its keys in the database (several once notes were merged into one whole-partition note). */
  stored: string[];
}

interface FollowUp {
  part: RepairPartitionRef;
  replicas: number;
  notedAtMs: number;
  /** Oldest first. */
  notes: Note[];
  /** The notes an exchange under way is making whole. */
  inExchange: ReadonlySet<Note>;
}

/** Partitions remembered at once: past it the oldest is left to the background sweep (logged). */
const FOLLOW_UPS_MAX = 4_096;
/** Keys remembered for one partition; past it, the whole partition is compared instead. */
export const FOLLOW_UP_KEYS_MAX = 2_000;
/** Keys remembered over all partitions; past it, partitions noted are compared whole. */
const FOLLOW_UP_KEYS_TOTAL_MAX = 200_000;
/** Notes of one partition waiting: past it they merge into one whole-partition note. */
const NOTES_PER_PARTITION_MAX = 16;
/** Keys one fetch or store of a follow-up carries (as a repair exchange's messages). */
const KEYS_PER_MESSAGE_MAX = 500;
/**
 * Partitions made whole at once. One after another, the 76 a leaving node had noted while
 * an owner was down held its leave 15-16 s after the faults ended (partition-join-leave-r3
 * seed 3), each exchange moving hundreds of records.
 */
const FOLLOW_UPS_IN_FLIGHT = 4;
/** At most one warning this often that notes could not be kept durably. */
const UNKEPT_WARNING_MS = 10_000;
/** Passes a node that has left tries to hand its follow-ups over before it leaves them to the repair sweep. */
const HAND_OVER_PASSES_MAX = 30;

export class WriteFollowUps implements UncertainWrites {
  private readonly waiting = new Map<string, FollowUp>();
  private timer: Timer | undefined;
  private working = false;
  private dropped = 0;
  /** Keys held by notes, over all partitions (FOLLOW_UP_KEYS_TOTAL_MAX). */
  private keysHeld = 0;
  /** Passes spent handing follow-ups over since this node has left. */
  private handOverPasses = 0;
  private unkeptWarnedAtMs = -Infinity;
  /**
   * Notes whose commit failed (an I/O error, a full disk), with what would make them durable:
   * each pass tries again, so a crash after the disk recovers does not lose them.
   */
  private readonly unkept = new Map<Note, readonly unknown[]>();

  constructor(private readonly deps: WriteFollowUpsDeps) {
    assert(deps.intervalMs > 0, `follow-ups every ${deps.intervalMs} ms`);
    for (const { key, part } of deps.stored) this.add(part, part.keys === undefined ? undefined : new Set(part.keys), key);
    if (deps.stored.length > 0) deps.log.info({ notes: deps.stored.length, partitions: this.waiting.size }, 'follow-ups of failed writes kept before this start: followed up again');
  }

  start(): void {
    assert(this.timer === undefined, 'write follow-ups started twice');
    this.timer = this.deps.timers.setInterval(() => void this.work(), this.deps.intervalMs);
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** Partitions waiting for their owners to agree (monitoring `handoff`: `pendingSyncs`). */
  pending(): number {
    return this.waiting.size;
  }

  /** The partitions waiting, with their keys (none: all of it), to hand to another member (a leaving node). */
  pendingParts(): FollowUpPart[] {
    return [...this.waiting.values()].map((followUp) => ({ ...followUp.part, replicas: followUp.replicas, keys: keysOf(followUp.notes) }));
  }

  /** Another member took these over (FollowUpsTake): this node no longer waits for them, nor keeps them. */
  async forget(parts: readonly FollowUpPart[]): Promise<void> {
    // What was handed over came from pendingParts: partitions with a copy count each.
    assert(parts.every((part) => Number.isInteger(part.partition) && part.replicas >= 1), 'follow-ups forgotten that were never pending');
    const stored: string[] = [];
    for (const part of parts) {
      const id = idOf(part.repo, part.stream, part.partition, part.replicas);
      const followUp = this.waiting.get(id);
      if (followUp === undefined) continue;
      // Notes made after pendingParts() read them were not handed over: they stay.
      const handed = followUp.notes.filter((note) => covers(part.keys, note.keys));
      stored.push(...this.removeNotes(id, followUp, handed));
    }
    await this.unstore(stored);
  }

  /** Notes the records' partitions (their keys) and resolves once the notes are durable. */
  note(repo: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void> {
    return this.noteParts(partsOf(repo, replicas, records, (record) => this.deps.keyOf(repo, record)));
  }

  /**
   * A record this node is about to store while every other owner of it is known down will be
   * on this node alone until its hints are kept: killed in between (the chaos suite found 11
   * tsr blocks so, on one owner once settled), nothing would say so. Such records are noted
   * before they are stored, and the notes of those that did not fail are dropped after. Only
   * writes while an owner is down pay this commit.
   */
  async intend(repo: RepositoryName, replicas: number, records: readonly StoredRecord[], positions: readonly number[], ownersOf: (position: number) => readonly string[]): Promise<WriteIntent | undefined> {
    const { localName, available } = this.deps;
    // The usual case costs a look at the members, nothing per record: every one answers.
    if (this.deps.membership().members.every((member) => member.name === localName || member.state === 'Left' || available(member.name))) return undefined;
    assert(positions.every((position) => position >= 0 && position < records.length), 'a write intent for a position outside its records');
    const aloneByPartition = new Map<number, boolean>();
    const alone = positions.filter((position) => {
      const partition = records[position]!.partition;
      let holdsAlone = aloneByPartition.get(partition);
      if (holdsAlone === undefined) {
        const owners = ownersOf(position);
        holdsAlone = owners.length > 1 && owners.includes(localName) && owners.every((owner) => owner === localName || !available(owner));
        aloneByPartition.set(partition, holdsAlone);
      }
      return holdsAlone;
    }).map((position) => records[position]!);
    if (alone.length === 0) return undefined;
    const made = await this.notePartsMade(partsOf(repo, replicas, alone, (record) => this.deps.keyOf(repo, record)));
    return {
      settle: (unsettled) => {
        const stay = new Set([...unsettled].map((record) => idOf(repo, record.stream, record.partition, replicas)));
        const dropped: string[] = [];
        for (const { id, followUp, note } of made) {
          // A note merged since into one of the whole partition covers more than this write: it stays.
          if (note.keys !== undefined && !stay.has(id)) dropped.push(...this.removeNotes(id, followUp, [note]));
        }
        // Only the notes this write made are dropped.
        assert(dropped.length <= made.reduce((sum, { note }) => sum + note.stored.length, 0), 'a write intent dropped notes it did not make');
        void this.unstore(dropped);
      },
    };
  }

  /** Notes partitions (each with the keys to compare, or all of it) and resolves once the notes are durable. */
  async noteParts(parts: readonly FollowUpPart[]): Promise<void> {
    await this.notePartsMade(parts);
  }

  /** noteParts, returning the notes it made (a part already covered makes none). */
  private async notePartsMade(parts: readonly FollowUpPart[]): Promise<Array<{ id: string; followUp: FollowUp; note: Note }>> {
    const operations: unknown[] = [];
    const made: Array<{ id: string; followUp: FollowUp; note: Note }> = [];
    const operationsOf = new Map<Note, readonly unknown[]>();
    for (const part of parts) {
      assert(Number.isInteger(part.partition) && part.partition >= 0 && part.replicas >= 1, `follow-up of partition ${part.partition} at ${part.replicas} replicas`);
      const note = this.add(part, part.keys === undefined ? undefined : new Set(part.keys), undefined);
      if (note === undefined) continue;
      const id = idOf(part.repo, part.stream, part.partition, part.replicas);
      made.push({ id, followUp: this.waiting.get(id)!, note });
      const kept = this.deps.storage.add({ repo: part.repo, stream: part.stream, partition: part.partition, replicas: part.replicas, keys: note.keys === undefined ? undefined : [...note.keys] });
      note.stored.push(kept.key);
      operations.push(...kept.operations);
      operationsOf.set(note, kept.operations);
    }
    if (operations.length === 0) return made;
    try {
      await this.deps.committer.commit(operations);
    } catch (error) {
      // The write has failed already (or will be tried anyway); its follow-up still runs unless
      // this node stops first. Once per UNKEPT_WARNING_MS: a full disk fails every one.
      const now = this.deps.timers.now();
      const warn = now - this.unkeptWarnedAtMs >= UNKEPT_WARNING_MS;
      if (warn) this.unkeptWarnedAtMs = now;
      this.deps.log[warn ? 'warn' : 'debug']({ err: error, partitions: parts.length }, 'follow-ups of failed writes could not be kept durably: kept in memory, and written again at each pass');
      for (const [note, noteOperations] of operationsOf) this.unkept.set(note, noteOperations);
    }
    return made;
  }

  /**
   * Adds a note to its partition's follow-up; returns it when it is new (undefined when a
   * waiting note already covers it). `stored`: its key in the database when loaded from it.
   */
  private add(part: FollowUpPart, keys: ReadonlySet<string> | undefined, stored: string | undefined): Note | undefined {
    const id = idOf(part.repo, part.stream, part.partition, part.replicas);
    const followUp = this.waiting.get(id) ?? this.newFollowUp(id, part);
    // Notes an exchange under way has taken may be done before the new records landed.
    const open = followUp.notes.filter((note) => !followUp.inExchange.has(note));
    if (stored === undefined && open.some((note) => covers(note.keys, keys))) return undefined;
    assert(keys === undefined || keys.size > 0, 'a follow-up note of no keys');
    let note: Note = { keys, stored: stored === undefined ? [] : [stored] };
    const keysAfter = this.keysHeld + (keys?.size ?? 0);
    const partitionKeys = open.reduce((sum, each) => sum + (each.keys?.size ?? 0), 0) + (keys?.size ?? 0);
    if (keys !== undefined && (open.length + 1 > NOTES_PER_PARTITION_MAX || partitionKeys > FOLLOW_UP_KEYS_MAX || keysAfter > FOLLOW_UP_KEYS_TOTAL_MAX)) {
      // Too many to remember one by one: the open notes become one of the whole partition.
      note = { keys: undefined, stored: [...open.flatMap((each) => each.stored), ...note.stored] };
      for (const each of open) this.keysHeld -= each.keys?.size ?? 0;
      // The note of the whole partition is committed in their place.
      for (const each of open) this.unkept.delete(each);
      followUp.notes = followUp.notes.filter((each) => followUp.inExchange.has(each));
    }
    this.keysHeld += note.keys?.size ?? 0;
    followUp.notes.push(note);
    assert(this.waiting.size <= FOLLOW_UPS_MAX && this.keysHeld >= 0, () => `${this.waiting.size} follow-ups kept, ${this.keysHeld} keys`);
    return note;
  }

  /** A partition's follow-up, with no note yet; past FOLLOW_UPS_MAX partitions the oldest is left to the repair sweep. */
  private newFollowUp(id: string, part: FollowUpPart): FollowUp {
    if (this.waiting.size >= FOLLOW_UPS_MAX) {
      const [oldestId, oldest] = this.waiting.entries().next().value!;
      void this.unstore(this.removeNotes(oldestId, oldest, oldest.notes));
      if (this.dropped++ === 0) this.deps.log.warn({ limit: FOLLOW_UPS_MAX }, 'too many partitions await a follow-up of failed writes: the oldest are left to the repair sweep');
    }
    const followUp: FollowUp = { part: { repo: part.repo, stream: part.stream, partition: part.partition }, replicas: part.replicas, notedAtMs: this.deps.timers.now(), notes: [], inExchange: new Set() };
    this.waiting.set(id, followUp);
    assert(this.waiting.size <= FOLLOW_UPS_MAX, 'follow-ups past their bound');
    return followUp;
  }

  /**
   * Drops notes of a follow-up (and the follow-up once it has none); returns their database
   * keys. Notes already dropped (handed over or pushed out during an exchange) are skipped.
   */
  private removeNotes(id: string, followUp: FollowUp, notes: readonly Note[]): string[] {
    const present = new Set(followUp.notes);
    const removed = notes.filter((note) => present.has(note));
    const gone = new Set(removed);
    followUp.notes = followUp.notes.filter((note) => !gone.has(note));
    for (const note of removed) this.keysHeld -= note.keys?.size ?? 0;
    for (const note of removed) this.unkept.delete(note);
    if (followUp.notes.length === 0 && this.waiting.get(id) === followUp) this.waiting.delete(id);
    assert(this.keysHeld >= 0, () => `${this.keysHeld} follow-up keys held`);
    return removed.flatMap((note) => note.stored);
  }

  /** Deletes notes from the database; a delete that fails leaves a note that is followed up once more after a restart. */
  private async unstore(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    // A note merged into one of the whole partition shares its database keys: deleting one twice is harmless.
    assert(keys.every((key) => key.length > 0), 'a follow-up note deleted without its database key');
    try {
      await this.deps.committer.commit(this.deps.storage.remove(keys));
    } catch (error) {
      this.deps.log.debug({ err: error, notes: keys.length }, 'done follow-ups could not be deleted: they run again after a restart');
    }
  }

  /** `sender` had this node store `records` (a replica write): kept a while in case it dies (recent-receipts.ts). */
  received(sender: string, repo: RepositoryName, replicas: number, records: readonly StoredRecord[]): void {
    this.deps.receipts?.add(sender, repo, replicas, records);
  }

  /**
   * `node` was just taken for unavailable, or restarted: what it wrote here lately is noted
   * at once. A coordinator killed in the middle of a write noted nothing, and its records may
   * sit on this owner only. Waiting for the next pass to see it unavailable would miss one
   * that restarts within the pass; one that restarts within a failure timeout is never seen
   * unavailable at all, only by its heartbeats' new run (the core's `restarted`).
   */
  writerUnavailable(node: string): void {
    assert(node !== this.deps.localName, `${node} is this node, taken for unavailable`);
    this.noteReceiptsOf(node);
  }

  /** The receipts from senders now unavailable are noted (the pass's catch-all for writerUnavailable). */
  private noteReceiptsOfUnavailable(): void {
    const receipts = this.deps.receipts;
    if (receipts === undefined) return;
    for (const sender of receipts.senders()) if (!this.deps.available(sender)) this.noteReceiptsOf(sender);
    assert(receipts.senders().every((sender) => this.deps.available(sender)), 'receipts of an unavailable node left unnoted');
    const dropped = receipts.dropped();
    if (dropped > 0) this.deps.log.warn({ receipts: dropped }, 'too many records written here lately to follow up if their writer dies: the oldest are left to the repair sweep');
  }

  private noteReceiptsOf(sender: string): void {
    const parts = this.deps.receipts?.take(sender) ?? [];
    if (parts.length === 0) return;
    this.deps.log.info({ peer: sender, partitions: parts.length, keys: parts.reduce((sum, part) => sum + (part.keys?.length ?? 0), 0) }, 'a node that wrote here lately is unavailable: what it wrote is followed up');
    assert(parts.every((part) => part.keys !== undefined && part.keys.length > 0), 'a receipt noted without its keys');
    void this.noteParts(parts);
  }

  /** Commits the notes a failed commit left in memory only; they stay so until one succeeds. */
  private async keepUnkept(): Promise<void> {
    if (this.unkept.size === 0) return;
    const notes = [...this.unkept];
    try {
      await this.deps.committer.commit(notes.flatMap(([, operations]) => operations));
    } catch (error) {
      this.deps.log.debug({ err: error, notes: notes.length }, 'follow-ups of failed writes still not kept durably: tried again at the next pass');
      return;
    }
    for (const [note] of notes) this.unkept.delete(note);
    this.deps.log.info({ notes: notes.length }, 'follow-ups of failed writes kept durably after a failed commit');
    assert(notes.every(([note]) => !this.unkept.has(note)), 'a note kept durably is still waiting for its commit');
  }

  /** One pass: every partition whose owners all answer is made whole; the others wait. */
  private async work(): Promise<void> {
    this.noteReceiptsOfUnavailable();
    if (this.working || this.waiting.size === 0) return;
    // One pass at a time (`working`): two would exchange the same partitions at once.
    assert(!this.working, 'a follow-up pass started while one runs');
    if (memberNamed(this.deps.membership(), this.deps.localName)?.state === 'Left') return this.afterLeaving();
    this.working = true;
    const done: string[] = [];
    try {
      await this.keepUnkept();
      // A few partitions at once: each is a fetch and a store per owner, or a digest exchange per pair.
      await forEachLimited([...this.waiting], FOLLOW_UPS_IN_FLIGHT, async ([id, followUp]) => {
        const owners = writeOwners(this.deps.membership(), { partition: followUp.part.partition, replicas: followUp.replicas });
        if (!owners.every((owner) => this.deps.available(owner))) return;
        const taken = followUp.notes.slice();
        followUp.inExchange = new Set(taken);
        try {
          const keys = keysOf(taken);
          const moved = keys === undefined ? await this.exchangeAmong(owners, followUp) : await this.completeAmong(owners, followUp, keys);
          done.push(...this.removeNotes(id, followUp, taken));
          if (moved > 0) this.deps.log.info({ ...followUp.part, owners, records: moved, keys: keys?.length, waitedMs: Math.round(this.deps.timers.now() - followUp.notedAtMs) }, 'owners of a partition made whole after failed writes');
        } catch (error) {
          this.deps.log.debug({ err: error, ...followUp.part }, 'follow-up of failed writes: an owner did not answer; tried again later');
        } finally {
          followUp.inExchange = new Set();
        }
      });
    } finally {
      this.working = false;
    }
    await this.unstore(done);
  }

  /**
   * A node that has left is answered by no member: what it noted since its last hand-off
   * (writes it took while leaving) goes to a member that takes it (the chaos simulation found
   * such records on one owner once settled); past HAND_OVER_PASSES_MAX passes without one,
   * it is left to the repair sweep, which the remaining owners run among themselves.
   */
  private async afterLeaving(): Promise<void> {
    assert(!this.working, 'a pass after leaving started while one runs');
    this.working = true;
    try {
      if (this.deps.handOver !== undefined && this.handOverPasses++ < HAND_OVER_PASSES_MAX) {
        if (await this.deps.handOver().catch(() => false)) return;
        if (this.handOverPasses < HAND_OVER_PASSES_MAX) return;
      }
      this.deps.log.info({ partitions: this.waiting.size }, 'this node has left: its follow-ups of failed writes are left to the repair sweep');
      const stored = [...this.waiting.values()].flatMap((followUp) => followUp.notes.flatMap((note) => note.stored));
      this.waiting.clear();
      this.keysHeld = 0;
      await this.unstore(stored);
    } finally {
      this.working = false;
    }
  }

  /**
   * The records under `keys` that some owner holds, given to each owner that lacks them:
   * read from every owner, then stored where missing. Returns the records moved.
   */
  private async completeAmong(owners: readonly string[], followUp: FollowUp, keys: readonly string[]): Promise<number> {
    assert(keys.length > 0 && owners.length > 0, 'a follow-up of no keys or among no owners');
    const held = await Promise.all(owners.map((owner) => this.readKeys(this.deps.holder(owner), followUp.part, keys)));
    const found = new Map<string, StoredRecord>();
    for (const records of held) for (const record of records) found.set(record.writeId, record);
    let moved = 0;
    for (const [index, owner] of owners.entries()) {
      const has = new Set(held[index]!.map((record) => record.writeId));
      const lacking = [...found.values()].filter((record) => !has.has(record.writeId));
      for (let start = 0; start < lacking.length; start += KEYS_PER_MESSAGE_MAX) {
        await this.deps.holder(owner).store(followUp.part, followUp.replicas, lacking.slice(start, start + KEYS_PER_MESSAGE_MAX));
      }
      moved += lacking.length;
    }
    return moved;
  }

  private async readKeys(holder: PartitionHolder, part: RepairPartitionRef, keys: readonly string[]): Promise<StoredRecord[]> {
    const records: StoredRecord[] = [];
    for (let start = 0; start < keys.length; start += KEYS_PER_MESSAGE_MAX) records.push(...(await holder.records(part, keys.slice(start, start + KEYS_PER_MESSAGE_MAX))));
    return records;
  }

  /**
   * The whole partition: the first owner (this node when it is one) exchanges with each
   * other owner, then again with all but the last: so an owner compared early also gets what a
   * later one had.
   */
  private async exchangeAmong(owners: readonly string[], followUp: FollowUp): Promise<number> {
    const hub = owners.includes(this.deps.localName) ? this.deps.localName : owners[0];
    if (hub === undefined) return 0;
    const others = owners.filter((owner) => owner !== hub);
    assert(others.length === owners.length - 1, `owners ${owners.join(', ')} name ${hub} twice`);
    let moved = 0;
    for (const other of [...others, ...others.slice(0, -1)]) {
      moved += await exchangeBetween(this.deps.holder(hub), this.deps.holder(other), followUp.part, followUp.replicas);
    }
    return moved;
  }
}

/** One part per partition of `records`, with their keys. */
function partsOf(repo: RepositoryName, replicas: number, records: readonly StoredRecord[], keyOf: (record: StoredRecord) => string): FollowUpPart[] {
  const byPartition = new Map<string, FollowUpPart & { keys: string[] }>();
  for (const record of records) {
    const id = idOf(repo, record.stream, record.partition, replicas);
    let part = byPartition.get(id);
    if (part === undefined) byPartition.set(id, (part = { repo, stream: record.stream, partition: record.partition, replicas, keys: [] }));
    part.keys.push(keyOf(record));
  }
  assert(byPartition.size <= records.length, 'more follow-up parts than records');
  return [...byPartition.values()];
}

function idOf(repo: RepositoryName, stream: string, partition: number, replicas: number): string {
  return `${repo}\n${stream}\n${partition}\n${replicas}`;
}

/** Whether a note of `outer` keys (undefined: the whole partition) covers one of `inner` keys. */
function covers(outer: ReadonlySet<string> | readonly string[] | undefined, inner: ReadonlySet<string> | undefined): boolean {
  if (outer === undefined) return true;
  if (inner === undefined) return false;
  const set = outer instanceof Set ? outer : new Set(outer as readonly string[]);
  assert(set.size > 0, 'a note of keys that names none');
  for (const key of inner) if (!set.has(key)) return false;
  return true;
}

/** The keys of some notes together, or undefined when one of them is the whole partition. */
function keysOf(notes: readonly Note[]): string[] | undefined {
  const keys = new Set<string>();
  for (const note of notes) {
    if (note.keys === undefined) return undefined;
    for (const key of note.keys) keys.add(key);
  }
  assert(keys.size > 0 || notes.length === 0, 'notes of keys that name none');
  return [...keys];
}
