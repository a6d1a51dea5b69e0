// The composition root: the only place that builds the parts of a node and wires them together
// (docs/architecture.md, "Layout"). Everything else receives what it needs. Each subsystem is
// assembled by its own function below, in the order `startNode` calls them; a part a later one
// needs is handed on in the record its function returns. What a subsystem decides (which reads
// a refilling node refuses, where a session's questions go, which peer calls it answers) is
// the subsystem's own; the cluster node (core, shell, data plane, their peer calls) is built by
// prepareClusterNode and its start (cluster/cluster-node.ts), which the shell simulation calls
// too. A node that must stop at once tells main.ts (hooks.onFatal), which exits.

import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import type Router from '@koa/router';
import { VendorService } from './admin/vendors.js';
import { AdminGate, ApiSwitch } from './api-v1/access.js';
import { AccountService } from './api-v1/accounts.js';
import { BrainService } from './api-v1/brains.js';
import { DocsAssets } from './api-v1/docs.js';
import { LicencePool } from './api-v1/licence.js';
import { problemRenderer } from './api-v1/problems.js';
import { brainApiRoutes } from './api-v1/routes.js';
import { loadBrainTemplates } from './api-v1/templates.js';
import { announceAccess } from './auth/announce-access.js';
import { prepareClusterNode } from './cluster/cluster-node.js';
import { RUN_MAX, type ClusterCore } from './cluster-core/core.js';
import { coordinatorOf, ownersOf as currentOwners } from './cluster-core/placement.js';
import type { CoreConfig, Member, PersistedCoreState } from './protocol/cluster-types.js';
import { joinIfTableLost, loadCoreState, saveCoreState, wasMember } from './cluster/core-state-store.js';
import type { DataPlane } from './cluster/data-plane.js';
import { ClusterDefinitionPeers, serveDefinitions } from './replicated-definitions/definition-peers.js';
import { ClusterEventBus } from './cluster/events.js';
import { loadOrCreateIdentity, type NodeIdentity } from './peer/identity.js';
import { admitTrust } from './cluster/admit-trust.js';
import { MembershipFeed } from './cluster/membership-feed.js';
import { MembershipService } from './cluster/membership-service.js';
import { NodeTable, type NodeDocument } from './cluster/node-table.js';
import { ReplicatedDefinitions } from './replicated-definitions/replicated-definitions.js';
import { notServingBecause } from './cluster/serving.js';
import { TenantService } from './replicated-definitions/tenants.js';
import type { Config } from './config/config.js';
import { ringView } from './ops/ring-view.js';
import { ContributorService } from './contributors/contributor-service.js';
import { PublishedIndex } from './contributors/published-index.js';
import { DomainService } from './domains/domain-service.js';
import { BadRequestError } from './lib/errors.js';
import { DaemonService } from './sessions/daemon-service.js';
import { ExecutionService } from './sessions/execution-service.js';
import { readHistorical } from './historical/historical-reader.js';
import { LiveFeed, LiveForwarder } from './sessions/live-feed.js';
import { OutputRegistry } from './sessions/output-registry.js';
import { remoteExecutionStatuses, remoteLivePayloads, remoteOutputPoll, serveExecutionPeers } from './sessions/execution-peer.js';
import { remoteBlocks, remoteLatest, remoteScan, serveHistoricalReads } from './historical/historical-peer.js';
import { localReads } from './historical/local-reads.js';
import { hostingFollower, sessionStatuses, settleOnHost } from './sessions/session-routing.js';
import { readBlockColumns, readBlockRows } from './historical/historical-blocks.js';
import { readLatestRows } from './historical/historical-latest.js';
import { LatestValues } from './historical/latest-values.js';
import { createPipeline } from './pipeline/index.js';
import { SessionDirectory } from './sessions/session-directory.js';
import { SessionHost } from './sessions/session-host.js';
import { sessionHostOf } from './sessions/session-placement.js';
import { createApp } from './http/app.js';
import { authenticationMiddleware } from './http/authentication.js';
import { closeHttp, listen } from './http/http-server.js';
import { PLATFORM_DOCS_PATH, PLATFORM_OPENAPI_PATH, platformOpenApiDocument } from './http/openapi/document.js';
import { adminRoutes } from './http/routes/admin.js';
import { clusterRoutes } from './http/routes/cluster.js';
import { ConsoleAssets, consoleRoutes } from './http/routes/console.js';
import { HISTORY_INTERVAL_MS, HistoryRing, type ClusterHistory, type NodeHistory } from './node-history/history.js';
import { clusterHistory, serveHistory } from './node-history/history-peer.js';
import { contributorRoutes } from './http/routes/contributors.js';
import { daemonRoutes } from './http/routes/daemons.js';
import { domainRoutes } from './http/routes/domains.js';
import { executionRoutes } from './http/routes/execution.js';
import { internalRoutes } from './http/routes/internal.js';
import { monitoringRoutes } from './http/routes/monitoring.js';
import { nodePageRoutes } from './http/routes/node-pages.js';
import { opsRoutes } from './http/routes/ops.js';
import { searchRoutes } from './http/routes/search.js';
import { isIngestRequest, streamRoutes } from './http/routes/streams.js';
import { servingGate } from './http/serving-gate.js';
import { SseTracker } from './http/sse.js';
import type { Logger } from './lib/log.js';
import { Metrics } from './metrics/metrics.js';
import { AuditLog } from './monitoring/audit-log.js';
import { localDetails, type MonitoringDeps } from './monitoring/monitoring.js';
import { remoteDetails, serveMonitoring } from './monitoring/monitoring-peer.js';
import { RepositoryStats } from './monitoring/repository-stats.js';
import { StreamStats } from './monitoring/stream-stats.js';
import { SystemStats } from './monitoring/system-stats.js';
import { OpsService } from './ops/ops-service.js';
import { StoreStatsCache } from './ops/store-stats.js';
import { remoteStoreStats, serveStoreStats } from './ops/store-stats-peer.js';
import { DEFAULT_WATCH_OPTIONS, TransferWatch } from './ops/transfer-watch.js';
import { nodeStatus, startPeerServer, type PeerServer } from './cluster/peer-server.js';
import type { PeerTransport } from './peer/transport.js';
import { repairActions } from './repair/cluster-repair.js';
import { loadDamage, saveDamage } from './repair/damage-store.js';
import { StoredPartitions } from './repair/stored-partitions.js';
import { isolatePool } from './scripting/sandbox.js';
import { remoteSearch, serveSearchReads, servingLocalSearch } from './search/search-peer.js';
import { SearchService } from './search/search-service.js';
import { SsrIndex } from './search/ssr-index.js';
import { DefinitionStore } from './storage/definition-store.js';
import { GroupCommitter } from './storage/group-commit.js';
import { HintBuffer } from './storage/hints.js';
import { FollowUpStore } from './cluster/follow-up-store.js';
import { diskRefusal, DiskWatch } from './storage/disk-watch.js';
import { markCleanStop, openChecked, type StorageDamage } from './storage/integrity.js';
import { LocalReplica } from './storage/local-replica.js';
import { type Repository, type RepositoryName, type StoredRecord } from './storage/repository.js';
import { SearchableRepository } from './storage/ssr.js';
import { TransferChunks } from './cluster/transfer-chunks.js';
import { TimeSeriesRepository } from './storage/tsr.js';
import { WriteIdGenerator } from './storage/write-ids.js';
import { clusterHoldsData, serveHoldsData } from './streams/stored-data-peer.js';
import { IngestService } from './streams/ingest.js';
import { IngestPool } from './streams/ingest-pool.js';
import { parseStreamUri } from './streams/stream-id.js';
import { StreamDefinitions } from './streams/stream-definitions.js';
import { StreamPlacements } from './streams/stream-placements.js';
import { moveActions, moveReportKey, movingMembers, RepositoryMoves } from './streams/move-status.js';
import { loadMoveStates, RepositoryMover } from './streams/repository-mover.js';
import type { RepositoryMapping } from './streams/repository-mapping.js';
import { StreamRuntime } from './streams/stream-runtime.js';
import { realTimers } from './lib/timers.js';
import { loadTls, type TlsMaterial } from './config/tls.js';
import { softwareVersion, type SoftwareVersion } from './lib/version.js';

