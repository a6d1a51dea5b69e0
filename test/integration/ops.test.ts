// What an operator uses on one real node: /health, /ready, /metrics, the _cat
// tables, the CLI (version, --help, an unknown command, keygen, status), the log format and access lines,
// and start-up failures reported as one line.

import { execFile, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { until } from '../kit/cluster.js';
import { cleanup, client, freePort, NodeProcess, temporaryDataDir } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';
import { NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';

const MAIN = join(packageRoot(), 'dist', 'src', 'main.js');
const run = promisify(execFile);
let node: NodeProcess;
let api: ReturnType<typeof client>;

const schema = { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, at: { type: 'datetime' }, cpu: { type: 'double' } } } };
const STREAM = '/streams/demo/ops/cpu';

beforeAll(async () => {
  node = await NodeProcess.start({ args: ['--log-level', 'info', '--log-format', 'json'] });
  api = client(node);
  expect((await api.put(STREAM, { schema })).status).toBe(200);
  expect((await api.put(`${STREAM}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
}, 60_000);
afterAll(cleanup);

/** Runs the CLI to its end; resolves with its exit code and output. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--no-node-snapshot', MAIN, ...args], { env: { ...process.env, ...env }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('ops routes - health and readiness', () => {
  it('GET /health and GET /ready answer small JSON on a Joined node', async () => {
    const health = await api.get('/health');
    expect(health.status).toBe(200);
    expect(health.json).toMatchObject({ status: 'up', node: 'node-1', version: { number: expect.any(String) } });
    const ready = await api.get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ ready: true, node: 'node-1', state: 'Joined', storage: 'open', stopping: false, reasons: [], refusing: [] });
  });

  it('a Pending node is up but not ready, and says why', async () => {
    const pending = await NodeProcess.start({ name: 'waiting', join: true });
    expect((await client(pending).get('/health')).status).toBe(200);
    const ready = await client(pending).get('/ready');
    expect(ready.status).toBe(503);
    const why = 'node waiting is Pending: it is not part of a cluster yet; ask a Joined node';
    expect(ready.json).toMatchObject({ ready: false, state: 'Pending', reasons: [why], refusing: ['cluster'] });
    // The same reason a data request gets, and the log says it once.
    const refused = await client(pending).get('/streams/demo');
    expect(refused.status).toBe(503);
    expect(JSON.stringify(refused.json)).toContain(why);
    expect(pending.output.split('\n').filter((line) => line.includes(`not serving clients: ${why}`))).toHaveLength(1);
    // The container HEALTHCHECK's command: up is healthy; --ready asks for readiness.
    const healthy = await cli(['health', '--url', pending.url]);
    expect(healthy.code).toBe(0);
    expect(JSON.parse(healthy.stdout)).toMatchObject({ status: 'up', node: 'waiting' });
    const notReady = await cli(['health', '--ready', '--url', pending.url]);
    expect(notReady.code).toBe(1);
    expect(JSON.parse(notReady.stdout)).toMatchObject({ ready: false, state: 'Pending', reasons: [why] });
    expect((await cli(['health', '--ready'], { TRIBUTARY_HTTP_PORT: String(node.httpPort) })).code).toBe(0);
    await pending.kill('SIGTERM');
    const gone = await cli(['health', '--url', pending.url]);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toMatch(/^cannot reach http:\/\/127\.0\.0\.1:\d+\/health: /);
  });
});

describe('ops routes - metrics', () => {
  it('GET /metrics is the Prometheus text format with request, ingest and process families', async () => {
    const batch = Array.from({ length: 20 }, (_, index) => ({ host: `h${index}`, at: '2024-01-01T00:00:00Z', cpu: index }));
    expect((await api.post(STREAM, [...batch, { host: 1 }])).status).toBe(500);
    const response = await api.get('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.text;
    expect(text).toContain('tributary_ingest_payloads_total{stream="demo/ops/cpu"} 20');
    expect(text).toContain('tributary_ingest_refused_payloads_total{stream="demo/ops/cpu"} 1');
    expect(text).toMatch(/tributary_ingest_bytes_total\{stream="demo\/ops\/cpu"\} \d{3,}/);
    expect(text).toMatch(/tributary_http_requests_total\{family="streams",method="POST",status="500"\} 1/);
    expect(text).toMatch(/tributary_http_requests_total\{family="streams",method="PUT",status="200"\} 2/);
    expect(text).toMatch(/tributary_storage_fsync_duration_seconds_count [1-9]/);
    expect(text).toMatch(/tributary_group_commit_duration_seconds_count [1-9]/);
    for (const family of ['process_resident_memory_bytes', 'process_open_fds', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_gc_duration_seconds', 'tributary_sse_clients', 'tributary_peer_refusals_total', 'tributary_cluster_members']) {
      expect(text, family).toContain(`# TYPE ${family}`);
    }
    // An unknown path is counted under one family, whatever the path.
    await api.get('/no/such/path/1');
    await api.get('/no/such/path/2');
    expect((await api.get('/metrics')).text).toContain('tributary_http_requests_total{family="unmatched",method="GET",status="404"} 2');
  });
});

