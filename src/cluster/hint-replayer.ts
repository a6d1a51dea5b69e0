// Replays hints once their owner answers again (docs/cluster.md, "Hints").
// Each target has its own queue, so one owner that is down never holds back the hints of
// another. A hint goes to its own target only while that node still owns the record's
// partition by the current table; a record whose target gave the partition up (or left
// the cluster) is hinted again, for the partition's current owners. Nothing is ever
// discarded: a hint ends only when an owner that needs it stored it.
//
// A leaving node keeps no hints: it delivers what it can and hands the rest to another
// member (HintStore) before it may reach Left.

import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import type { RemotePeerError } from '../peer/wire.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Timer, Timers } from '../lib/timers.js';
import { memberNamed } from '../cluster-core/membership.js';
import { nextOwnersOf, ownersOf, writeOwners } from '../cluster-core/placement.js';
import type { Membership, Slot } from '../protocol/cluster-types.js';
import { toWireRecord } from '../replicated-definitions/definition-peers.js';
import type { Committer, HintEntry, HintKeeper, HintStorage } from './hint-keeper.js';
import { NOT_OWNER, STALE_EPOCH, type ReplicaStore } from './replica-writer.js';
import { DEFINITION_PUSH } from '../replicated-definitions/definition-messages.js';
import { WRITE_RECORDS } from './write-messages.js';

export interface HintReplayerDeps {
  localName: string;
  hints: HintStorage;
  committer: Committer;
  transport: Pick<PeerEndpoint, 'call'>;
  keeper: HintKeeper;
  replica: ReplicaStore;
  timers: Timers;
  membership(): Membership;
  available(node: string): boolean;
  /** The stream's replicas (its policy): with the partition, the slot whose owners get it. */
  replicasOf(stream: string): number;
  adopt(from: string, membership: Membership): Promise<void>;
  peerDeadlineMs: number;
  intervalMs: number;
  log: Logger;
}

const HINTS_PER_ROUND = 32;