export interface RunningNode {
  httpUrl: string;
  local: NodeDocument;
  close(): Promise<void>;
}

/** How long open HTTP connections and peer calls get to finish when the node stops. */
const SHUTDOWN_GRACE_MS = 1_500;
const HINT_REPLAY_INTERVAL_MS = 1_000;
/** Streams whose ingest counters a node keeps (monitoring). */
const STATS_STREAMS_MAX = 10_000;
/** How long a scan of a stream's stored records answers monitoring requests. */
const STATS_CACHE_MS = 5_000;
/** A count of what a node stores is kept this long for status views (store-stats.ts). */
const STORE_STATS_TTL_MS = 5_000;
/** Background repair sweeps pause this long between partitions. */
const REPAIR_PACING_MS = 100;
/** Live groupings' changes go out at most once a second (hopping windows: once per hop). */
const LIVE_EMIT_INTERVAL_MS = 1_000;
const LIVE_TICK_INTERVAL_MS = 250;

/** What the process running the node is told (main.ts). */
export interface NodeHooks {
  /** The node must stop at once: its cluster core broke an invariant, or a persist failed. */
  onFatal(error: unknown): void;
}

export async function startNode(given: Config, log: Logger, hooks: NodeHooks): Promise<RunningNode> {
  const base = baseParts(given);
  const storage = await openStorage(given, log, base.metrics);
  const persisted = await loadCoreState(storage.database, log);
  const config = joinIfTableLost(given, { wasMember: wasMember(storage.database), hasTable: persisted !== undefined }, log);
  const cluster = await startCluster(config, log, base, storage, persisted);
  const defined = definitionParts(config, cluster, storage);
  const data = startData(config, log, base, storage, cluster, defined, hooks);
  const execution = executionParts(config, log, base, cluster, defined, data);
  const monitoring = monitoringParts(config, base, storage, cluster, defined, data, execution);
  await startParts(config, cluster, defined, data, storage, execution);
  const brain = await brainParts(config, log, cluster, defined);
  const ops = opsParts(config, log, base, storage, cluster, defined, data);
  const history = historyParts(config, log, base, storage, cluster, ops);

  announceAccess(config, log);
  const http = await listen(httpApp(config, log, { base, storage, cluster, defined, data, monitoring, execution, brain, ops, history }).callback(), config.host, config.httpPort, config.limits, base.tls);
  const httpUrl = `${base.tls === undefined ? 'http' : 'https'}://${config.host}:${config.httpPort}`;
  log.info({ http: httpUrl, peerPort: cluster.peer.port, peerTls: base.tls === undefined ? 'off' : 'mutual', state: cluster.nodes.local().state }, 'node started');

  return {
    httpUrl,
    local: cluster.nodes.local(),
    async close() {
      ops.stop();
      history.stop();
      data.node.stop();
      data.mover.close();
      monitoring.system.stop();
      execution.outputs.close();
      await execution.sessionHost.close();
      await Promise.all([closeHttp(http, SHUTDOWN_GRACE_MS), cluster.peer.close(SHUTDOWN_GRACE_MS)]);
      await data.ingestPool?.close();
      data.runtime.dispose();
      storage.disk.stop();
      await storage.database.close();
      markCleanStop(config.dataDir);
      log.info('node stopped');
    },
  };
}

