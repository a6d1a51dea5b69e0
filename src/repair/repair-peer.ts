// Anti-entropy's part of the peer protocol (repair-messages.ts): this node answers another
// owner's digests, keys and records of a partition, and the runs started on every member;
// and asks the same of the others.

import { BadRequestError } from '../lib/errors.js';
import type { RepositoryName } from '../storage/repository.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { toReply, type ClusterRepairDeps } from './cluster-repair.js';
import { keysInSegments } from './key-digest.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import type { LocalPartitions, PeerPartitions } from './partition-sync.js';
import { REPAIR_DIGEST, REPAIR_DIGESTS, REPAIR_DIGESTS_PER_CALL_MAX, REPAIR_FETCH, REPAIR_KEYS, REPAIR_STATUS, REPAIR_SWEEP } from './repair-messages.js';
import type { RepairService } from './repair-service.js';

/** Partitions of one RepairDigests scanned at once: libuv's thread pool has 4 threads. */
const DIGEST_SCANS_AT_ONCE = 4;
/** Keys one RepairFetch may ask for: a bigger fetch is refused, not answered at any size. */
const REPAIR_KEYS_PER_FETCH_MAX = 10_000;

/** Answers other owners' exchanges over the partitions this node holds, and the runs started on it. */
export function serveRepair(endpoint: PeerEndpoint, parts: { partitions: LocalPartitions; repair: Pick<RepairService, 'startRun' | 'status'> }): void {
  const { partitions, repair } = parts;
  endpoint.handle(REPAIR_DIGEST, async (_sender, part) => ({ segments: Array.from(await partitions.digest(part)) }));
  endpoint.handle(REPAIR_DIGESTS, async (_sender, request) => {
    const count = request.partitions.length;
    if (count === 0 || count > REPAIR_DIGESTS_PER_CALL_MAX) throw new BadRequestError(`RepairDigests: 1 to ${REPAIR_DIGESTS_PER_CALL_MAX} partitions, got ${count}`);
    // Each is a key scan when not kept (stored-partitions.ts): a few at once, as LevelDB
    // reads on the thread pool; one after another, a join's final sync waited on them.
    const digests: Array<{ segments: number[] }> = new Array(count);
    await forEachLimited([...request.partitions.keys()], DIGEST_SCANS_AT_ONCE, async (index) => {
      digests[index] = { segments: Array.from(await partitions.digest({ repo: request.repo, stream: request.stream, partition: request.partitions[index]! })) };
    });
    return { digests };
  });
  endpoint.handle(REPAIR_KEYS, async (_sender, request) => ({ keys: keysInSegments(await partitions.keys(request), request.segments) }));
  endpoint.handle(REPAIR_FETCH, async (_sender, request) => {
    if (request.keys.length > REPAIR_KEYS_PER_FETCH_MAX) throw new BadRequestError(`RepairFetch: at most ${REPAIR_KEYS_PER_FETCH_MAX} keys, got ${request.keys.length}`);
    return { records: await partitions.records(request, request.keys) };
  });
  endpoint.handle(REPAIR_SWEEP, async (_sender, sweep) => {
    repair.startRun(sweep.runId, sweep.stream);
    return {};
  });
  endpoint.handle(REPAIR_STATUS, async (_sender, request) => toReply(repair.status(request.runId)));
}

/** Another owner's side of an exchange, as far as repair reads it (a store there is a replica write: the caller's). */
export function remotePartitions(endpoint: PeerEndpoint, deadlineMs: number): Omit<PeerPartitions, 'push'> & { digests: RemoteDigests } {
  const options = { deadlineMs };
  return {
    digest: async (peer, part) => (await endpoint.call(peer, REPAIR_DIGEST, part, options)).segments,
    digests: async (peer, repo, stream, partitions) => {
      const digests = new Map<number, number[]>();
      for (let start = 0; start < partitions.length; start += REPAIR_DIGESTS_PER_CALL_MAX) {
        const asked = partitions.slice(start, start + REPAIR_DIGESTS_PER_CALL_MAX);
        const reply = await endpoint.call(peer, REPAIR_DIGESTS, { repo, stream, partitions: asked }, options);
        if (reply.digests.length !== asked.length) throw new BadRequestError(`${peer} answered ${reply.digests.length} digests for ${asked.length} partitions`);
        asked.forEach((partition, index) => digests.set(partition, reply.digests[index]!.segments));
      }
      return digests;
    },
    keys: async (peer, part, segments) => (await endpoint.call(peer, REPAIR_KEYS, { ...part, segments: [...segments] }, options)).keys,
    fetch: async (peer, part, keys) => (await endpoint.call(peer, REPAIR_FETCH, { ...part, keys: [...keys] }, options)).records,
  };
}

/** Digests of partitions of one stream held by `peer`, by partition: REPAIR_DIGESTS_PER_CALL_MAX a call. */
export type RemoteDigests = (peer: string, repo: RepositoryName, stream: string, partitions: readonly number[]) => Promise<Map<number, number[]>>;

/** Starting a run on another member, and reading how far it got there. */
export function remoteRuns(endpoint: PeerEndpoint, deadlineMs: number): Pick<ClusterRepairDeps, 'startRemote' | 'statusRemote'> {
  return {
    startRemote: async (node, runId, stream) => void (await endpoint.call(node, REPAIR_SWEEP, { runId, stream }, { deadlineMs })),
    statusRemote: (node, runId) => endpoint.call(node, REPAIR_STATUS, { runId }, { deadlineMs }),
  };
}