describe('ops routes - metrics of SSE, live queries and search', () => {
  const metricValue = async (series: string): Promise<number> => {
    const line = (await api.get('/metrics')).text.split('\n').find((each) => each.startsWith(`${series} `));
    return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
  };

  it('counts SSE clients per channel, rows a live query emits, and local search time', async () => {
    const cluster = await SseClient.connect(`${node.url}/output/cluster`);
    expect(await metricValue('tributary_sse_clients{channel="cluster"}')).toBe(1);
    cluster.close();
    await until('the cluster SSE client to be gone', async () => (await metricValue('tributary_sse_clients{channel="cluster"}')) === 0, 10_000);

    const session = (await api.post('/execution/demo/sessions')).json.session as string;
    const put = await api.put(session, { queries: [{ id: 'hot', body: `from ${STREAM} select host, cpu where cpu > 9` }] });
    expect(put.status).toBe(200);
    const output = await SseClient.connect(`${node.url}${put.json[0].query.outputs[0].outputUri}`);
    expect((await api.put(`${session}/queries/hot/_start`)).status).toBe(200);
    expect(await metricValue('tributary_sse_clients{channel="output"}')).toBe(1);
    const before = await metricValue('tributary_query_output_rows_total');
    const batch = Array.from({ length: 30 }, (_, index) => ({ host: `q${index}`, at: '2024-02-01T00:00:00Z', cpu: index }));
    expect((await api.post(STREAM, batch)).status).toBe(200);
    await output.waitFor('20 rows', (each) => each.adds().length >= 20);
    expect((await metricValue('tributary_query_output_rows_total')) - before).toBe(20);
    output.close();

    const logs = '/streams/demo/ops/logs';
    expect((await api.put(logs, { schema: { version: '1', topDef: { type: 'record', properties: { msg: { type: 'string' } } } } })).status).toBe(200);
    expect((await api.put(`${logs}/repository`, { name: 'ssr', config: {} })).status).toBe(200);
    expect((await api.post(logs, [{ msg: 'disk full' }, { msg: 'all good' }])).status).toBe(200);
    const searched = await api.post('/ssr/demo/_search', { uris: [logs], query: { base: "search('disk')" } });
    expect(searched.json.total).toBe(1);
    expect(await metricValue('tributary_search_local_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(await metricValue('tributary_http_request_duration_seconds_count{family="ssr",method="POST"}')).toBe(1);
  });
});

describe('ops routes - _cat tables', () => {
  it('/_cat/nodes is aligned text, with headers under ?v, and JSON under ?format=json', async () => {
    const plain = await api.get('/_cat/nodes');
    expect(plain.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(plain.text).toMatch(/^node-1 +Joined +true +\* +127\.0\.0\.1 +\d+ +\d+ +local +100\.0% +\d+ +[\d.]+(B|KiB|MiB) +[\d.]+(B|KiB|MiB|GiB|TiB) +[\d.]+(B|KiB|MiB|GiB|TiB) +true\n$/);
    const headed = (await api.get('/_cat/nodes?v&h=name,state,owns')).text.split('\n');
    expect(headed.slice(0, 2)).toEqual(['name    state     owns', 'node-1  Joined  100.0%']);
    const json = await api.get('/_cat/nodes?format=json');
    expect(json.json).toEqual([expect.objectContaining({ name: 'node-1', state: 'Joined', available: true, owns: 100, http: node.httpPort, peer: node.peerPort })]);
    expect(json.json[0].records).toBeGreaterThanOrEqual(20);
    expect((await api.get('/_cat/nodes?colour=red')).status).toBe(400);
    expect((await api.get('/_cat/nodes?h=nope')).json.error.message).toMatch(/unknown column 'nope'/);
  });

  it('/_cat/streams counts the stored payloads; /_cat/transfers lists none on a lone node', async () => {
    const streams = await api.get('/_cat/streams?format=json');
    expect(streams.json).toEqual([
      { stream: 'demo/ops/cpu', repo: 'tsr', replicas: 3, ring_size: 128, partitions: expect.any(Number), records: 50 },
      { stream: 'demo/ops/logs', repo: 'ssr', replicas: 3, ring_size: 128, partitions: expect.any(Number), records: 2 },
    ]);
    expect((await api.get('/_cat/streams?v')).text.split('\n')[0]).toBe('stream         repo  replicas  ring_size  partitions  records');
    expect((await api.get('/_cat/transfers?format=json')).json).toEqual([]);
    expect((await api.get('/_cat')).text).toContain('/_cat/transfers');
  });
});

describe('cli - version, help, keygen, status', () => {
  it('--version, -v and version print the package version and revision; --help shows defaults', async () => {
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+ \(revision \S+\)\n$/);
    for (const spelling of [['version'], ['-v'], ['-V']]) expect(await cli(spelling)).toMatchObject({ code: 0, stdout: version.stdout });
    const help = await cli(['start', '--help']);
    expect(help.stdout).toContain('(default: 8888)');
    expect(help.stdout).toMatch(/--log-format <value> +config logFormat \(env TRIBUTARY_LOG_FORMAT\) \(default: "auto"\)/);
    expect(help.stdout).toContain('(default: data/<name>)');
    expect((await cli(['--help'])).stdout).toMatch(/status \[options\]/);
  });

  it('an unknown command lists the commands there are', async () => {
    const unknown = await cli(['statsu']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe("tributary: unknown command 'statsu'. Commands: start (the default), keygen, status, health, version; `tributary <command> --help` for one's options.");
  });

  it('keygen prints the public key the node serves', async () => {
    const keygen = await cli(['keygen', '--data-dir', node.dataDir]);
    expect(keygen.stdout.trim()).toBe((await api.get('/cluster/localNode')).json.node.publicKey);
  });

  it('status prints the nodes like nodetool status; an unreachable URL is one line and exit 1', async () => {
    const status = await cli(['status', '--url', node.url]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`Cluster seen from ${node.url}: 1 node(s), 1 Joined`);
    expect(status.stdout).toMatch(new RegExp(`^UN +node-1 +127\\.0\\.0\\.1:${node.httpPort} +Joined +true +100\\.0% +\\d+ +\\S+ +local$`, 'm'));
    expect(status.stdout).toContain('No transfers running.');
    const down = await cli(['status', '--url', `http://127.0.0.1:${await freePort()}`]);
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^tributary: cannot reach http:\/\/127\.0\.0\.1:\d+\/_cat\/nodes\?format=json: /)]);
  });
});