type Base = ReturnType<typeof baseParts>;
type Storage = Awaited<ReturnType<typeof openStorage>>;
type Cluster = Awaited<ReturnType<typeof startCluster>>;
type Defined = ReturnType<typeof definitionParts>;
type Data = ReturnType<typeof startData>;
type Monitoring = ReturnType<typeof monitoringParts>;
type Execution = ReturnType<typeof executionParts>;
type Brain = Awaited<ReturnType<typeof brainParts>>;
type History = ReturnType<typeof historyParts>;

/** What every subsystem may read: start time, version, metrics, TLS material, the node's keys. */
function baseParts(config: Config) {
  const version = softwareVersion();
  return {
    startedAtMs: Date.now(),
    version,
    metrics: new Metrics({ name: config.name, version: version.number, revision: version.revision }),
    tls: loadTls(config.tls) as TlsMaterial | undefined,
    identity: loadOrCreateIdentity(config.dataDir),
  };
}

/** The database (checked for damage at open), definitions, hints, group commit and both repositories. */
async function openStorage(config: Config, log: Logger, metrics: Metrics) {
  const { database, damage: damageFound } = await openChecked(config.dataDir, log, {
    onSyncedBatch: (seconds) => metrics.syncedBatch(seconds),
    writeBufferBytes: config.storage.writeBufferBytes,
    nodeName: config.name,
  });
  // A reopen that finds acknowledged data missing starts a refill (the data plane, later).
  const losses: { onLoss?: (damage: StorageDamage) => void } = {};
  const disk = new DiskWatch(database, {
    folder: config.dataDir,
    floorBytes: config.storage.diskFreeMinBytes,
    intervalMs: config.storage.diskCheckIntervalMs,
    writeBufferBytes: config.storage.writeBufferBytes,
    nodeName: config.name,
    log,
    timers: realTimers,
    onLoss: (reason) => losses.onLoss?.({ reason, sinceMs: Date.now() }),
  });
  await disk.check();
  disk.start();
  // Damage found at open is stored before anything else runs; otherwise a refill that a
  // restart interrupted goes on (repair-service.ts).
  if (damageFound !== undefined) await saveDamage(database, damageFound);
  const damage = damageFound ?? (await loadDamage(database));
  const repositories: Record<RepositoryName, Repository> & { tsr: TimeSeriesRepository } = { ssr: new SearchableRepository(database), tsr: new TimeSeriesRepository(database) };
  return {
    database,
    disk,
    losses,
    damage,
    store: await DefinitionStore.open(database),
    hints: await HintBuffer.open(database, config.limits.hintBufferBytesMax),
    committer: new GroupCommitter(database, undefined, (seconds) => metrics.groupCommit(seconds)),
    repositories,
    localHoldsData: async (stream: string) => (await repositories.ssr.hasData(stream)) || (await repositories.tsr.hasData(stream)),
    moveStates: await loadMoveStates(database.local),
    followUps: await FollowUpStore.open(database, log),
  };
}

/** The cluster core with its persisted state (the cluster node's first phase), the node table it feeds, and the peer port. */
async function startCluster(config: Config, log: Logger, base: Base, storage: Storage, persisted: PersistedCoreState | undefined) {
  const prepared = prepareClusterNode({ config: coreConfig(config), persisted, self: selfMember(config, base.identity), lone: !config.join, run: randomInt(1, RUN_MAX) });
  const { core } = prepared;
  const available = (name: string) => core.available(name);
  const nodes = new NodeTable(config.name);
  const membershipFeed = new MembershipFeed();
  membershipFeed.subscribe((membership) =>
    nodes.replaceAll(membership.members.map((member) => toDocument(member, base.version, member.state !== 'Left' && available(member.name)))),
  );
  membershipFeed.publish(core.membership());
  const peer: PeerServer = await startPeerServer(config.host, config.peerPort, nodes, {
    identity: base.identity,
    log,
    replayWindowMs: config.cluster.peerReplayWindowMs,
    observer: base.metrics.peer,
    admit: admitTrust(config, () => prepared.awaitingAdmission(), log),
    memberKey: (name) => prepared.memberKey(name),
    callsInFlightMax: config.limits.peerCallsInFlightMax,
    // A connection whose packets are dropped is closed within a heartbeat interval and the
    // failure timeout (wire.ts).
    keepaliveMs: config.cluster.heartbeatIntervalMs,
    keepaliveTimeoutMs: Math.max(config.cluster.failureTimeoutMs, config.cluster.heartbeatIntervalMs),
    ...(base.tls === undefined ? {} : { tls: base.tls }),
  });
  const transport = peer.transport!;
  return { persisted, prepared, core, available, nodes, membershipFeed, peer, transport, events: new ClusterEventBus(), deadline: config.cluster.peerDeadlineMs };
}

