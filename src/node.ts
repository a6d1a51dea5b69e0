// The composition root: the only place that builds the parts of a node and wires them
// together (DESIGN.md, "Layout"). Everything else receives what it needs.

import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { VendorService } from './admin/vendors.js';
import { ClusterShell } from './cluster/cluster-shell.js';
import { ClusterCore } from './cluster/core/core.js';
import { coordinatorOf, ownersOf as currentOwners, writeOwners } from './cluster/core/placement.js';
import type { CoreConfig, Member, Membership, PersistedCoreState, Slot } from './protocol/cluster-types.js';
import { ClusterDefinitionPeers, fromWireRecord } from './cluster/definition-peers.js';
import { ClusterEventBus } from './cluster/events.js';
import { loadOrCreateIdentity, type NodeIdentity } from './peer/identity.js';
import { MembershipService } from './cluster/membership-service.js';
import { NodeTable, type NodeDocument } from './cluster/node-table.js';
import { DEFAULT_POLICY, type DistributionPolicy } from './streams/policy.js';
import { PartitionRouter } from './cluster/partition-router.js';
import { ReplicatedDefinitions } from './cluster/replicated-definitions.js';
import { TenantService } from './cluster/tenants.js';
import { isLoopbackHost, type Config } from './config.js';
import type Router from '@koa/router';
import { createApp } from './http/app.js';
import { adminRoutes } from './http/routes/admin.js';
import { clusterRoutes } from './http/routes/cluster.js';
import { internalRoutes } from './http/routes/internal.js';
import { streamRoutes } from './http/routes/streams.js';
import type { Logger } from './log.js';
import type { PeerTransport } from './peer/transport.js';
import { nodeStatus, startPeerServer, type AdmitTrust } from './cluster/peer-server.js';
import { parseJoinToken } from './cluster/join-token.js';
import { isolatePool } from './scripting/sandbox.js';
import { authenticationMiddleware } from './http/authentication.js';
import type { Database } from './storage/database.js';
import { markCleanStop, openChecked } from './storage/integrity.js';
import { guardedChunks, startDataPlane } from './cluster/data-plane.js';
import { notServingBecause } from './cluster/serving.js';
import { servingGate } from './http/serving-gate.js';
import { realTimers } from './timers.js';
import { StoredPartitions } from './repair/stored-partitions.js';
import type { Damage, RepairRunStatus, RepairStream } from './repair/repair-service.js';
import type { TransferAction } from './cluster/membership-service.js';
import { DefinitionStore } from './storage/definitions.js';
import { GroupCommitter } from './storage/group-commit.js';
import { HintBuffer } from './storage/hints.js';
import { LocalReplica } from './storage/local-replica.js';
import type { Repository, RepositoryName, StoredRecord } from './storage/repository.js';
import { SearchableRepository } from './storage/ssr.js';
import { TransferChunks } from './cluster/transfer-chunks.js';
import { TimeSeriesRepository } from './storage/tsr.js';
import { WriteIdGenerator } from './storage/write-ids.js';
import { IngestService } from './streams/ingest.js';
import { StreamDefinitions } from './streams/stream-definitions.js';
import { StreamRuntime } from './streams/stream-runtime.js';
import { softwareVersion, type SoftwareVersion } from './version.js';
import { loadTls, type TlsMaterial } from './tls.js';
import { searchLocally, type LocalSearchRequest, type LocalSearchResult } from './search/local-search.js';
import { SearchService } from './search/search-service.js';
import { SsrIndex } from './search/ssr-index.js';
import { searchRoutes } from './http/routes/search.js';
import type { RepositoryMapping } from './streams/repository-mapping.js';
import { checkFilter, checkService, localDetails, type MonitoringDeps, type MonitoringFilter, type MonitoringService, type NodeDetails } from './monitoring/monitoring.js';
import { monitoringRoutes } from './http/routes/monitoring.js';
import { AuditLog } from './monitoring/audit-log.js';
import { RepositoryStats } from './monitoring/repository-stats.js';
import { StreamStats } from './monitoring/stream-stats.js';
import { SystemStats } from './monitoring/system-stats.js';
import { SseTracker } from './http/sse.js';
import { BadRequestError, NotFoundError, StartupError, TributaryError } from './errors.js';
import { parseJson, stringifyJson } from './json.js';
import type { WriteRecords } from './peer/messages.js';
import { AccountService } from './api-v1/accounts.js';
import { AdminGate, ApiSwitch } from './api-v1/access.js';
import { BrainService } from './api-v1/brains.js';
import { DocsAssets } from './api-v1/docs.js';
import { PLATFORM_DOCS_PATH, PLATFORM_OPENAPI_PATH, platformOpenApiDocument } from './http/openapi/document.js';
import { nodePageRoutes } from './http/routes/node-pages.js';
import { ConsoleAssets, consoleRoutes } from './http/routes/console.js';
import { ringView } from './console/ring-view.js';
import { LicencePool } from './api-v1/licence.js';
import { problemRenderer } from './api-v1/problems.js';
import { brainApiRoutes } from './api-v1/routes.js';
import { loadBrainTemplates } from './api-v1/templates.js';
import { ContributorService } from './contributors/contributor-service.js';
import { PublishedIndex } from './contributors/published-index.js';
import { DomainService } from './domains/domain-service.js';
import { contributorRoutes } from './http/routes/contributors.js';
import { domainRoutes } from './http/routes/domains.js';
import { executionRoutes } from './http/routes/execution.js';
import { daemonRoutes } from './http/routes/daemons.js';
import { DaemonService } from './execution/daemon-service.js';
import { createPipeline } from './execution/pipeline/index.js';
import { ExecutionService } from './execution/execution-service.js';
import { readHistorical, scanPage, type ScanRequest } from './execution/historical-reader.js';
import { LiveFeed, LiveForwarder } from './execution/live-feed.js';
import type { PollReply } from './execution/output-channel.js';
import { OutputRegistry, type OutputPollRequest } from './execution/output-registry.js';
import { SessionDirectory } from './execution/session-directory.js';
import { SessionHost, type RunStatus } from './execution/session-host.js';
import { sessionKey } from './execution/session-model.js';
import { sessionHostOf } from './execution/session-placement.js';
import { parseStreamUri } from './streams/stream-id.js';
import { Metrics } from './metrics/metrics.js';
import { opsRoutes } from './http/routes/ops.js';
import { OpsService } from './ops/ops-service.js';
import { StoreStatsCache, type StoreStats } from './ops/store-stats.js';
import { DEFAULT_WATCH_OPTIONS, TransferWatch } from './ops/transfer-watch.js';
import { countKeysByPartition } from './storage/scans.js';

