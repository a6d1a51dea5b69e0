// This node's side of a replicated write: the records go into the named repository in
// one group-committed, fsynced batch. While a stream moves to another repository
// (docs/storage.md), `targets` may name both, or the other one: the records are converted
// (repository-convert.ts) and stored in each, in the same batch.

import { assert } from '../lib/assert.js';
import type { GroupCommitter } from './group-commit.js';
import { convertRecords } from './repository-convert.js';
import type { Repository, RepositoryName, StoredRecord } from './repository.js';

/** Where this node stores records of a stream that came for `tagged`. */
export type StoreTargets = (stream: string, tagged: RepositoryName) => readonly RepositoryName[];

export class LocalReplica {
  constructor(
    private readonly repositories: Record<RepositoryName, Repository>,
    private readonly committer: GroupCommitter,
    /** Told of records once they are durable (the ssr index follows ingest this way). */
    private readonly onStored: (repository: RepositoryName, records: readonly StoredRecord[]) => void = () => {},
    private readonly targets: StoreTargets = (_stream, tagged) => [tagged],
  ) {}

  async store(repository: RepositoryName, records: readonly StoredRecord[]): Promise<void> {
    const placed = this.place(repository, records);
    // Every record lands in each repository its stream is stored in now, none is lost on the way.
    assert(placed.every(([, stored]) => stored.length > 0) || records.length === 0, `records of a ${repository} write placed nowhere`);
    await this.committer.commit(placed.flatMap(([target, stored]) => this.repositories[target].writeOperations(stored)));
    for (const [target, stored] of placed) this.onStored(target, stored);
  }

  /** The records for each repository they go into: as they came where they were sent, converted elsewhere. */
  private place(repository: RepositoryName, records: readonly StoredRecord[]): Array<[RepositoryName, readonly StoredRecord[]]> {
    const streams = new Set(records.map((record) => record.stream));
    if (streams.size === 1) return this.placeStream(repository, records[0]!.stream, records);
    return [...streams].flatMap((stream) => this.placeStream(repository, stream, records.filter((record) => record.stream === stream)));
  }

  private placeStream(repository: RepositoryName, stream: string, records: readonly StoredRecord[]): Array<[RepositoryName, readonly StoredRecord[]]> {
    const targets = this.targets(stream, repository);
    // A stream is stored in one repository, or in two while it moves (docs/storage.md).
    assert(targets.length >= 1 && targets.length <= 2 && new Set(targets).size === targets.length, `stream ${stream} stored in ${targets.join(', ') || 'no repository'}`);
    if (targets.length === 1 && targets[0] === repository) return [[repository, records]];
    return targets.map((target) => [target, target === repository ? records : convertRecords(records, repository, target)]);
  }
}