/** Replicated definitions, tenants, stream definitions and where each stream's partitions go. */
function definitionParts(config: Config, cluster: Cluster, storage: Storage) {
  const { core, transport, available, deadline } = cluster;
  const peers = new ClusterDefinitionPeers({ localName: config.name, membership: () => core.membership(), available, transport, hints: storage.hints, committer: storage.committer, peerDeadlineMs: deadline });
  const definitions = new ReplicatedDefinitions(storage.store, peers);
  definitions.limitBytes(config.limits);
  const tenants = new TenantService(definitions, cluster.events);
  const sandboxLimits = { timeoutMs: config.limits.tagTimeoutMs, memoryMb: config.limits.tagMemoryMb };
  isolatePool.configure({ isolatesMax: config.limits.isolatesMax, memoryBytesMax: config.limits.isolatesMemoryMb * 1024 * 1024 });
  const holdsData = (stream: string) => clusterHoldsData(stream, { localHoldsData: storage.localHoldsData, core, transport, deadlineMs: deadline });
  const moves = new RepositoryMoves(definitions, () => movingMembers(core.membership(), config.name, available), () => core.membership().change !== undefined);
  const streamDefinitions = new StreamDefinitions(definitions, tenants, holdsData, sandboxLimits, moves);
  serveDefinitions(transport, definitions);
  serveHoldsData(transport, storage.localHoldsData);
  return { definitions, tenants, streamDefinitions, sandboxLimits, placements: new StreamPlacements(definitions), moves };
}

/** Indexes and digests kept over the repositories, the local replica that keeps them current, and transfer chunks. */
function storedParts(config: Config, log: Logger, storage: Storage, defined: Defined) {
  const { database, repositories } = storage;
  const { definitions, placements } = defined;
  // While this node copies a stream from tsr to ssr, its search index reads the tsr (repository-mover.ts).
  const ssrIndex = new SsrIndex((stream) => repositories[mover.indexSource(stream) ?? 'ssr'], (streamKey) => placements.analyzerOf(streamKey));
  const repositoryStats = { ssr: new RepositoryStats(repositories.ssr, STATS_CACHE_MS), tsr: new RepositoryStats(repositories.tsr, STATS_CACHE_MS) };
  const latestValues = new LatestValues(repositories.tsr);
  const stored = (repository: RepositoryName, records: readonly StoredRecord[]) => {
    if (repository === 'ssr') ssrIndex.onStored(records);
    else latestValues.stored(records);
    for (const stream of new Set(records.map((record) => record.stream))) repositoryStats[repository].invalidate(stream);
    partitions.staleRecords(repository, records);
  };
  const partitionChanged = (repo: RepositoryName, stream: string, partition: number) => {
    if (repo === 'ssr') ssrIndex.invalidate(stream, partition);
    else latestValues.forget(stream, partition);
    repositoryStats[repo].invalidate(stream);
    partitions.stale(repo, stream, partition);
  };
  const mover = new RepositoryMover({
    states: storage.moveStates,
    repositories,
    commit: (operations) => storage.committer.commit(operations),
    local: database.local,
    stored,
    dropped: partitionChanged,
    mappingOf: (stream) => definitions.get<RepositoryMapping>(`repository/${stream}`)?.value,
    moving: () => defined.moves.streamsWithMoves(),
    report: async (stream, progress) => void (await definitions.put(moveReportKey(stream, config.name), progress)),
    wallClock: Date.now,
    log,
    limits: { chunkRecords: config.storage.moveChunkRecords, pacingMs: config.storage.movePacingMs, graceMs: config.storage.moveGraceMs },
  });
  // A move starts here as its mapping is applied, before any store that follows it.
  definitions.onChange((key) => key.startsWith('repository/') && mover.mappingChanged(key.slice('repository/'.length)));
  const replica = new LocalReplica(repositories, storage.committer, stored, (stream, tagged) => mover.targets(stream, tagged));
  const partitions = new StoredPartitions(repositories, replica);
  const chunks = new TransferChunks(database, {
    streams: () => placements.defined(),
    definitionRecords: () => storage.store.records(),
    applyDefinitions: (records) => definitions.apply(records),
    partitionChanged,
    digests: partitions,
  }, config.cluster.transferChunkBytes);
  // A reopened database may lack batches it acknowledged: no digest, nor chunk read ahead, from before holds for it.
  database.onReopen(async () => {
    partitions.forgetAll();
    chunks.forgetReadsAhead();
  });
  return { ssrIndex, repositoryStats, latestValues, replica, partitions, chunks, mover };
}

/**
 * The data path: indexes over the repositories, the cluster node (the shell that runs the
 * core, transfers, and the data plane: replica writes, hints, hand-offs, repair), ingest and
 * the reads other nodes ask of this one.
 */
function startData(config: Config, log: Logger, base: Base, storage: Storage, cluster: Cluster, defined: Defined, hooks: NodeHooks) {
  const { core, transport, deadline } = cluster;
  const stored = storedParts(config, log, storage, defined);
  const node = clusterNodeParts(config, log, storage, cluster, defined, stored, hooks);
  const membershipService = new MembershipService({ core, shell: node.shell, transport, peerDeadlineMs: deadline, log, blockedBy: () => defined.moves.membershipBlockedBy() });
  cluster.membershipFeed.subscribe((membership) => membershipService.observe(membership));
  cluster.membershipFeed.subscribe(() => node.plane.handOff.membershipChanged());
  const runtime = new StreamRuntime(defined.definitions, defined.streamDefinitions, defined.sandboxLimits);
  const ingestPool = config.limits.ingestThreads === 0 ? undefined : new IngestPool({ threads: config.limits.ingestThreads, log });
  const ingest = new IngestService(runtime, node.plane.router, new WriteIdGenerator(config.name), { batchPayloadsMax: config.limits.ingestBatchPayloadsMax, jsonDepthMax: config.limits.jsonDepthMax }, {
    pool: ingestPool,
    storageRefusal: () => storage.database.writeRefusal(),
  });
  storage.losses.onLoss = (damage) => void node.plane.repair.found(damage).catch((error: unknown) => log.error({ err: error }, 'the damage mark could not be saved'));
  const reads = readParts(config, base, storage, defined, stored, node.plane, transport);
  const { ssrIndex, repositoryStats, mover } = stored;
  return { ssrIndex, repositoryStats, node, plane: node.plane, membershipService, runtime, ingest, ingestPool, mover, ...reads };
}