describe('logs - format, access lines and the node key', () => {
  it('json lines carry the node once, and one access line per request', async () => {
    await api.get('/cluster/localNode?probe=1');
    const lines = node.output.split('\n').filter((line) => line.startsWith('{'));
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(line.match(/"node":/g), line).toHaveLength(1);
    const access = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && entry.path === '/cluster/localNode');
    expect(access.at(-1)).toMatchObject({ level: 30, node: 'node-1', method: 'GET', path: '/cluster/localNode', status: 200, ms: expect.any(Number) });
  });

  it('a brand-new data folder says nothing of an unclean stop; a restart after kill -9 reads every record back and says so', async () => {
    const fresh = await NodeProcess.start({ name: 'fresh', args: ['--log-level', 'info', '--log-format', 'json'] });
    await until('the fresh node to log its start', async () => fresh.output.includes('node started'), 10_000);
    expect(fresh.output).not.toContain('the last stop was not clean');
    await fresh.kill('SIGKILL');
    await fresh.launch();
    await until('the restarted node to log its check', async () => fresh.output.includes('the last stop was not clean: every record was read back'), 10_000);
    await fresh.restart();
    expect(fresh.output).not.toContain('the last stop was not clean');
  });

  it('--log-format pretty writes readable lines; --access-log-level silent writes no access lines', async () => {
    const pretty = await NodeProcess.start({ name: 'pretty', args: ['--log-level', 'info', '--log-format', 'pretty', '--access-log-level', 'silent'] });
    await client(pretty).get('/health');
    await pretty.kill('SIGTERM');
    expect(pretty.output).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: pretty: node started/m);
    expect(pretty.output).not.toMatch(/^\{/m);
    expect(pretty.output).not.toContain('request');
  });
});

