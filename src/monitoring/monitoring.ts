// Monitoring (spec, "Monitoring"): per service, details from each node. A service answers
// for the local node; the default view asks every other live node over the peer `Read`
// call and lists them all. This build serves `handoff` (hint buffers), `cluster`,
// `system` and `execution` (the sessions a node hosts); the other services of the spec come with the issues that build them.

import { NotFoundError } from '../errors.js';
import type { HintBuffer } from '../storage/hints.js';
import type { ClusterCore } from '../cluster/core/core.js';
import type { SoftwareVersion } from '../version.js';

export const MONITORING_SERVICES = ['handoff', 'cluster', 'system', 'execution'] as const;
export type MonitoringService = (typeof MONITORING_SERVICES)[number];

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
  /** The sessions this node hosts and what their queries are doing (issue 7). */
  execution(): Record<string, unknown>;
}

export function checkService(service: string): MonitoringService {
  if (!(MONITORING_SERVICES as readonly string[]).includes(service)) {
    throw new NotFoundError(`no monitoring service '${service}' (available: ${MONITORING_SERVICES.join(', ')})`);
  }
  return service as MonitoringService;
}

/** This node's details for one service. Tenant filtering: none of these is per tenant. */
export function localDetails(service: MonitoringService, deps: MonitoringDeps): NodeDetails {
  switch (service) {
    case 'handoff': {
      const targets = deps.hints.snapshot();
      return { node: deps.localName, details: { targets, records: targets.reduce((sum, target) => sum + target.records, 0) } };
    }
    case 'execution':
      return { node: deps.localName, details: deps.execution() };
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