export class HintReplayer {
  private timer: Timer | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: HintReplayerDeps) {}

  start(): void {
    assert(this.timer === undefined, 'the hint replayer started twice');
    this.timer = this.deps.timers.setInterval(() => void this.round(), this.deps.intervalMs);
  }

  stop(): void {
    this.timer?.cancel();
  }

  /** One pass over every target with hints; returns how many hints ended. Rounds never overlap. */
  round(): Promise<number> {
    if (this.running !== undefined) return this.running;
    this.running = this.pass().finally(() => (this.running = undefined));
    // One round at a time: two would deliver and remove the same hints twice.
    assert(this.running !== undefined, 'a hint round started and not recorded');
    return this.running;
  }

  private async pass(): Promise<number> {
    let ended = 0;
    const membership = this.deps.membership();
    // The damage took the table too (epoch 0): no partition has an owner this node knows of,
    // and every hint would be sorted to no one and end. They wait until a member admits this
    // node again, as its refill does (repair-service.ts).
    if (membership.epoch === 0) return 0;
    const leaving = isLeaving(membership, this.deps.localName);
    for (const target of this.deps.hints.targets()) {
      const member = memberNamed(membership, target);
      // Hints for this node itself (kept for it by others' hand-offs) are simply stored.
      const gone = member === undefined || member.state === 'Left' || target === this.deps.localName;
      try {
        if (gone) ended += await this.drain(target, 'retarget');
        else if (this.deps.available(target)) ended += await this.drain(target, 'deliver');
        else if (leaving) ended += await this.drain(target, 'hand-off');
      } catch (error) {
        this.deps.log.debug({ err: error, target }, 'hint replay stopped for this round; will retry');
      }
    }
    assert(ended >= 0, `${ended} hints ended`);
    return ended;
  }

  /**
   * Works through `target`'s hints, oldest first: delivered to it, hinted again for the
   * current owners (its partition moved), or handed to another member (this node leaves).
   */
  private async drain(target: string, how: 'deliver' | 'retarget' | 'hand-off'): Promise<number> {
    let ended = 0;
    for (;;) {
      const hints = await this.deps.hints.oldest(target, HINTS_PER_ROUND);
      if (hints.length === 0) return ended;
      assert(hints.length <= HINTS_PER_ROUND && hints.every((hint) => hint.target === target), `${hints.length} hints read for ${target}`);
      const again: HintEntry[] = [];
      for (const hint of hints) {
        if (hint.repository === 'KV') {
          // Definitions reach every member; a node that left (or this one) needs none.
          if (how === 'deliver') await this.deps.transport.call(target, DEFINITION_PUSH, { records: hint.records.map(toWireRecord) }, { deadlineMs: this.deps.peerDeadlineMs });
          else if (how === 'hand-off') again.push({ target, repository: 'KV', records: hint.records });
          continue;
        }
        again.push(...(await this.settle(target, hint.repository, hint.records, how)));
      }
      await this.rehome(again.filter((entry) => entry.records.length > 0));
      await this.deps.committer.commit(this.deps.hints.remove(hints));
      ended += hints.length;
      this.deps.log.info({ target, hints: hints.length, how }, 'hints replayed');
    }
  }

  /**
   * Delivers to `target` the records it still owns (how = deliver) and returns hints for
   * the rest: for the partition's other owners when target gave it up, or for target
   * itself when it cannot be delivered now and this node hands its hints off.
   */
  private async settle(target: string, repository: RepositoryName, records: StoredRecord[], how: 'deliver' | 'retarget' | 'hand-off'): Promise<HintEntry[]> {
    const membership = this.deps.membership();
    const owned: StoredRecord[] = [];
    const moved: StoredRecord[] = [];
    for (const record of records) {
      (writeOwners(membership, this.slotOf(record)).includes(target) ? owned : moved).push(record);
    }
    // Every record is either still the target's or moved: none is dropped (a hint ends only once an owner has it).
    assert(owned.length + moved.length === records.length, `${records.length} hinted records sorted into ${owned.length} and ${moved.length}`);
    const entries: HintEntry[] = [];
    if (owned.length > 0 && how === 'deliver') {
      await this.deliver(target, repository, owned);
      await this.toOtherOwners(membership, target, repository, owned);
      entries.push(...this.forGainers(membership, target, repository, owned));
    } else if (owned.length > 0) entries.push({ target, repository, records: owned });
    // A moved record's owners do not include the target.
    for (const record of moved) entries.push(...this.forOwners(membership, repository, record));
    return entries;
  }

  /**
   * Hints for the owners a change in flight gives each record's partition: the transfers and
   * final sync that bring them the partition may have run before the record reached its
   * target (the shell simulation's seed 92: a hint delivered to a leaving node after its
   * final hand-off of that partition, so the partition's next owner never got the record).
   */
  private forGainers(membership: Membership, target: string, repository: RepositoryName, records: readonly StoredRecord[]): HintEntry[] {
    if (membership.change === undefined) return [];
    const entries: HintEntry[] = [];
    for (const record of records) {
      const slot = this.slotOf(record);
      assert(Number.isInteger(slot.replicas) && slot.replicas >= 1, () => `stream ${record.stream} keeps ${slot.replicas} copies`);
      const owners = ownersOf(membership, slot);
      for (const gainer of nextOwnersOf(membership, slot)) {
        if (gainer !== target && !owners.includes(gainer)) entries.push({ target: gainer, repository, records: [record] });
      }
    }
    return entries;
  }

  /**
   * The records also go to their partitions' other owners that answer now (not hinted: one
   * try, a failure left to anti-entropy). They had them when the write was acknowledged, but
   * an owner whose storage was damaged since (a write-ahead log cut short) refills from the
   * others, and one whose copy was still this hint refills without it: once delivered here,
   * nothing but anti-entropy would bring the record to the damaged owner (the chaos suite's
   * leave-r2, seed 10; docs/cluster.md, "Hints"). An owner that has the record stores it again.
   */
  private async toOtherOwners(membership: Membership, target: string, repository: RepositoryName, records: readonly StoredRecord[]): Promise<void> {
    const byOwner = new Map<string, StoredRecord[]>();
    for (const record of records) {
      const owners = writeOwners(membership, this.slotOf(record));
      // settle() gives only the records the target still owns.
      assert(owners.includes(target), () => `a hinted record of partition ${record.partition} copied after its delivery to ${target}, not an owner`);
      for (const owner of owners) {
        if (owner === target || owner === this.deps.localName || !this.deps.available(owner)) continue;
        const forOwner = byOwner.get(owner);
        if (forOwner === undefined) byOwner.set(owner, [record]);
        else forOwner.push(record);
      }
    }
    for (const [owner, owned] of byOwner) {
      try {
        await this.deliver(owner, repository, owned);
      } catch (error) {
        this.deps.log.debug({ err: error, owner }, "a hinted record's copy for another owner was not delivered; anti-entropy covers it");
      }
    }
  }

  /** One WriteRecords per stream (replicas are per stream), fenced by the current epoch. */
  private async deliver(target: string, repository: RepositoryName, records: StoredRecord[]): Promise<void> {
    const byStream = new Map<string, StoredRecord[]>();
    for (const record of records) byStream.set(record.stream, [...(byStream.get(record.stream) ?? []), record]);
    assert(this.deps.localName !== target, 'hints delivered to this node over the peer port');
    for (const [stream, streamRecords] of byStream) {
      const request = { repo: repository, records: streamRecords, epoch: this.deps.membership().epoch, replicas: this.deps.replicasOf(stream) };
      try {
        await this.deps.transport.call(target, WRITE_RECORDS, request, { deadlineMs: this.deps.peerDeadlineMs });
      } catch (error) {
        const code = (error as RemotePeerError).code;
        // The table moved on: take it; the next round sorts these records by it.
        if (code === STALE_EPOCH || code === NOT_OWNER) await this.deps.adopt(target, (error as RemotePeerError).details!.membership as Membership);
        throw error;
      }
    }
  }

  /**
   * Each entry straight to its target; throws (the hints stay here) when one cannot take it.
   * Tried whatever this node's view of the target's availability: members do not heartbeat
   * a node that has left, so that view stays as it was when this node left (the shell
   * simulation found a Left node that held hints for a node it last saw Pending, and never
   * tried it again).
   */
  private async deliverFromLeft(entries: readonly HintEntry[]): Promise<void> {
    for (const entry of entries) {
      // Only hints for other nodes are delivered (rehome stores this node's own).
      assert(entry.target !== this.deps.localName, 'hints of a node that has left delivered to itself');
      if (entry.repository === 'KV') await this.deps.transport.call(entry.target, DEFINITION_PUSH, { records: entry.records.map(toWireRecord) }, { deadlineMs: this.deps.peerDeadlineMs });
      else await this.deliver(entry.target, entry.repository, entry.records);
    }
  }

  /**
   * Hints that must live on: this node's own records are stored here, the others are
   * kept here, or, when this node is leaving, on another member.
   */
  private async rehome(entries: HintEntry[]): Promise<void> {
    const local = this.deps.localName;
    const handedOn: HintEntry[] = [];
    for (const entry of entries) {
      if (entry.target === local && entry.repository !== 'KV') handedOn.push(...(await this.storeHere(entry.repository, entry.records as StoredRecord[])));
    }
    const others = [...entries.filter((each) => each.target !== local), ...handedOn];
    assert(entries.every((entry) => entry.records.length > 0), 'a hint rehomed with no records');
    if (others.length === 0) return;
    if (!isLeaving(this.deps.membership(), local)) return this.deps.keeper.keepHere(others);
    // A node that has left (its hand-off waived while it was cut off) is no member to hand
    // hints to another (HintStore): members refuse it. It delivers them itself, as it may
    // (WriteRecords), or keeps them for the next round (the chaos suite found one
    // refused every second, the cluster never settled).
    if (memberNamed(this.deps.membership(), local)?.state === 'Left') return this.deliverFromLeft(others);
    for (const delegate of this.deps.keeper.delegates()) {
      try {
        return await this.deps.keeper.sendTo(delegate, others);
      } catch (error) {
        this.deps.log.debug({ err: error, peer: delegate }, 'hand-off of hints to another node failed');
      }
    }
    throw new Error('no other node took the hints of this leaving node');
  }

  /** The record's partition on the ring of its stream's copies. */
  private slotOf(record: StoredRecord): Slot {
    return { partition: record.partition, replicas: this.deps.replicasOf(record.stream) };
  }

  /**
   * A hint of the record for each write owner of its partition: for a record that neither
   * its hint's target nor this node owns any longer (the callers send it nowhere else).
   */
  private forOwners(membership: Membership, repository: RepositoryName, record: StoredRecord): HintEntry[] {
    const owners = writeOwners(membership, this.slotOf(record));
    // A hint ends once its entries are made: a record no owner took would end with it.
    assert(owners.length > 0, () => `partition ${record.partition} of ${record.stream} has no write owner at epoch ${membership.epoch}`);
    return owners.map((owner) => ({ target: owner, repository, records: [record] }));
  }

  /**
   * Stores here the records of partitions this node still owns, by the table as it is now,
   * and returns hints for the owners of the others. The records were sorted by the table of
   * when their round began, and a delivery in between can wait on a peer's deadline while
   * this node's hand-off drops a partition (the shell simulation's seed 4510: a leaving
   * node stored a hinted record of a partition it had dropped 60 ms before, and left holding
   * it), as storeHere in replica-writer.ts routes a write again.
   */
  private async storeHere(repository: RepositoryName, records: readonly StoredRecord[]): Promise<HintEntry[]> {
    // As replica-writer's storeHere: every record placed on the ring.
    assert(records.every((record) => Number.isInteger(record.partition) && record.partition >= 0), 'a hinted record stored here without a partition of the ring');
    const membership = this.deps.membership();
    const local = this.deps.localName;
    const mine: StoredRecord[] = [];
    const entries: HintEntry[] = [];
    for (const record of records) {
      if (writeOwners(membership, this.slotOf(record)).includes(local)) mine.push(record);
      else entries.push(...this.forOwners(membership, repository, record));
    }
    if (mine.length > 0) await this.deps.replica.store(repository, mine);
    return entries;
  }
}

function isLeaving(membership: Membership, name: string): boolean {
  assert(name.length > 0, 'whether a node with no name is leaving');
  const state = memberNamed(membership, name)?.state;
  return state === 'Leaving' || state === 'Left';
}