export interface RunningNode {
  httpUrl: string;
  local: NodeDocument;
  close(): Promise<void>;
}

/** How long open HTTP connections and peer calls get to finish when the node stops. */
const SHUTDOWN_GRACE_MS = 1_500;
const CORE_STATE_KEY = 'cluster-core';
const HINT_REPLAY_INTERVAL_MS = 1_000;
/** Streams whose ingest counters a node keeps (monitoring). */
const STATS_STREAMS_MAX = 10_000;
/** How long a scan of a stream's stored records answers monitoring requests. */
const STATS_CACHE_MS = 5_000;

/** A count of what a node stores is kept this long for status views (store-stats.ts). */
const STORE_STATS_TTL_MS = 5_000;
/** The damage this node found in its own data, until it is refilled (src/repair). */
const DAMAGE_KEY = 'storage-damage';
/** Background repair sweeps pause this long between partitions. */
const REPAIR_PACING_MS = 100;

export async function startNode(config: Config, log: Logger): Promise<RunningNode> {
  const startedAtMs = Date.now();
  const version = softwareVersion();
  const metrics = new Metrics({ name: config.name, version: version.number, revision: version.revision });
  const tls = loadTls(config.tls);
  const identity = loadOrCreateIdentity(config.dataDir);
  const { database, damage: damageFound } = await openChecked(config.dataDir, log, (seconds) => metrics.syncedBatch(seconds));
  const store = await DefinitionStore.open(database);
  const hints = await HintBuffer.open(database, config.limits.hintBufferBytesMax);
  const committer = new GroupCommitter(database, undefined, (seconds) => metrics.groupCommit(seconds));
  const events = new ClusterEventBus();
  const nodes = new NodeTable(config.name);

  const persisted = await loadCoreState(database);
  const core = new ClusterCore(coreConfig(config), persisted, { self: selfMember(config, identity), lone: !config.join });
  let observeMembership = (_membership: Membership) => {};
  const applyMembership = (membership: Membership) => {
    nodes.replaceAll(membership.members.map((member) => toDocument(member, version, member.state !== 'Left' && core.available(member.name))));
    observeMembership(membership);
  };
  applyMembership(core.membership());

  const peer = await startPeerServer(config.host, config.peerPort, nodes, {
    identity,
    log,
    replayWindowMs: config.cluster.peerReplayWindowMs,
    observer: metrics.peer,
    admit: admitTrust(config, () => core.membership().epoch === 0, log),
    memberKey: (name) => core.membership().members.find((member) => member.name === name && member.state !== 'Left')?.publicKey,
    callsInFlightMax: config.limits.peerCallsInFlightMax,
    ...(tls === undefined ? {} : { tls }),
  });
  const transport = peer.transport!;
  const deadline = config.cluster.peerDeadlineMs;
  const available = (name: string) => core.available(name);

  const peers = new ClusterDefinitionPeers({ localName: config.name, membership: () => core.membership(), available, transport, hints, committer, peerDeadlineMs: deadline });
  const definitions = new ReplicatedDefinitions(store, peers);
  definitions.limitBytes(config.limits);
  const tenants = new TenantService(definitions, events);
  const repositories: Record<RepositoryName, Repository> = { ssr: new SearchableRepository(database), tsr: new TimeSeriesRepository(database) };
  const repositoryStats = { ssr: new RepositoryStats(repositories.ssr, STATS_CACHE_MS), tsr: new RepositoryStats(repositories.tsr, STATS_CACHE_MS) };
  const sandboxLimits = { timeoutMs: config.limits.tagTimeoutMs, memoryMb: config.limits.tagMemoryMb };
  isolatePool.configure({ isolatesMax: config.limits.isolatesMax, memoryBytesMax: config.limits.isolatesMemoryMb * 1024 * 1024 });
  const localHoldsData = async (stream: string) => (await repositories.ssr.hasData(stream)) || (await repositories.tsr.hasData(stream));
  const holdsData = (stream: string) => clusterHoldsData(stream, { localHoldsData, core, transport, deadlineMs: deadline });
  const streamDefinitions = new StreamDefinitions(definitions, tenants, holdsData, sandboxLimits);

  const ssrIndex = new SsrIndex(repositories.ssr, (streamKey) =>
    definitions.get<RepositoryMapping>(`repository/${streamKey}`)?.value.config.defaultStringAnalyzer === 'keyword' ? 'keyword' : 'standard',
  );
  const replicasOf = (streamKey: string) => definitions.get<DistributionPolicy>(`policy/${streamKey}`)?.value.replicas ?? DEFAULT_POLICY.replicas;
  const replica = new LocalReplica(repositories, committer, (repository, records) => {
    if (repository === 'ssr') ssrIndex.onStored(records);
    for (const stream of new Set(records.map((record) => record.stream))) repositoryStats[repository].invalidate(stream);
    partitions.staleRecords(repository, records);
  });
  const partitions = new StoredPartitions(repositories, replica);
  const chunks = new TransferChunks(database, {
    streams: () => storedStreams(definitions),
    definitionRecords: () => store.records(),
    applyDefinitions: (records) => definitions.apply(records),
    partitionChanged: (repo, stream, partition) => {
      if (repo === 'ssr') ssrIndex.invalidate(stream, partition);
      repositoryStats[repo].invalidate(stream);
      partitions.stale(repo, stream, partition);
    },
  }, config.cluster.transferChunkBytes);
  const shell = new ClusterShell({
    core, transport, events, log,
    chunks: guardedChunks(chunks, () => plane),
    saveCoreState: (state) => database.batch([{ type: 'put', sublevel: database.local, key: CORE_STATE_KEY, value: JSON.stringify(state) }], { sync: true }),
    onMembership: applyMembership,
    onDrop: (repo, slots) => plane.handOff.schedule(repo, slots),
    timers: realTimers,
    onFatal: () => process.exit(70),
    heartbeatIntervalMs: config.cluster.heartbeatIntervalMs,
    peerDeadlineMs: deadline,
    ackWaitMs: Math.max(500, Math.floor(config.cluster.transferStallMs / 2)),
  });
  const membershipService = new MembershipService({ core, shell, transport, peerDeadlineMs: deadline, log });
  observeMembership = (membership) => membershipService.observe(membership);

  // Issue 12: replica writes, hints, hand-offs and anti-entropy repair, with their peer calls.
  const plane = startDataPlane({
    localName: config.name, core, endpoint: transport, log, timers: realTimers, wallClock: Date.now,
    shell: {
      adopt: (from, membership) => shell.adopt(from, membership),
      suspect: (node) => shell.submit({ type: 'unreachable', node }),
      finalSynced: (changeId) => shell.submit({ type: 'final-sync-done', changeId }),
    },
    replica, partitions, hints, committer,
    dropPartition: (repo, stream, partition) => chunks.dropPartition(repo, stream, partition),
    definitions: { records: () => store.records(), apply: (records) => definitions.apply(records) },
    persistDamage: (damage) => saveDamage(database, damage),
    streams: () => repairStreams(definitions),
    replicasOf,
    limits: {
      writeDeadlineMs: config.cluster.writeDeadlineMs,
      peerDeadlineMs: deadline,
      hintReplayIntervalMs: HINT_REPLAY_INTERVAL_MS,
      repairIntervalMs: config.cluster.repairIntervalMs,
      repairPacingMs: REPAIR_PACING_MS,
    },
  });
  const { router, repair, clusterRepair } = plane;
  const runtime = new StreamRuntime(definitions, streamDefinitions, sandboxLimits);
  const ingest = new IngestService(runtime, router, new WriteIdGenerator(config.name), { batchPayloadsMax: config.limits.ingestBatchPayloadsMax });

  // Contributors and domains (issue 5): definitions like any other; the published-to index
  // learns from every batch this node accepts, and domains limit searches by contributor.
  const published = new PublishedIndex(definitions, log);
  ingest.onPayloads((stream, payloads) => published.record(stream, payloads));
  const contributors = new ContributorService(definitions, tenants, published);
  const domains = new DomainService(definitions, tenants, contributors, published);

  servePeers(transport, { shell, definitions, nodes });
  const storeStats = new StoreStatsCache({
    databaseDir: join(config.dataDir, 'db'),
    streams: () => streamPlacements(definitions),
    countByPartition: (repo, stream) => countKeysByPartition(repo === 'ssr' ? database.ssr : database.tsr, stream),
  }, STORE_STATS_TTL_MS);
  // A node refilling damaged data answers no search from it: another owner does.
  const searchLocal = async (request: LocalSearchRequest) => {
    repair.checkServing('this search');
    const started = performance.now();
    const result = await searchLocally(ssrIndex, request);
    metrics.searchLocal((performance.now() - started) / 1000);
    return result;
  };
  // Monitoring (issue 13): every service of the spec, from counters the parts keep.
  const sseTracker = new SseTracker();
  const system = new SystemStats(startedAtMs);
  system.start();
  const streamStats = new StreamStats(STATS_STREAMS_MAX);
  ingest.onOutcome((stream, outcome) => {
    metrics.ingest(stream, outcome);
    streamStats.record(stream, outcome);
  });
  const audit = new AuditLog(config.monitoring.auditEntriesMax, config.name);
  definitions.onChange((key, definition, change) => change !== undefined && audit.definitionChanged(key, change, definition === undefined));
  const monitoring: MonitoringDeps = {
    localName: config.name, hints, core, version, definitions, system, streamStats, audit,
    repositoryStats,
    ssrIndex: (stream) => ssrIndex.status(stream),
    transport: () => transport.counters.snapshot(),
    actorsEnabled: config.monitoring.actorsEnabled,
    actors: { runners: () => sessionHost.runners(), liveForwarding: () => forwarder.queueDepths(), sseClients: () => sseTracker.clients() },
    execution: () => ({ sessions: sessionHost.summary(), liveForwardDroppedPayloads: forwarder.dropped }),
    handOff: () => ({ pendingDrops: plane.handOff.pendingDrops(), damaged: repair.damaged() }),
  };
  // Execution (issue 7): sessions run on their host node; payloads reach live queries from
  // the node that accepted them; outputs are served from every node.
  const hostOf = (sessionId: string) => sessionHostOf(core.membership(), available, sessionId);
  const feed = new LiveFeed();
  const directory = new SessionDirectory(definitions, hostOf, config.name);
  const outputs = new OutputRegistry({
    localName: config.name,
    hostOfOutput: (outputId) => directory.hostOfOutput(outputId),
    pollRemote: async (node, request) => parseJson((await transport.call(node, 'Read', { json: JSON.stringify({ outputPoll: request }) }, { deadlineMs: deadline })).json) as PollReply,
    limits: {
      logMessagesMax: config.execution.outputLogMessagesMax,
      retainedRowsMax: config.execution.outputRetainedRowsMax,
      retainedBytesMax: config.execution.outputRetainedBytesMax,
    },
    pollWaitMs: Math.min(2_000, Math.floor(deadline / 2)),
    log,
    onRows: (count) => metrics.queryOutputRows(count),
  });
  const forwarder = new LiveForwarder({
    hostsReading: (stream) => directory.remoteHostsReading(stream),
    send: async (node, stream, payloads) => void (await transport.call(node, 'LivePayloads', { stream, payloadsJson: stringifyJson(payloads) }, { deadlineMs: deadline })),
    queuePayloadsMax: config.execution.liveForwardQueuePayloadsMax,
    log,
  });
  ingest.onPayloads((stream, payloads) => {
    feed.deliver(stream.key, payloads);
    forwarder.forward(stream.key, payloads);
  });
  transport.handle('LivePayloads', async (_sender, live) => {
    const payloads: unknown = parseJson(live.payloadsJson);
    if (!Array.isArray(payloads)) throw new BadRequestError('LivePayloads: payloads_json must be a JSON array');
    feed.deliver(live.stream, payloads as Record<string, unknown>[]);
    return {};
  });
  const placementOf = (stream: string) => {
    const policy = definitions.get<DistributionPolicy>(`policy/${stream}`)?.value ?? DEFAULT_POLICY;
    return { repo: definitions.get<RepositoryMapping>(`repository/${stream}`)?.value.name, ringSize: policy.ring_size, replicas: policy.replicas };
  };
  const scanLocal = (request: ScanRequest) => {
    repair.checkServing(`partition ${request.partition} of ${request.stream}`);
    return scanPage((stream, options) => repositories[request.repo].scan(stream, options), request, config.execution.historicalPageRecords);
  };
  const historicalDeps = {
    localName: config.name,
    ownersOf: (partition: number, replicas: number) => currentOwners(core.membership(), { partition, replicas }),
    available,
    scanLocal,
    scanRemote: async (node: string, request: ScanRequest) => JSON.parse((await transport.call(node, 'Read', { json: JSON.stringify({ scan: request }) }, { deadlineMs: deadline })).json),
  };
  const sessionHost = new SessionHost({
    localName: config.name,
    definitions,
    hostOf,
    feed,
    createPipeline,
    outputs,
    domainScope: (tenant, uri) => domains.scope(tenant, uri),
    placementOf,
    writeStream: async (uri, rows) => {
      const failures = await ingest.ingest(parseStreamUri(uri), rows);
      if (failures.size > 0) throw new BadRequestError(`${uri} refused ${failures.size} row(s): ${[...failures.values()][0]}`);
    },
    readHistorical: (source) => readHistorical(historicalDeps, source, config.execution.historicalPageRecords),
    sandboxLimits: { timeoutMs: config.execution.functionTimeoutMs, memoryMb: config.limits.tagMemoryMb },
    limits: { groupsMax: config.execution.queryGroupsMax, rowsHeldMax: config.execution.queryRowsHeldMax, pendingWriteRowsMax: config.execution.liveForwardQueuePayloadsMax },
    functionBudgetMs: config.execution.functionBudgetMs,
    tickIntervalMs: 1_000,
    log,
  });
  definitions.onChange((key) => key.startsWith('session/') && void sessionHost.reconcile(key));
  let hostingSignature = '';
  const previousObserver = observeMembership;
  observeMembership = (membership) => {
    previousObserver(membership);
    audit.membershipChanged(membership, coordinatorOf(membership, available));
    const signature = membership.members.filter((member) => member.state === 'Joined' && available(member.name)).map((member) => member.name).sort().join(',');
    if (signature === hostingSignature) return;
    hostingSignature = signature;
    void sessionHost.reconcile();
  };
  const localStatuses = (tenant: string, id: string): Record<string, RunStatus> => Object.fromEntries(sessionHost.statuses(sessionKey(tenant, id)) ?? []);
  const execution = new ExecutionService({
    definitions,
    tenants,
    statuses: async (tenant, id) => {
      const host = hostOf(id);
      if (host === undefined) return new Map();
      if (host === config.name) return new Map(Object.entries(localStatuses(tenant, id)));
      try {
        const reply = await transport.call(host, 'Read', { json: JSON.stringify({ executionStatuses: { tenant, id } }) }, { deadlineMs: deadline });
        return new Map(Object.entries(JSON.parse(reply.json) as Record<string, RunStatus>));
      } catch {
        return new Map();
      }
    },
    settle: (tenant, id) => (hostOf(id) === config.name ? sessionHost.reconcile(sessionKey(tenant, id)) : Promise.resolve()),
    advertisedHttp: `${config.advertiseAddress ?? config.host}:${config.httpPort}`,
    limits: { sessionQueriesMax: config.execution.sessionQueriesMax },
    sandboxLimits: { timeoutMs: config.execution.functionTimeoutMs, memoryMb: config.limits.tagMemoryMb },
  });

  transport.handle('Read', async (_sender, read) => {
    const request = parseJson(read.json) as {
      monitoring?: unknown;
      tenant?: unknown;
      uri?: unknown;
      search?: LocalSearchRequest;
      outputPoll?: OutputPollRequest;
      scan?: ScanRequest;
      executionStatuses?: { tenant: string; id: string };
      storeStats?: unknown;
      holdsData?: string;
    };
    if (typeof request.holdsData === 'string') return { json: JSON.stringify(await localHoldsData(request.holdsData)) };
    if (request.search !== undefined) return { json: stringifyJson(await searchLocal(request.search)) };
    if (request.storeStats !== undefined) return { json: JSON.stringify(await storeStats.get()) };
    if (request.outputPoll !== undefined) return { json: stringifyJson(await outputs.poll(request.outputPoll)) };
    if (request.scan !== undefined) return { json: JSON.stringify(await scanLocal(request.scan)) };
    if (request.executionStatuses !== undefined) return { json: JSON.stringify(localStatuses(request.executionStatuses.tenant, request.executionStatuses.id)) };
    if (typeof request.monitoring !== 'string') throw new BadRequestError('unknown read');
    const service = checkService(request.monitoring);
    return { json: JSON.stringify(await localDetails(service, monitoring, checkFilter(service, request.tenant, request.uri))) };
  });
  const reportSlots = () => shell.submit({ type: 'slots', slots: slotsInUse(definitions) });
  definitions.onChange((key) => (key.startsWith('repository/') || key.startsWith('policy/')) && reportSlots());
  reportSlots();
  shell.start();
  if (damageFound !== undefined) await saveDamage(database, damageFound);
  plane.start(damageFound ?? (await loadDamage(database)));
  void sessionHost.reconcile();
  if (persisted === undefined && !config.join) {
    for (const tenant of config.defaultTenants) await tenants.put(tenant);
  }

  // The brain management interface under /api/v1 (issue 6): accounts, settings, the licence
  // pool and brains all live in the definitions store. A cluster's first node writes the
  // empty licence pool once, when the cluster is born (licence.ts).
  const brainTemplates = loadBrainTemplates(config.brainApi.templatesFile);
  const licencePool = new LicencePool(definitions, config.licence);
  if (persisted === undefined && !config.join) await licencePool.initialise();
  if (licencePool.configDiffers()) {
    log.warn({ configured: config.licence, cluster: licencePool.licence }, "this node's licence config differs from the cluster's licence, which wins (PATCH /api/v1/admin/licence changes it)");
  }
  const accounts = new AccountService(definitions);
  const adminGate = new AdminGate(config.adminSecret);
  const brainApi = brainApiRoutes({
    accounts,
    apiSwitch: new ApiSwitch(definitions, config.brainApi.enabled),
    adminGate,
    brains: new BrainService({ store: definitions, templates: brainTemplates, pool: licencePool }),
    templates: brainTemplates,
    pool: licencePool,
    docs: new DocsAssets(),
  });

  // Operators' views (issue 14): metrics read from live state, health, readiness, _cat tables, transfer logs.
  metrics.readFrom({
    hints: () => hints.snapshot(),
    transfers: () => core.membership().change?.transfers ?? [],
    members: () => core.membership().members.map((member) => ({ name: member.name, state: member.state, available: member.state !== 'Left' && available(member.name) })),
  });
  const ops = new OpsService({
    localName: config.name, version, startedAtMs, log,
    membership: () => core.membership(),
    available,
    storageOpen: () => database.isOpen,
    localStats: () => storeStats.get(),
    remoteStats: async (node) => JSON.parse((await transport.call(node, 'Read', { json: JSON.stringify({ storeStats: true }) }, { deadlineMs: deadline })).json) as StoreStats,
    streams: () => streamPlacements(definitions),
    slots: () => slotsForOwnership(definitions),
    watch: new TransferWatch({ ...DEFAULT_WATCH_OPTIONS, stallMs: config.cluster.transferStallMs }),
  });
  const observeBeforeOps = observeMembership;
  observeMembership = (membership) => {
    observeBeforeOps(membership);
    ops.observe(membership);
  };
  ops.start(config.cluster.heartbeatIntervalMs);

  announceAccess(config, log);
  const app = createApp({
    log,
    bodyBytesMax: config.limits.bodyBytesMax,
    jsonDepthMax: config.limits.jsonDepthMax,
    authentication: authenticationMiddleware({ tokensRequired: config.authRequired, adminSecret: adminGate, accounts }),
    errorRenderers: [problemRenderer],
    gate: servingGate(() => notServingBecause(core, config.name)),
    access: { level: config.accessLogLevel, observe: (family, method, status, seconds) => metrics.httpRequest(family, method, status, seconds) },
    corsOrigins: config.corsOrigins,
    routers: [
      opsRoutes({
        health: () => ops.health(),
        readiness: () => ops.readiness(),
        metrics,
        catNodes: () => ops.catNodes(),
        catTransfers: () => ops.catTransfers(),
        catStreams: () => ops.catStreams(),
      }),
      brainApi,
      streamRoutes({ definitions: streamDefinitions, runtime, ingest }),
      clusterRoutes({
        nodes, tenants, events, membership: membershipService, repair: clusterRepair,
        sse: sseOptions(config, metrics.sseChannel('cluster'), sseTracker),
        localActions: () => repairActions(config.name, repair.list()),
        stalledBecause: (id) => ops.stalledBecause(id),
      }),
      adminRoutes(new VendorService(definitions, tenants)),
      searchRoutes(new SearchService(streamDefinitions, {
        localName: config.name,
        owners: (partition, replicas) => currentOwners(core.membership(), { partition, replicas }),
        available,
        runLocal: searchLocal,
        runRemote: async (node, request) =>
          parseJson((await transport.call(node, 'Read', { json: JSON.stringify({ search: request }) }, { deadlineMs: deadline })).json) as LocalSearchResult,
      }, domains), tenants),
      contributorRoutes(contributors),
      domainRoutes(domains),
      daemonRoutes(new DaemonService(definitions, tenants, execution, { sessionQueriesMax: config.execution.sessionQueriesMax })),
      executionRoutes({ execution, outputs, outputExists: (tenant, outputId) => directory.outputExists(tenant, outputId), sse: sseOptions(config, metrics.sseChannel('output'), sseTracker) }),
      monitoringRoutes({
        tenants,
        localName: config.name,
        local: (service, filter) => localDetails(service, monitoring, filter),
        remote: (service, filter, node) => remoteDetails(transport, core, service, filter, node, deadline),
      }),
      ...(config.internalReads ? [internalRoutes(repositories)] : []),
      nodePages(config, version, () => nodes.local().state),
      liveConsole(core, definitions),
    ],
  });
  const http = await listen(app.callback(), config.host, config.httpPort, config.limits, tls);
  const httpUrl = `${tls === undefined ? 'http' : 'https'}://${config.host}:${config.httpPort}`;
  log.info({ http: httpUrl, peerPort: peer.port, peerTls: tls === undefined ? 'off' : 'mutual', state: nodes.local().state }, 'node started');

  return {
    httpUrl,
    local: nodes.local(),
    async close() {
      ops.stop();
      shell.stop();
      plane.stop();
      system.stop();
      outputs.close();
      await sessionHost.close();
      await Promise.all([closeHttp(http), peer.close(SHUTDOWN_GRACE_MS)]);
      runtime.dispose();
      await database.close();
      markCleanStop(config.dataDir);
      log.info('node stopped');
    },
  };
}

