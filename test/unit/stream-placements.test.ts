import { describe, expect, it } from 'vitest';
import { StreamPlacements } from '../../src/streams/stream-placements.js';
import { MembershipFeed } from '../../src/cluster/membership-feed.js';
import type { Membership } from '../../src/protocol/cluster-types.js';

function store(entries: Record<string, unknown>) {
  return {
    get: <T>(key: string) => (key in entries ? { value: entries[key] as T } : undefined),
    list: <T>(prefix: string) => Object.entries(entries).filter(([key]) => key.startsWith(prefix)).map(([key, value]) => ({ key, value: value as T })),
  };
}

describe('stream placements - where persisted streams live', () => {
  const placements = new StreamPlacements(store({
    'stream/t/c/a': {},
    'stream/t/c/b': {},
    'stream/t/c/unmapped': {},
    'repository/t/c/a': { name: 'ssr', config: { defaultStringAnalyzer: 'keyword' } },
    'repository/t/c/b': { name: 'tsr', config: {} },
    'policy/t/c/a': { ring_size: 4, replicas: 2, hash_payload: { bytes: 64 } },
    'policy/t/c/b': { ring_size: 2, replicas: 3, hash_payload: { bytes: 64 } },
  }));

  it('reads each stream policy and mapping, with the default policy when there is none', () => {
    expect(placements.placementOf('t/c/a')).toEqual({ repo: 'ssr', ringSize: 4, replicas: 2 });
    expect(placements.placementOf('t/c/unmapped').repo).toBeUndefined();
    expect(placements.replicasOf('t/c/unmapped')).toBe(placements.policyOf('nothing').replicas);
    expect(placements.analyzerOf('t/c/a')).toBe('keyword');
    expect(placements.analyzerOf('t/c/b')).toBe('standard');
  });

  it('lists persisted streams, every defined stream, and the distinct slots the ring must place', () => {
    expect(placements.persisted()).toEqual([
      { key: 't/c/a', repo: 'ssr', replicas: 2, ringSize: 4 },
      { key: 't/c/b', repo: 'tsr', replicas: 3, ringSize: 2 },
    ]);
    expect(placements.defined().map((stream) => stream.key)).toEqual(['t/c/a', 't/c/b', 't/c/unmapped']);
    expect(placements.slotsInUse()).toEqual([
      { partition: 0, replicas: 2 }, { partition: 1, replicas: 2 }, { partition: 2, replicas: 2 }, { partition: 3, replicas: 2 },
      { partition: 0, replicas: 3 }, { partition: 1, replicas: 3 },
    ]);
  });

  it('places the default policy while no stream is persisted', () => {
    const empty = new StreamPlacements(store({}));
    const policy = empty.policyOf('any');
    expect(empty.slotsInUse()).toEqual([]);
    expect(empty.slotsForOwnership()).toHaveLength(policy.ring_size);
    expect(empty.policiesInUse()).toEqual([policy]);
  });
});

describe('membership feed - one event for every subscriber', () => {
  it('publishes each table to every subscriber, in the order they subscribed', () => {
    const feed = new MembershipFeed();
    const seen: string[] = [];
    feed.subscribe((membership) => seen.push(`first ${membership.epoch}`));
    feed.subscribe((membership) => seen.push(`second ${membership.epoch}`));
    feed.publish({ epoch: 3 } as Membership);
    feed.publish({ epoch: 4 } as Membership);
    expect(seen).toEqual(['first 3', 'second 3', 'first 4', 'second 4']);
  });
});
