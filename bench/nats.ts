// A throw-away 3-server NATS cluster with JetStream for the peers-ingest benchmark:
// each `nats-server` (the Debian package) gets a config file, a store folder and
// free loopback ports (client, cluster route, HTTP monitoring), all three routed to each
// other; the bench waits until every server's /healthz answers and the JetStream meta group
// has a leader, and stops them by pid. Nothing here is used by the product.

import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, sleep } from '../test/kit/node-process.js';
import { findBinary, folderBytes, removeFolder, ServerProcess, temporaryFolder, versionOf } from './server-process.js';

const CLUSTER_NAME = 'tributary-bench';
const META_LEADER_TIMEOUT_MS = 30_000;
/** Generous: the machine is shared, and a file store's limits only need to hold a run. */
const MAX_FILE_STORE = '20G';
const MAX_MEMORY_STORE = '256M';

export interface NatsBinary {
  path: string;
  /** `nats-server --version`, e.g. "nats-server: v2.9.10". */
  version: string;
}

export function findNatsServer(): NatsBinary | undefined {
  const path = process.env.NATS_SERVER_BIN ?? findBinary('nats-server');
  if (path === undefined) return undefined;
  const version = versionOf(path, ['--version']);
  return version === undefined ? undefined : { path, version };
}

interface NatsServerPorts {
  name: string;
  clientPort: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
}

export interface NatsCluster {
  binary: NatsBinary;
  /** nats://127.0.0.1:<client port>, one per server, in server order. */
  urls: string[];
  names: string[];
  /** The servers' process ids, in server order. */
  pids: Array<number | undefined>;
  dir: string;
  /** Messages each server holds of `stream` (its replica; 0 where it has none), from /jsz. */
  storedPerServer(stream: string): Promise<Record<string, number>>;
  /** Bytes under the servers' store folders. */
  bytesOnDisk(): number;
  /** Stops every server by pid and removes the folder. */
  stop(): Promise<void>;
  /** For an emergency exit: SIGKILL, no waiting. */
  killNow(): void;
}

function configText(server: NatsServerPorts, routes: readonly number[], syncAlways: boolean): string {
  return [
    `server_name: ${server.name}`,
    `listen: "127.0.0.1:${server.clientPort}"`,
    `http: "127.0.0.1:${server.monitorPort}"`,
    'jetstream {',
    `  store_dir: "${server.storeDir}"`,
    `  max_file_store: ${MAX_FILE_STORE}`,
    `  max_memory_store: ${MAX_MEMORY_STORE}`,
    ...(syncAlways ? ['  sync_interval: always'] : []),
    '}',
    'cluster {',
    `  name: ${CLUSTER_NAME}`,
    `  listen: "127.0.0.1:${server.clusterPort}"`,
    `  routes: [${routes.map((port) => `"nats-route://127.0.0.1:${port}"`).join(', ')}]`,
    '}',
    '',
  ].join('\n');
}

async function monitor(port: number, path: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

/**
 * Whether this nats-server accepts `sync_interval: always` (2.10 and later; 2.9 refuses the
 * field), checked with `nats-server -t` on a config holding it.
 */
export function natsSyncAlwaysSupported(binary: NatsBinary): boolean {
  const dir = temporaryFolder('nats-check');
  try {
    const configPath = join(dir, 'check.conf');
    writeFileSync(configPath, `jetstream {\n  store_dir: "${join(dir, 'js')}"\n  sync_interval: always\n}\n`);
    execFileSync(binary.path, ['-t', '-c', configPath], { stdio: 'ignore', timeout: 10_000 });
    return true;
  } catch {
    return false;
  } finally {
    removeFolder(dir);
  }
}

/**
 * Starts `size` servers routed to each other; resolves once JetStream has a meta leader.
 * `syncAlways`: every write fsynced (`sync_interval: always`, where the version has it).
 */
export async function startNatsCluster(binary: NatsBinary, size = 3, options: { syncAlways?: boolean } = {}): Promise<NatsCluster> {
  const dir = temporaryFolder('nats');
  const ports: NatsServerPorts[] = [];
  for (let index = 1; index <= size; index += 1) {
    ports.push({
      name: `nats-${index}`,
      clientPort: await freePort(),
      clusterPort: await freePort(),
      monitorPort: await freePort(),
      storeDir: join(dir, `nats-${index}`, 'jetstream'),
    });
  }
  const servers: ServerProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    removeFolder(dir);
  };
  try {
    const routes = ports.map((server) => server.clusterPort);
    // Started together: a JetStream cluster only answers /healthz once its peers are up.
    const starting = ports.map((server) => {
      const configPath = join(dir, `${server.name}.conf`);
      writeFileSync(configPath, configText(server, routes, options.syncAlways === true));
      return ServerProcess.start(server.name, binary.path, ['-c', configPath], join(dir, `${server.name}.log`), async () => {
        return (await monitor(server.monitorPort, '/healthz')).status === 200;
      });
    });
    const started = await Promise.allSettled(starting);
    for (const result of started) if (result.status === 'fulfilled') servers.push(result.value);
    const failure = started.find((result) => result.status === 'rejected');
    if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
    await waitMetaLeader(ports);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    binary,
    urls: ports.map((server) => `nats://127.0.0.1:${server.clientPort}`),
    names: ports.map((server) => server.name),
    pids: servers.map((server) => server.pid),
    dir,
    storedPerServer: async (stream) => {
      const counts: Record<string, number> = {};
      for (const server of ports) {
        const { json } = await monitor(server.monitorPort, '/jsz?accounts=true&streams=true');
        const details = (json?.account_details ?? []).flatMap((account: any) => account.stream_detail ?? []);
        const replica = details.find((detail: any) => detail.name === stream);
        counts[server.name] = Number(replica?.state?.messages ?? 0);
      }
      return counts;
    },
    bytesOnDisk: () => folderBytes(dir),
    stop,
    killNow: () => servers.forEach((server) => server.killNow()),
  };
}

async function waitMetaLeader(ports: readonly NatsServerPorts[]): Promise<void> {
  const deadline = Date.now() + META_LEADER_TIMEOUT_MS;
  for (;;) {
    const views = await Promise.all(ports.map(async (server) => (await monitor(server.monitorPort, '/jsz')).json?.meta_cluster));
    if (views.every((meta) => typeof meta?.leader === 'string' && meta.leader !== '' && (meta.cluster_size ?? 0) >= ports.length)) return;
    if (Date.now() > deadline) throw new Error(`no JetStream meta leader after ${META_LEADER_TIMEOUT_MS} ms: ${JSON.stringify(views)}`);
    await sleep(200);
  }
}
