// POST /cluster/repair and GET /cluster/repair/:id (issue 12, item 3): a repair run is
// started on every member (each sweeps the partitions it initiates) and its status is
// the sum of theirs. A member that cannot be reached leaves the run incomplete.

import { randomBytes } from 'node:crypto';
import type { Membership } from '../protocol/cluster-types.js';
import type { TransferAction } from '../cluster/membership-service.js';
import { z } from 'zod';
import { NotFoundError } from '../errors.js';
import type { RepairStatusReply } from '../peer/messages.js';
import { validate } from '../validation.js';
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

export interface ClusterRepairStatus {
  id: string;
  stream: string | undefined;
  complete: boolean;
  partitionsTotal: number;
  partitionsDone: number;
  partitionsCompared: number;
  recordsSent: number;
  recordsReceived: number;
  failures: number;
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
    const sum = (pick: (status: RepairStatusReply) => number) => parts.reduce((total, part) => total + (part.status === undefined ? 0 : pick(part.status)), 0);
    const partitionsTotal = sum((status) => status.partitionsTotal);
    const partitionsDone = sum((status) => status.partitionsDone);
    const complete = parts.every((part) => part.status?.known === true && part.status.complete);
    return {
      id,
      stream: run.stream,
      complete,
      partitionsTotal,
      partitionsDone,
      partitionsCompared: sum((status) => status.partitionsCompared),
      recordsSent: sum((status) => status.recordsSent),
      recordsReceived: sum((status) => status.recordsReceived),
      failures: sum((status) => status.failures),
      percentComplete: complete ? 100 : partitionsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * partitionsDone) / partitionsTotal)),
      nodes: parts.map((part) => ({
        node: part.node,
        complete: part.status?.complete === true,
        percentComplete: percentOf(part.status),
        ...(part.error === undefined ? (part.status?.known === false ? { error: 'the run never reached this node' } : {}) : { error: part.error }),
      })),
    };
  }

  private members(): string[] {
    return this.deps.membership().members.filter((member) => member.state === 'Joined' || member.state === 'Leaving').map((member) => member.name);
  }
}

export function toReply(run: RepairRunStatus | undefined): RepairStatusReply {
  if (run === undefined) return { known: false, complete: false, partitionsTotal: 0, partitionsDone: 0, partitionsCompared: 0, recordsSent: 0, recordsReceived: 0, failures: 0 };
  const { complete, partitionsTotal, partitionsDone, partitionsCompared, recordsSent, recordsReceived, failures } = run;
  return { known: true, complete, partitionsTotal, partitionsDone, partitionsCompared, recordsSent, recordsReceived, failures };
}

function percentOf(status: RepairStatusReply | undefined): number {
  if (status === undefined || !status.known) return 0;
  if (status.complete) return 100;
  return status.partitionsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * status.partitionsDone) / status.partitionsTotal));
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
    percentComplete: run.complete ? 100 : run.partitionsTotal === 0 ? 0 : Math.min(99, Math.floor((100 * run.partitionsDone) / run.partitionsTotal)),
    info: { ...run, bytes: 0, payloads: run.recordsSent + run.recordsReceived, partitions: run.partitionsTotal },
  }));
}
