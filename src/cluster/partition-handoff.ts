// Hand-off before data goes away (docs/cluster.md, "Changes complete only when nothing
// is missing": nothing acknowledged is ever held only in a place that is going away):
// - a node drops a partition it no longer owns only after pushing what it holds of it to
//   the partition's current owners (a write that reached this node after a transfer read
//   past it is not lost with the drop); until then the partition waits here, counted in
//   `pendingDrops`, and is tried again;
// - a leaving node, once every transfer of its change is complete and it keeps no hints,
//   pushes everything it holds to the next owners once more, then tells the core, which
//   lets the change complete (a node never reaches Left holding the only copy of anything).
// A Left node only deletes: it handed everything off before it left.

import type { Logger } from '../lib/log.js';
import type { RepositoryName } from '../storage/repository.js';
import type { Timer, Timers } from '../lib/timers.js';
import { assert } from '../lib/assert.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import { memberNamed } from '../cluster-core/membership.js';
import { nextOwnersOf, ownersOf, uncoveredNeeds, writeOwners } from '../cluster-core/placement.js';
import type { Membership, Slot } from '../protocol/cluster-types.js';

export interface HandOffStream {
  key: string;
  repo: RepositoryName;
  replicas: number;
}

export interface PartitionHandOffDeps {
  localName: string;
  membership(): Membership;
  streams(): HandOffStream[];
  /** Deletes this node's records of one partition of one stream. */
  dropPartition(repo: RepositoryName, stream: string, partition: number): Promise<void>;
  /** Targets of the hints this node keeps (none may be left when it leaves). */
  hintTargets(): string[];
  /** Partitions this node still makes whole after failed writes (none may be left when it leaves: write-follow-ups.ts). */
  followUpsPending?(): number;
  /** Hands the follow-ups waiting here to another member; false when none took them. */
  handOverFollowUps?(): Promise<boolean>;
  timers: Timers;
  /**
   * Pushes the partition's records to each owner; resolves once all hold them, throws
   * otherwise. `theirDigests`: owners' digests of it already read (digests below).
   */
  handOff(part: { repo: RepositoryName; stream: string; partition: number }, replicas: number, owners: readonly string[], theirDigests?: ReadonlyMap<string, ArrayLike<number>>): Promise<number>;
  /** Fetches what each owner holds of the partition and this node lacks; throws if one is out of reach. */
  catchUp(part: { repo: RepositoryName; stream: string; partition: number }, replicas: number, owners: readonly string[], theirDigests?: ReadonlyMap<string, ArrayLike<number>>): Promise<number>;
  /**
   * An owner's digests of many partitions of one stream, read a few dozen a call before a
   * final sync's steps: one call per partition waited in a busy owner's queue once each (a
   * join's 306 steps took 12 s under faults). Empty when the owner is out of reach.
   */
  digests?(owner: string, repo: RepositoryName, stream: string, partitions: readonly number[]): Promise<ReadonlyMap<number, ArrayLike<number>>>;
  /**
   * This node's digest of the partition, read ahead of its final-sync step while the
   * owners read theirs (the store keeps it for the step: repair/stored-partitions.ts).
   */
  localDigest?(part: { repo: RepositoryName; stream: string; partition: number }): Promise<unknown>;
  /** Whether this node holds records of the partition. */
  holds(repo: RepositoryName, stream: string, partition: number): Promise<boolean>;
  /** Whether this node's data awaits a refill (damage found at open): a leaver hands off once refilled. */
  refilling?(): boolean;
  /** The leaving node has handed everything off: tell the core (input `final-sync-done`). */
  finalSynced(changeId: string): void;
  /** Writes accepted under the old table may still be landing: drops wait this long. */
  graceMs: number;
  retryMs: number;
  log: Logger;
}

interface PendingDrop {
  repo: RepositoryName;
  slot: Slot;
  notBeforeMs: number;
}

const REPOSITORIES: readonly RepositoryName[] = ['ssr', 'tsr'];
/**
 * Steps of a final sync made at once, joining or leaving. Each is a digest and key exchange
 * with one owner: one after another, a join's held a 1M-payload join 4-5 s after its last
 * chunk, and a leave's ~290 steps held the leave 5 s after its last transfer under faults.
 */
