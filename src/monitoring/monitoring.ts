// Monitoring (spec, "Monitoring"): per service, details from each node. A
// service answers for the local node; the default view asks every other live node over
// a MonitoringRead (monitoring-peer.ts) and lists them all. The ten services of the spec:
//   handoff    hint buffers of this node, per target
//   ssr        per ssr stream: payloads and partitions held here, index memory, index built or pending
//   audit      a bounded log of definition and membership changes (audit-log.ts)
//   streams    per stream: payloads accepted and refused here, bytes, rate, last write,
//              schema version, repository, policy (`uri` narrows to one stream)
//   actors     the node's tasks (query runners, transfers, hint replay, live forwarding,
//              SSE clients) with their queues; off unless config monitoring.actorsEnabled
//   tsr        per tsr stream: records, bytes, partitions, oldest and newest timestamp here
//   execution  sessions hosted here and their queries' states (`uri` narrows to one session)
//   transport  per peer: channels, messages and bytes each way, errors, refusals by reason
//   system     build, runtime and process figures (memory, event loop, GC, CPU, open files)
//   cluster    the membership as this node sees it
// Information is filtered by tenant (the tenant `system` sees every tenant's); what belongs
// to no tenant (the node's process, peers, membership) is shown to every tenant, except
// the tasks and audit entries of no tenant, which only `system` sees.

import { BadRequestError, NotFoundError } from '../lib/errors.js';
import type { HintBuffer } from '../storage/hints.js';
import type { ClusterCore } from '../cluster-core/core.js';
import { DEFAULT_POLICY } from '../streams/policy.js';
import type { SoftwareVersion } from '../lib/version.js';
import type { Definitions } from '../storage/definition-store.js';
import type { RepositoryName } from '../storage/repository.js';
import type { PeerTraffic } from '../peer/peer-counters.js';
import type { AuditLog } from './audit-log.js';
import type { RepositoryStats } from './repository-stats.js';
import type { StreamStats } from './stream-stats.js';
import type { SystemStats } from './system-stats.js';

/** One open SSE client as monitoring shows it. */
export interface SseClientView {
  path: string;
  openedAt: string;
  messages: number;
  /** Bytes written but not yet taken by the client: its queue. */
  bufferedBytes: number;
}

export const MONITORING_SERVICES = ['handoff', 'ssr', 'audit', 'streams', 'actors', 'tsr', 'execution', 'transport', 'system', 'cluster'] as const;
export type MonitoringService = (typeof MONITORING_SERVICES)[number];

/** Services whose details the `uri` query parameter narrows (spec: `execution` and `streams`). */
const URI_FILTERED: readonly string[] = ['execution', 'streams'];
const URI_LENGTH_MAX = 1_024;

/** Who asks and what for: the tenant of the path, and an optional `uri`. */
export interface MonitoringFilter {
  tenant: string;
  uri?: string;
}

export interface HostedSession {
  session: string;
  /** lateRows: payloads that came after a window of theirs had closed (docs/query-language.md, "Live windows"). */
  queries: Array<{ id: string; state: string; lateRows: number }>;
}

export interface NodeDetails {
  node: string;
  details: Record<string, unknown>;
}

/** The node's tasks, as the `actors` service lists them. */
export interface ActorSources {
  runners(): Array<{ session: string; query: string; state: string; queuedRows: number }>;
  liveForwarding(): Array<{ node: string; queuedPayloads: number; sending: boolean }>;
  sseClients(): SseClientView[];
}

export interface MonitoringDeps {
  localName: string;
  hints: HintBuffer;
  core: ClusterCore;
  version: SoftwareVersion;
  definitions: Definitions;
  system: SystemStats;
  streamStats: StreamStats;
  repositoryStats: Record<RepositoryName, RepositoryStats>;
  /** The ssr index's state of a stream on this node. */
  ssrIndex(stream: string): { built: number[]; building: number[]; indexBytes: number };
  audit: AuditLog;
  transport(): PeerTraffic[];
  actorsEnabled: boolean;
  actors: ActorSources;
  /** Partitions waiting to be handed off before they are dropped, and damage being refilled. */
  handOff(): { pendingDrops: number; pendingSyncs: number; damaged: { reason: string; sinceMs: number } | undefined };
  /** The sessions this node hosts and what their queries are doing. */
  execution(): { sessions: HostedSession[]; liveForwardDroppedPayloads: number };
}

