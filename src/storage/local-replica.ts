// This node's side of a replicated write: the records go into the named repository in
// one group-committed, fsynced batch.

import type { ReplicaWriter } from '../cluster/partition-router.js';
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

/** The writer of a lone node: every owner is this node. Peers arrive with the cluster issue. */
export function localOnlyWriter(localName: string, replica: LocalReplica): ReplicaWriter {
  return {
    write(node, repository, records) {
      if (node !== localName) return Promise.reject(new Error(`node ${node} is not reachable from ${localName}`));
      return replica.store(repository, records);
    },
  };
}