/** The cluster node's second phase (cluster/cluster-node.ts) over this node's storage, open peer port and timers. */
function clusterNodeParts(config: Config, log: Logger, storage: Storage, cluster: Cluster, defined: Defined, stored: ReturnType<typeof storedParts>, hooks: NodeHooks) {
  const { database } = storage;
  const { definitions, placements } = defined;
  return cluster.prepared.start({
    localName: config.name, endpoint: cluster.transport, events: cluster.events, log, timers: realTimers, wallClock: Date.now,
    chunks: stored.chunks,
    saveCoreState: (state) => saveCoreState(database, state),
    onMembership: (membership) => cluster.membershipFeed.publish(membership),
    onFatal: (error) => hooks.onFatal(error),
    status: () => nodeStatus(cluster.nodes.local()),
    replica: stored.replica, partitions: stored.partitions, hints: storage.hints, committer: storage.committer,
    followUps: storage.followUps, recordKey: (repo, record) => stored.partitions.keyOf(repo, record),
    definitions: { records: () => storage.store.records(), apply: (records) => definitions.apply(records) },
    persistDamage: (damage) => saveDamage(database, damage),
    streams: () => placements.persisted(),
    replicasOf: (streamKey) => placements.replicasOf(streamKey),
    limits: {
      heartbeatIntervalMs: config.cluster.heartbeatIntervalMs,
      ackWaitMs: Math.max(500, Math.floor(config.cluster.transferStallMs / 2)),
      writeDeadlineMs: config.cluster.writeDeadlineMs,
      peerDeadlineMs: cluster.deadline,
      hintReplayIntervalMs: HINT_REPLAY_INTERVAL_MS,
      repairIntervalMs: config.cluster.repairIntervalMs,
      repairPacingMs: REPAIR_PACING_MS,
    },
  });
}

/**
 * The reads this node answers from its own partitions (search, pages, blocks, last values:
 * none while it refills damaged data), and the counts of what it stores, for itself and for
 * the peers that ask.
 */
function readParts(config: Config, base: Base, storage: Storage, defined: Defined, stored: ReturnType<typeof storedParts>, plane: DataPlane, transport: PeerTransport) {
  const { repositories } = storage;
  const { placements } = defined;
  const searchLocal = servingLocalSearch(stored.ssrIndex, plane.repair, (seconds) => base.metrics.searchLocal(seconds));
  const reads = localReads({ repositories, serving: plane.repair, mover: stored.mover, latestValues: stored.latestValues, pageRecordsMax: config.execution.historicalPageRecords });
  const storeStats = new StoreStatsCache({
    databaseDir: join(config.dataDir, 'db'),
    streams: () => placements.persisted(),
    countByPartition: (repo, stream) => repositories[repo].countByPartition(stream),
    disk: () => {
      const { freeBytes, totalBytes, writable, reason } = storage.disk.state();
      return { freeBytes, totalBytes, writable, reason };
    },
  }, STORE_STATS_TTL_MS);
  serveSearchReads(transport, searchLocal);
  serveHistoricalReads(transport, reads);
  serveStoreStats(transport, storeStats);
  return { searchLocal, ...reads, storeStats };
}

/** Monitoring: every service of the spec, from counters the parts keep. */
function monitoringParts(config: Config, base: Base, storage: Storage, cluster: Cluster, defined: Defined, data: Data, execution: Execution) {
  const sseTracker = new SseTracker();
  const system = new SystemStats(base.startedAtMs);
  system.start();
  const streamStats = new StreamStats(STATS_STREAMS_MAX);
  data.ingest.onOutcome((stream, outcome) => {
    base.metrics.ingest(stream, outcome);
    streamStats.record(stream, outcome);
  });
  const audit = new AuditLog(config.monitoring.auditEntriesMax, config.name);
  defined.definitions.onChange((key, definition, change) => change !== undefined && audit.definitionChanged(key, change, definition === undefined));
  cluster.membershipFeed.subscribe((membership) => audit.membershipChanged(membership, coordinatorOf(membership, cluster.available)));
  const { sessionHost, forwarder } = execution;
  const deps: MonitoringDeps = {
    localName: config.name, hints: storage.hints, core: cluster.core, version: base.version, definitions: defined.definitions, system, streamStats, audit,
    repositoryStats: data.repositoryStats,
    ssrIndex: (stream) => data.ssrIndex.status(stream),
    transport: () => cluster.transport.counters.snapshot(),
    actorsEnabled: config.monitoring.actorsEnabled,
    actors: { runners: () => sessionHost.runners(), liveForwarding: () => forwarder.queueDepths(), sseClients: () => sseTracker.clients() },
    execution: () => ({ sessions: sessionHost.summary(), liveForwardDroppedPayloads: forwarder.dropped }),
    handOff: () => ({ pendingDrops: data.plane.handOff.pendingDrops(), pendingSyncs: data.plane.followUps.pending(), damaged: data.plane.repair.damaged() }),
  };
  serveMonitoring(cluster.transport, deps);
  return { sseTracker, system, deps };
}

