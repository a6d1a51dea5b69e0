// One owner's share of a write: this node's repository, or a peer over gRPC (DESIGN.md,
// "Writes"). Every peer write carries this node's membership epoch and the stream's
// replicas: an owner with a newer table, or that does not own the partition by its table,
// refuses it with that table, which this node adopts before the router routes again.
//
// A peer gets `writeDeadlineMs` to answer, much less than the peer deadline: an owner that
// is paused or slow is suspected at once (the failure detector marks it unavailable until
// it is heard from again) and hinted, so one stopped node never holds every batch for the
// whole peer deadline (issue 12, item 6).

import type { Logger } from '../log.js';
import type { RemotePeerError } from '../peer/wire.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Membership } from '../protocol/cluster-types.js';
import { RouteAgainError } from './partition-router.js';

/** This node's repositories, as writes reach them (storage/local-replica.ts; the simulation's own). */
export interface ReplicaStore {
  /** Durable (synced) when it resolves; indexes and digests over the records are told. */
  store(repository: RepositoryName, records: readonly StoredRecord[]): Promise<void>;
}

export interface ReplicaWriterDeps {
  localName: string;
  replica: ReplicaStore;
  transport: Pick<PeerEndpoint, 'call'>;
  available(node: string): boolean;
  epoch(): number;
  /** Takes a newer table an owner answered with; resolves once this node acts on it. */
  adopt(from: string, membership: Membership): Promise<void>;
  /** The owner did not answer in time: the failure detector should take it for down. */
  suspect(node: string): void;
  writeDeadlineMs: number;
  log: Logger;
}

/** Codes of a refused replica write: the writer's table is old, or names the wrong owner. */
export const STALE_EPOCH = 'STALE_EPOCH';
export const NOT_OWNER = 'NOT_OWNER';

/** The owner could not be written (down, unreachable, slow, or it failed). */
export class ReplicaWriteError extends Error {
  override name = 'ReplicaWriteError';

  constructor(
    readonly node: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export class ReplicaWriter {
  constructor(private readonly deps: ReplicaWriterDeps) {}

  /** Resolves once the records are durable on `node`; throws RouteAgainError or ReplicaWriteError. */
  async write(node: string, repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void> {
    const deps = this.deps;
    if (node === deps.localName) {
      await deps.replica.store(repository, records);
      return;
    }
    // A node known to be down is not waited for.
    if (!deps.available(node)) throw new ReplicaWriteError(node, `${node} is unavailable`);
    try {
      await deps.transport.call(node, 'WriteRecords', { repo: repository, records: [...records], epoch: deps.epoch(), replicas }, { deadlineMs: deps.writeDeadlineMs });
    } catch (error) {
      const code = (error as RemotePeerError).code;
      if (code === STALE_EPOCH || code === NOT_OWNER) {
        await deps.adopt(node, (error as RemotePeerError).details!.membership as Membership);
        throw new RouteAgainError(`${node} has another cluster table (${code})`);
      }
      if (code === 'PEER_UNAVAILABLE') deps.suspect(node);
      deps.log.debug({ err: error, peer: node }, 'replica write failed');
      throw new ReplicaWriteError(node, `not written to owner ${node}: ${(error as Error).message}`, { cause: error });
    }
  }
}
