// Partitions a failed write may have left on fewer owners than it should (docs/cluster.md,
// "Writes of unknown outcome"). A record whose write failed (its batch answered 500 listing
// it) may still sit on one owner: a replica write that timed out may have landed, and one
// owner may have stored it while no hint could be kept for the others. No hint exists for
// such a record (a write that failed is not brought back behind the client's back), so
// before this only the background repair sweep (every cluster.repairIntervalMs, 10 min)
// made the owners agree, and meanwhile two nodes could answer different totals. The node
// that saw the failure notes the partition here; once every owner of it answers again, it
// makes the owners exchange what each lacks (partition-sync.ts: nothing moves that no owner
// stored, so a failed write is never created, only completed where one owner has it).

import type { Logger } from '../lib/log.js';
import type { Membership } from '../protocol/cluster-types.js';
import { exchangeBetween, type PartitionHolder, type RepairPartitionRef } from '../repair/partition-sync.js';
import type { RepositoryName } from '../storage/repository.js';
import type { Timer, Timers } from '../lib/timers.js';
import { assert } from '../lib/assert.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import { memberNamed } from '../cluster-core/membership.js';
import { writeOwners } from '../cluster-core/placement.js';

/** Where the router reports a record whose write failed with an uncertain outcome. */
export interface UncertainWrites {
  note(repo: RepositoryName, stream: string, partition: number, replicas: number): void;
}

export interface WriteFollowUpsDeps {
  localName: string;
  membership(): Membership;
  available(node: string): boolean;
  /** This node's partitions or a peer's, by node name. */
  holder(node: string): PartitionHolder;
  timers: Timers;
  intervalMs: number;
  log: Logger;
}

interface FollowUp {
  part: RepairPartitionRef;
  replicas: number;
  notedAtMs: number;
}

/** Partitions remembered at once: past it the oldest is left to the background sweep (logged). */
const FOLLOW_UPS_MAX = 4_096;
/**
 * Partitions made whole at once. One after another, the 76 a leaving node had noted while
 * an owner was down held its leave 15-16 s after the faults ended (partition-join-leave-r3
 * seed 3), each exchange moving hundreds of records.
 */
const FOLLOW_UPS_IN_FLIGHT = 4;

export class WriteFollowUps implements UncertainWrites {
  private readonly waiting = new Map<string, FollowUp>();
  private timer: Timer | undefined;
  private working = false;
  private dropped = 0;

  constructor(private readonly deps: WriteFollowUpsDeps) {}

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

  /** The partitions waiting, to hand to another member (a leaving node: pendingParts and forget). */
  pendingParts(): Array<{ repo: RepositoryName; stream: string; partition: number; replicas: number }> {
    return [...this.waiting.values()].map((followUp) => ({ ...followUp.part, replicas: followUp.replicas }));
  }

  /** Another member took these over (FollowUpsTake): this node no longer waits for them. */
  forget(parts: ReadonlyArray<{ repo: RepositoryName; stream: string; partition: number; replicas: number }>): void {
    for (const part of parts) this.waiting.delete(`${part.repo}\n${part.stream}\n${part.partition}\n${part.replicas}`);
  }

  note(repo: RepositoryName, stream: string, partition: number, replicas: number): void {
    assert(Number.isInteger(partition) && partition >= 0 && replicas >= 1, `follow-up of partition ${partition} at ${replicas} replicas`);
    const key = `${repo}\n${stream}\n${partition}\n${replicas}`;
    if (this.waiting.has(key)) return;
    if (this.waiting.size >= FOLLOW_UPS_MAX) {
      this.waiting.delete(this.waiting.keys().next().value!);
      if (this.dropped++ === 0) this.deps.log.warn({ limit: FOLLOW_UPS_MAX }, 'too many partitions await a follow-up of failed writes: the oldest are left to the repair sweep');
    }
    this.waiting.set(key, { part: { repo, stream, partition }, replicas, notedAtMs: this.deps.timers.now() });
    assert(this.waiting.size <= FOLLOW_UPS_MAX, `${this.waiting.size} follow-ups kept`);
  }

  /** One pass: every partition whose owners all answer is made whole; the others wait. */
  private async work(): Promise<void> {
    if (this.working || this.waiting.size === 0) return;
    if (memberNamed(this.deps.membership(), this.deps.localName)?.state === 'Left') {
      // A node that has left is answered by no member: what it noted is left to the
      // repair sweep, which the remaining owners run among themselves.
      this.deps.log.info({ partitions: this.waiting.size }, 'this node has left: its follow-ups of failed writes are left to the repair sweep');
      this.waiting.clear();
      return;
    }
    // One pass at a time (`working`): two would exchange the same partitions at once.
    assert(!this.working, 'a follow-up pass started while one runs');
    this.working = true;
    try {
      // A few partitions at once: each is a digest exchange per pair of owners.
      await forEachLimited([...this.waiting], FOLLOW_UPS_IN_FLIGHT, async ([key, followUp]) => {
        const owners = writeOwners(this.deps.membership(), { partition: followUp.part.partition, replicas: followUp.replicas });
        if (!owners.every((owner) => this.deps.available(owner))) return;
        try {
          const moved = await this.exchangeAmong(owners, followUp);
          this.waiting.delete(key);
          if (moved > 0) this.deps.log.info({ ...followUp.part, owners, records: moved, waitedMs: Math.round(this.deps.timers.now() - followUp.notedAtMs) }, 'owners of a partition made whole after failed writes');
        } catch (error) {
          this.deps.log.debug({ err: error, ...followUp.part }, 'follow-up of failed writes: an owner did not answer; tried again later');
        }
      });
    } finally {
      this.working = false;
    }
  }

  /**
   * The first owner (this node when it is one) exchanges with each other owner, then again
   * with all but the last: so an owner compared early also gets what a later one had.
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
