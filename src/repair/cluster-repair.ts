// POST /cluster/repair and GET /cluster/repair/:id: a repair run is started on every member
// (each sweeps the partitions it initiates) and its status is the sum of theirs. A member that
// cannot be reached leaves the run incomplete.

import { randomBytes } from 'node:crypto';
import type { Membership, TransferAction } from '../protocol/cluster-types.js';
import { z } from 'zod';
import { NotFoundError } from '../lib/errors.js';
import type { RepairCounts, RepairStatusReply } from './repair-messages.js';
import { validate } from '../lib/validation.js';
import type { RepairRunStatus, RepairService } from './repair-service.js';

export interface ClusterRepairDeps {
  localName: string;
  membership(): Membership;
  repair: RepairService;
  /** Known stream keys ("tenant/collection/name"), to check a request's stream. */
  streamExists(key: string): boolean;
  startRemote(node: string, runId: string, stream: string | undefined): Promise<void>;
  statusRemote(node: string, runId: string): Promise<RepairStatusReply>;
}

export interface ClusterRepairStatus extends RepairCounts {
  id: string;
  stream: string | undefined;
  percentComplete: number;
  nodes: Array<{ node: string; complete: boolean; percentComplete: number; error?: string }>;
}

export class ClusterRepair {
  /** Runs started through this node, with the members they were started on. */
  private readonly started = new Map<string, { stream: string | undefined; members: string[] }>();

  constructor(private readonly deps: ClusterRepairDeps) {}

  /** Starts a run everywhere; resolves with its id once every reachable member took it. */
  async start(body: unknown): Promise<{ id: string; stream: string | undefined; nodes: string[] }> {
    const stream = parseStream(body);
    if (stream !== undefined && !this.deps.streamExists(stream)) throw new NotFoundError(`stream '/streams/${stream}' does not exist`);
    const id = `repair-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
    const members = this.members();
    this.started.set(id, { stream, members });
    while (this.started.size > 64) this.started.delete(this.started.keys().next().value!);
    await Promise.all(
      members.map((node) => (node === this.deps.localName ? this.deps.repair.startRun(id, stream) : this.deps.startRemote(node, id, stream).catch(() => undefined))),
    );
    return { id, stream, nodes: members };
  }

  async status(id: string): Promise<ClusterRepairStatus> {
    const run = this.started.get(id);
    if (run === undefined) throw new NotFoundError(`no repair run '${id}' was started through this node`);
    const parts = await Promise.all(
      run.members.map(async (node) => {
        try {
          const status = node === this.deps.localName ? toReply(this.deps.repair.status(id)) : await this.deps.statusRemote(node, id);
          return { node, status };
        } catch (error) {
          return { node, error: (error as Error).message };
        }
      }),
    );
    const counts = sumCounts(parts.flatMap((part) => (part.status === undefined ? [] : [part.status])));
    counts.complete = parts.every((part) => part.status?.known === true && part.status.complete);
    return {
      id,
      stream: run.stream,
      ...counts,
      percentComplete: percentOf(counts),
      nodes: parts.map((part) => ({
        node: part.node,
        complete: part.status?.complete === true,
        percentComplete: part.status?.known === true ? percentOf(part.status) : 0,
        ...(part.error === undefined ? (part.status?.known === false ? { error: 'the run never reached this node' } : {}) : { error: part.error }),
      })),
    };
  }

  private members(): string[] {
    return this.deps.membership().members.filter((member) => member.state === 'Joined' || member.state === 'Leaving').map((member) => member.name);
  }
}

export function toReply(run: RepairRunStatus | undefined): RepairStatusReply {
  if (run === undefined) return { known: false, ...sumCounts([]) };
  const { complete, partitionsTotal, partitionsDone, partitionsCompared, recordsSent, recordsReceived, failures } = run;
  return { known: true, complete, partitionsTotal, partitionsDone, partitionsCompared, recordsSent, recordsReceived, failures };
}

/** The counts of several runs added up; `complete` only when every one is (and there is one). */
function sumCounts(runs: readonly RepairCounts[]): RepairCounts {
  const total: RepairCounts = { complete: runs.length > 0, partitionsTotal: 0, partitionsDone: 0, partitionsCompared: 0, recordsSent: 0, recordsReceived: 0, failures: 0 };
  for (const run of runs) {
    total.complete &&= run.complete;
    total.partitionsTotal += run.partitionsTotal;
    total.partitionsDone += run.partitionsDone;
    total.partitionsCompared += run.partitionsCompared;
    total.recordsSent += run.recordsSent;
    total.recordsReceived += run.recordsReceived;
    total.failures += run.failures;
  }
  return total;
}

/** 100 once complete; until then the partitions done, at most 99. */
function percentOf(counts: RepairCounts): number {
  if (counts.complete) return 100;
  return counts.partitionsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * counts.partitionsDone) / counts.partitionsTotal));
}

const STREAM_URI = /^\/streams\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** `{}` (every stream) or `{ "stream": "/streams/<tenant>/<collection>/<name>" }`. */
export const repairBodySchema = z
  .strictObject({
    stream: z.string().regex(STREAM_URI, 'expected a stream URI: /streams/<tenant>/<collection>/<name>').optional().describe('Repair only this stream.'),
  })
  .meta({ id: 'RepairRequest', examples: [{ stream: '/streams/demo/mobile/events' }] });

/** The body's stream as its key ("tenant/collection/name"); an empty body is every stream. */
function parseStream(body: unknown): string | undefined {
  if (body === undefined || body === null || body === '') return undefined;
  const { stream } = validate(repairBodySchema, body);
  if (stream === undefined) return undefined;
  const [, tenant, collection, name] = STREAM_URI.exec(stream)!;
  return `${tenant}/${collection}/${name}`;
}

/** This node's repair runs as rows of GET /cluster/transfers (a repair moves data too). */
export function repairActions(localName: string, runs: readonly RepairRunStatus[]): TransferAction[] {
  return runs.map((run) => ({
    type: 'repo_data_transfer',
    repo: 'ssr,tsr',
    from: localName,
    to: 'other owners',
    complete: run.complete,
    percentComplete: percentOf(run),
    info: { ...run, bytes: 0, payloads: run.recordsSent + run.recordsReceived, partitions: run.partitionsTotal },
  }));
}