/** Live feeds, forwarding to the hosts of live queries, and outputs served from every node. */
function outputParts(config: Config, log: Logger, base: Base, cluster: Cluster, defined: Defined, data: Data, hostOf: (sessionId: string) => string | undefined) {
  const { transport, deadline } = cluster;
  const feed = new LiveFeed();
  const directory = new SessionDirectory(defined.definitions, hostOf, config.name);
  const outputs = new OutputRegistry({
    localName: config.name,
    hostOfOutput: (outputId) => directory.hostOfOutput(outputId),
    pollRemote: remoteOutputPoll(transport, deadline),
    limits: {
      logMessagesMax: config.execution.outputLogMessagesMax,
      retainedRowsMax: config.execution.outputRetainedRowsMax,
      retainedBytesMax: config.execution.outputRetainedBytesMax,
    },
    pollWaitMs: Math.min(2_000, Math.floor(deadline / 2)),
    log,
    onRows: (count) => base.metrics.queryOutputRows(count),
  });
  const forwarder = new LiveForwarder({
    hostsReading: (stream) => directory.remoteHostsReading(stream),
    send: remoteLivePayloads(transport, deadline),
    queuePayloadsMax: config.execution.liveForwardQueuePayloadsMax,
    log,
  });
  data.ingest.onPayloads(
    (stream, payloads) => {
      feed.deliver(stream.key, payloads);
      forwarder.forward(stream.key, payloads);
    },
    (stream) => feed.reads(stream.key) || directory.remoteHostsReading(stream.key).length > 0,
  );
  // Every node ends its clients of outputs whose query or session went (output-registry.ts, retain).
  defined.definitions.onChange((key) => key.startsWith('session/') && outputs.retain((outputId) => directory.hasOutput(outputId)));
  return { feed, directory, outputs, forwarder };
}

/**
 * Execution: sessions run on their host node; payloads reach live queries from
 * the node that accepted them; outputs are served from every node.
 */
function executionParts(config: Config, log: Logger, base: Base, cluster: Cluster, defined: Defined, data: Data) {
  const { transport, deadline, available } = cluster;
  const { definitions, tenants } = defined;
  const { contributors, domains } = contributorParts(log, defined, data);
  const hostOf = (sessionId: string) => sessionHostOf(cluster.core.membership(), available, sessionId);
  const { feed, directory, outputs, forwarder } = outputParts(config, log, base, cluster, defined, data, hostOf);
  const sessionHost = sessionHostParts(config, log, cluster, defined, data, { hostOf, feed, outputs, domains });
  definitions.onChange((key) => key.startsWith('session/') && void sessionHost.reconcile(key));
  cluster.membershipFeed.subscribe(hostingFollower(sessionHost, available));
  const routing = { localName: config.name, hostOf, sessionHost, remoteStatuses: remoteExecutionStatuses(transport, deadline), log };
  const execution = new ExecutionService({
    definitions,
    tenants,
    statuses: sessionStatuses(routing),
    settle: settleOnHost(routing),
    advertisedHttp: `${config.advertiseAddress ?? config.host}:${config.httpPort}`,
    limits: { sessionQueriesMax: config.execution.sessionQueriesMax },
    sandboxLimits: { timeoutMs: config.execution.functionTimeoutMs, memoryMb: config.limits.tagMemoryMb },
  });
  serveExecutionPeers(transport, { outputs, feed, sessionHost });
  return { sessionHost, forwarder, outputs, directory, execution, contributors, domains };
}

/**
 * Contributors and domains: definitions like any other; the published-to index learns from
 * every batch this node accepts, and domains limit searches by contributor.
 */
function contributorParts(log: Logger, defined: Defined, data: Data) {
  const { definitions, tenants } = defined;
  const published = new PublishedIndex(definitions, log);
  data.ingest.onPayloads(
    (stream, payloads) => published.record(stream, payloads),
    (stream) => published.watches(stream),
  );
  const contributors = new ContributorService(definitions, tenants, published);
  return { contributors, domains: new DomainService(definitions, tenants, contributors, published) };
}

/** The sessions this node hosts: live queries over the feed, historical reads from every owner. */
function sessionHostParts(
  config: Config,
  log: Logger,
  cluster: Cluster,
  defined: Defined,
  data: Data,
  parts: { hostOf: (sessionId: string) => string | undefined; feed: LiveFeed; outputs: OutputRegistry; domains: DomainService },
): SessionHost {
  const { transport, deadline, available } = cluster;
  const historicalDeps = {
    localName: config.name,
    ownersOf: (partition: number, replicas: number) => currentOwners(cluster.core.membership(), { partition, replicas }),
    available,
    scanLocal: data.scanLocal,
    scanRemote: remoteScan(transport, deadline),
    blocksLocal: data.blocksLocal,
    blocksRemote: remoteBlocks(transport, deadline),
    latestKept: data.latestKept,
    latestLocal: data.latestLocal,
    latestRemote: remoteLatest(transport, deadline),
  };
  return new SessionHost({
    localName: config.name,
    definitions: defined.definitions,
    hostOf: parts.hostOf,
    feed: parts.feed,
    createPipeline,
    outputs: parts.outputs,
    domainScope: (tenant, uri) => parts.domains.scope(tenant, uri),
    placementOf: (stream) => ({ ...defined.placements.placementOf(stream), moving: defined.moves.running(stream) }),
    writeStream: async (uri, rows) => {
      const failures = await data.ingest.ingest(parseStreamUri(uri), rows);
      if (failures.size > 0) throw new BadRequestError(`${uri} refused ${failures.size} row(s): ${[...failures.values()][0]}`);
    },
    readHistorical: (source) => {
      if (source.rows === undefined) return readHistorical(historicalDeps, source, config.execution.historicalPageRecords);
      if (source.rows.latest !== undefined) return readLatestRows(historicalDeps, source, source.rows.latest);
      return readBlockRows(historicalDeps, source, source.rows, config.execution.historicalPageRecords);
    },
    readHistoricalColumns: (source) => readBlockColumns(historicalDeps, source, source.rows!),
    sandboxLimits: { timeoutMs: config.execution.functionTimeoutMs, memoryMb: config.limits.tagMemoryMb },
    limits: { groupsMax: config.execution.queryGroupsMax, rowsHeldMax: config.execution.queryRowsHeldMax, pendingWriteRowsMax: config.execution.liveForwardQueuePayloadsMax },
    functionBudgetMs: config.execution.functionBudgetMs,
    // Live windows close and coalesced changes go out on ticks: a quarter of the emission
    // interval keeps an emission within 1.25 s of its due time (docs/query-language.md).
    tickIntervalMs: LIVE_TICK_INTERVAL_MS,
    emitIntervalMs: LIVE_EMIT_INTERVAL_MS,
    log,
  });
}

