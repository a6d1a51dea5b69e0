// One owner's share of a write: this node's repository, or a peer over gRPC (DESIGN.md,
// "Writes"). A peer that is down or does not answer gets a durable hint on this node
// instead, when the writer hints (client writes); the hint replayer's writer does not.
// Every peer write carries this node's membership epoch: an owner with a newer table
// refuses it with that table, which this node adopts before the router routes again.

import type { Logger } from '../log.js';
import type { RemotePeerError } from '../peer/wire.js';
import type { PeerTransport } from '../peer/transport.js';
import type { GroupCommitter } from '../storage/group-commit.js';
import type { HintBuffer } from '../storage/hints.js';
import type { LocalReplica } from '../storage/local-replica.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Membership } from './core/types.js';
import { RouteAgainError, type ReplicaOutcome, type ReplicaWriter } from './partition-router.js';

export interface ReplicaWriterDeps {
  localName: string;
  replica: LocalReplica;
  transport: PeerTransport;
  hints: HintBuffer;
  committer: GroupCommitter;
  available(node: string): boolean;
  epoch(): number;
  /** Takes a newer table an owner answered with; resolves once this node acts on it. */
  adopt(from: string, membership: Membership): Promise<void>;
  peerDeadlineMs: number;
  log: Logger;
}

export const STALE_EPOCH = 'STALE_EPOCH';

export function clusterReplicaWriter(deps: ReplicaWriterDeps, options: { hint: boolean }): ReplicaWriter {
  const hint = async (node: string, repository: RepositoryName, records: readonly StoredRecord[], cause: unknown): Promise<ReplicaOutcome> => {
    if (!options.hint) throw cause;
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
      if (!deps.available(node)) return hint(node, repository, records, new Error(`${node} is unavailable`));
      try {
        await deps.transport.call(node, 'WriteRecords', { repo: repository, records: [...records], epoch: deps.epoch() }, { deadlineMs: deps.peerDeadlineMs });
        return 'stored';
      } catch (error) {
        if ((error as RemotePeerError).code === STALE_EPOCH) {
          await deps.adopt(node, (error as RemotePeerError).details!.membership as Membership);
          throw new RouteAgainError(`${node} has a newer cluster table`);
        }
        deps.log.debug({ err: error, peer: node }, 'replica write failed');
        return hint(node, repository, records, error);
      }
    },
  };
}
