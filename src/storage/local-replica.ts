// This node's side of a replicated write: the records go into the named repository in
// one group-committed, fsynced batch.

import type { GroupCommitter } from './group-commit.js';
import type { Repository, RepositoryName, StoredRecord } from './repository.js';

export class LocalReplica {
  constructor(
    private readonly repositories: Record<RepositoryName, Repository>,
    private readonly committer: GroupCommitter,
    /** Told of records once they are durable (the ssr index follows ingest this way). */
    private readonly onStored: (repository: RepositoryName, records: readonly StoredRecord[]) => void = () => {},
  ) {}

  async store(repository: RepositoryName, records: readonly StoredRecord[]): Promise<void> {
    await this.committer.commit(this.repositories[repository].writeOperations(records));
    this.onStored(repository, records);
  }
}