/** GET /, the platform interface's OpenAPI document and its docs page (issue 14). */
function nodePages(config: Config, version: SoftwareVersion, state: () => string): Router {
  return nodePageRoutes({
    identity: () => ({ name: config.name, state: state(), version }),
    openapi: () => platformOpenApiDocument({ limits: { sessionQueriesMax: config.execution.sessionQueriesMax }, version: version.number }),
    docs: new DocsAssets({ docsPath: PLATFORM_DOCS_PATH, openapiPath: PLATFORM_OPENAPI_PATH, title: 'Tributary platform interface' }),
  });
}

/**
 * The live console (issue 14): its page and the ring. Stored payloads per stream are
 * GET /_cat/streams?format=json, which the page reads like any client.
 */
function liveConsole(core: ClusterCore, definitions: ReplicatedDefinitions): Router {
  return consoleRoutes({
    assets: new ConsoleAssets(),
    ring: () => ringView(core.membership(), policiesInUse(definitions)),
  });
}

/** The partitionings of the persisted streams; the default when there are none (the ring still exists). */
function policiesInUse(definitions: ReplicatedDefinitions): Array<Pick<DistributionPolicy, 'ring_size' | 'replicas'>> {
  const policies = streamPlacements(definitions).map((stream) => ({ ring_size: stream.ringSize, replicas: stream.replicas }));
  return policies.length > 0 ? policies : [DEFAULT_POLICY];
}