export function checkService(service: string): MonitoringService {
  if (!(MONITORING_SERVICES as readonly string[]).includes(service)) {
    throw new NotFoundError(`no monitoring service '${service}' (available: ${MONITORING_SERVICES.join(', ')})`);
  }
  return service as MonitoringService;
}

/**
 * The filter of a request (or of a peer's MonitoringRead, which carries the same fields): a `uri`
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
  return sessions.filter((each) => visibleUri(each.session, '/execution/', filter) && (filter.uri === undefined || each.session === filter.uri));
}

/** Whether a URI `<root><tenant>/…` belongs to the filter's tenant (any for `system`). */
function visibleUri(uri: string, root: string, filter: MonitoringFilter): boolean {
  return filter.tenant === 'system' || uri.startsWith(`${root}${filter.tenant}/`);
}

/** This node's details for one service. */
export async function localDetails(service: MonitoringService, deps: MonitoringDeps, filter: MonitoringFilter): Promise<NodeDetails> {
  return { node: deps.localName, details: await detailsOf(service, deps, filter) };
}

async function detailsOf(service: MonitoringService, deps: MonitoringDeps, filter: MonitoringFilter): Promise<Record<string, unknown>> {
  switch (service) {
    case 'handoff': {
      const targets = deps.hints.snapshot();
      return { targets, records: targets.reduce((sum, target) => sum + target.records, 0), ...deps.handOff() };
    }
    case 'execution': {
      const execution = deps.execution();
      return { ...execution, sessions: filterSessions(execution.sessions, filter) };
    }
    case 'cluster':
      return clusterDetails(deps);
    case 'system':
      return {
        build: deps.version,
        runtime: { node: process.version, v8: process.versions.v8, platform: process.platform, arch: process.arch, pid: process.pid },
        metrics: deps.system.read(),
      };
    case 'streams':
      return { streams: streamsOf(deps.definitions, filter).map((stream) => streamDetails(stream, deps)) };
    case 'ssr':
      return { streams: await Promise.all(storedStreams(deps.definitions, filter, 'ssr').map((stream) => ssrDetails(stream, deps))) };
    case 'tsr':
      return { streams: await Promise.all(storedStreams(deps.definitions, filter, 'tsr').map((stream) => tsrDetails(stream, deps))) };
    case 'audit': {
      const entries = deps.audit.visibleTo(filter.tenant);
      return { entriesMax: deps.audit.entriesMax, droppedEntries: deps.audit.dropped, entries };
    }
    case 'transport':
      return { peers: deps.transport() };
    case 'actors':
      return actorsDetails(deps, filter);
  }
}

function clusterDetails(deps: MonitoringDeps): Record<string, unknown> {
  const membership = deps.core.membership();
  return {
    epoch: membership.epoch,
    change: membership.change === undefined ? null : { id: membership.change.id, kind: membership.change.kind, node: membership.change.node },
    queue: (membership.queue ?? []).map((entry) => ({ id: entry.id, kind: entry.command.type === 'add' ? 'join' : 'leave', node: entry.command.type === 'add' ? entry.command.member.name : entry.command.name })),
    members: membership.members.map((member) => ({ name: member.name, state: member.state, available: deps.core.available(member.name) })),
    incomingTransfers: deps.core.incomingTransfers(),
  };
}

/** A stream as the monitoring services list it. */
interface StreamEntry {
  key: string;
  uri: string;
  schemaVersion: unknown;
  definitionVersion: string;
  repository: string | null;
  policy: unknown;
}

