// Routes stored records to every owner of their partition (DESIGN.md, "Writes"). The ring
// is rebuilt only when the set of Joined nodes changes. Owners are reached through one
// ReplicaWriter: the local repository for this node, gRPC for peers (cluster issue).

import { StateConflictError } from '../errors.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { DistributionPolicy } from './partitioner.js';
import { Ring } from './ring.js';

export interface ReplicaWriter {
  /** Stores the records on `node`; resolves once they are durable there. */
  write(node: string, repository: RepositoryName, records: readonly StoredRecord[]): Promise<void>;
}

export class PartitionRouter {
  private ring: Ring | undefined;
  private ringMembers = '';

  constructor(
    private readonly joinedNodes: () => readonly string[],
    private readonly writer: ReplicaWriter,
  ) {}

  ownersOf(policy: DistributionPolicy, partition: number): readonly string[] {
    return this.currentRing().owners(policy.ring_size, policy.replicas)[partition]!;
  }

  /**
   * Writes each record to all owners of its partition. Returns, by position in `records`,
   * the message of each record that could not be written; the others are durable on every
   * owner that was written to.
   */
  async write(
    repository: RepositoryName,
    policy: DistributionPolicy,
    records: readonly StoredRecord[],
  ): Promise<Map<number, string>> {
    const byOwner = new Map<string, number[]>();
    records.forEach((record, position) => {
      for (const owner of this.ownersOf(policy, record.partition)) {
        let positions = byOwner.get(owner);
        if (positions === undefined) byOwner.set(owner, (positions = []));
        positions.push(position);
      }
    });
    const failures = new Map<number, string>();
    await Promise.all(
      [...byOwner].map(async ([owner, positions]) => {
        try {
          await this.writer.write(owner, repository, positions.map((position) => records[position]!));
        } catch (error) {
          const message = `not written to owner ${owner}: ${(error as Error).message}`;
          for (const position of positions) if (!failures.has(position)) failures.set(position, message);
        }
      }),
    );
    return failures;
  }

  private currentRing(): Ring {
    const members = this.joinedNodes();
    const signature = members.join('\n');
    if (this.ring === undefined || signature !== this.ringMembers) {
      if (members.length === 0) {
        throw new StateConflictError('this node is not Joined to a cluster yet: it cannot place writes');
      }
      this.ring = new Ring(members);
      this.ringMembers = signature;
    }
    return this.ring;
  }
}
