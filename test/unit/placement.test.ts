import HashRing from 'hashring';
import { describe, expect, it } from 'vitest';
import { preferenceList, RING_HASHES_PER_NODE, ringOwners } from '../../src/cluster-core/placement.js';

function ownersTable(names: readonly string[], ringSize: number, replicas: number): (readonly string[])[] {
  return Array.from({ length: ringSize }, (_, partition) => ringOwners(names, { partition, replicas }));
}

describe('placement - ring owners', () => {
  it('gives each partition `replicas` distinct owners, the first being hashring.get', () => {
    const reference = new HashRing(['a', 'b', 'c', 'd']);
    const table = ownersTable(['a', 'b', 'c', 'd'], 64, 3);
    table.forEach((owners, partition) => {
      expect(new Set(owners).size).toBe(3);
      expect(owners[0]).toBe(reference.get(`partition-${partition}`));
    });
  });

  it('caps replicas by the number of nodes', () => {
    expect(ownersTable(['only'], 8, 3).every((owners) => owners.length === 1 && owners[0] === 'only')).toBe(true);
  });

  it('moves only some partitions when a node joins, all of them to the new node', () => {
    const before = ownersTable(['a', 'b', 'c'], 128, 1);
    const after = ownersTable(['a', 'b', 'c', 'd'], 128, 1);
    const moved = before.filter((owners, partition) => owners[0] !== after[partition]![0]);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.length).toBeLessThan(128 / 2);
    expect(after.filter((owners, partition) => owners[0] !== before[partition]![0]).every((owners) => owners[0] === 'd')).toBe(true);
  });

  it('has no owners on an empty ring', () => {
    expect(ringOwners([], { partition: 1, replicas: 2 })).toEqual([]);
    expect(preferenceList([], 'key', 3)).toEqual([]);
  });

  it('takes node names sorted and distinct only: anything else is a programming error', () => {
    expect(() => ringOwners(['b', 'a'], { partition: 0, replicas: 1 })).toThrow(/invariant broken: ring not sorted/);
  });

  it('a preference list is hashring.range of the key, and slot owners are the list of partition-<p>', () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const reference = new HashRing(names);
    expect(preferenceList(names, 'repository/x', 5)).toEqual(reference.range('repository/x', 5));
    expect(ringOwners(names, { partition: 7, replicas: 3 })).toEqual(preferenceList(names, 'partition-7', 3));
  });

  it('gives every node the same number of ring points at every member count up to 256', () => {
    // hashring's own count is Math.floor(weight / total * 40 * servers): one short of 40 at
    // 7, 14, 28, … members, where every node then lost a point and owners other than a
    // joining node changed.
    const shortAt = Array.from({ length: 256 }, (_, index) => index + 1).filter((count) => Math.floor((1 / count) * 40 * count) !== 40);
    expect(shortAt.slice(0, 3)).toEqual([7, 14, 28]);
    for (const count of [1, 2, ...shortAt, 255, 256]) {
      const points = new HashRing(Object.fromEntries(names(count).map((name) => [name, { vnodes: RING_HASHES_PER_NODE }])), 'md5', { 'vnode count': 0 }).points(names(count));
      expect(Object.values(points).every((list) => (list as unknown as number[]).length === RING_HASHES_PER_NODE * 4)).toBe(true);
    }
  });

  it('a join gives slots only to the joining node (a leave takes them only from the leaving one) at every member count up to 256', () => {
    // A leave is a join read backwards: the owners it drops are the owners a join adds.
    const ringSize = 128;
    const othersGaining: string[] = [];
    for (let count = 1; count < 256; count += 1) {
      // Each ring is built once: the ring after one join is the ring before the next.
      const before = names(count);
      const after = names(count + 1);
      const joiner = after[count]!;
      for (const replicas of [1, 3]) {
        for (let partition = 0; partition < ringSize; partition += 1) {
          const owned = ringOwners(before, { partition, replicas });
          for (const name of ringOwners(after, { partition, replicas })) {
            if (name !== joiner && !owned.includes(name)) othersGaining.push(`${count} → ${count + 1} members: ${name} gains ${partition}/${replicas}`);
          }
        }
      }
    }
    expect(othersGaining).toEqual([]);
  });
});

const nameLists = new Map<number, readonly string[]>();

/** `count` node names, sorted, the same frozen array each time (the ring cache keys by it). */
function names(count: number): readonly string[] {
  let list = nameLists.get(count);
  if (list === undefined) nameLists.set(count, (list = Object.freeze(Array.from({ length: count }, (_, index) => `n${String(index).padStart(3, '0')}`))));
  return list;
}
