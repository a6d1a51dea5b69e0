// Partition → owners, from the Joined nodes, by the `hashring` library (DESIGN.md). The
// table is computed once per (membership, ring_size, replicas) and reused for every
// payload: an md5 per lookup is too slow for the ingest path (DEPENDENCIES.md).

import HashRing from 'hashring';

export type OwnersTable = ReadonlyArray<readonly string[]>;

export class Ring {
  readonly nodes: readonly string[];
  private readonly ring: HashRing;
  private readonly tables = new Map<string, OwnersTable>();

  constructor(nodeNames: Iterable<string>) {
    this.nodes = [...new Set(nodeNames)].sort();
    if (this.nodes.length === 0) throw new Error('ring: at least one node is required');
    this.ring = new HashRing([...this.nodes]);
  }

  /** Owners of every partition; replicas is capped by the number of nodes. */
  owners(ringSize: number, replicas: number): OwnersTable {
    const copies = Math.min(replicas, this.nodes.length);
    const cacheKey = `${ringSize}/${copies}`;
    let table = this.tables.get(cacheKey);
    if (table === undefined) {
      table = Array.from({ length: ringSize }, (_, partition) => this.ownersOf(partition, copies));
      this.tables.set(cacheKey, table);
    }
    return table;
  }

  private ownersOf(partition: number, copies: number): readonly string[] {
    const owners = this.ring.range(`partition-${partition}`, copies);
    // Invariant: `copies` distinct owners (STYLE.md, "assert invariants where state changes").
    if (owners.length !== copies || new Set(owners).size !== copies) {
      throw new Error(`ring: partition ${partition} got owners ${owners.join(',')}, wanted ${copies} distinct`);
    }
    return Object.freeze(owners);
  }
}
