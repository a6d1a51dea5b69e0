// Contributors and domains across a cluster: three nodes, replicas 2. Payloads are
// posted through every node, so each node records part of the published-to index; every
// node answers the merged lists, and every node's domain-limited search gives the counts
// the test computes itself.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinedCluster } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';
import { tokens } from '../kit/search-fixture.js';
import { Prng } from '../sim/prng.js';

interface Board { id: string; region: string; slots: number }
interface Sensor { contributor: string; site: string }

const prng = new Prng(909);
const boardId = (n: number) => `board-${String(n).padStart(5, '0')}`;
const sensorId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const boards: Board[] = Array.from({ length: 30 }, (_, i) => ({ id: boardId(i + 1), region: prng.pick(['north', 'south', 'east']), slots: prng.pick([2, 8, 32]) }));
const sensors: Sensor[] = Array.from({ length: 10 }, (_, i) => ({ contributor: sensorId(i + 1), site: prng.pick(['lab', 'roof']) }));
// Board 31 publishes before it is registered.
const boardIds = Array.from({ length: 31 }, (_, i) => boardId(i + 1));
const sensorIds = sensors.map((sensor) => sensor.contributor);
const WORDS = ['storm', 'calm', 'rain', 'fog'];
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString();
const readings = Array.from({ length: 1200 }, (_, i) => ({ board: prng.pick(boardIds), level: prng.pick(['info', 'warn']), summary: `${prng.pick(WORDS)} ${prng.pick(WORDS)}`, at: at(i) }));
const events = Array.from({ length: 600 }, (_, i) => ({ who: prng.pick([...boardIds, ...sensorIds]), level: prng.pick(['info', 'warn']), summary: prng.pick(WORDS), at: at(i * 2) }));
const plain = Array.from({ length: 200 }, (_, i) => ({ level: 'info', summary: prng.pick(WORDS), at: at(i) }));

const STREAMS: Record<string, Record<string, unknown>> = {
  readings: { board: { type: 'contributor', definition: 'board' }, level: { type: 'string' }, summary: { type: 'string' }, at: { type: 'datetime' } },
  events: { who: { type: 'contributor' }, level: { type: 'string' }, summary: { type: 'string' }, at: { type: 'datetime' } },
  plain: { level: { type: 'string' }, summary: { type: 'string' }, at: { type: 'datetime' } },
};
const DATA: Record<string, object[]> = { readings, events, plain };
const uri = (name: string) => `/streams/demo/plant/${name}`;
const ALL_URIS = Object.keys(STREAMS).map(uri);
const DOMAIN = '/domain/demo/ops/north';
const NORTH = {
  contributorFilters: [
    { contributor: '/contributors/demo/board', query: "region == 'north' || slots == 32" },
    { contributor: '/contributors/demo/sensor', query: "site == 'lab'" },
  ],
};

function expected(registered: Board[]) {
  const board = new Set(registered.filter((b) => b.region === 'north' || b.slots === 32).map((b) => b.id));
  const any = new Set([...board, ...sensors.filter((s) => s.site === 'lab').map((s) => s.contributor)]);
  return { readings: readings.filter((p) => board.has(p.board)), events: events.filter((p) => any.has(p.who)) };
}

let nodes: NodeProcess[];

