// Routes stored records to every owner of their partition (DESIGN.md, "Writes"). Owners
// come from the cluster's placement: while a transfer runs, old and new owners alike. A
// record is written when at least one owner stored it and every other owner either stored
// it or holds a durable hint for it on this node.

import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { DistributionPolicy } from './partitioner.js';

export type ReplicaOutcome = 'stored' | 'hinted';

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
    const byOwner = new Map<string, number[]>();
    records.forEach((record, position) => {
      for (const owner of this.writeOwners(policy, record.partition)) {
        let positions = byOwner.get(owner);
        if (positions === undefined) byOwner.set(owner, (positions = []));
        positions.push(position);
      }
    });
    const failures = new Map<number, string>();
    const storedSomewhere = new Set<number>();
    await Promise.all(
      [...byOwner].map(async ([owner, positions]) => {
        try {
          const outcome = await this.writer.write(owner, repository, positions.map((position) => records[position]!));
          if (outcome === 'stored') for (const position of positions) storedSomewhere.add(position);
        } catch (error) {
          const message = `not written to owner ${owner}: ${(error as Error).message}`;
          for (const position of positions) if (!failures.has(position)) failures.set(position, message);
        }
      }),
    );
    records.forEach((_, position) => {
      if (!failures.has(position) && !storedSomewhere.has(position)) {
        failures.set(position, 'no owner of its partition is reachable (hints kept for them)');
      }
    });
    return failures;
  }
}