const FINAL_SYNC_STEPS_IN_FLIGHT = 4;

function partitionKey(repo: RepositoryName, stream: string, partition: number): string {
  assert(Number.isInteger(partition) && partition >= 0, () => `partition ${partition} of ${stream}`);
  return `${repo}\n${stream}\n${partition}`;
}

export class PartitionHandOff {
  private readonly pending = new Map<string, PendingDrop>();
  /** Deletes under way, by partition: stores into those partitions wait for them. */
  private readonly deleting = new Map<string, Promise<void>>();
  private timer: Timer | undefined;
  private working = false;
  /** The table changed while a round ran: another round follows it (membershipChanged). */
  private again = false;
  private stopped = false;
  private leaveDone: string | undefined;
  private joinDone: string | undefined;
  /** Steps of the current change's final sync already made (finalSync). */
  private finalSyncDone: { changeId: string; steps: Set<string> } = { changeId: '', steps: new Set() };

  constructor(private readonly deps: PartitionHandOffDeps) {}

  start(): void {
    assert(this.timer === undefined, 'hand-offs started twice');
    this.timer = this.deps.timers.setInterval(() => void this.work(), this.deps.retryMs);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  /**
   * The table changed: a round now rather than at the timer's next tick. A join or leave
   * whose last transfer just completed starts its final sync at once; it waited up to
   * retryMs (a second) for it, a fifth of a 200,000-payload join. A round under way is
   * followed by another.
   */
  membershipChanged(): void {
    if (this.timer === undefined || this.stopped) return;
    // A round is owed only while one runs: the round that ends clears it before it asks again.
    assert(!this.again || this.working, 'a hand-off round owed while none is under way');
    if (this.working) this.again = true;
    else this.deps.timers.setTimeout(() => void this.work(), 0);
  }

  /** The core's `drop` effect: these slots go once handed off. */
  schedule(repo: RepositoryName, slots: readonly Slot[]): void {
    assert(slots.every((slot) => Number.isInteger(slot.partition) && slot.partition >= 0 && slot.replicas >= 1), `${repo} slots to drop outside every ring`);
    const notBeforeMs = this.deps.timers.now() + this.deps.graceMs;
    for (const slot of slots) this.pending.set(`${repo}/${slot.partition}/${slot.replicas}`, { repo, slot, notBeforeMs });
    this.deps.timers.setTimeout(() => void this.work(), this.deps.graceMs);
  }

  /** Partitions waiting for their hand-off before they are dropped (monitoring `handoff`). */
  pendingDrops(): number {
    return this.pending.size;
  }

  private async work(): Promise<void> {
    if (this.working || this.stopped) return;
    // Deletes run only within a round, and each is awaited before its round ends.
    assert(this.deleting.size === 0, () => `${this.deleting.size} partition deletes under way between rounds`);
    this.working = true;
    try {
      await this.dropWhatIsHandedOff();
      await this.finishLeaveIfReady();
      await this.finishJoinIfReady();
    } catch (error) {
      // A final sync waiting for an owner is expected while one is out of reach: it goes on
      // from where it was at the next round.
      if (error instanceof FinalSyncIncompleteError) this.deps.log.info({ reason: error.message }, 'final sync goes on at the next round');
      else this.deps.log.warn({ err: error }, 'hand-off round failed; retrying');
    } finally {
      this.working = false;
      if (this.again) {
        this.again = false;
        this.membershipChanged();
      }
    }
  }

  private async dropWhatIsHandedOff(): Promise<void> {
    for (const [key, drop] of [...this.pending]) {
      if (this.deps.timers.now() < drop.notBeforeMs) continue;
      assert(key === `${drop.repo}/${drop.slot.partition}/${drop.slot.replicas}`, `a drop of ${drop.repo} ${drop.slot.partition} kept under ${key}`);
      const membership = this.deps.membership();
      // A later change may have given the slot back: it stays.
      if (writeOwners(membership, drop.slot).includes(this.deps.localName)) {
        this.pending.delete(key);
        continue;
      }
      const left = memberNamed(membership, this.deps.localName)?.state === 'Left';
      try {
        for (const stream of this.deps.streams().filter((each) => each.replicas === drop.slot.replicas)) {
          await this.dropOne(drop.repo, stream.key, drop.slot, membership, left);
        }
        this.pending.delete(key);
      } catch (error) {
        this.deps.log.info({ err: error, repo: drop.repo, partition: drop.slot.partition }, 'partition not handed off yet; it is kept and tried again');
      }
    }
  }

  private async dropOne(repo: RepositoryName, stream: string, slot: Slot, membership: Membership, left: boolean): Promise<void> {
    if (!(await this.deps.holds(repo, stream, slot.partition))) return;
    if (!left) {
      // Every owner by the table, the next ones too while a change is in flight: its
      // transfers may have read the partition before this node's last records reached it
      // (the shell simulation's seeds 1054 and 2004: a record hinted for a joined node went
      // only to it, not to the node joining after it, and this copy was dropped).
      const owners = writeOwners(membership, slot).filter((owner) => owner !== this.deps.localName);
      const sent = await this.deps.handOff({ repo, stream, partition: slot.partition }, slot.replicas, owners);
      if (sent > 0) this.deps.log.info({ repo, stream, partition: slot.partition, records: sent }, 'handed off records before dropping the partition');
    }
    // The table may have given the slot back while the hand-off ran: checked again, at the
    // moment the delete starts; a store that comes later waits for it (settle()).
    if (writeOwners(this.deps.membership(), slot).includes(this.deps.localName)) return;
    const key = partitionKey(repo, stream, slot.partition);
    // Rounds never overlap (`working`): one delete of a partition at a time.
    assert(!this.deleting.has(key), `partition ${slot.partition} of ${stream} deleted twice at once`);
    const deleting = this.deps.dropPartition(repo, stream, slot.partition).finally(() => this.deleting.delete(key));
    this.deleting.set(key, deleting);
    await deleting;
  }

  /**
   * Resolves once no delete of these partitions is under way: a store into a partition this
   * node owns again must not land before a delete from when it did not (a slot
   * handed away and given back keeps what it is given).
   */
  settle(repo: RepositoryName, partitions: Iterable<{ stream: string; partition: number }>): Promise<unknown> | undefined {
    if (this.deleting.size === 0) return undefined;
    assert(this.working, 'a partition delete under way outside a hand-off round');
    const waits: Promise<unknown>[] = [];
    for (const { stream, partition } of partitions) {
      const deleting = this.deleting.get(partitionKey(repo, stream, partition));
      if (deleting !== undefined) waits.push(deleting.catch(() => undefined));
    }
    return waits.length === 0 ? undefined : Promise.all(waits);
  }

  /** The partitions of every stream that a transfer's slots name. */
  partitionsOf(slots: readonly Slot[]): Array<{ stream: string; partition: number }> {
    return this.deps.streams().flatMap((stream) => slots.filter((slot) => slot.replicas === stream.replicas).map((slot) => ({ stream: stream.key, partition: slot.partition })));
  }

  /**
   * This node is leaving: once every transfer of the change is complete and no hint is
   * left here, everything it holds goes to the next owners once more; then the core is told.
   * Each partition and owner is handed off once per change: an owner out of reach fails only
   * its own hand-offs, and the next round goes on from there instead of from the start.
   */
  private async finishLeaveIfReady(): Promise<void> {
    const membership = this.deps.membership();
    const change = membership.change;
    if (change?.kind !== 'leave' || change.node !== this.deps.localName || change.finalSynced === true) return;
    if (this.leaveDone === change.id) return this.deps.finalSynced(change.id);
    // The node of a leave is the one in motion, Leaving, until the change completes (membership.ts).
    assert(memberNamed(membership, this.deps.localName)?.state === 'Leaving', () => `${this.deps.localName} leaves as ${memberNamed(membership, this.deps.localName)?.state}`);
    if (uncoveredNeeds(membership).length > 0 || this.deps.hintTargets().length > 0) return;
    // Damage took records from this node (a write-ahead log cut short) that the other owners
    // hold: pushed before the refill brings them back, its hand-off would leave them to the
    // next owners' anti-entropy. It waits for the refill, which ends without an owner that
    // cannot answer (docs/cluster.md, "Damaged data").
    if (this.deps.refilling?.() === true) return;
    // Follow-ups still waiting go to another member rather than hold the leave (their
    // exchanges can take seconds when an owner was down); they wait here if none takes them.
    if ((this.deps.followUpsPending?.() ?? 0) > 0 && !(await (this.deps.handOverFollowUps?.() ?? Promise.resolve(false)))) return;
    const steps: FinalSyncStep[] = [];
    for (const stream of this.deps.streams()) {
      for (const slot of change.slots.filter((each) => each.replicas === stream.replicas)) {
        if (!ownersOf(membership, slot).includes(this.deps.localName)) continue;
        for (const repo of REPOSITORIES) {
          if (!(await this.deps.holds(repo, stream.key, slot.partition))) continue;
          for (const owner of nextOwnersOf(membership, slot)) {
            if (owner !== this.deps.localName) steps.push({ part: { repo, stream: stream.key, partition: slot.partition }, replicas: slot.replicas, owner });
          }
        }
      }
    }
    const startedMs = this.deps.timers.now();
    const sent = await this.finalSync(change.id, steps, FINAL_SYNC_STEPS_IN_FLIGHT, (step, theirs) => this.deps.handOff(step.part, step.replicas, [step.owner], theirs));
    this.deps.log.info({ change: change.id, records: sent, steps: steps.length, lastRoundMs: this.deps.timers.now() - startedMs }, 'leaving: hints and data handed off to the next owners');
    this.leaveDone = change.id;
    this.deps.finalSynced(change.id);
  }

  /**
   * This node is joining: once every transfer to it is complete, it fetches from the
   * current owners of each partition it gains what the transfers may have missed (a write
   * that landed behind a transfer's read, a source that lacked a hinted record); then the
   * core is told, and the change may complete (the new owners hold everything).
   * As for a leave, each partition and owner is caught up once per change.
   */
  private async finishJoinIfReady(): Promise<void> {
    const membership = this.deps.membership();
    const change = membership.change;
    const self = this.deps.localName;
    if (change?.kind !== 'join' || change.node !== self || change.finalSynced === true) return;
    if (memberNamed(membership, self)?.state !== 'Joining') return;
    if (this.joinDone === change.id) return this.deps.finalSynced(change.id);
    if (uncoveredNeeds(membership).length > 0) return;
    const steps: FinalSyncStep[] = [];
    for (const slot of change.slots) {
      const owners = ownersOf(membership, slot);
      // A Joining node is not in the data ring: it owns nothing until the change completes.
      assert(!owners.includes(self), () => `${self} owns partition ${slot.partition} while Joining`);
      if (owners.includes(self) || !nextOwnersOf(membership, slot).includes(self)) continue;
      for (const stream of this.deps.streams().filter((each) => each.replicas === slot.replicas)) {
        for (const owner of owners) steps.push({ part: { repo: stream.repo, stream: stream.key, partition: slot.partition }, replicas: slot.replicas, owner });
      }
    }
    const startedMs = this.deps.timers.now();
    const received = await this.finalSync(change.id, steps, FINAL_SYNC_STEPS_IN_FLIGHT, (step, theirs) => this.deps.catchUp(step.part, step.replicas, [step.owner], theirs));
    this.deps.log.info({ change: change.id, records: received, steps: steps.length, lastRoundMs: this.deps.timers.now() - startedMs }, 'joining: caught up with the current owners after the transfers');
    this.joinDone = change.id;
    this.deps.finalSynced(change.id);
  }

  /**
   * Runs the steps of a change's final sync not done yet in an earlier round; returns the
   * records moved. Throws, once every step was tried, when some failed (an owner out of
   * reach): the next round tries only those.
   */
  private async finalSync(
    changeId: string,
    steps: readonly FinalSyncStep[],
    inFlight: number,
    run: (step: FinalSyncStep, theirDigests: ReadonlyMap<string, ArrayLike<number>> | undefined) => Promise<number>,
  ): Promise<number> {
    if (this.finalSyncDone.changeId !== changeId) this.finalSyncDone = { changeId, steps: new Set() };
    const done = this.finalSyncDone.steps;
    const open = steps.filter((step) => !done.has(stepKey(step)));
    // Both ends scan their keys for a digest: the owners theirs and this node its own, at once.
    const [digests] = await Promise.all([this.ownersDigests(open, inFlight), this.localDigests(open, inFlight)]);
    let moved = 0;
    const failed: string[] = [];
    await forEachLimited(open, inFlight, async (step) => {
      try {
        const theirs = digests.get(stepKey(step));
        moved += await run(step, theirs === undefined ? undefined : new Map([[step.owner, theirs]]));
        done.add(stepKey(step));
      } catch (error) {
        failed.push(`${step.owner}: ${(error as Error).message}`);
      }
    });
    // Every step tried either is done or is one of the failures.
    assert(open.filter((step) => !done.has(stepKey(step))).length === failed.length, `${failed.length} final-sync steps failed, others left undone`);
    if (failed.length > 0) throw new FinalSyncIncompleteError(`${failed.length} of ${steps.length} final-sync steps wait for their owner (${failed[0]}); ${steps.length - failed.length} done`);
    return moved;
  }

  /** Reads this node's digests of the steps' partitions (each once); a step whose read failed reads it again. */
  private async localDigests(steps: readonly FinalSyncStep[], inFlight: number): Promise<void> {
    const read = this.deps.localDigest;
    if (read === undefined) return;
    assert(Number.isInteger(inFlight) && inFlight >= 1, `final-sync digests of this node read ${inFlight} at a time`);
    const parts = new Map(steps.map((step) => [partitionKey(step.part.repo, step.part.stream, step.part.partition), step.part]));
    await forEachLimited([...parts.values()], inFlight, async (part) => {
      await read(part).catch(() => undefined);
    });
  }

  /**
   * Each owner's digests of the steps' partitions, by step, read several partitions a call
   * (deps.digests); a step whose digest could not be read reads it itself.
   */
  private async ownersDigests(steps: readonly FinalSyncStep[], inFlight: number): Promise<Map<string, ArrayLike<number>>> {
    const byStep = new Map<string, ArrayLike<number>>();
    assert(Number.isInteger(inFlight) && inFlight >= 1, `final-sync digests read ${inFlight} at a time`);
    const read = this.deps.digests;
    if (read === undefined || steps.length === 0) return byStep;
    const groups = new Map<string, FinalSyncStep[]>();
    for (const step of steps) {
      const group = `${step.owner}\n${step.part.repo}\n${step.part.stream}`;
      const members = groups.get(group);
      if (members === undefined) groups.set(group, [step]);
      else members.push(step);
    }
    await forEachLimited([...groups.values()], inFlight, async (group) => {
      const { owner, part } = group[0]!;
      try {
        const digests = await read(owner, part.repo, part.stream, group.map((step) => step.part.partition));
        for (const step of group) {
          const digest = digests.get(step.part.partition);
          if (digest !== undefined) byStep.set(stepKey(step), digest);
        }
      } catch (error) {
        this.deps.log.debug({ err: error, peer: owner }, 'digests for a final sync not read at once; each step reads its own');
      }
    });
    return byStep;
  }
}

/** One partition of one stream, handed to or caught up from one owner. */
interface FinalSyncStep {
  part: { repo: RepositoryName; stream: string; partition: number };
  replicas: number;
  owner: string;
}

function stepKey(step: FinalSyncStep): string {
  return `${partitionKey(step.part.repo, step.part.stream, step.part.partition)}\n${step.replicas}\n${step.owner}`;
}

/** Some steps of a final sync could not be made yet; the next round goes on from there. */
export class FinalSyncIncompleteError extends Error {
  override name = 'FinalSyncIncompleteError';
}