async function ok(response: Promise<{ status: number; text: string }>, what: string): Promise<void> {
  const done = await response;
  if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 300)}`);
}

beforeAll(async () => {
  nodes = await startJoinedCluster(3);
  const on = (i: number) => client(nodes[i % 3]!);
  await ok(on(0).put('/contributors/demo/board', { schema: { type: 'record', properties: { id: { type: 'contributor' }, region: { type: 'string' }, slots: { type: 'int' } } } }), 'board type');
  await ok(on(1).put('/contributors/demo/sensor', { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, site: { type: 'string' } } } }), 'sensor type');
  for (const [i, board] of boards.entries()) await ok(on(i).put(`/contributors/demo/board/instances/${board.id}`, board), board.id);
  for (const [i, sensor] of sensors.entries()) await ok(on(i).put(`/contributors/demo/sensor/instances/${sensor.contributor}`, sensor), sensor.contributor);
  for (const [name, properties] of Object.entries(STREAMS)) {
    await ok(on(0).put(uri(name), { schema: { version: '1', topDef: { type: 'record', properties } } }), name);
    await ok(on(0).put(`${uri(name)}/repository`, { name: 'ssr', config: {} }), `${name} repository`);
    await ok(on(0).put(`${uri(name)}/policy`, { replicas: 2, ring_size: 16, hash_payload: { bytes: 64 } }), `${name} policy`);
    await ok(on(0).put(`${uri(name)}/taxonomy`, { taxonomy: { nodes: [{ name: 'severity', expression: ['level'] }] } }), `${name} taxonomy`);
  }
  await ok(on(1).put(DOMAIN, NORTH), 'domain');
  let turn = 0;
  for (const [name, rows] of Object.entries(DATA)) {
    for (let i = 0; i < rows.length; i += 100) await ok(on(turn++).post(uri(name), rows.slice(i, i + 100)), `POST ${name}`);
  }
}, 180_000);
afterAll(cleanup);

async function answers(node: NodeProcess) {
  const post = async (operation: string, body: object) => {
    const response = await client(node).post(`/ssr/demo/${operation}`, { domain: DOMAIN, ...body });
    expect(response.status, `${node.name} ${operation}: ${response.text}`).toBe(200);
    return response.json;
  };
  return {
    total: (await post('_search', { uris: ALL_URIS, query: {}, count: 0 })).total as number,
    storms: (await post('_search', { uris: ALL_URIS, query: { base: "search('storm')" }, count: 20 })).total as number,
    facets: (await post('_facet', { uris: ALL_URIS, query: {}, facets: [{ type: 'taxonomy', dimension: 'severity' }] })).facets,
    buckets: (await post('_timeRangeHistogram', { uris: ALL_URIS, query: {}, range: { start: '2024-01-01T00:00:00Z', end: '2024-03-31T23:59:59Z' }, frequency: 'DAY' })).histogram.buckets as number[],
    discover: (await post('_discover', { query: {}, results: { topN: 2 } })).streams.map((stream: { name: string; atLeastNMoreResults: number; values: unknown[] }) => [stream.name, stream.atLeastNMoreResults + stream.values.length]),
  };
}

async function expectAnswers(registered: Board[]) {
  const rows = expected(registered);
  const all = [...rows.readings, ...rows.events];
  const levels = (level: string) => all.filter((row) => row.level === level).length;
  const results = await Promise.all(nodes.map(answers));
  for (const result of results) {
    expect(result.total).toBe(all.length);
    expect(result.storms).toBe(all.filter((row) => tokens(row.summary).includes('storm')).length);
    expect(result.facets[0].children.map((child: { value: string; count: number }) => [child.value, child.count]).sort()).toEqual([['info', levels('info')], ['warn', levels('warn')]]);
    expect(result.buckets.reduce((sum, count) => sum + count, 0)).toBe(all.length);
    expect(result.discover.sort()).toEqual([[uri('events'), rows.events.length], [uri('readings'), rows.readings.length]]);
    expect(result).toEqual(results[0]);
  }
}

describe('cluster domains - three nodes, replicas 2', () => {
  it('every node lists the same definitions and the domain contributors', async () => {
    for (const node of nodes) {
      const api = client(node);
      expect((await api.get('/contributors/demo')).json).toEqual({ instances: ['board', 'sensor'] });
      expect((await api.get('/contributors/demo/board/instances')).json.instances).toHaveLength(boards.length);
      expect((await api.get(DOMAIN)).json).toEqual(NORTH);
      const groups = (await api.get(`${DOMAIN}/contributors`)).json.contributors;
      expect(groups.map((group: { items: unknown[] }) => group.items.length)).toEqual([
        boards.filter((b) => b.region === 'north' || b.slots === 32).length,
        sensors.filter((s) => s.site === 'lab').length,
      ]);
      expect((await api.get(`${DOMAIN}/streams`)).json).toEqual({ streams: [uri('events'), uri('readings')] });
    }
  });

  it('a contributor that published through different nodes lists every stream on every node', async () => {
    const id = boards[0]!.id;
    await ok(client(nodes[1]!).post(uri('readings'), [{ board: id, level: 'info', summary: 'calm', at: at(5) }]), 'readings');
    await ok(client(nodes[2]!).post(uri('events'), [{ who: id, level: 'info', summary: 'calm', at: at(5) }]), 'events');
    readings.push({ board: id, level: 'info', summary: 'calm', at: at(5) });
    events.push({ who: id, level: 'info', summary: 'calm', at: at(5) });
    for (const node of nodes) {
      expect((await client(node).get(`/contributors/demo/board/instances/${id}/streams`)).json).toEqual({ streams: [uri('events'), uri('readings')] });
    }
  });

  it('domain-limited searches give the computed counts on every node, also after a contributor is added', async () => {
    await expectAnswers(boards);
    const late: Board = { id: boardId(31), region: 'north', slots: 2 };
    await ok(client(nodes[2]!).put(`/contributors/demo/board/instances/${late.id}`, late), 'late board');
    expect(expected([...boards, late]).readings.length).toBeGreaterThan(expected(boards).readings.length);
    await expectAnswers([...boards, late]);
    for (const node of nodes) expect((await client(node).post('/ssr/demo/_search', { uris: ALL_URIS, domain: '/domain/demo/ops/missing' })).status).toBe(404);
  });
});
