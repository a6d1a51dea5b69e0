// GET /monitoring/:tenant[/:service] against real nodes: every number checked is computed by
// the test from what it did (payloads posted and refused, bytes, timestamps, definitions
// written, SSE clients opened).

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/lib/json.js';
import { partitionOf } from '../../src/streams/partitioner.js';
import { type BlockEntry, packBlocks } from '../../src/storage/tsr-block.js';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';

const TSR = '/streams/demo/plant/readings';
const SSR = '/streams/demo/plant/notes';
const LIVE = '/streams/demo/plant/live';
const OTHER = '/streams/other/plant/readings';

let node: NodeProcess;
let plain: NodeProcess;
let api: ReturnType<typeof client>;
const sse: SseClient[] = [];

const schema = (properties: object) => ({ schema: { version: '7', topDef: { type: 'record', properties } } });
const at = (i: number) => new Date(Date.UTC(2024, 2, 1) + i * 60_000).toISOString();
// Keys in sorted order: the stored text is canonical JSON, and the test computes the same.
const reading = (i: number) => ({ at: at(i), sensor: `s${i % 3}`, value: i * 1.5 });
const note = (i: number) => ({ at: at(i), text: `note number ${i} about pump ${i % 4}` });

async function ok(promise: Promise<{ status: number; text: string; json: any }>, what: string): Promise<any> {
  const done = await promise;
  if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 300)}`);
  return done.json;
}

async function details(tenant: string, service: string, query = ''): Promise<any> {
  const body = await ok(api.get(`/monitoring/${tenant}/${service}${query}`), `${service}`);
  expect(body.nodes).toHaveLength(1);
  expect(body.nodes[0].node).toBe('mon');
  return body.nodes[0].details;
}

const bytesOf = (payloads: object[]) => payloads.reduce((sum, payload) => sum + Buffer.byteLength(canonicalJson(payload)), 0);
const TSR_POLICY = { replicas: 3, ring_size: 128, hash_payload: { bytes: 128 } };

/**
 * What a tsr write stores of the accepted payloads of one POST: for each partition, its
 * payloads packed into blocks (src/storage/tsr-block.ts), each with its place in the POST.
 */
function storedBlockBytes(posted: ReadonlyArray<Record<string, unknown> | undefined>): number {
  const byPartition = new Map<number, BlockEntry[]>();
  posted.forEach((payload, position) => {
    if (payload === undefined) return;
    const partition = partitionOf(payload, TSR_POLICY);
    byPartition.set(partition, [...(byPartition.get(partition) ?? []), { timestamp: Date.parse(payload.at as string), payload, position }]);
  });
  return [...byPartition.values()].flatMap(packBlocks).reduce((sum, block) => sum + Buffer.byteLength(block.text), 0);
}

beforeAll(async () => {
  [node, plain] = await Promise.all([
    NodeProcess.start({ name: 'mon', args: ['--monitoring-actors-enabled', '--default-tenants', 'demo,other'] }),
    NodeProcess.start({ name: 'plain' }),
  ]);
  api = client(node);
  const ts = { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] };
  await ok(api.put(TSR, schema({ at: ts, sensor: { type: 'string' }, value: { type: 'double', optional: false } })), 'tsr stream');
  await ok(api.put(`${TSR}/repository`, { name: 'tsr', config: {} }), 'tsr mapping');
  await ok(api.put(SSR, schema({ at: ts, text: { type: 'string' } })), 'ssr stream');
  await ok(api.put(`${SSR}/repository`, { name: 'ssr', config: {} }), 'ssr mapping');
  await ok(api.put(`${SSR}/policy`, { replicas: 1, ring_size: 8, hash_payload: { bytes: 64 } }), 'ssr policy');
  await ok(api.put(LIVE, schema({ at: ts, value: { type: 'double' } })), 'live stream');
  await ok(api.put(OTHER, schema({ at: ts, value: { type: 'double' } })), 'other tenant stream');
}, 60_000);

afterAll(async () => {
  for (const client of sse) client.close();
  await cleanup();
});

describe('monitoring - services', () => {
  it('GET /monitoring/:tenant lists the ten services of the spec', async () => {
    const body = await ok(api.get('/monitoring/demo'), 'list');
    expect(body.instances.sort()).toEqual(['actors', 'audit', 'cluster', 'execution', 'handoff', 'ssr', 'streams', 'system', 'transport', 'tsr']);
    expect((await api.get('/monitoring/demo/nothing')).status).toBe(404);
    expect((await api.get('/monitoring/nobody/streams')).status).toBe(404);
  });

  it('streams - counts accepted and refused payloads, bytes, last write; uri narrows to one stream', async () => {
    const good = Array.from({ length: 40 }, (_, i) => reading(i));
    const bad = [{ at: at(0), sensor: 's', value: 'high' }, { at: at(1), sensor: 's' }];
    const before = Date.now();
    expect((await api.post(TSR, [...good.slice(0, 20), ...bad])).status).toBe(500);
    await ok(api.post(TSR, good.slice(20)), 'post');
    const streams = (await details('demo', 'streams')).streams;
    expect(streams.map((stream: any) => stream.stream).sort()).toEqual([LIVE, SSR, TSR]);
    const tsr = (await details('demo', 'streams', `?uri=${encodeURIComponent(TSR)}`)).streams;
    expect(tsr).toHaveLength(1);
    // Bytes as stored: a tsr stream's payloads are stored in blocks.
    const bytes = storedBlockBytes(good.slice(0, 20)) + storedBlockBytes(good.slice(20));
    expect(tsr[0]).toMatchObject({ stream: TSR, accepted: 40, refused: 2, bytes, schemaVersion: '7', repository: 'tsr' });
    expect(tsr[0].policy).toEqual({ replicas: 3, ring_size: 128, hash_payload: { bytes: 128 } });
    expect(Date.parse(tsr[0].lastWrite)).toBeGreaterThanOrEqual(before - 1000);
    expect(tsr[0].ratePerSecond).toBeCloseTo(40 / 60, 5);
    expect((await details('demo', 'streams', `?uri=${encodeURIComponent(OTHER)}`)).streams).toEqual([]);
    expect((await details('system', 'streams')).streams.map((stream: any) => stream.stream)).toContain(OTHER);
  });

  it('tsr - records, bytes, partitions, oldest and newest timestamp of what was stored', async () => {
    const internal = await ok(api.get('/_internal/repos/tsr/demo/plant/readings'), 'internal');
    const [stream] = (await details('demo', 'tsr')).streams;
    expect(stream).toEqual({
      stream: TSR,
      records: 40,
      bytes: bytesOf(Array.from({ length: 40 }, (_, i) => reading(i))),
      partitions: Object.keys(internal.partitions).map(Number).sort((a, b) => a - b),
      oldest: at(0),
      newest: at(39),
    });
  });

  it('ssr - payloads and partitions held, index pending until a search builds it, then its memory', async () => {
    const notes = Array.from({ length: 25 }, (_, i) => note(i));
    await ok(api.post(SSR, notes), 'notes');
    const internal = await ok(api.get('/_internal/repos/ssr/demo/plant/notes'), 'internal');
    const partitions = Object.keys(internal.partitions).map(Number).sort((a, b) => a - b);
    const before = (await details('demo', 'ssr')).streams[0];
    expect(before).toMatchObject({ stream: SSR, payloads: 25, payloadBytes: bytesOf(notes), partitions });
    expect(before.index).toEqual({ memoryBytes: 0, built: [], building: [], pending: partitions });
    await ok(api.post('/ssr/demo/_search', { uris: [SSR], query: { base: "search('pump')" }, count: 5, from: 0 }), 'search');
    const after = (await details('demo', 'ssr')).streams[0];
    // A search indexes every partition of the stream this node owns, empty ones too.
    expect(after.index.built).toEqual(expect.arrayContaining(partitions));
    expect(after.index.pending).toEqual([]);
    expect(after.index.memoryBytes).toBeGreaterThan(0);
  });

  it('audit - the definitions this test wrote, from which version to which, by this node; system also sees membership', async () => {
    await ok(api.put(`${LIVE}/policy`, { replicas: 1, ring_size: 16, hash_payload: { bytes: 8 } }), 'policy 1');
    await ok(api.put(`${LIVE}/policy`, { replicas: 2, ring_size: 16, hash_payload: { bytes: 8 } }), 'policy 2');
    const entries = (await details('demo', 'audit')).entries;
    const policy = entries.filter((entry: any) => entry.key === 'policy/demo/plant/live');
    expect(policy.map((entry: any) => [entry.fromVersion, entry.toVersion, entry.by, entry.deleted])).toEqual([
      [null, '1', 'mon', false],
      ['1', '2', 'mon', false],
    ]);
    expect(entries.some((entry: any) => entry.key === 'stream/demo/plant/readings' && entry.toVersion === '1')).toBe(true);
    expect(entries.every((entry: any) => entry.tenant === 'demo')).toBe(true);
    const system = (await details('system', 'audit')).entries;
    expect(system.some((entry: any) => entry.key === 'stream/other/plant/readings')).toBe(true);
    expect(system.some((entry: any) => entry.change === 'membership' && entry.node === 'mon' && entry.toState === 'Joined')).toBe(true);
  });

  it('actors - off by default; when enabled, the query runners and SSE clients with their queues', async () => {
    expect((await ok(client(plain).get('/monitoring/demo/actors'), 'plain actors')).nodes[0].details.enabled).toBe(false);
    const session = (await ok(api.post('/execution/demo/sessions'), 'session')).session as string;
    const queries = await ok(api.put(session, { queries: [{ id: 'watch', body: `from ${LIVE} select value` }] }), 'queries');
    const outputUri = queries[0].query.outputs[0].outputUri as string;
    sse.push(await SseClient.connect(`${node.url}${outputUri}`), await SseClient.connect(`${node.url}/output/cluster`));
    await ok(api.put(`${session}/queries/watch/_start`), 'start');
    const tasks = (await details('demo', 'actors')).tasks;
    expect(tasks.filter((task: any) => task.type === 'query-runner')).toEqual([
      { type: 'query-runner', session, query: 'watch', state: 'running', queuedRows: 0, queueDepth: 0 },
    ]);
    const clients = tasks.filter((task: any) => task.type === 'sse-client');
    expect(clients.map((task: any) => task.path)).toEqual([outputUri]);
    expect(clients[0].queueDepth).toBe(0);
    const all = (await details('system', 'actors')).tasks;
    expect(all.filter((task: any) => task.type === 'sse-client').map((task: any) => task.path).sort()).toEqual(['/output/cluster', outputUri].sort());
  });

  it('execution - uri narrows to one session; system, handoff, cluster and transport answer for the node', async () => {
    const sessions = (await details('demo', 'execution')).sessions;
    expect(sessions).toHaveLength(1);
    expect((await details('demo', 'execution', `?uri=${encodeURIComponent(sessions[0].session)}`)).sessions).toEqual(sessions);
    expect((await details('other', 'execution')).sessions).toEqual([]);
    const system = await details('demo', 'system');
    expect(system.metrics.rssBytes).toBeGreaterThan(0);
    expect(system.metrics.eventLoopDelayMs.max).toBeGreaterThanOrEqual(system.metrics.eventLoopDelayMs.p50);
    expect(system.metrics.gc.count).toBeGreaterThanOrEqual(0);
    expect(system.metrics.cpu.userMs).toBeGreaterThan(0);
    expect(system.metrics.openFiles).toBeGreaterThan(3);
    expect(await details('demo', 'handoff')).toEqual({ targets: [], records: 0, pendingDrops: 0, pendingSyncs: 0 });
    expect((await details('demo', 'cluster')).members).toEqual([{ name: 'mon', state: 'Joined', available: true }]);
    expect(await details('demo', 'transport')).toEqual({ peers: [] });
    expect((await ok(api.get('/monitoring/demo/streams?node=local'), 'local')).nodes).toHaveLength(1);
    expect((await api.get('/monitoring/demo/tsr?uri=x')).status).toBe(400);
  });
});
