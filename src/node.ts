// The composition root: the only place that builds the parts of a node and wires them
// together (DESIGN.md, "Layout"). Everything else receives what it needs.

import type { Server } from 'node:http';
import { VendorService } from './admin/vendors.js';
import { ClusterEventBus } from './cluster/events.js';
import { loadOrCreateIdentity } from './cluster/identity.js';
import { NodeTable, type NodeDocument, type NodeState } from './cluster/node-table.js';
import { PartitionRouter } from './cluster/partition-router.js';
import { TenantService } from './cluster/tenants.js';
import type { Config } from './config.js';
import { createApp } from './http/app.js';
import { adminRoutes } from './http/routes/admin.js';
import { clusterRoutes } from './http/routes/cluster.js';
import { internalRoutes } from './http/routes/internal.js';
import { streamRoutes } from './http/routes/streams.js';
import type { Logger } from './log.js';
import { startPeerServer } from './peer/server.js';
import { Database } from './storage/database.js';
import { DefinitionStore } from './storage/definitions.js';
import { GroupCommitter } from './storage/group-commit.js';
import { LocalReplica, localOnlyWriter } from './storage/local-replica.js';
import type { Repository, RepositoryName } from './storage/repository.js';
import { SearchableRepository } from './storage/ssr.js';
import { TimeSeriesRepository } from './storage/tsr.js';
import { WriteIdGenerator } from './storage/write-ids.js';
import { IngestService } from './streams/ingest.js';
import { StreamDefinitions } from './streams/stream-definitions.js';
import { StreamRuntime } from './streams/stream-runtime.js';
import { softwareVersion } from './version.js';

export interface RunningNode {
  httpUrl: string;
  local: NodeDocument;
  close(): Promise<void>;
}

/** How long open HTTP connections get to finish when the node stops. */
const SHUTDOWN_GRACE_MS = 2_000;
const MEMBERSHIP_KEY = 'membership';

export async function startNode(config: Config, log: Logger): Promise<RunningNode> {
  const identity = loadOrCreateIdentity(config.dataDir);
  const database = await Database.open(config.dataDir);
  const store = await DefinitionStore.open(database);
  const events = new ClusterEventBus();
  const tenants = new TenantService(store, events);

  const state = await localState(database, config);
  const nodes = new NodeTable(config.name);
  nodes.upsert({
    name: config.name,
    zone: config.zone,
    publicKey: identity.publicKeyBase64,
    address: config.host,
    port: config.peerPort,
    httpPort: config.httpPort,
    version: softwareVersion(),
    state,
    available: 'true',
  });
  if (state === 'Joined') {
    for (const tenant of config.defaultTenants) await tenants.put(tenant);
  }

  const repositories: Record<RepositoryName, Repository> = {
    ssr: new SearchableRepository(database),
    tsr: new TimeSeriesRepository(database),
  };
  const replica = new LocalReplica(repositories, new GroupCommitter(database));
  const router = new PartitionRouter(() => nodes.joinedNames(), localOnlyWriter(config.name, replica));
  const sandboxLimits = { timeoutMs: config.limits.tagTimeoutMs, memoryMb: config.limits.tagMemoryMb };
  const definitions = new StreamDefinitions(store, tenants, repositories, sandboxLimits);
  const runtime = new StreamRuntime(store, definitions, sandboxLimits);
  const ingest = new IngestService(runtime, router, new WriteIdGenerator(config.name), {
    batchPayloadsMax: config.limits.ingestBatchPayloadsMax,
  });

  const app = createApp({
    log,
    bodyBytesMax: config.limits.bodyBytesMax,
    routers: [
      streamRoutes({ definitions, runtime, ingest }),
      clusterRoutes({
        nodes,
        tenants,
        events,
        sse: {
          clientsMax: config.limits.sseClientsMax,
          keepAliveMs: config.limits.sseKeepAliveMs,
          clientBufferBytesMax: config.limits.sseClientBufferBytesMax,
        },
      }),
      adminRoutes(new VendorService(store, tenants)),
      ...(config.internalReads ? [internalRoutes(repositories)] : []),
    ],
  });
  const peer = await startPeerServer(config.host, config.peerPort, nodes);
  const http = await listen(app.callback(), config.host, config.httpPort);
  log.info({ http: `http://${config.host}:${config.httpPort}`, peerPort: peer.port, state }, 'node started');

  return {
    httpUrl: `http://${config.host}:${config.httpPort}`,
    local: nodes.local(),
    async close() {
      await Promise.all([closeHttp(http), peer.close(SHUTDOWN_GRACE_MS)]);
      runtime.dispose();
      await database.close();
      log.info('node stopped');
    },
  };
}

/** The node's own membership state survives restarts; a first start is Joined unless --join. */
async function localState(database: Database, config: Config): Promise<NodeState> {
  const stored = await database.local.get(MEMBERSHIP_KEY);
  if (stored !== undefined) return (JSON.parse(stored) as { state: NodeState }).state;
  const state: NodeState = config.join ? 'Pending' : 'Joined';
  await database.batch([{ type: 'put', sublevel: database.local, key: MEMBERSHIP_KEY, value: JSON.stringify({ state }) }], {
    sync: true,
  });
  return state;
}

async function listen(handler: Parameters<typeof import('node:http').createServer>[1], host: string, port: number): Promise<Server> {
  const { createServer } = await import('node:http');
  const server = createServer(handler);
  // Bound how long a slow client may take to send its headers and body.
  server.headersTimeout = 30_000;
  server.requestTimeout = 300_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new Error(`cannot listen for HTTP on ${host}:${port}: ${error.message}`)));
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
