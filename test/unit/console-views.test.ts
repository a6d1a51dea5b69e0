// The console's two views of the cluster (issue 14, item 4), without processes: the ring
// (owners now and after the change in flight) and stored payloads per stream counted from
// each node's records per partition.

import { describe, expect, it } from 'vitest';
import { ringOwners } from '../../src/cluster/core/placement.js';
import type { Member, Membership, NodeState } from '../../src/cluster/core/types.js';
import { ringView } from '../../src/console/ring-view.js';
import { StreamCounter, type CountRequest, type LocalCounts } from '../../src/console/stream-counts.js';

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

describe('console - stream counts', () => {
  const stream = { id: { tenant: 'demo', collection: 'c', name: 's' }, repository: 'tsr' as const, ringSize: 4, replicas: 2 };
  const owners: Record<number, string[]> = { 0: ['a', 'b'], 1: ['b', 'c'], 2: ['c', 'a'], 3: ['a', 'b'] };

  function counter(answers: Record<string, LocalCounts | Error>, asked: string[] = []) {
    let nowMs = 0;
    const count = async (node: string, request: CountRequest) => {
      asked.push(node);
      expect(request.streams).toEqual([{ key: 'demo/c/s', repo: 'tsr' }]);
      const answer = answers[node];
      if (answer instanceof Error) throw answer;
      return answer!;
    };
    const deps = {
      streams: () => [stream, { id: { tenant: 'demo', collection: 'c', name: 'live-only' }, repository: undefined, ringSize: 4, replicas: 2 }],
      owners: (partition: number) => owners[partition]!,
      nodes: () => Object.keys(answers),
      localName: 'a',
      countLocal: (request: CountRequest) => count('a', request),
      countRemote: count,
    };
    return { counter: new StreamCounter(deps, () => nowMs), advance: (ms: number) => (nowMs += ms) };
  }

  it('counts each partition once, from the owner holding the most', async () => {
    // b is still receiving partition 1 (3 of 5); c has it whole.
    const { counter: streams } = counter({
      a: { 'demo/c/s': { '0': 10, '2': 7, '3': 1 } },
      b: { 'demo/c/s': { '0': 10, '1': 3, '3': 1 } },
      c: { 'demo/c/s': { '1': 5, '2': 7 } },
    });
    expect(await streams.count('demo')).toEqual([
      { uri: '/streams/demo/c/s', repository: 'tsr', payloads: 23, complete: true },
      { uri: '/streams/demo/c/live-only', repository: null, payloads: null, complete: true },
    ]);
  });

  it('a partition none of whose owners answered makes the count a lower bound', async () => {
    const { counter: streams } = counter({ a: { 'demo/c/s': { '0': 10, '2': 7, '3': 1 } }, b: new Error('down'), c: new Error('down') });
    expect((await streams.count('demo'))[0]).toEqual({ uri: '/streams/demo/c/s', repository: 'tsr', payloads: 18, complete: false });
  });

  it('shares an answer for 2 s, then asks again', async () => {
    const asked: string[] = [];
    const { counter: streams, advance } = counter({ a: {}, b: {}, c: {} }, asked);
    await Promise.all([streams.count('demo'), streams.count('demo')]);
    expect(asked.sort()).toEqual(['a', 'b', 'c']);
    advance(2_500);
    await streams.count('demo');
    expect(asked).toHaveLength(6);
  });
});
