// Routes stored records to every owner of their partition (DESIGN.md, "Writes"). Owners
// come from the cluster's placement: while a transfer runs, old and new owners alike. A
// record is written when at least one owner stored it and every other owner either stored
// it or holds a durable hint for it on this node.

import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { DistributionPolicy } from './partitioner.js';

export type ReplicaOutcome = 'stored' | 'hinted';

/** An owner refused the write because this node's table was old; it has the new one now. */
export class RouteAgainError extends Error {
  override name = 'RouteAgainError';
}

/** Re-routing rounds before a write is refused (each adopts a newer table). */
const ROUTE_ATTEMPTS_MAX = 4;

export interface ReplicaWriter {
  /** Stores the records on `node`, or hints them for it; resolves once either is durable. */
  write(node: string, repository: RepositoryName, records: readonly StoredRecord[]): Promise<ReplicaOutcome>;
}

/** The nodes a write of the partition must reach, first the current owners. */
export type WriteOwners = (policy: DistributionPolicy, partition: number) => readonly string[];

export class PartitionRouter {
  constructor(
    private readonly writeOwners: WriteOwners,
    private readonly writer: ReplicaWriter,
  ) {}

  /**
   * Writes each record to all owners of its partition. Returns, by position in `records`,
   * the message of each record that could not be written.
   */
  async write(
    repository: RepositoryName,
    policy: DistributionPolicy,
    records: readonly StoredRecord[],
  ): Promise<Map<number, string>> {
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
    const byOwner = new Map<string, number[]>();
    for (const position of positions) {
      for (const owner of this.writeOwners(policy, records[position]!.partition)) {
        let owned = byOwner.get(owner);
        if (owned === undefined) byOwner.set(owner, (owned = []));
        owned.push(position);
      }
    }
    const storedSomewhere = new Set<number>();
    const reroute = new Set<number>();
    await Promise.all(
      [...byOwner].map(async ([owner, owned]) => {
        try {
          const outcome = await this.writer.write(owner, repository, owned.map((position) => records[position]!));
          if (outcome === 'stored') for (const position of owned) storedSomewhere.add(position);
        } catch (error) {
          if (error instanceof RouteAgainError) {
            for (const position of owned) reroute.add(position);
            return;
          }
          const message = `not written to owner ${owner}: ${(error as Error).message}`;
          for (const position of owned) if (!failures.has(position)) failures.set(position, message);
        }
      }),
    );
    for (const position of positions) {
      if (reroute.has(position) || failures.has(position) || storedSomewhere.has(position)) continue;
      failures.set(position, 'no owner of its partition is reachable (hints kept for them)');
    }
    return [...reroute].filter((position) => !failures.has(position));
  }
}