/** Starts what runs on its own: the cluster node (with any damage found at open), moves, sessions, default tenants. */
async function startParts(config: Config, cluster: Cluster, defined: Defined, data: Data, storage: Storage, execution: Execution): Promise<void> {
  const reportSlots = () => data.node.reportSlots(defined.placements.slotsInUse());
  defined.definitions.onChange((key) => (key.startsWith('repository/') || key.startsWith('policy/')) && reportSlots());
  reportSlots();
  data.node.start(storage.damage);
  data.mover.start();
  void execution.sessionHost.reconcile();
  if (cluster.persisted === undefined && !config.join) {
    for (const tenant of config.defaultTenants) await defined.tenants.put(tenant);
  }
}

/**
 * The brain management interface under /api/v1: accounts, settings, the licence
 * pool and brains all live in the definitions store. A cluster's first node writes the
 * empty licence pool once, when the cluster is born (licence.ts).
 */
async function brainParts(config: Config, log: Logger, cluster: Cluster, defined: Defined) {
  const { definitions } = defined;
  const brainTemplates = loadBrainTemplates(config.brainApi.templatesFile);
  const licencePool = new LicencePool(definitions, config.licence);
  if (cluster.persisted === undefined && !config.join) await licencePool.initialise();
  if (licencePool.configDiffers()) {
    log.warn({ configured: config.licence, cluster: licencePool.licence }, "this node's licence config differs from the cluster's licence, which wins (PATCH /api/v1/admin/licence changes it)");
  }
  const accounts = new AccountService(definitions);
  const adminGate = new AdminGate(config.adminSecret);
  const routes = brainApiRoutes({
    accounts,
    apiSwitch: new ApiSwitch(definitions, config.brainApi.enabled),
    adminGate,
    brains: new BrainService({ store: definitions, templates: brainTemplates, pool: licencePool }),
    templates: brainTemplates,
    pool: licencePool,
    docs: new DocsAssets(),
  });
  return { accounts, adminGate, routes };
}

/** Operators' views: metrics read from live state, health, readiness (the reasons the node refuses clients), _cat tables, transfer logs. */
function opsParts(config: Config, log: Logger, base: Base, storage: Storage, cluster: Cluster, defined: Defined, data: Data): OpsService {
  const { core, available, transport, deadline } = cluster;
  base.metrics.readFrom({
    hints: () => storage.hints.snapshot(),
    transfers: () => core.membership().change?.transfers ?? [],
    members: () => core.membership().members.map((member) => ({ name: member.name, state: member.state, available: member.state !== 'Left' && available(member.name) })),
    disk: () => storage.disk.state(),
  });
  const ops = new OpsService({
    localName: config.name, version: base.version, startedAtMs: base.startedAtMs, log,
    membership: () => core.membership(),
    available,
    unreachableFor: (observer, node) => core.unreachableFor(observer, node),
    storageOpen: () => storage.database.isOpen,
    // Why the node refuses client requests besides stopping and closed storage: one entry each.
    refusals: [
      { name: 'cluster', check: () => notServingBecause(core, config.name) },
      { name: 'disk', check: () => diskRefusal(storage.disk.state()), writesOnly: true },
    ],
    storageState: () => storage.disk.state(),
    localStats: () => data.storeStats.get(),
    remoteStats: remoteStoreStats(transport, deadline),
    streams: () => defined.placements.persisted(),
    slots: () => defined.placements.slotsForOwnership(),
    watch: new TransferWatch({ ...DEFAULT_WATCH_OPTIONS, stallMs: config.cluster.transferStallMs }),
  });
  cluster.membershipFeed.subscribe((membership) => ops.observe(membership));
  ops.start(config.cluster.heartbeatIntervalMs);
  return ops;
}

/**
 * The console's charts (src/node-history/history.ts): this node reads its own figures every
 * HISTORY_INTERVAL_MS into a bounded ring, and answers other nodes' ConsoleHistoryReads
 * with it and its readiness now.
 */