/** The peer calls this node answers. */
function servePeers(
  transport: PeerTransport,
  parts: {
    shell: ClusterShell;
    definitions: ReplicatedDefinitions;
    nodes: NodeTable;
  },
): void {
  const { shell, definitions, nodes } = parts;
  transport.handle('CoreMessage', async (sender, message) => {
    shell.submit({ type: 'receive', from: sender, message });
    return {};
  });
  transport.handle('Admit', async (sender, admit) => {
    shell.submit({ type: 'receive', from: sender, message: { type: 'membership', membership: admit.membership } });
    return nodeStatus(nodes.local());
  });
  transport.handle('AdminCommand', (_sender, command) => shell.admin(command));
  transport.handle('DefinitionWrite', async (_sender, write) => {
    const value = write.delete ? undefined : parseJson(write.valueJson);
    const record = await definitions.coordinate({ key: write.key, value, expectedVersion: write.expectedVersion, delete: write.delete });
    return { version: record === undefined ? undefined : String(record.version) };
  });
  transport.handle('DefinitionPush', async (_sender, push) => {
    await definitions.apply(push.records.map(fromWireRecord));
    return {};
  });
  transport.handleTransfer((sender, chunk) => shell.receiveChunk(sender, chunk));
}

/** Every persisted stream with its repository and placement, as repair walks them. */
function repairStreams(definitions: ReplicatedDefinitions): RepairStream[] {
  return definitions.list('repository/').flatMap((mapping) => {
    const key = mapping.key.slice('repository/'.length);
    const repo = (mapping.value as RepositoryMapping).name;
    if (repo !== 'ssr' && repo !== 'tsr') return [];
    const policy = definitions.get<DistributionPolicy>(`policy/${key}`)?.value ?? DEFAULT_POLICY;
    return [{ key, repo, replicas: policy.replicas, ringSize: policy.ring_size }];
  });
}

