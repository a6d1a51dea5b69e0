// The console's charts across the cluster (docs/operating.md, "Console and API
// documentation"): every node keeps its own history (history.ts) and answers a
// ConsoleHistoryRead with it; the node that serves the console asks every other member that
// is not Left over the signed peer channel, so the page reads one route of one origin and no
// node needs another's HTTP address or a token for it. A member that is unavailable, or does
// not answer within the deadline, is listed with the reason instead of its figures.

import { z } from 'zod';
import type { Membership } from '../protocol/cluster-types.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { EMPTY_CODEC, str } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import { HISTORY_INTERVAL_MS, HISTORY_SAMPLES_MAX, HISTORY_WINDOW_MS, type ClusterHistory, type NodeHistory } from './history.js';

/** Members the answer holds (its bytes grow with them: ~10 KB per node for 15 minutes). */
export const HISTORY_NODES_MAX = 64;
/** The page reads the history every few seconds: a slow member must not hold it longer than this. */
export const HISTORY_DEADLINE_MS_MAX = 2_000;

/** Reasons a node lists on GET /ready: a handful of sentences. */
const READY_REASONS_MAX = 16;
const READY_REASON_CHARS_MAX = 1_000;
const NODE_NAME_CHARS_MAX = 256;
const figures = z.array(z.number()).max(HISTORY_SAMPLES_MAX);
const gappedFigures = z.array(z.number().nullable()).max(HISTORY_SAMPLES_MAX);

const nodeHistorySchema = z
  .object({
    node: z.string().min(1).max(NODE_NAME_CHARS_MAX),
    intervalMs: z.int().positive(),
    samples: z.object({
      atMs: figures,
      ingestPayloadsPerSecond: figures,
      latencyP50Ms: gappedFigures,
      latencyP99Ms: gappedFigures,
      transferBytesPerSecond: figures,
      diskUsedBytes: gappedFigures,
    }),
    ready: z.boolean(),
    reasons: z.array(z.string().max(READY_REASON_CHARS_MAX)).max(READY_REASONS_MAX),
  })
  .refine((history) => Object.values(history.samples).every((column) => column.length === history.samples.atMs.length), 'every column of samples must have one value per time') satisfies z.ZodType<NodeHistory>;

/** A node's history travels as a JSON document, checked against the shape the page reads. */
export const CONSOLE_HISTORY_READ = definePeerKind<Record<string, never>, NodeHistory>({
  name: 'ConsoleHistoryRead',
  request: EMPTY_CODEC,
  reply: {
    type: 'ConsoleHistoryReply',
    codec: {
      toProto: (value) => ({ historyJson: writeDocument(value) }),
      fromProto: (object) => readDocument('historyJson', str(object, 'historyJson'), nodeHistorySchema),
    },
  },
});

export function serveHistory(endpoint: PeerEndpoint, local: () => NodeHistory): void {
  endpoint.handle(CONSOLE_HISTORY_READ, async () => local());
}

export interface ClusterHistoryDeps {
  endpoint: PeerEndpoint;
  membership(): Membership;
  available(name: string): boolean;
  local(): NodeHistory;
  deadlineMs: number;
}

/** Every member's history, by name; the first HISTORY_NODES_MAX members, the others named with why. */
export async function clusterHistory(deps: ClusterHistoryDeps): Promise<ClusterHistory> {
  const names = deps.membership().members.filter((member) => member.state !== 'Left').map((member) => member.name).sort();
  const deadlineMs = Math.min(deps.deadlineMs, HISTORY_DEADLINE_MS_MAX);
  const nodes = await Promise.all(
    names.map(async (name, index): Promise<ClusterHistory['nodes'][number]> => {
      if (index >= HISTORY_NODES_MAX) return { node: name, error: `not charted: the console charts the first ${HISTORY_NODES_MAX} nodes by name` };
      if (name === deps.endpoint.name) return deps.local();
      if (!deps.available(name)) return { node: name, error: 'unavailable: no heartbeat from it lately' };
      try {
        const history = await deps.endpoint.call(name, CONSOLE_HISTORY_READ, {}, { deadlineMs });
        return { ...history, node: name };
      } catch (error) {
        return { node: name, error: `did not answer: ${(error as Error).message}` };
      }
    }),
  );
  return { intervalMs: HISTORY_INTERVAL_MS, windowMs: HISTORY_WINDOW_MS, nodes };
}
