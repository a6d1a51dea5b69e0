// Routes stored records to every owner of their partition (docs/cluster.md, "When a write
// counts"). Owners come from the cluster's placement: while a transfer runs, old and new owners
// alike.
//
// When a record counts as written: at least one owner stored it, every other owner stored it or
// has a durable hint for it, and it is durable on two distinct nodes (stored or hinted)
// whenever its stream keeps two or more copies. So no single node, lost or damaged, ever takes
// the only copy of an acknowledged record with it. A record that no owner stored gets no hint:
// it failed, and nothing will bring it back later behind the client's back (a client that
// retries it must not find it twice).

import { assert } from '../lib/assert.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { DistributionPolicy } from '../streams/policy.js';
import type { UncertainWrites } from './write-follow-ups.js';

/** An owner refused the write because this node's table was old; it has the new one now. */
export class RouteAgainError extends Error {
  override name = 'RouteAgainError';
}

/** Re-routing rounds before a write is refused (each adopts a newer table). */
const ROUTE_ATTEMPTS_MAX = 4;

export interface ReplicaWrites {
  /** Resolves once durable on `node`; throws RouteAgainError when the table changed, anything else when not written. */
  write(node: string, repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void>;
  /** As write, to each of `nodes` with the same records (sent encoded once), one outcome per node in order; absent: write to each. */
  writeEach?(nodes: readonly string[], repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Array<Promise<void>>;
}

/** A record stored on some owners and not on others: the others need a hint. */
export interface HintWant {
  position: number;
  record: StoredRecord;
  /** Owners that did not store it. */
  missing: string[];
  /** Owners that did. */
  storedOn: string[];
  /** Distinct nodes that must hold it (stored or hinted) before it is acknowledged. */
  copies: number;
}

export interface HintKeeping {
  /**
   * Makes hints for the wanted records durable, on this node or another, so that each is
   * held by `copies` distinct nodes. Returns, by position, why a record could not be
   * covered (its write fails).
   */
  keep(repository: RepositoryName, wanted: readonly HintWant[]): Promise<Map<number, string>>;
}

/** The nodes a write of the partition must reach, first the current owners. */
export type WriteOwners = (policy: DistributionPolicy, partition: number) => readonly string[];

export class PartitionRouter {
  constructor(
    private readonly writeOwners: WriteOwners,
    private readonly writer: ReplicaWrites,
    private readonly hints: HintKeeping,
    /** Told of each failed record that may sit on some owners anyway (write-follow-ups.ts). */
    private readonly uncertain?: UncertainWrites,
  ) {}

  /**
   * Writes each record to all owners of its partition. Returns, by position in `records`,
   * the message of each record that could not be written.
   */
  async write(repository: RepositoryName, policy: DistributionPolicy, records: readonly StoredRecord[]): Promise<Map<number, string>> {
    assert(Number.isInteger(policy.replicas) && policy.replicas >= 1 && Number.isInteger(policy.ring_size) && policy.ring_size >= 1, `a write under replicas ${policy.replicas}, ring_size ${policy.ring_size}`);
    const failures = new Map<number, string>();
    let pending = records.map((_, position) => position);
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const reroute = await this.attempt(repository, policy, records, pending, failures);
      if (attempt === ROUTE_ATTEMPTS_MAX) {
        for (const position of reroute) failures.set(position, 'the cluster table kept changing while writing; retry');
        break;
      }
      pending = reroute;
    }
    return failures;
  }

  /** One routing round over `positions`; returns the positions to route again. */
  private async attempt(
    repository: RepositoryName,
    policy: DistributionPolicy,
    records: readonly StoredRecord[],
    positions: readonly number[],
    failures: Map<number, string>,
  ): Promise<number[]> {
    const { ownersByPosition, byOwner } = this.ownersOf(policy, records, positions);
    // Records this node would hold alone (its other owners known down) are noted first (write-follow-ups.ts).
    const intent = await this.uncertain?.intend?.(repository, policy.replicas, records, positions, (position) => ownersByPosition.get(position)!);
    const outcome = await this.writeToOwners(repository, policy, records, byOwner);
    const wanted: HintWant[] = [];
    for (const position of positions) {
      if (outcome.reroute.has(position)) continue;
      const stored = outcome.storedOn.get(position) ?? [];
      if (stored.length === 0) {
        failures.set(position, `no owner of its partition stored it: ${outcome.notStored.get(position) ?? 'no owner is reachable'}`);
        continue;
      }
      const owners = ownersByPosition.get(position)!;
      const missing = owners.filter((owner) => !stored.includes(owner));
      const copies = copiesWanted(policy.replicas, owners.length);
      if (missing.length > 0) wanted.push({ position, record: records[position]!, missing, storedOn: stored, copies });
      // Stored on every owner: durable on the copies wanted (the rule above), nothing to hint.
      else assert(stored.length >= copies, () => `record ${position}: acknowledged on ${stored.length} of ${copies} copies wanted`);
    }
    // The hint keeper decides, and asserts, the acknowledgement of a record some owners missed.
    if (wanted.length > 0) {
      for (const [position, why] of await this.hints.keep(repository, wanted)) failures.set(position, why);
    }
    await this.noteUncertain(repository, policy, records, positions, failures, outcome);
    intent?.settle(new Set(positions.filter((position) => failures.has(position) || outcome.reroute.has(position)).map((position) => records[position]!)));
    return [...outcome.reroute];
  }

  /** The write owners of each position's partition, and the positions each owner is sent. */
  private ownersOf(policy: DistributionPolicy, records: readonly StoredRecord[], positions: readonly number[]) {
    const ownersByPosition = new Map<number, readonly string[]>();
    // Owners asked once per partition of the batch, not once per record.
    const ownersByPartition = new Map<number, readonly string[]>();
    const byOwner = new Map<string, number[]>();
    for (const position of positions) {
      const partition = records[position]!.partition;
      let owners = ownersByPartition.get(partition);
      if (owners === undefined) {
        assert(Number.isInteger(partition) && partition >= 0 && partition < policy.ring_size, `partition ${partition} outside ring_size ${policy.ring_size}`);
        ownersByPartition.set(partition, (owners = this.writeOwners(policy, partition)));
        // Distinct owners: one node's copy must not count as two.
        assert(new Set(owners).size === owners.length, `partition ${partition}: owners ${owners.join(', ')} name a node twice`);
      }
      ownersByPosition.set(position, owners);
      for (const owner of owners) {
        let owned = byOwner.get(owner);
        if (owned === undefined) byOwner.set(owner, (owned = []));
        owned.push(position);
      }
    }
    return { ownersByPosition, byOwner };
  }

  /** Sends each owner its records at once; what each position was stored on, why not, and what routes again. */
  private async writeToOwners(repository: RepositoryName, policy: DistributionPolicy, records: readonly StoredRecord[], byOwner: ReadonlyMap<string, readonly number[]>): Promise<OwnerWrites> {
    const outcome: OwnerWrites = { storedOn: new Map(), notStored: new Map(), reroute: new Set(), maybeStored: new Set() };
    await Promise.all(
      this.sends(repository, policy, records, byOwner).map(async ([owner, owned, sent]) => {
        try {
          await sent;
          for (const position of owned) {
            const nodes = outcome.storedOn.get(position);
            assert(nodes === undefined || !nodes.includes(owner), 'a record stored on one owner twice: one copy would count as two');
            if (nodes === undefined) outcome.storedOn.set(position, [owner]);
            else nodes.push(owner);
          }
        } catch (error) {
          if (error instanceof RouteAgainError) for (const position of owned) outcome.reroute.add(position);
          else {
            for (const position of owned) if (!outcome.notStored.has(position)) outcome.notStored.set(position, (error as Error).message);
            // A write never sent (the owner known down: ReplicaWriteError's `sent`) stored nothing.
            if ((error as { sent?: boolean }).sent !== false) for (const position of owned) outcome.maybeStored.add(position);
          }
        }
      }),
    );
    return outcome;
  }

  /**
   * One write per owner, started at once. Owners sent the same positions share one write
   * (writeEach: the records encoded once for all of them); usually every owner of a batch
   * is, when the cluster has no more nodes than replicas.
   */
  private sends(repository: RepositoryName, policy: DistributionPolicy, records: readonly StoredRecord[], byOwner: ReadonlyMap<string, readonly number[]>) {
    const writer = this.writer;
    const groups = new Map<string, { owned: readonly number[]; owners: string[] }>();
    for (const [owner, owned] of byOwner) {
      const key = owned.join(',');
      const group = groups.get(key);
      if (group === undefined) groups.set(key, { owned, owners: [owner] });
      else group.owners.push(owner);
    }
    const sends: Array<[string, readonly number[], Promise<void>]> = [];
    for (const { owned, owners } of groups.values()) {
      const shared = owned.map((position) => records[position]!);
      const writes = writer.writeEach?.(owners, repository, policy.replicas, shared) ?? owners.map((owner) => writer.write(owner, repository, policy.replicas, shared));
      assert(writes.length === owners.length, () => `${writes.length} writes for owners ${owners.join(', ')}`);
      owners.forEach((owner, index) => sends.push([owner, owned, writes[index]!]));
    }
    // Every owner is sent its share once.
    assert(sends.length === byOwner.size, () => `${sends.length} writes for ${byOwner.size} owners`);
    return sends;
  }

  /**
   * A failed record that an owner stored (no hint could be kept) or may have stored: its
   * owners are made to agree once they all answer, not at the next repair sweep. Noted
   * durably before the failure is answered (write-follow-ups.ts); a write that did not fail
   * notes nothing.
   */
  private async noteUncertain(repository: RepositoryName, policy: DistributionPolicy, records: readonly StoredRecord[], positions: readonly number[], failures: ReadonlyMap<number, string>, outcome: OwnerWrites): Promise<void> {
    const uncertain: StoredRecord[] = [];
    for (const position of positions) {
      if (!failures.has(position) || (!outcome.maybeStored.has(position) && (outcome.storedOn.get(position)?.length ?? 0) === 0)) continue;
      assert(!outcome.reroute.has(position), () => `record ${position} both failed and routed again`);
      uncertain.push(records[position]!);
    }
    if (uncertain.length > 0) await this.uncertain?.note(repository, policy.replicas, uncertain);
  }
}

/** What one round of writes to the owners did, by position. */
interface OwnerWrites {
  storedOn: Map<number, string[]>;
  /** The first owner's error, for a record not stored there. */
  notStored: Map<number, string>;
  /** Refused by an owner with a newer table: routed again. */
  reroute: Set<number>;
  /** Records an owner may have stored although its write failed (sent, then no answer in time). */
  maybeStored: Set<number>;
}

/**
 * Distinct nodes that must hold a record before it is acknowledged: two, unless the
 * stream keeps one copy or the ring has a single owner for it.
 */
export function copiesWanted(replicas: number, owners: number): number {
  return Math.min(2, replicas, owners);
}
