// What the console draws of the ring: for each distinct partitioning in
// use (ring_size, replicas of the persisted streams; the default policy when there are
// none), every partition's owners now and once the change in flight completes, and how
// many partitions each node holds. Pure: a function of the membership and the policies.

import { nextOwnersOf, ownersOf } from '../cluster-core/placement.js';
import type { Membership } from '../protocol/cluster-types.js';
import type { DistributionPolicy } from '../streams/policy.js';

export interface RingPartition {
  partition: number;
  /** Current owners, the first is the one reads prefer. */
  owners: readonly string[];
  /** Owners once the change in flight completes; the same as owners when none is. */
  next: readonly string[];
}

export interface Ring {
  ringSize: number;
  replicas: number;
  partitions: RingPartition[];
  /** Per member: partitions it owns first, partitions it holds as any owner. */
  holdings: Record<string, { first: number; held: number }>;
}

export interface RingView {
  epoch: number;
  change: { kind: string; node: string } | null;
  rings: Ring[];
}

/** Bounds the answer: the console draws one cell per partition. */
export const RING_VIEW_PARTITIONS_MAX = 4_096;
export const RING_VIEW_RINGS_MAX = 8;

export function ringView(membership: Membership, policies: readonly Pick<DistributionPolicy, 'ring_size' | 'replicas'>[]): RingView {
  const distinct = new Map<string, { ringSize: number; replicas: number }>();
  for (const policy of policies) distinct.set(`${policy.ring_size}/${policy.replicas}`, { ringSize: policy.ring_size, replicas: policy.replicas });
  const rings = [...distinct.values()]
    .sort((a, b) => a.ringSize - b.ringSize || a.replicas - b.replicas)
    .slice(0, RING_VIEW_RINGS_MAX)
    .map(({ ringSize, replicas }) => ringOf(membership, Math.min(ringSize, RING_VIEW_PARTITIONS_MAX), replicas, ringSize));
  const change = membership.change === undefined ? null : { kind: membership.change.kind, node: membership.change.node };
  return { epoch: membership.epoch, change, rings };
}

function ringOf(membership: Membership, shown: number, replicas: number, ringSize: number): Ring {
  const holdings: Ring['holdings'] = {};
  for (const member of membership.members) if (member.state !== 'Left') holdings[member.name] = { first: 0, held: 0 };
  const partitions: RingPartition[] = [];
  for (let partition = 0; partition < shown; partition += 1) {
    const slot = { partition, replicas };
    const owners = ownersOf(membership, slot);
    partitions.push({ partition, owners, next: nextOwnersOf(membership, slot) });
    owners.forEach((owner, index) => {
      const holding = (holdings[owner] ??= { first: 0, held: 0 });
      holding.held += 1;
      if (index === 0) holding.first += 1;
    });
  }
  return { ringSize, replicas, partitions, holdings };
}
