import HashRing from 'hashring';
import { describe, expect, it } from 'vitest';
import { Ring } from '../../src/cluster/ring.js';

describe('ring - owners table', () => {
  it('gives each partition `replicas` distinct owners, the first being hashring.get', () => {
    const ring = new Ring(['c', 'a', 'b', 'd']);
    const reference = new HashRing(['a', 'b', 'c', 'd']);
    const table = ring.owners(64, 3);
    expect(table).toHaveLength(64);
    table.forEach((owners, partition) => {
      expect(new Set(owners).size).toBe(3);
      expect(owners[0]).toBe(reference.get(`partition-${partition}`));
    });
  });

  it('caps replicas by the number of nodes', () => {
    expect(new Ring(['only']).owners(8, 3).every((owners) => owners.length === 1 && owners[0] === 'only')).toBe(true);
  });

  it('is the same table whatever order the nodes come in', () => {
    expect(new Ring(['x', 'y', 'z']).owners(32, 2)).toEqual(new Ring(['z', 'x', 'y']).owners(32, 2));
  });

  it('moves only some partitions when a node joins', () => {
    const before = new Ring(['a', 'b', 'c']).owners(128, 1);
    const after = new Ring(['a', 'b', 'c', 'd']).owners(128, 1);
    const moved = before.filter((owners, partition) => owners[0] !== after[partition]![0]);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.length).toBeLessThan(128 / 2);
    expect(after.filter((owners, partition) => owners[0] !== before[partition]![0]).every((owners) => owners[0] === 'd')).toBe(true);
  });

  it('refuses an empty ring', () => {
    expect(() => new Ring([])).toThrow(/at least one node/);
  });
});