/** The streams of the filter's tenant (every tenant's for `system`), or the one `uri` names. */
function streamsOf(definitions: Definitions, filter: MonitoringFilter): StreamEntry[] {
  const prefix = filter.tenant === 'system' ? 'stream/' : `stream/${filter.tenant}/`;
  const entries: StreamEntry[] = [];
  for (const definition of definitions.list<{ schema?: { version?: unknown } }>(prefix)) {
    const key = definition.key.slice('stream/'.length);
    const uri = `/streams/${key}`;
    if (filter.uri !== undefined && filter.uri !== uri) continue;
    entries.push({
      key,
      uri,
      schemaVersion: definition.value.schema?.version ?? null,
      definitionVersion: definition.version,
      repository: definitions.get<{ name: string }>(`repository/${key}`)?.value.name ?? null,
      policy: definitions.get(`policy/${key}`)?.value ?? null,
    });
  }
  return entries;
}

function storedStreams(definitions: Definitions, filter: MonitoringFilter, repository: RepositoryName): StreamEntry[] {
  return streamsOf(definitions, filter).filter((stream) => stream.repository === repository);
}

function streamDetails(stream: StreamEntry, deps: MonitoringDeps): Record<string, unknown> {
  const counters = deps.streamStats.get(stream.key);
  return {
    stream: stream.uri,
    accepted: counters.accepted,
    refused: counters.refused,
    bytes: counters.bytes,
    ratePerSecond: counters.ratePerSecond,
    lastWrite: counters.lastWriteMs === undefined ? null : new Date(counters.lastWriteMs).toISOString(),
    schemaVersion: stream.schemaVersion,
    definitionVersion: stream.definitionVersion,
    repository: stream.repository,
    // A policy never set is the default one (docs/platform-decisions.md, "Unset parts").
    policy: stream.policy ?? DEFAULT_POLICY,
  };
}

async function ssrDetails(stream: StreamEntry, deps: MonitoringDeps): Promise<Record<string, unknown>> {
  const stored = await deps.repositoryStats.ssr.of(stream.key);
  const index = deps.ssrIndex(stream.key);
  const indexed = new Set([...index.built, ...index.building]);
  return {
    stream: stream.uri,
    payloads: stored.records,
    payloadBytes: stored.payloadBytes,
    partitions: stored.partitions,
    index: {
      memoryBytes: index.indexBytes,
      built: index.built,
      building: index.building,
      // Partitions with data whose index is built on the next search that touches them.
      pending: stored.partitions.filter((partition) => !indexed.has(partition)),
    },
  };
}

async function tsrDetails(stream: StreamEntry, deps: MonitoringDeps): Promise<Record<string, unknown>> {
  const stored = await deps.repositoryStats.tsr.of(stream.key);
  return { stream: stream.uri, records: stored.records, bytes: stored.payloadBytes, partitions: stored.partitions, oldest: stored.oldest, newest: stored.newest };
}

/** The spec: the actor system is disabled by default and enabled through configuration. */
function actorsDetails(deps: MonitoringDeps, filter: MonitoringFilter): Record<string, unknown> {
  if (!deps.actorsEnabled) return { enabled: false, hint: 'set monitoring.actorsEnabled (TRIBUTARY_MONITORING_ACTORS_ENABLED) to list this node\'s tasks' };
  const system = filter.tenant === 'system';
  const tasks: Array<Record<string, unknown>> = [];
  for (const runner of deps.actors.runners()) {
    if (visibleUri(runner.session, '/execution/', filter)) tasks.push({ type: 'query-runner', ...runner, queueDepth: runner.queuedRows });
  }
  for (const client of deps.actors.sseClients()) {
    if (visibleUri(client.path, '/output/', filter) && (system || client.path !== '/output/cluster')) {
      tasks.push({ type: 'sse-client', ...client, queueDepth: client.bufferedBytes });
    }
  }
  if (system) {
    for (const transfer of deps.core.membership().change?.transfers ?? []) {
      if (transfer.complete || (transfer.from !== deps.localName && transfer.to !== deps.localName)) continue;
      const { id, repo, from, to, percentComplete, records, bytes } = transfer;
      tasks.push({ type: 'transfer', id, repo, from, to, percentComplete, records, bytes, queueDepth: null });
    }
    for (const target of deps.hints.snapshot()) tasks.push({ type: 'hint-replayer', ...target, queueDepth: target.records });
    for (const queue of deps.actors.liveForwarding()) tasks.push({ type: 'live-forwarder', ...queue, queueDepth: queue.queuedPayloads });
  }
  return { enabled: true, tasks };
}
