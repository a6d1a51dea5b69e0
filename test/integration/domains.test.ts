// The Domains table and domain-limited search over HTTP against one real node process.
// Every expected answer is computed by the test from the data it posted.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { tokens } from '../kit/search-fixture.js';
import { Prng } from '../sim/prng.js';

// ---- the fixture: two contributor types, four ssr streams, payloads naming contributors ----

interface Board { id: string; region: string; slots: number; vendor: string }
interface Sensor { contributor: string; site: string; kind: string }

const prng = new Prng(505);
const boardId = (n: number) => `board-${String(n).padStart(5, '0')}`;
const sensorId = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const boards: Board[] = Array.from({ length: 40 }, (_, i) => ({
  id: boardId(i + 1), region: prng.pick(['north', 'south', 'east', 'west']), slots: prng.pick([2, 4, 8, 16, 32]), vendor: prng.pick(['acme', 'globex', 'initech']),
}));
const sensors: Sensor[] = Array.from({ length: 12 }, (_, i) => ({ contributor: sensorId(i + 1), site: prng.pick(['lab', 'roof', 'yard']), kind: prng.pick(['temp', 'humidity']) }));
// Ids 41-45 and sensors 13-14 publish without being registered (yet).
const boardIds = Array.from({ length: 45 }, (_, i) => boardId(i + 1));
const sensorIds = Array.from({ length: 14 }, (_, i) => sensorId(i + 1));
const WORDS = ['storm', 'calm', 'rain', 'sunny', 'fog'];
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 3_600_000).toISOString();
const readings = Array.from({ length: 1500 }, (_, i) => ({ board: prng.pick(boardIds), level: prng.pick(['info', 'warn', 'error']), temperature: prng.int(-10, 35), summary: `${prng.pick(WORDS)} ${prng.pick(WORDS)}`, at: at(i) }));
const sensed = Array.from({ length: 600 }, (_, i) => ({ sensor: prng.pick(sensorIds), temperature: prng.int(-10, 35), summary: prng.pick(WORDS), at: at(i * 2) }));
const events = Array.from({ length: 500 }, (_, i) => ({ origin: { who: prng.pick([...boardIds, ...sensorIds]) }, level: prng.pick(['info', 'warn', 'error']), summary: prng.pick(WORDS), at: at(i * 3) }));
const plain = Array.from({ length: 300 }, (_, i) => ({ host: `web-${i % 5}`, level: 'info', summary: prng.pick(WORDS), at: at(i) }));

const STREAMS = {
  readings: { board: { type: 'contributor', definition: 'board' }, level: { type: 'string' }, temperature: { type: 'double' }, summary: { type: 'string' }, at: { type: 'datetime' } },
  sensed: { sensor: { type: 'contributor', uri: { tenant: 'demo', collection: 'sensor' } }, temperature: { type: 'double' }, summary: { type: 'string' }, at: { type: 'datetime' } },
  events: { origin: { type: 'record', properties: { who: { type: 'contributor' } } }, level: { type: 'string' }, summary: { type: 'string' }, at: { type: 'datetime' } },
  plain: { host: { type: 'string' }, level: { type: 'string' }, summary: { type: 'string' }, at: { type: 'datetime' } },
};
const DATA: Record<keyof typeof STREAMS, object[]> = { readings, sensed, events, plain };
const uri = (name: string) => `/streams/demo/plant/${name}`;
const ALL_URIS = Object.keys(STREAMS).map(uri);

const NORTH = {
  contributorFilters: [
    { contributor: '/contributors/demo/board', query: "region == 'north' && slots >= 8" },
    { contributor: '/contributors/demo/board', query: "vendor == 'initech' || slots == 2" },
    { contributor: '/contributors/demo/sensor', query: "site == 'lab' && kind == 'temp'" },
  ],
  userData: { owner: 'ops', colour: 'blue' },
};
const northBoard = (board: Board) => (board.region === 'north' && board.slots >= 8) || board.vendor === 'initech' || board.slots === 2;
const northSensor = (sensor: Sensor) => sensor.site === 'lab' && sensor.kind === 'temp';