function historyParts(config: Config, log: Logger, base: Base, storage: Storage, cluster: Cluster, ops: OpsService) {
  const ring = new HistoryRing();
  const read = async () => {
    const figures = await base.metrics.historyFigures();
    const disk = storage.disk.state();
    const diskUsedBytes = disk.totalBytes === null || disk.freeBytes === null ? null : Math.max(0, disk.totalBytes - disk.freeBytes);
    ring.record({ atMs: Date.now(), ...figures, diskUsedBytes });
  };
  const readLogged = () => read().catch((error: unknown) => log.warn({ err: error }, 'the console history could not read the node\'s figures'));
  void readLogged();
  const timer = setInterval(readLogged, HISTORY_INTERVAL_MS);
  timer.unref();
  const local = (): NodeHistory => {
    const readiness = ops.readiness();
    return { node: config.name, intervalMs: HISTORY_INTERVAL_MS, samples: ring.columns(), ready: readiness.ready, reasons: readiness.reasons };
  };
  serveHistory(cluster.transport, local);
  const ofCluster = (): Promise<ClusterHistory> =>
    clusterHistory({ endpoint: cluster.transport, membership: () => cluster.core.membership(), available: cluster.available, local, deadlineMs: cluster.deadline });
  return { cluster: ofCluster, stop: () => clearInterval(timer) };
}

/** The Koa app: authentication, the serving gate, and every router of the platform and the brain API. */
function httpApp(
  config: Config,
  log: Logger,
  parts: { base: Base; storage: Storage; cluster: Cluster; defined: Defined; data: Data; monitoring: Monitoring; execution: Execution; brain: Brain; ops: OpsService; history: History },
) {
  const { base, storage, cluster, defined, data, monitoring, execution, brain, ops, history } = parts;
  const { core, transport, deadline, available } = cluster;
  const { definitions, tenants } = defined;
  return createApp({
    log,
    bodyBytesMax: config.limits.bodyBytesMax,
    jsonDepthMax: config.limits.jsonDepthMax,
    authentication: authenticationMiddleware({ tokensRequired: config.authRequired, adminSecret: brain.adminGate, accounts: brain.accounts }),
    errorRenderers: [problemRenderer],
    gate: servingGate(() => ops.refusal()),
    access: { level: config.accessLogLevel, observe: (family, method, status, seconds) => base.metrics.httpRequest(family, method, status, seconds) },
    corsOrigins: config.corsOrigins,
    keepsBytes: isIngestRequest,
    routers: [
      opsRoutes({
        health: () => ops.health(),
        readiness: () => ops.readiness(),
        metrics: base.metrics,
        catNodes: () => ops.catNodes(),
        catTransfers: () => ops.catTransfers(),
        catStreams: () => ops.catStreams(),
      }),
      brain.routes,
      streamRoutes({ definitions: defined.streamDefinitions, runtime: data.runtime, ingest: data.ingest, moveStatus: (stream) => defined.moves.status(stream) }),
      clusterRoutes({
        nodes: cluster.nodes, tenants, events: cluster.events, membership: data.membershipService, repair: data.plane.clusterRepair,
        sse: sseOptions(config, base.metrics.sseChannel('cluster'), monitoring.sseTracker),
        localActions: () => [...repairActions(config.name, data.plane.repair.list()), ...moveActions(defined.moves.statuses())],
        stalledBecause: (id) => ops.stalledBecause(id),
      }),
      adminRoutes(new VendorService(definitions, tenants)),
      searchRoutes(new SearchService(defined.streamDefinitions, {
        localName: config.name,
        owners: (partition, replicas) => currentOwners(core.membership(), { partition, replicas }),
        available,
        runLocal: data.searchLocal,
        runRemote: remoteSearch(transport, deadline),
      }, execution.domains), tenants),
      contributorRoutes(execution.contributors),
      domainRoutes(execution.domains),
      daemonRoutes(new DaemonService(definitions, tenants, execution.execution, { sessionQueriesMax: config.execution.sessionQueriesMax })),
      executionRoutes({
        execution: execution.execution,
        outputs: execution.outputs,
        outputExists: (tenant, outputId) => execution.directory.outputExists(tenant, outputId),
        sse: sseOptions(config, base.metrics.sseChannel('output'), monitoring.sseTracker),
      }),
      monitoringRoutes({
        tenants,
        localName: config.name,
        local: (service, filter) => localDetails(service, monitoring.deps, filter),
        remote: (service, filter, node) => remoteDetails(transport, core, service, filter, node, deadline),
      }),
      ...(config.internalReads ? [internalRoutes(storage.repositories)] : []),
      nodePages(config, base.version, () => cluster.nodes.local().state),
      liveConsole(core, defined.placements, history.cluster),
    ],
  });
}

/** GET /, the platform interface's OpenAPI document and its docs page. */
function nodePages(config: Config, version: SoftwareVersion, state: () => string): Router {
  return nodePageRoutes({
    identity: () => ({ name: config.name, state: state(), version }),
    openapi: () => platformOpenApiDocument({ limits: { sessionQueriesMax: config.execution.sessionQueriesMax }, version: version.number }),
    docs: new DocsAssets({ docsPath: PLATFORM_DOCS_PATH, openapiPath: PLATFORM_OPENAPI_PATH, title: 'Tributary platform interface' }),
  });
}

/**
 * The live console: its page, the ring, and every member's figures over time. Stored
 * payloads per stream are GET /_cat/streams?format=json, which the page reads like any client.
 */
function liveConsole(core: ClusterCore, placements: StreamPlacements, history: () => Promise<ClusterHistory>): Router {
  return consoleRoutes({
    assets: new ConsoleAssets(),
    ring: () => ringView(core.membership(), placements.policiesInUse()),
    history,
  });
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

function sseOptions(config: Config, clients: { opened(): void; closed(): void }, tracker: SseTracker) {
  return {
    tracker,
    clientsMax: config.limits.sseClientsMax,
    keepAliveMs: config.limits.sseKeepAliveMs,
    clientBufferBytesMax: config.limits.sseClientBufferBytesMax,
    clients,
  };
}
