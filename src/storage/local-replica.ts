// This node's side of a replicated write: the records go into the named repository in
// one group-committed, fsynced batch.

import type { GroupCommitter } from './group-commit.js';
import type { Repository, RepositoryName, StoredRecord } from './repository.js';

export class LocalReplica {
  constructor(
    private readonly repositories: Record<RepositoryName, Repository>,
    private readonly committer: GroupCommitter,
  ) {}

  store(repository: RepositoryName, records: readonly StoredRecord[]): Promise<void> {
    return this.committer.commit(this.repositories[repository].writeOperations(records));
  }
}
