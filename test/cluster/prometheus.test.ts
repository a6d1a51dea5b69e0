// A real Prometheus server scrapes a 3-node cluster: it must see every node up and a rate of
// ingested payloads, read back through Prometheus's HTTP API. The test installs nothing:
// without a `prometheus` binary on PATH it is skipped and says how to get one (.ci/run installs
// the Debian package).

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinedCluster, until } from '../kit/cluster.js';
import { cleanup, client, freePort, sleep, type NodeProcess } from '../kit/node-process.js';

const PROMETHEUS = findPrometheus();
const HOW_TO_GET_IT = 'prometheus is not on PATH: install it (Debian/Ubuntu: apt-get install prometheus; .ci/run does) or put a prometheus binary on PATH';
const STREAM = '/streams/demo/scrape/cpu';
const schema = { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, at: { type: 'datetime' }, cpu: { type: 'double' } } } };

function findPrometheus(): string | undefined {
  try {
    return execFileSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

if (PROMETHEUS === undefined) console.warn(`[skipped] metrics - a real Prometheus: ${HOW_TO_GET_IT}`);

let nodes: NodeProcess[] = [];
let prometheus: ChildProcess | undefined;
let prometheusUrl = '';
let prometheusOutput = '';
let workDir = '';

async function startPrometheus(targets: string[]): Promise<void> {
  workDir = mkdtempSync(join(tmpdir(), 'tributary-prometheus-'));
  const port = await freePort();
  prometheusUrl = `http://127.0.0.1:${port}`;
  writeFileSync(
    join(workDir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      '  - job_name: tributary',
      '    static_configs:',
      `      - targets: [${targets.map((target) => `'${target}'`).join(', ')}]`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(PROMETHEUS!, [
    `--config.file=${join(workDir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(workDir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  prometheus.stdout!.on('data', (chunk: Buffer) => (prometheusOutput += chunk.toString()));
  prometheus.stderr!.on('data', (chunk: Buffer) => (prometheusOutput += chunk.toString()));
  await until('Prometheus to be ready', async () => {
    if (prometheus!.exitCode !== null) throw new Error(`prometheus exited ${prometheus!.exitCode}: ${prometheusOutput}`);
    return (await fetch(`${prometheusUrl}/-/ready`)).ok;
  }, 30_000);
}

async function stopPrometheus(): Promise<void> {
  const child = prometheus;
  if (child !== undefined && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => child.kill('SIGKILL'))]);
  }
  if (workDir !== '') rmSync(workDir, { recursive: true, force: true });
}

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

async function query(expression: string): Promise<Sample[]> {
  const response = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expression)}`);
  const body = (await response.json()) as { status: string; data: { resultType: string; result: Sample[] }; error?: string };
  if (body.status !== 'success') throw new Error(`query ${expression}: ${body.error}`);
  return body.data.result;
}

describe.skipIf(PROMETHEUS === undefined)('metrics - a real Prometheus scrapes a 3-node cluster', () => {
  beforeAll(async () => {
    nodes = await startJoinedCluster(3);
    const api = client(nodes[0]!);
    expect((await api.put(STREAM, { schema })).status).toBe(200);
    expect((await api.put(`${STREAM}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
    await startPrometheus(nodes.map((node) => `127.0.0.1:${node.httpPort}`));
  }, 180_000);
  afterAll(async () => {
    await stopPrometheus();
    await cleanup();
  });

  it('sees every node up and a rate of ingested payloads through its HTTP API', async () => {
    const up = await until('up == 1 for three targets', async () => {
      const samples = await query('up{job="tributary"}');
      return samples.length === 3 && samples.every((sample) => sample.value[1] === '1') ? samples : undefined;
    }, 60_000);
    expect(up.map((sample) => sample.metric.instance).sort()).toEqual(nodes.map((node) => `127.0.0.1:${node.httpPort}`).sort());

    // 100 payloads every 200 ms to each node in turn, for 6 s: about 500 payloads/s in all.
    let sent = 0;
    const deadline = Date.now() + 6_000;
    for (let round = 0; Date.now() < deadline; round += 1) {
      const batch = Array.from({ length: 100 }, (_, index) => ({ host: `h${index % 5}`, at: new Date(Date.UTC(2024, 0, 1) + sent + index).toISOString(), cpu: index }));
      const response = await client(nodes[round % 3]!).post(STREAM, batch);
      expect(response.status).toBe(200);
      sent += batch.length;
      await sleep(200);
    }

    const rate = await until('a rate of ingested payloads', async () => {
      const samples = await query('sum by (stream) (rate(tributary_ingest_payloads_total[5s]))');
      const ours = samples.find((sample) => sample.metric.stream === 'demo/scrape/cpu');
      return ours !== undefined && Number(ours.value[1]) > 0 ? Number(ours.value[1]) : undefined;
    }, 30_000);
    // Sent at ~400–500 payloads/s (slower on a busy machine): the rate is of that order.
    expect(rate).toBeGreaterThan(20);
    expect(rate).toBeLessThan(5_000);

    // Every payload is counted once, on the node that accepted it, summed across the three.
    const total = await until(`the counters to reach ${sent}`, async () => {
      const samples = await query('sum(tributary_ingest_payloads_total{stream="demo/scrape/cpu"})');
      return samples.length === 1 && Number(samples[0]!.value[1]) === sent ? sent : undefined;
    }, 30_000);
    expect(total).toBe(sent);

    // Peer traffic (replicated writes) is visible per node, and each node reports three members.
    const peers = await query('sum by (instance) (tributary_peer_messages_total{direction="in"})');
    expect(peers).toHaveLength(3);
    for (const sample of peers) expect(Number(sample.value[1])).toBeGreaterThan(0);
    const members = await query('sum by (instance) (tributary_cluster_members{state="Joined"})');
    expect(members.map((sample) => sample.value[1])).toEqual(['3', '3', '3']);
  }, 180_000);
});
