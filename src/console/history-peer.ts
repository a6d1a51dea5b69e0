// The console's charts across the cluster (docs/operating.md, "Console and API
// documentation"): every node keeps its own history (history.ts) and answers a
// ConsoleHistoryRead with it; the node that serves the console asks every other member that
// is not Left over the signed peer channel, so the page reads one route of one origin and no
// node needs another's HTTP address or a token for it. A member that is unavailable, or does
// not answer within the deadline, is listed with the reason instead of its figures.

import type { Membership } from '../protocol/cluster-types.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { HISTORY_INTERVAL_MS, HISTORY_WINDOW_MS, type ClusterHistory, type NodeHistory } from './history.js';

/** Members the answer holds (its bytes grow with them: ~10 KB per node for 15 minutes). */
export const HISTORY_NODES_MAX = 64;
/** The page reads the history every few seconds: a slow member must not hold it longer than this. */
export const HISTORY_DEADLINE_MS_MAX = 2_000;

export function serveHistory(endpoint: PeerEndpoint, local: () => NodeHistory): void {
  endpoint.handle('ConsoleHistoryRead', async () => local());
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
        const history = await deps.endpoint.call(name, 'ConsoleHistoryRead', {}, { deadlineMs });
        return { ...history, node: name };
      } catch (error) {
        return { node: name, error: `did not answer: ${(error as Error).message}` };
      }
    }),
  );
  return { intervalMs: HISTORY_INTERVAL_MS, windowMs: HISTORY_WINDOW_MS, nodes };
}
