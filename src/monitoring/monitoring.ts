// Monitoring (spec, "Monitoring"): per service, details from each node. A service answers
// for the local node; the default view asks every other live node over the peer `Read`
// call and lists them all. This build serves `handoff` (hint buffers), `cluster`,
// `system` and `execution` (the sessions a node hosts); the other services of the spec come with the issues that build them.
// Information is filtered by tenant (the tenant `system` sees every tenant's), and
// `execution` also by one session URI (`uri`).

import { BadRequestError, NotFoundError } from '../errors.js';
import type { HintBuffer } from '../storage/hints.js';
import type { ClusterCore } from '../cluster/core/core.js';
import type { SoftwareVersion } from '../version.js';

export const MONITORING_SERVICES = ['handoff', 'cluster', 'system', 'execution'] as const;
export type MonitoringService = (typeof MONITORING_SERVICES)[number];

/** Services whose details the `uri` query parameter narrows (spec: `execution` and `streams`). */
const URI_FILTERED: readonly string[] = ['execution'];
const URI_LENGTH_MAX = 1_024;

/** Who asks and what for: the tenant of the path, and an optional `uri`. */
export interface MonitoringFilter {
  tenant: string;
  uri?: string;
}

export interface HostedSession {
  session: string;
  queries: Array<{ id: string; state: string }>;
}

export interface NodeDetails {
  node: string;
  details: Record<string, unknown>;
}

export interface MonitoringDeps {
  localName: string;
  hints: HintBuffer;
  core: ClusterCore;
  version: SoftwareVersion;
  startedAtMs: number;
  /** Partitions waiting to be handed off before they are dropped, and damage being refilled (issue 12). */
  handOff(): { pendingDrops: number; damaged: { reason: string; sinceMs: number } | undefined };
  /** The sessions this node hosts and what their queries are doing (issue 7). */
  execution(): { sessions: HostedSession[]; liveForwardDroppedPayloads: number };
}

export function checkService(service: string): MonitoringService {
  if (!(MONITORING_SERVICES as readonly string[]).includes(service)) {
    throw new NotFoundError(`no monitoring service '${service}' (available: ${MONITORING_SERVICES.join(', ')})`);
  }
  return service as MonitoringService;
}

/**
 * The filter of a request (or of a peer's Read, which carries the same fields): a `uri`
 * only where the service has one, and bounded like any other input.
 */
export function checkFilter(service: MonitoringService, tenant: unknown, uri: unknown): MonitoringFilter {
  if (typeof tenant !== 'string' || tenant === '') throw new BadRequestError('monitoring: tenant must be a non-empty string');
  if (uri === undefined) return { tenant };
  if (typeof uri !== 'string' || uri === '' || uri.length > URI_LENGTH_MAX) {
    throw new BadRequestError(`monitoring: uri must be given once, a non-empty string of at most ${URI_LENGTH_MAX} characters`);
  }
  if (!URI_FILTERED.includes(service)) throw new BadRequestError(`monitoring: service '${service}' takes no uri filter (only ${URI_FILTERED.join(', ')})`);
  return { tenant, uri };
}

/** The sessions the filter lets through: the tenant's own (every one for `system`), and the `uri` alone if given. */
export function filterSessions(sessions: readonly HostedSession[], filter: MonitoringFilter): HostedSession[] {
  const prefix = `/execution/${filter.tenant}/`;
  return sessions.filter(
    (each) => (filter.tenant === 'system' || each.session.startsWith(prefix)) && (filter.uri === undefined || each.session === filter.uri),
  );
}

/** This node's details for one service. Only `execution` is per tenant; the others are the node's. */
export function localDetails(service: MonitoringService, deps: MonitoringDeps, filter: MonitoringFilter): NodeDetails {
  switch (service) {
    case 'handoff': {
      const targets = deps.hints.snapshot();
      return { node: deps.localName, details: { targets, records: targets.reduce((sum, target) => sum + target.records, 0), ...deps.handOff() } };
    }
    case 'execution': {
      const execution = deps.execution();
      return { node: deps.localName, details: { ...execution, sessions: filterSessions(execution.sessions, filter) } };
    }
    case 'cluster': {
      const membership = deps.core.membership();
      return {
        node: deps.localName,
        details: {
          epoch: membership.epoch,
          change: membership.change === undefined ? null : { id: membership.change.id, kind: membership.change.kind, node: membership.change.node },
          members: membership.members.map((member) => ({ name: member.name, state: member.state, available: deps.core.available(member.name) })),
          incomingTransfers: deps.core.incomingTransfers(),
        },
      };
    }
    case 'system': {
      const memory = process.memoryUsage();
      return {
        node: deps.localName,
        details: {
          build: deps.version,
          runtime: { node: process.version, platform: process.platform, pid: process.pid },
          metrics: { uptimeMs: Date.now() - deps.startedAtMs, rssBytes: memory.rss, heapUsedBytes: memory.heapUsed },
        },
      };
    }
  }
}