/** Starts the CLI expecting it to fail; resolves with its exit code and stderr lines. */
async function failedStart(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stderr: string[] }> {
  const result = await cli(['start', '--log-level', 'warn', ...args], env);
  return { code: result.code, stderr: result.stderr.trim().split('\n') };
}

describe('start-up failures - one line each', () => {
  let blocker: Server;
  let takenPort: number;
  beforeAll(async () => {
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    takenPort = (blocker.address() as { port: number }).port;
  });
  afterAll(() => blocker.close());

  it('an HTTP port taken', async () => {
    const failure = await failedStart(['--data-dir', temporaryDataDir(), '--http-port', String(takenPort), '--peer-port', String(await freePort())]);
    expect(failure).toEqual({ code: 1, stderr: [`tributary: cannot listen for HTTP on 127.0.0.1:${takenPort}: listen EADDRINUSE: address already in use 127.0.0.1:${takenPort}`] });
  });

  it('a peer port taken', async () => {
    const failure = await failedStart(['--data-dir', temporaryDataDir(), '--http-port', String(await freePort()), '--peer-port', String(takenPort)]);
    expect(failure.code).toBe(1);
    expect(failure.stderr).toEqual([expect.stringMatching(new RegExp(`^tributary: cannot listen for peers on 127\\.0\\.0\\.1:${takenPort} \\(is the port taken\\?\\)`))]);
  });

  it('a data folder another node holds', async () => {
    const failure = await failedStart(['--data-dir', node.dataDir, '--http-port', String(await freePort()), '--peer-port', String(await freePort())]);
    expect(failure.code).toBe(1);
    expect(failure.stderr).toEqual([expect.stringMatching(/^tributary: cannot open database in .* \(is another node using this data folder\?\) IO error: lock .*LOCK/)]);
  });

  it('a bad config names its source: variable, flag or file', async () => {
    expect(await failedStart([], { TRIBUTARY_HTTP_PORT: 'eighty' })).toEqual({ code: 2, stderr: ["tributary: invalid config key 'httpPort' from TRIBUTARY_HTTP_PORT: expected a number, got 'eighty'"] });
    expect(await failedStart(['--log-format', 'xml'])).toEqual({ code: 2, stderr: [expect.stringMatching(/^tributary: invalid config key 'logFormat' from --log-format: /)] });
    const missing = join(temporaryDataDir(), 'missing.json');
    expect(await failedStart(['--config', missing])).toEqual({ code: 2, stderr: [expect.stringMatching(new RegExp(`^tributary: cannot read config file ${missing}: ENOENT`))] });
  });
});

describe('cli - stop with stdin', () => {
  it('a node started with TRIBUTARY_STOP_WITH_STDIN=1 stops when its stdin closes', async () => {
    const child = spawn(process.execPath, [...NODE_FLAGS_GIVEN, MAIN, 'start', '--data-dir', temporaryDataDir(), '--http-port', String(await freePort()), '--peer-port', String(await freePort()), '--log-level', 'warn'], {
      env: { ...process.env, TRIBUTARY_STOP_WITH_STDIN: '1' },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const started = Date.now();
    child.stdin!.end();
    const code = await Promise.race([exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(6_000);
  });
});
