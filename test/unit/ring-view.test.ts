// The console's own view of the cluster, without processes: the ring (owners now and after the
// change in flight). Stored payloads per stream are the /_cat/streams rows
// (test/unit/ops.test.ts).

import { describe, expect, it } from 'vitest';
import { ringOwners } from '../../src/cluster-core/placement.js';
import type { Member, Membership, NodeState } from '../../src/protocol/cluster-types.js';
import { ringView } from '../../src/ops/ring-view.js';

function member(name: string, state: NodeState): Member {
  return { name, publicKey: `key-${name}`, address: '127.0.0.1', port: 1, httpPort: 2, zone: 'local', state };
}

function membership(states: Record<string, NodeState>, change?: { kind: 'join' | 'leave'; node: string }): Membership {
  return {
    epoch: 7,
    members: Object.entries(states).map(([name, state]) => member(name, state)),
    change: change === undefined ? undefined : { id: `e7-${change.kind}-${change.node}`, ...change, slots: [], transfers: [] },
  };
}

describe('console - ring view', () => {
  it('lists every partition with its owners, and what each node holds', () => {
    const view = ringView(membership({ a: 'Joined', b: 'Joined', c: 'Joined' }), [{ ring_size: 16, replicas: 2 }, { ring_size: 16, replicas: 2 }]);
    expect(view.change).toBeNull();
    expect(view.rings).toHaveLength(1);
    const ring = view.rings[0]!;
    expect(ring.partitions).toHaveLength(16);
    for (const partition of ring.partitions) {
      expect(partition.owners).toEqual(ringOwners(['a', 'b', 'c'], { partition: partition.partition, replicas: 2 }));
      expect(partition.next).toEqual(partition.owners);
    }
    expect(Object.values(ring.holdings).reduce((sum, holding) => sum + holding.held, 0)).toBe(32);
    expect(Object.values(ring.holdings).reduce((sum, holding) => sum + holding.first, 0)).toBe(16);
  });

  it('during a join, shows where partitions move; the joining node holds nothing yet', () => {
    const view = ringView(membership({ a: 'Joined', b: 'Joined', c: 'Joining' }, { kind: 'join', node: 'c' }), [{ ring_size: 64, replicas: 1 }]);
    expect(view.change).toEqual({ kind: 'join', node: 'c' });
    const ring = view.rings[0]!;
    expect(ring.holdings.c).toEqual({ first: 0, held: 0 });
    const moving = ring.partitions.filter((partition) => partition.next.join() !== partition.owners.join());
    expect(moving.length).toBeGreaterThan(0);
    for (const partition of moving) expect(partition.next).toEqual(['c']);
  });

  it('one ring per distinct partitioning, Left members out, bounded in size', () => {
    const view = ringView(membership({ a: 'Joined', gone: 'Left' }), [{ ring_size: 65_536, replicas: 3 }, { ring_size: 8, replicas: 1 }]);
    expect(view.rings.map((ring) => [ring.ringSize, ring.replicas, ring.partitions.length])).toEqual([[8, 1, 8], [65_536, 3, 4_096]]);
    expect(Object.keys(view.rings[0]!.holdings)).toEqual(['a']);
  });
});
