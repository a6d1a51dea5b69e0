import HashRing from 'hashring';
import { describe, expect, it } from 'vitest';
import { preferenceList, ringOwners } from '../../src/cluster/core/placement.js';

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
});