async function loadDamage(database: Database): Promise<Damage | undefined> {
  const text = await database.local.get(DAMAGE_KEY);
  return text === undefined ? undefined : (JSON.parse(text) as Damage);
}

function saveDamage(database: Database, damage: Damage | undefined): Promise<void> {
  const operation = damage === undefined ? { type: 'del' as const, sublevel: database.local, key: DAMAGE_KEY } : { type: 'put' as const, sublevel: database.local, key: DAMAGE_KEY, value: JSON.stringify(damage) };
  return database.batch([operation], { sync: true });
}

/** This node's repair runs as rows of GET /cluster/transfers (a repair moves data too). */
function repairActions(localName: string, runs: readonly RepairRunStatus[]): TransferAction[] {
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

/** Monitoring details from one named peer, or from every other member that is not Left. */
async function remoteDetails(
  transport: PeerTransport,
  core: ClusterCore,
  service: MonitoringService,
  filter: MonitoringFilter,
  node: string | undefined,
  deadlineMs: number,
): Promise<NodeDetails[]> {
  const members = core.membership().members.filter((member) => member.state !== 'Left' && member.name !== transport.name);
  if (node !== undefined && !members.some((member) => member.name === node)) throw new NotFoundError(`node '${node}' is not in the cluster`);
  const asked = node === undefined ? members.map((member) => member.name) : [node];
  return Promise.all(
    asked.map(async (name) => {
      try {
        const reply = await transport.call(name, 'Read', { json: JSON.stringify({ monitoring: service, ...filter }) }, { deadlineMs });
        return JSON.parse(reply.json) as NodeDetails;
      } catch (error) {
        return { node: name, details: { error: `unreachable: ${(error as Error).message}` } };
      }
    }),
  );
}

/**
 * Whether any member stores payloads of the stream (issue 13 item 3g). A member that does
 * not answer counts as holding some: a change that would hide stored data is refused
 * rather than risked.
 */
async function clusterHoldsData(
  stream: string,
  parts: { localHoldsData(stream: string): Promise<boolean>; core: ClusterCore; transport: PeerTransport; deadlineMs: number },
): Promise<boolean> {
  if (await parts.localHoldsData(stream)) return true;
  const others = parts.core.membership().members.filter((member) => member.state !== 'Left' && member.name !== parts.transport.name);
  const answers = await Promise.all(
    others.map(async (member) => {
      try {
        const reply = await parts.transport.call(member.name, 'Read', { json: JSON.stringify({ holdsData: stream }) }, { deadlineMs: parts.deadlineMs });
        return JSON.parse(reply.json) === true;
      } catch {
        return true;
      }
    }),
  );
  return answers.some((holds) => holds);
}

/** Whom a node with no cluster yet takes an Admit from: the join token's keys, or (bare --join) the first. */
function admitTrust(config: Config, accepting: () => boolean, log: Logger): AdmitTrust {
  const trustedKeys = config.joinToken === null ? undefined : new Set(parseJoinToken(config.joinToken));
  if (config.join && accepting()) {
    if (trustedKeys === undefined) {
      log.warn('started with bare --join: this node will trust the first well-formed Admit that names its key (trust on first use; development on loopback only, use --join-token otherwise)');
    } else {
      log.info({ trustedKeys: trustedKeys.size }, 'waiting to be admitted by a node the join token names');
    }
  }
  return { accepting, trustedKeys };
}

/** Says at start who may do what, so an open node is never open by surprise (issue 15, item 2). */
function announceAccess(config: Config, log: Logger): void {
  const membership = config.adminSecret === null ? 'open to anyone who reaches this node (no admin secret)' : 'need the admin secret';
  if (config.authRequired) {
    log.info({ auth: config.auth }, `platform API authentication is on: every route but /cluster/localNode, /health, /ready and the pages (/, /docs, /openapi.json, /console) needs a bearer token; membership changes ${membership}`);
  } else {
    const who = isLoopbackHost(config.host) ? 'any local process (loopback development)' : 'anyone who reaches this node (auth: off)';
    log.warn({ auth: config.auth, host: config.host }, `platform API authentication is OFF: ${who} may read and change everything; membership changes ${membership}`);
  }
}

function coreConfig(config: Config): CoreConfig {
  return {
    name: config.name,
    heartbeatIntervalMs: config.cluster.heartbeatIntervalMs,
    failureTimeoutMs: config.cluster.failureTimeoutMs,
    transferStallMs: config.cluster.transferStallMs,
    transferWindowChunks: config.cluster.transferWindowChunks,
  };
}

function selfMember(config: Config, identity: NodeIdentity): Member {
  return {
    name: config.name,
    publicKey: identity.publicKeyBase64,
    address: config.advertiseAddress ?? config.host,
    port: config.peerPort,
    httpPort: config.httpPort,
    zone: config.zone,
    state: config.join ? 'Pending' : 'Joined',
  };
}

function toDocument(member: Member, version: SoftwareVersion, available: boolean): NodeDocument {
  const { name, zone, publicKey, address, port, httpPort, state } = member;
  return { name, zone, publicKey, address, port, httpPort, version, state, available: available ? 'true' : 'false' };
}

async function loadCoreState(database: Database): Promise<PersistedCoreState | undefined> {
  const text = await database.local.get(CORE_STATE_KEY);
  return text === undefined ? undefined : (JSON.parse(text) as PersistedCoreState);
}

/** Every persisted stream's (partition, replicas) pairs: the slots the ring must place. */
function slotsInUse(definitions: ReplicatedDefinitions): Slot[] {
  const seen = new Set<string>();
  const slots: Slot[] = [];
  for (const mapping of definitions.list('repository/')) {
    const policy = definitions.get<DistributionPolicy>(`policy/${mapping.key.slice('repository/'.length)}`)?.value ?? DEFAULT_POLICY;
    for (let partition = 0; partition < policy.ring_size; partition += 1) {
      const key = `${partition}/${policy.replicas}`;
      if (seen.has(key)) continue;
      seen.add(key);
      slots.push({ partition, replicas: policy.replicas });
    }
  }
  return slots;
}

/** The slots in use, or while no stream is persisted those of the default policy. */
function slotsForOwnership(definitions: ReplicatedDefinitions): Slot[] {
  const slots = slotsInUse(definitions);
  if (slots.length > 0) return slots;
  return Array.from({ length: DEFAULT_POLICY.ring_size }, (_, partition) => ({ partition, replicas: DEFAULT_POLICY.replicas }));
}

/** Persisted streams with their repository and placement, for the _cat tables. */
function streamPlacements(definitions: ReplicatedDefinitions) {
  return definitions.list<RepositoryMapping>('repository/').map((mapping) => {
    const key = mapping.key.slice('repository/'.length);
    const policy = definitions.get<DistributionPolicy>(`policy/${key}`)?.value ?? DEFAULT_POLICY;
    return { key, repo: mapping.value.name, replicas: policy.replicas, ringSize: policy.ring_size };
  });
}

function storedStreams(definitions: ReplicatedDefinitions) {
  return definitions.list('stream/').map((stream) => {
    const key = stream.key.slice('stream/'.length);
    return { key, replicas: definitions.get<DistributionPolicy>(`policy/${key}`)?.value.replicas ?? DEFAULT_POLICY.replicas };
  });
}

function sseOptions(config: Config, clients: { opened(): void; closed(): void }, tracker: SseTracker) {
  return {
    tracker,
    clientsMax: config.limits.sseClientsMax,
    keepAliveMs: config.limits.sseKeepAliveMs,
    clientBufferBytesMax: config.limits.sseClientBufferBytesMax,
    clients,
  };
}

interface HttpLimits {
  connectionsMax: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/**
 * The HTTP server with its connection limits (issue 15, item 6): at most connectionsMax
 * open connections (more are closed as they arrive), a connection that sends no complete
 * request head within headersTimeoutMs is closed (Node 20 leaves a silent one open for
 * good), and a request must be received whole within requestTimeoutMs (408). Node checks
 * those two every connectionsCheckingInterval, 30 s unless told: once a second here.
 */
async function listen(handler: Parameters<typeof createServer>[1], host: string, port: number, limits: HttpLimits, tls: TlsMaterial | undefined): Promise<Server> {
  // With TLS the port speaks HTTPS only: a plaintext request fails the handshake.
  const server: Server =
    tls === undefined
      ? createServer({ connectionsCheckingInterval: 1_000 }, handler)
      : createHttpsServer({ connectionsCheckingInterval: 1_000, handshakeTimeout: limits.headersTimeoutMs, cert: tls.cert, key: tls.key, ca: tls.ca }, handler);
  server.maxConnections = limits.connectionsMax;
  // Keep idle connections for 30 s (Node's 5 s races clients that pause between requests:
  // they reuse a socket the server is closing).
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.on(tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy()));
  // Once a request arrives its timeouts are Node's (and SSE sets none); keep-alive sets its own.
  server.on('request', (request) => request.socket.setTimeout(0));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new StartupError(`cannot listen for HTTP on ${host}:${port}: ${error.message}`, { cause: error })));
    server.listen(port, host, () => resolve());
  });
  return server;
}

function closeHttp(server: Server): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
