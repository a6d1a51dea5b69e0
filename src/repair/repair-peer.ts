// Anti-entropy's part of the peer protocol (repair-messages.ts): this node answers another
// owner's digests, keys and records of a partition, and the runs started on every member;
// and asks the same of the others.

import { BadRequestError } from '../lib/errors.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { toReply, type ClusterRepairDeps } from './cluster-repair.js';
import { keysInSegments } from './key-digest.js';
import type { LocalPartitions, PeerPartitions } from './partition-sync.js';
import { REPAIR_DIGEST, REPAIR_FETCH, REPAIR_KEYS, REPAIR_STATUS, REPAIR_SWEEP } from './repair-messages.js';
import type { RepairService } from './repair-service.js';

/** Keys one RepairFetch may ask for: a bigger fetch is refused, not answered at any size. */
const REPAIR_KEYS_PER_FETCH_MAX = 10_000;

/** Answers other owners' exchanges over the partitions this node holds, and the runs started on it. */
export function serveRepair(endpoint: PeerEndpoint, parts: { partitions: LocalPartitions; repair: Pick<RepairService, 'startRun' | 'status'> }): void {
  const { partitions, repair } = parts;
  endpoint.handle(REPAIR_DIGEST, async (_sender, part) => ({ segments: Array.from(await partitions.digest(part)) }));
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
export function remotePartitions(endpoint: PeerEndpoint, deadlineMs: number): Omit<PeerPartitions, 'push'> {
  const options = { deadlineMs };
  return {
    digest: async (peer, part) => (await endpoint.call(peer, REPAIR_DIGEST, part, options)).segments,
    keys: async (peer, part, segments) => (await endpoint.call(peer, REPAIR_KEYS, { ...part, segments: [...segments] }, options)).keys,
    fetch: async (peer, part, keys) => (await endpoint.call(peer, REPAIR_FETCH, { ...part, keys: [...keys] }, options)).records,
  };
}

/** Starting a run on another member, and reading how far it got there. */
export function remoteRuns(endpoint: PeerEndpoint, deadlineMs: number): Pick<ClusterRepairDeps, 'startRemote' | 'statusRemote'> {
  return {
    startRemote: async (node, runId, stream) => void (await endpoint.call(node, REPAIR_SWEEP, { runId, stream }, { deadlineMs })),
    statusRemote: (node, runId) => endpoint.call(node, REPAIR_STATUS, { runId }, { deadlineMs }),
  };
}
