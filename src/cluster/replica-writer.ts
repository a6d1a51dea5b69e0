// One owner's share of a write: this node's repository, or a peer over gRPC (docs/cluster.md,
// "When a write counts"). Every peer write carries this node's membership epoch and the stream's
// replicas: an owner with a newer table, or that does not own the partition by its table,
// refuses it with that table, which this node adopts before the router routes again.
//
// A peer gets `writeDeadlineMs` to answer, much less than the peer deadline: an owner that
// is paused or slow is suspected at once (the failure detector marks it unavailable until
// it is heard from again) and hinted, so one stopped node never holds every batch for the
// whole peer deadline.
//
// Both halves of the epoch fence live here: the writer sends its epoch (`write`), the owner
// refuses an older one or a partition it does not own (`storeReplicaWrite`).

import { assert } from '../lib/assert.js';
import { BadRequestError, TributaryError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { WRITE_RECORDS, type WriteRecords } from './write-messages.js';
import type { RemotePeerError } from '../peer/wire.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Membership } from '../protocol/cluster-types.js';
import { writeOwners } from '../cluster-core/placement.js';
import { RouteAgainError } from './partition-router.js';

/** This node's repositories, as writes reach them (storage/local-replica.ts; the simulation's own). */
export interface ReplicaStore {
  /** Durable (synced) when it resolves; indexes and digests over the records are told. */
  store(repository: RepositoryName, records: readonly StoredRecord[]): Promise<void>;
}

export interface ReplicaWriterDeps {
  localName: string;
  replica: ReplicaStore;
  transport: Pick<PeerEndpoint, 'callEach'>;
  available(node: string): boolean;
  epoch(): number;
  /** This node's table: a local store is owner-checked against it, as a peer's write is (storeReplicaWrite). */
  membership(): Membership;
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
    options?: ErrorOptions & {
      /** The write was sent (it may have landed: a deadline passed, the connection broke); false: never sent. */
      sent?: boolean;
    },
  ) {
    super(message, options);
    this.sent = options?.sent ?? true;
  }

  readonly sent: boolean;
}

export class ReplicaWriter {
  constructor(private readonly deps: ReplicaWriterDeps) {}

  /** Resolves once the records are durable on `node`; throws RouteAgainError or ReplicaWriteError. */
  async write(node: string, repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void> {
    return this.writeEach([node], repository, replicas, records)[0]!;
  }

  /**
   * The same records to each of `nodes`, one outcome per node in order: the peers' body is
   * encoded and digested once for all of them (at replicas 3 on three nodes, every owner
   * is sent every record of a batch).
   */
  writeEach(nodes: readonly string[], repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Array<Promise<void>> {
    const deps = this.deps;
    // The router sends each owner its share of a stream's policy: never nothing, never zero copies, never an owner twice.
    assert(records.length > 0 && Number.isInteger(replicas) && replicas >= 1, `a replica write of ${records.length} records with ${replicas} replicas`);
    assert(new Set(nodes).size === nodes.length, () => `a replica write sent twice to one of ${nodes.join(', ')}`);
    // A node known to be down is not waited for.
    const peers = nodes.filter((node) => node !== deps.localName && deps.available(node));
    const body = { repo: repository, records: [...records], epoch: deps.epoch(), replicas };
    let calls: Array<Promise<unknown>>;
    try {
      calls = peers.length === 0 ? [] : deps.transport.callEach(peers, WRITE_RECORDS, body, { deadlineMs: deps.writeDeadlineMs });
    } catch (error) {
      // Each peer fails alone, never the whole write: the router counts each owner's outcome.
      calls = peers.map(() => Promise.reject(error));
    }
    assert(calls.length === peers.length, 'a shared replica write answered with another number of outcomes than peers');
    const callOf = new Map(peers.map((node, index) => [node, calls[index]!]));
    return nodes.map((node) => {
      if (node === deps.localName) return this.storeHere(repository, replicas, records);
      const call = callOf.get(node);
      if (call === undefined) return Promise.reject(new ReplicaWriteError(node, `${node} is unavailable`, { sent: false }));
      return call.then(
        () => undefined,
        (error: unknown) => this.failed(node, error),
      );
    });
  }

  private async storeHere(repository: RepositoryName, replicas: number, records: readonly StoredRecord[]): Promise<void> {
    const deps = this.deps;
    // This node's own share comes from its router, which placed each record on the ring.
    assert(records.every((record) => Number.isInteger(record.partition) && record.partition >= 0), 'a record stored here without a partition of the ring');
    // The table may have moved on while the write was routed (this process paused, a
    // change completed): a node that gave the partition up, or has left, stores nothing
    // more of it, or it would hold what it already dropped. The router routes again.
    const unowned = records.find((record) => !writeOwners(deps.membership(), { partition: record.partition, replicas }).includes(deps.localName));
    if (unowned !== undefined) throw new RouteAgainError(`${deps.localName} no longer owns partition ${unowned.partition} of ${unowned.stream} (epoch ${deps.epoch()})`);
    await deps.replica.store(repository, records);
  }

  /** A peer's write failed: routed again when its table is newer, else a ReplicaWriteError. */
  private async failed(node: string, error: unknown): Promise<never> {
    const deps = this.deps;
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

/**
 * A replica write from a peer. A writer with an older table than ours may be routing to
 * nodes that gave the partition up, and one whose table names another owner is wrong about
 * this one: both are refused with our table, and the writer routes again (the epoch fence;
 * nothing lands on a node that does not own it).
 */
export async function storeReplicaWrite(membership: Membership, replica: ReplicaStore, localName: string, write: WriteRecords): Promise<void> {
  if (write.epoch < membership.epoch) {
    throw new TributaryError(409, STALE_EPOCH, `writer epoch ${write.epoch} is older than ${membership.epoch}`, { details: { membership } });
  }
  if (!Number.isInteger(write.replicas) || write.replicas < 1) throw new BadRequestError(`WriteRecords: replicas must be a positive integer, got ${write.replicas}`);
  // Asked once per partition, not per record: a write carries hundreds of a few partitions.
  const owned = new Set<number>();
  for (const record of write.records) {
    if (owned.has(record.partition)) continue;
    if (!writeOwners(membership, { partition: record.partition, replicas: write.replicas }).includes(localName)) {
      throw new TributaryError(409, NOT_OWNER, `${localName} does not own partition ${record.partition} of ${record.stream} at epoch ${membership.epoch}`, { details: { membership } });
    }
    owned.add(record.partition);
  }
  // The epoch fence held: nothing lands here from an older table, nor for a partition this node does not own.
  assert(write.epoch >= membership.epoch && write.records.every((record) => owned.has(record.partition)), `a replica write at epoch ${write.epoch} passed the fence at ${membership.epoch}`);
  await replica.store(write.repo, write.records);
}
