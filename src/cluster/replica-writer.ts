// One owner's share of a write: this node's repository, a peer over gRPC, or, when the
// peer is down or does not answer, a durable hint on this node (DESIGN.md, "Writes").

import type { Logger } from '../log.js';
import type { PeerTransport } from '../peer/transport.js';
import type { GroupCommitter } from '../storage/group-commit.js';
import type { HintBuffer } from '../storage/hints.js';
import type { LocalReplica } from '../storage/local-replica.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { ReplicaOutcome, ReplicaWriter } from './partition-router.js';

export interface ReplicaWriterDeps {
  localName: string;
  replica: LocalReplica;
  transport: PeerTransport;
  hints: HintBuffer;
  committer: GroupCommitter;
  available(node: string): boolean;
  peerDeadlineMs: number;
  log: Logger;
}

export function clusterReplicaWriter(deps: ReplicaWriterDeps): ReplicaWriter {
  const hint = async (node: string, repository: RepositoryName, records: readonly StoredRecord[]): Promise<ReplicaOutcome> => {
    await deps.committer.commit(deps.hints.add(node, { repository, records: [...records] }));
    return 'hinted';
  };
  return {
    async write(node, repository, records) {
      if (node === deps.localName) {
        await deps.replica.store(repository, records);
        return 'stored';
      }
      // A node known to be down is not waited for: its share goes straight to a hint.
      if (!deps.available(node)) return hint(node, repository, records);
      try {
        await deps.transport.call(node, 'WriteRecords', { repo: repository, records: [...records] }, { deadlineMs: deps.peerDeadlineMs });
        return 'stored';
      } catch (error) {
        deps.log.debug({ err: error, node }, 'replica write failed; hinting');
        return hint(node, repository, records);
      }
    },
  };
}