/** The domain's contributors, computed from the registered instances. */
function allowed(registeredBoards: Board[]) {
  const board = new Set(registeredBoards.filter(northBoard).map((b) => b.id));
  const sensor = new Set(sensors.filter(northSensor).map((s) => s.contributor));
  return { board, sensor, any: new Set([...board, ...sensor]) };
}

/** Payloads of each stream that the domain keeps. */
function kept(ids: ReturnType<typeof allowed>): Record<keyof typeof STREAMS, Array<{ summary: string; level?: string; at: string }>> {
  return {
    readings: readings.filter((p) => ids.board.has(p.board)),
    sensed: sensed.filter((p) => ids.sensor.has(p.sensor)),
    events: events.filter((p) => ids.any.has(p.origin.who)),
    plain: [],
  };
}

async function loadDomainFixture(node: { url: string }, policy?: object): Promise<void> {
  const api = client(node);
  const ok = async (response: Promise<{ status: number; text: string }>, what: string) => {
    const done = await response;
    if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 300)}`);
  };
  await ok(api.put('/contributors/demo/board', { schema: { type: 'record', properties: { id: { type: 'contributor' }, region: { type: 'string' }, slots: { type: 'int' }, vendor: { type: 'string' } } } }), 'board type');
  await ok(api.put('/contributors/demo/sensor', { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, site: { type: 'string' }, kind: { type: 'string' } } } }), 'sensor type');
  for (const board of boards) await ok(api.put(`/contributors/demo/board/instances/${board.id}`, board), board.id);
  for (const sensor of sensors) await ok(api.put(`/contributors/demo/sensor/instances/${sensor.contributor}`, sensor), sensor.contributor);
  for (const [name, properties] of Object.entries(STREAMS)) {
    await ok(api.put(uri(name), { schema: { version: '1', topDef: { type: 'record', properties } } }), name);
    await ok(api.put(`${uri(name)}/repository`, { name: 'ssr', config: { defaultStringAnalyzer: 'standard' } }), `${name} repository`);
    if ('level' in properties) await ok(api.put(`${uri(name)}/taxonomy`, { taxonomy: { nodes: [{ name: 'severity', expression: ['level'] }] } }), `${name} taxonomy`);
    if (policy !== undefined) await ok(api.put(`${uri(name)}/policy`, policy), `${name} policy`);
  }
}

async function postData(nodes: Array<{ url: string }>): Promise<void> {
  let turn = 0;
  for (const [name, rows] of Object.entries(DATA)) {
    for (let i = 0; i < rows.length; i += 250) {
      const response = await client(nodes[turn++ % nodes.length]!).post(uri(name), rows.slice(i, i + 250));
      if (response.status !== 200) throw new Error(`POST ${name}: ${response.status} ${response.text.slice(0, 300)}`);
    }
  }
}

// ---- the tests ----

let api: ReturnType<typeof client>;

beforeAll(async () => {
  const node = await NodeProcess.start({ name: 'domains' });
  api = client(node);
  await loadDomainFixture(node);
  await postData([node]);
}, 120_000);
afterAll(cleanup);

async function post(path: string, body: object) {
  const response = await api.post(path, body);
  expect(response.status, `${path}: ${response.text}`).toBe(200);
  return response.json;
}

describe('domains - definitions', () => {
  it('PUT answers the full definition with a version; GET returns the same', async () => {
    const put = await api.put('/domain/demo/ops/north', NORTH);
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual(NORTH);
    const version = put.headers.get('service-config-version');
    expect(version).toBeTruthy();
    const get = await api.get('/domain/demo/ops/north');
    expect(get.status).toBe(200);
    expect(get.json).toEqual(NORTH);
    expect(get.headers.get('service-config-version')).toBe(version);
    expect(get.headers.get('valo-config-version')).toBe(version);
  });

  it('updates follow the 409 rule; DELETE answers 200 with a version, then 404', async () => {
    const first = await api.put('/domain/demo/lab/tmp', { contributorFilters: [{ contributor: '/contributors/demo/sensor', query: "site == 'lab'" }] });
    const version = first.headers.get('service-config-version')!;
    const second = await api.put('/domain/demo/lab/tmp', { contributorFilters: [] }, { 'Service-Config-Version': version });
    expect(second.status).toBe(200);
    const stale = await api.put('/domain/demo/lab/tmp', { contributorFilters: [{ contributor: 'board' }] }, { 'Service-Config-Version': version });
    expect(stale.status).toBe(409);
    expect(stale.json.error.message).toContain(`Service-Config-Version: ${second.headers.get('service-config-version')} `);
    expect((await api.get('/domain/demo/lab/tmp')).json).toEqual({ contributorFilters: [] });
    expect((await api.delete('/domain/demo/lab/tmp', { 'Service-Config-Version': version })).status).toBe(409);
    const removed = await api.delete('/domain/demo/lab/tmp');
    expect(removed.status).toBe(200);
    expect(removed.headers.get('service-config-version')).toBeTruthy();
    expect((await api.get('/domain/demo/lab/tmp')).status).toBe(404);
    expect((await api.delete('/domain/demo/lab/tmp')).status).toBe(404);
  });

  it('lists collections and domains', async () => {
    expect((await api.put('/domain/demo/ops/all-boards', { contributorFilters: [{ contributor: 'board', query: '' }] })).status).toBe(200);
    expect((await api.put('/domain/demo/site/roof', { contributorFilters: [{ contributor: 'sensor', query: "site == 'roof'" }] })).status).toBe(200);
    expect((await api.get('/domain/demo')).json).toEqual({ instances: ['ops', 'site'] });
    expect((await api.get('/domain/demo/ops')).json).toEqual({ instances: ['all-boards', 'north'] });
    expect((await api.get('/domain/demo/nothing')).status).toBe(404);
    expect((await api.get('/domain/nobody')).status).toBe(404);
  });

  it('a bad query, an unknown type or a bad body is 400 at PUT, and nothing is stored', async () => {
    const bad = await api.put('/domain/demo/ops/bad', { contributorFilters: [{ contributor: 'board', query: "region == 'north' &&" }] });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/^contributorFilters\[0\]\.query: line 1, column/);
    const unknown = await api.put('/domain/demo/ops/bad', { contributorFilters: [{ contributor: '/contributors/demo/pump', query: '' }] });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.message).toMatch(/'pump' does not exist/);
    expect((await api.put('/domain/demo/ops/bad', { contributorFilters: 'board' })).status).toBe(400);
    expect((await api.put('/domain/demo/ops/bad', { contributorFilters: [], userData: 'x' })).status).toBe(400);
    expect((await api.get('/domain/demo/ops/bad')).status).toBe(404);
  });
});

describe('domains - contributors and streams', () => {
  it('…/contributors lists the matching instances grouped by type', async () => {
    const expected = allowed(boards);
    const response = await api.get('/domain/demo/ops/north/contributors');
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      contributors: [
        { type: '/contributors/demo/board', items: [...expected.board].sort().map((id) => ({ id })) },
        { type: '/contributors/demo/sensor', items: [...expected.sensor].sort().map((id) => ({ id })) },
      ],
    });
    const roof = (await api.get('/domain/demo/site/roof/contributors')).json;
    expect(roof.contributors[0].items.map((item: { id: string }) => item.id)).toEqual(sensors.filter((s) => s.site === 'roof').map((s) => s.contributor).sort());
  });

  it('…/streams lists the streams the domain contributors published to', async () => {
    const expected = kept(allowed(boards));
    const streams = Object.entries(expected).filter(([, rows]) => rows.length > 0).map(([name]) => uri(name)).sort();
    expect(streams).toHaveLength(3);
    expect((await api.get('/domain/demo/ops/north/streams')).json).toEqual({ streams });
    expect((await api.get('/domain/demo/ops/none/streams')).status).toBe(404);
  });
});

describe('domains - search limited to a domain', () => {
  const DOMAIN = '/domain/demo/ops/north';

  async function expectAnswers(registered: Board[]) {
    const rows = kept(allowed(registered));
    const all = Object.values(rows).flat();
    // The domain keeps some of every stream with contributor fields, and nothing of `plain`.
    for (const name of ['readings', 'sensed', 'events'] as const) {
      expect(rows[name].length, name).toBeGreaterThan(0);
      expect(rows[name].length, name).toBeLessThan(DATA[name].length);
    }

    const everything = await post('/ssr/demo/_search', { uris: ALL_URIS, query: {}, domain: DOMAIN, count: 10_000 });
    expect(everything.total).toBe(all.length);
    expect(everything.values).toHaveLength(all.length);
    const storms = await post('/ssr/demo/_search', { uris: ALL_URIS, query: { base: "search('storm')" }, domain: DOMAIN, count: 5 });
    expect(storms.total).toBe(all.filter((row) => tokens(row.summary).includes('storm')).length);

    const facet = await post('/ssr/demo/_facet', { uris: ALL_URIS, query: {}, domain: DOMAIN, facets: [{ type: 'taxonomy', dimension: 'severity', topN: 5 }] });
    const levels = new Map<string, number>();
    for (const row of all) if (row.level !== undefined) levels.set(row.level, (levels.get(row.level) ?? 0) + 1);
    expect(Object.fromEntries(facet.facets[0].children.map((child: { value: string; count: number }) => [child.value, child.count]))).toEqual(Object.fromEntries(levels));

    const range = { start: '2024-01-01T00:00:00Z', end: '2024-01-31T23:59:59Z' };
    const histogram = await post('/ssr/demo/_timeRangeHistogram', { uris: ALL_URIS, query: {}, range, frequency: 'DAY', domain: DOMAIN });
    const inRange = all.filter((row) => row.at >= '2024-01-01T00:00:00' && row.at <= '2024-01-31T23:59:59').length;
    expect(histogram.histogram.buckets.reduce((sum: number, count: number) => sum + count, 0)).toBe(inRange);

    const discover = await post('/ssr/demo/_discover', { query: {}, domain: DOMAIN, results: { topN: 3 } });
    const published = Object.entries(rows).filter(([, kept]) => kept.length > 0);
    expect(discover.streams.map((stream: { name: string }) => stream.name).sort()).toEqual(published.map(([name]) => uri(name)).sort());
    for (const stream of discover.streams) {
      const expected = rows[stream.name.split('/').pop() as keyof typeof STREAMS].length;
      expect(stream.values.length + stream.atLeastNMoreResults, stream.name).toBe(expected);
    }
  }

  it('_search, _facet, _timeRangeHistogram and _discover count only payloads of the domain contributors', async () => {
    await expectAnswers(boards);
    // Without a domain: everything, and _discover considers every stream.
    expect((await post('/ssr/demo/_search', { uris: ALL_URIS, query: {}, count: 0 })).total).toBe(readings.length + sensed.length + events.length + plain.length);
    expect((await post('/ssr/demo/_discover', { query: {}, domain: null })).streams).toHaveLength(4);
  });

  it('contributors registered after the domain was defined are picked up, also for data they posted before', async () => {
    const late: Board[] = [
      { id: boardId(41), region: 'north', slots: 16, vendor: 'acme' },
      { id: boardId(42), region: 'south', slots: 4, vendor: 'initech' },
      { id: boardId(43), region: 'south', slots: 4, vendor: 'acme' },
    ];
    for (const board of late) expect((await api.put(`/contributors/demo/board/instances/${board.id}`, board)).status).toBe(200);
    const registered = [...boards, ...late];
    expect(kept(allowed(registered)).readings.length).toBeGreaterThan(kept(allowed(boards)).readings.length);
    const ids = (await api.get(`${DOMAIN}/contributors`)).json.contributors[0].items.map((item: { id: string }) => item.id);
    expect(ids).toContain(boardId(41));
    expect(ids).toContain(boardId(42));
    expect(ids).not.toContain(boardId(43));
    await expectAnswers(registered);
  });

  it('an unknown domain is 404; a malformed one or one of another tenant is 400', async () => {
    for (const operation of ['_search', '_facet', '_timeRangeHistogram', '_discover']) {
      const response = await api.post(`/ssr/demo/${operation}`, { uris: ALL_URIS, query: {}, range: { start: '2024-01-01T00:00:00Z', end: '2024-02-01T00:00:00Z' }, domain: '/domain/demo/ops/missing' });
      expect(response.status, operation).toBe(404);
    }
    expect((await api.post('/ssr/demo/_search', { uris: ALL_URIS, domain: 'north' })).status).toBe(400);
    expect((await api.post('/ssr/demo/_search', { uris: ALL_URIS, domain: '/domain/other/ops/north' })).status).toBe(400);
    expect((await api.post('/ssr/demo/_search', { uris: ALL_URIS, domain: 7 })).status).toBe(400);
  });
});
