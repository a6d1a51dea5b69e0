// A throw-away InfluxDB 1.x for the peers-timeseries benchmark: `influxd`
// (the Debian package `influxdb`) with a config file of its own: loopback-only RPC and HTTP
// ports picked free, meta/data/wal folders in a temporary folder, reporting, the _internal
// monitor store, retention and continuous queries off, the WAL fsynced on every write (its
// default, written out). Stopped by pid, its folder removed. Nothing here is used by the product.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../test/kit/node-process.js';
import { findBinary, folderBytes, removeFolder, ServerProcess, temporaryFolder, versionOf } from './server-process.js';

export interface InfluxBinary {
  path: string;
  /** `influxd version`, e.g. "InfluxDB v1.6.7~rc0 (git: unknown unknown)". */
  version: string;
}

export function findInfluxd(): InfluxBinary | undefined {
  const path = process.env.INFLUXD_BIN ?? findBinary('influxd');
  if (path === undefined) return undefined;
  const version = versionOf(path, ['version']);
  return version === undefined ? undefined : { path, version };
}

/** Settings that matter to the comparison, also written into the report. */
export const INFLUX_SETTINGS = {
  'data.wal-fsync-delay': '0s (fsync of the WAL before every write is answered)',
  'data.index-version': 'inmem',
  'data.cache-max-memory-size': '1 GiB',
  'http.max-body-size': '0 (unbounded)',
} as const;

export interface InfluxServer {
  binary: InfluxBinary;
  /** http://127.0.0.1:<http port> */
  url: string;
  pid: number | undefined;
  dir: string;
  /** Bytes under the data and WAL folders. */
  bytesOnDisk(): number;
  stop(): Promise<void>;
  killNow(): void;
}

function configText(dir: string, rpcPort: number, httpPort: number): string {
  return `reporting-disabled = true
bind-address = "127.0.0.1:${rpcPort}"

[meta]
  dir = "${join(dir, 'meta')}"
  logging-enabled = false

[data]
  dir = "${join(dir, 'data')}"
  wal-dir = "${join(dir, 'wal')}"
  wal-fsync-delay = "0s"
  index-version = "inmem"
  cache-max-memory-size = 1073741824
  query-log-enabled = false
  trace-logging-enabled = false

[coordinator]
  log-queries-after = "0s"

[retention]
  enabled = false

[shard-precreation]
  enabled = false

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:${httpPort}"
  log-enabled = false
  pprof-enabled = false
  max-body-size = 0
  unix-socket-enabled = false

[logging]
  level = "warn"
  suppress-logo = true
`;
}

export async function startInfluxd(binary: InfluxBinary): Promise<InfluxServer> {
  const dir = temporaryFolder('influxdb');
  const rpcPort = await freePort();
  const httpPort = await freePort();
  const url = `http://127.0.0.1:${httpPort}`;
  const configPath = join(dir, 'influxdb.conf');
  writeFileSync(configPath, configText(dir, rpcPort, httpPort));
  let server: ServerProcess;
  try {
    server = await ServerProcess.start('influxd', binary.path, ['run', '-config', configPath], join(dir, 'influxd.log'), async () => {
      return (await fetch(`${url}/ping`)).status === 204;
    });
  } catch (error) {
    removeFolder(dir);
    throw error;
  }
  return {
    binary,
    url,
    pid: server.pid,
    dir,
    bytesOnDisk: () => folderBytes(join(dir, 'data')) + folderBytes(join(dir, 'wal')),
    stop: async () => {
      await server.stop();
      removeFolder(dir);
    },
    killNow: () => server.killNow(),
  };
}

/** An InfluxQL statement over HTTP (GET /query, epoch milliseconds); throws on any error it reports. */
export async function influxQuery(server: { url: string }, database: string | undefined, text: string, method: 'GET' | 'POST' = 'GET'): Promise<any[]> {
  const params = new URLSearchParams({ q: text, epoch: 'ms' });
  if (database !== undefined) params.set('db', database);
  const response = await fetch(`${server.url}/query?${params}`, { method });
  const body = (await response.json()) as { results?: Array<{ series?: any[]; error?: string }>; error?: string };
  const result = body.results?.[0];
  if (response.status !== 200 || body.error !== undefined || result?.error !== undefined) {
    throw new Error(`InfluxQL ${text}: HTTP ${response.status} ${body.error ?? result?.error ?? ''}`);
  }
  return result?.series ?? [];
}
