// The Execution and Daemons tables and query outputs over HTTP against one real node process.
// Every expected row is computed by the test from the payloads it posted.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';
import { Prng } from '../sim/prng.js';

const CPU = '/streams/demo/infra/cpu';
const LOG = '/streams/demo/infra/log1';
const ALERTS = '/streams/demo/infra/alerts';
const READINGS = '/streams/demo/plant/readings';

const prng = new Prng(707);
const HOSTS = ['ABC', 'DEF', 'GHI'];
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString();
interface Cpu { host: string; user: number; kernel: number; timestamp: string }
const cpuBatch = (from: number, count: number): Cpu[] =>
  Array.from({ length: count }, (_, i) => ({ host: prng.pick(HOSTS), user: prng.int(0, 100), kernel: prng.int(0, 50), timestamp: at(from + i) }));

let node: NodeProcess;
let api: ReturnType<typeof client>;
const clients: SseClient[] = [];

async function ok(response: Promise<{ status: number; text: string; json: any }>, what: string): Promise<any> {
  const done = await response;
  if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 400)}`);
  return done.json;
}

async function newSession(): Promise<string> {
  const created = await ok(api.post('/execution/demo/sessions'), 'create session');
  return created.session as string;
}

async function watch(outputUri: string): Promise<SseClient> {
  const sse = await SseClient.connect(`${node.url}${outputUri}`);
  clients.push(sse);
  expect(sse.status).toBe(200);
  return sse;
}

function entry(response: any[], id: string): any {
  return response.find((each) => each.id === id);
}

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'exec' });
  api = client(node);
  const schema = (properties: object) => ({ schema: { version: '1', topDef: { type: 'record', properties } } });
  const ts = { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] };
  await ok(api.put(CPU, schema({ host: { type: 'string' }, user: { type: 'double' }, kernel: { type: 'double' }, timestamp: ts })), 'cpu');
  await ok(api.put(`${CPU}/repository`, { name: 'tsr', config: {} }), 'cpu repository');
  await ok(api.put(LOG, schema({ host: { type: 'string' }, msg: { type: 'string' }, timestamp: ts })), 'log1');
  await ok(api.put(ALERTS, schema({ host: { type: 'string' }, user: { type: 'double' }, board: { type: 'contributor', optional: true } })), 'alerts');
  await ok(api.put(`${ALERTS}/repository`, { name: 'tsr', config: {} }), 'alerts repository');
  await ok(api.put('/contributors/demo/board', { schema: { type: 'record', properties: { id: { type: 'contributor' }, region: { type: 'string' } } } }), 'board type');
  for (const [id, region] of [['b1', 'north'], ['b2', 'south'], ['b3', 'north']] as const) await ok(api.put(`/contributors/demo/board/instances/${id}`, { id, region }), id);
  await ok(api.put(READINGS, schema({ board: { type: 'contributor', definition: 'board' }, value: { type: 'int' }, timestamp: ts })), 'readings');
  await ok(api.put('/domain/demo/plant/north', { contributorFilters: [{ contributor: '/contributors/demo/board', query: "region == 'north'" }] }), 'domain');
}, 60_000);

afterAll(async () => {
  for (const sse of clients) sse.close();
  await cleanup();
});

describe('execution - sessions', () => {
  it('POST creates an empty session; 404 for an unknown tenant; GET and DELETE of an unknown session are 404', async () => {
    expect((await api.post('/execution/nobody/sessions')).status).toBe(404);
    const uri = await newSession();
    expect(uri).toMatch(/^\/execution\/demo\/sessions\/[0-9a-f-]{36}$/);
    expect((await api.get(uri)).json).toEqual({ domain: null, variables: [], functions: [], queries: [] });
    expect((await api.get('/execution/demo/sessions/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await api.delete('/execution/demo/sessions/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await api.put('/execution/demo/sessions/made-up', { queries: [] })).status).toBe(404);
    expect((await api.delete(uri)).json).toEqual({});
    expect((await api.get(uri)).status).toBe(404);
  });

  it('PUT session answers the queries response; outputs carry outputUri and output host:port + outputUri', async () => {
    const uri = await newSession();
    const response = await ok(api.put(uri, { queries: [{ id: 'hot', body: `from ${CPU} select user, kernel where user > 90` }] }), 'put session');
    expect(response).toHaveLength(1);
    const hot = entry(response, 'hot');
    expect(hot.dependencies).toEqual([]);
    expect(hot.query.state).toBe('initialised');
    const output = hot.query.outputs[0];
    expect(output).toMatchObject({ type: 'OUTPUT_CHANNEL', outputType: 'UNBOUNDED', isHistorical: false });
    expect(output.outputUri).toBe(`/output/demo/${output.id}`);
    expect(output.output).toBe(`${new URL(node.url).host}${output.outputUri}`);
    // The stream's fields may be missing: the output says they are optional.
    expect(output.schema.topDef.properties).toEqual({ user: { type: 'double', optional: true }, kernel: { type: 'double', optional: true } });
  });

  it('PUT session with no body resets it to an empty session', async () => {
    const uri = await newSession();
    await ok(api.put(uri, { queries: [{ id: 'q', body: `from ${CPU} select host` }], variables: [{ id: 'v', value: '1', type: 'int' }] }), 'put');
    expect(await ok(api.put(uri), 'reset')).toEqual([]);
    expect((await api.get(uri)).json).toEqual({ domain: null, variables: [], functions: [], queries: [] });
  });

  it('refuses duplicate query ids and queries with errors, as 400 { errors }', async () => {
    const uri = await newSession();
    const duplicate = await api.put(uri, { queries: [{ id: 'a', body: `from ${CPU}` }, { id: 'a', body: `from ${CPU}` }] });
    expect(duplicate.status).toBe(400);
    const bad = await api.put(uri, { queries: [{ id: 'a', body: `from ${CPU} where nope > @limit select host` }] });
    expect(bad.status).toBe(400);
    expect(bad.json.errors).toEqual(expect.arrayContaining([{ type: 'INVALID_FIELD_REFERENCE', field: 'nope' }, expect.objectContaining({ type: 'MISSING_VARIABLE', name: 'limit' })]));
    const syntax = await api.put(`${uri}/queries`, { id: 'b', body: `from ${CPU} selec host` });
    expect(syntax.status).toBe(400);
    expect(syntax.json.errors[0]).toMatchObject({ type: 'SYNTAX_ERROR', line: 1 });
    expect((await api.get(`${uri}/queries`)).json).toEqual([]);
  });

  it('PUT …/queries with one query answers the whole session; GET …/queries/:id checks without running', async () => {
    const uri = await newSession();
    await ok(api.put(`${uri}/queries`, { id: 'one', body: `from ${CPU} select host` }), 'one');
    const response = await ok(api.put(`${uri}/queries`, { id: 'two', body: `from ${CPU} where user > 3 select user` }), 'two');
    expect(response.map((each: any) => each.id)).toEqual(['one', 'two']);
    const state = await ok(api.get(`${uri}/queries/two`), 'get query');
    expect(state).toMatchObject({ dependencies: [], query: { state: 'initialised', outputs: [{ type: 'OUTPUT_CHANNEL' }] } });
    expect((await api.get(`${uri}/queries/missing`)).status).toBe(404);
  });

  it('the domain and variables sub-resources', async () => {
    const uri = await newSession();
    expect((await api.get(`${uri}/domain`)).status).toBe(404);
    const invalid = await api.put(`${uri}/domain`, { domain: '/domain/demo/plant/missing' });
    expect(invalid.status).toBe(400);
    expect(invalid.json.errors).toEqual([{ type: 'INVALID_DOMAIN', domain: '/domain/demo/plant/missing' }]);
    await ok(api.put(`${uri}/domain`, { domain: '/domain/demo/plant/north' }), 'domain');
    expect((await api.get(`${uri}/domain`)).json).toEqual({ domain: '/domain/demo/plant/north' });
    await ok(api.delete(`${uri}/domain`), 'delete domain');
    expect((await api.get(`${uri}/domain`)).status).toBe(404);
    await ok(api.put(`${uri}/variables`, { id: 'limit', value: '42', type: 'int' }), 'variable');
    expect((await api.get(`${uri}/variables/limit`)).json).toEqual({ value: '42', type: 'int' });
    await ok(api.delete(`${uri}/variables/limit`), 'delete variable');
    expect((await api.get(`${uri}/variables/limit`)).status).toBe(404);
  });
});

describe('execution - running queries', () => {
  it('a live query: a client connected before _start sees sos, then the rows where the condition holds', async () => {
    const uri = await newSession();
    const response = await ok(api.put(uri, { queries: [{ id: 'hot', body: `from ${CPU} select user, kernel where user > 90` }] }), 'put');
    const sse = await watch(entry(response, 'hot').query.outputs[0].outputUri);
    const started = await ok(api.put(`${uri}/queries/hot/_start`), 'start');
    expect(entry(started, 'hot').query.state).toBe('running');
    await sse.waitFor('sos', (c) => c.messages.length > 0);
    expect(sse.messages[0]).toMatchObject({ type: 'sos' });
    const payloads = cpuBatch(0, 400);
    for (let i = 0; i < payloads.length; i += 100) await ok(api.post(CPU, payloads.slice(i, i + 100)), 'post');
    const expected = payloads.filter((p) => p.user > 90).map((p) => ({ user: p.user, kernel: p.kernel }));
    await sse.waitFor(`${expected.length} rows`, (c) => c.adds().length >= expected.length);
    expect(sse.adds()).toEqual(expected);
    expect(sse.items().every((item) => item.action === 'add')).toBe(true);
    await ok(api.put(`${uri}/queries/hot/_stop`), 'stop');
    expect(entry(await ok(api.get(`${uri}/queries`), 'queries'), 'hot').query.state).toBe('stopped');
  });

  it('a historical query reads the stored data, narrowed by variables, and ends with eos; state completed', async () => {
    const payloads = cpuBatch(10_000, 300);
    await ok(api.post(CPU, payloads), 'post');
    const uri = await newSession();
    const body = `from historical ${CPU} where user > @limit && timestamp >= '${at(10_000)}' select host, user`;
    const response = await ok(api.put(uri, { variables: [{ id: 'limit', value: '60', type: 'int' }], queries: [{ id: 'h', body }] }), 'put');
    const output = entry(response, 'h').query.outputs[0];
    expect(output).toMatchObject({ outputType: 'BOUNDED', isHistorical: true });
    expect(entry(response, 'h').dependencies).toEqual([{ type: 'variable', id: 'limit' }]);
    const sse = await watch(output.outputUri);
    await ok(api.put(`${uri}/queries/h/_start`), 'start');
    await sse.waitFor('eos', (c) => c.messages.some((m) => m.type === 'eos'));
    const expected = payloads.filter((p) => p.user > 60).map((p) => ({ host: p.host, user: p.user }));
    expect(sse.adds()).toEqual(expected);
    await expect.poll(async () => entry((await api.get(`${uri}/queries`)).json, 'h').query.state, { timeout: 5_000 }).toBe('completed');
    // A client that connects after the end is given the whole result.
    const late = await watch(output.outputUri);
    await late.waitFor('eos', (c) => c.messages.some((m) => m.type === 'eos'));
    expect(late.adds()).toEqual(expected);
  });

  it('a grouped live query emits add then update per key', async () => {
    const uri = await newSession();
    const body = `from ${CPU} group by host select host, count() as n, max(user) as top`;
    const response = await ok(api.put(uri, { queries: [{ id: 'g', body }] }), 'put');
    const sse = await watch(entry(response, 'g').query.outputs[0].outputUri);
    await ok(api.put(`${uri}/queries/g/_start`), 'start');
    await sse.waitFor('sos', (c) => c.messages.length > 0);
    const payloads = cpuBatch(20_000, 200);
    await ok(api.post(CPU, payloads), 'post');
    const expected = new Map<string, { host: string; n: number; top: number }>();
    for (const p of payloads) {
      const row = expected.get(p.host) ?? { host: p.host, n: 0, top: -Infinity };
      expected.set(p.host, { host: p.host, n: row.n + 1, top: Math.max(row.top, p.user) });
    }
    const table = () => {
      const rows = new Map<string, Record<string, unknown>>();
      for (const item of sse.items()) {
        if (item.action === 'remove') rows.delete(item.data.host as string);
        else rows.set(item.data.host as string, item.data);
      }
      return rows;
    };
    await sse.waitFor('final counts', () => [...expected.values()].every((row) => (table().get(row.host)?.n as number) === row.n));
    expect(Object.fromEntries(table())).toEqual(Object.fromEntries(expected));
    expect(sse.items().filter((item) => item.action === 'add')).toHaveLength(expected.size);
  });

  it('into x feeds another query of the session; _start starts upstream, _stop stops downstream, DELETE stops dependents', async () => {
    const uri = await newSession();
    const response = await ok(
      api.put(uri, {
        queries: [
          { id: 'abc', body: `from ${LOG} where host == \`ABC\` into x` },
          { id: 'errors', body: 'from x where contains(msg, `error`) select host, msg' },
        ],
      }),
      'put',
    );
    expect(entry(response, 'errors').dependencies).toEqual([{ type: 'query', id: 'abc' }]);
    const sse = await watch(entry(response, 'errors').query.outputs[0].outputUri);
    const started = await ok(api.put(`${uri}/queries/errors/_start`), 'start');
    expect(started.map((each: any) => each.query.state)).toEqual(['running', 'running']);
    await sse.waitFor('sos', (c) => c.messages.length > 0);
    const logs = Array.from({ length: 200 }, (_, i) => ({ host: prng.pick(HOSTS), msg: prng.pick(['all good', 'an error here', 'error: disk', 'fine']), timestamp: at(i) }));
    await ok(api.post(LOG, logs), 'post logs');
    const expected = logs.filter((l) => l.host === 'ABC' && l.msg.includes('error')).map((l) => ({ host: l.host, msg: l.msg }));
    await sse.waitFor('filtered logs', (c) => c.adds().length >= expected.length);
    expect(sse.adds()).toEqual(expected);
    const stopped = await ok(api.put(`${uri}/queries/abc/_stop`), 'stop');
    expect(stopped.map((each: any) => each.query.state)).toEqual(['stopped', 'stopped']);
    await ok(api.put(`${uri}/queries/errors/_start`), 'start again');
    const deleted = await ok(api.delete(`${uri}/queries/abc`), 'delete');
    expect(deleted).toHaveLength(1);
    expect(entry(deleted, 'errors').errors).toEqual([{ type: 'INVALID_STREAM_REFERENCE', stream: 'x' }]);
  });

  it('into a physical stream posts the rows through ingest', async () => {
    const uri = await newSession();
    await ok(api.put(uri, { queries: [{ id: 'alerts', body: `from ${CPU} where user > 80 select host, user into ${ALERTS}` }] }), 'put');
    const response = await ok(api.put(`${uri}/queries/alerts/_start`), 'start');
    expect(entry(response, 'alerts').query.outputs[0]).toMatchObject({ type: 'PHYSICAL_STREAM', outputUri: ALERTS });
    const payloads = cpuBatch(30_000, 200);
    await ok(api.post(CPU, payloads), 'post');
    const expected = payloads.filter((p) => p.user > 80).map((p) => ({ host: p.host, user: p.user }));
    const reader = await newSession();
    const read = await ok(api.put(reader, { queries: [{ id: 'r', body: `from historical ${ALERTS} select host, user` }] }), 'reader');
    await expect
      .poll(
        async () => {
          const sse = await watch(entry(read, 'r').query.outputs[0].outputUri);
          await ok(api.put(`${reader}/queries/r/_stop`), 'stop');
          await ok(api.put(`${reader}/queries/r/_start`), 'start');
          await sse.waitFor('eos', (c) => c.messages.some((m) => m.type === 'eos'));
          sse.close();
          return sse.adds().length;
        },
        { timeout: 15_000, interval: 300 },
      )
      .toBe(expected.length);
  });

  it('session functions run in the sandbox; the domain keeps only its contributors; a variable change restarts', async () => {
    const uri = await newSession();
    const session = {
      domain: '/domain/demo/plant/north',
      variables: [{ id: 'factor', value: '3', type: 'int' }],
      functions: [{ id: 'scale', language: 'js', body: 'function scale(x, k) { return x * k; }' }],
      queries: [{ id: 'f', body: `from ${READINGS} select board, scale(value, @factor) as scaled` }],
    };
    const response = await ok(api.put(uri, session), 'put');
    const sse = await watch(entry(response, 'f').query.outputs[0].outputUri);
    await ok(api.put(`${uri}/queries/f/_start`), 'start');
    await sse.waitFor('sos', (c) => c.messages.length > 0);
    const readings = Array.from({ length: 60 }, (_, i) => ({ board: prng.pick(['b1', 'b2', 'b3']), value: prng.int(0, 100), timestamp: at(i) }));
    await ok(api.post(READINGS, readings), 'post');
    const expected = readings.filter((r) => r.board !== 'b2').map((r) => ({ board: r.board, scaled: r.value * 3 }));
    await sse.waitFor('scaled rows', (c) => c.adds().length >= expected.length);
    expect(sse.adds()).toEqual(expected);
    const bad = await api.put(uri, { ...session, functions: [{ id: 'scale', language: 'js', body: 'function scale( {' }] });
    expect(bad.status).toBe(400);
  });

  it('a session and its running query come back after the node restarts', async () => {
    const uri = await newSession();
    const response = await ok(api.put(uri, { queries: [{ id: 'hot', body: `from ${CPU} select host, user where user > 50` }] }), 'put');
    await ok(api.put(`${uri}/queries/hot/_start`), 'start');
    await node.restart();
    const queries = await ok(api.get(`${uri}/queries`), 'queries after restart');
    expect(entry(queries, 'hot').query.state).toBe('running');
    const sse = await watch(entry(response, 'hot').query.outputs[0].outputUri);
    await sse.waitFor('sos', (c) => c.messages.length > 0);
    const payloads = cpuBatch(40_000, 100);
    await ok(api.post(CPU, payloads), 'post');
    const expected = payloads.filter((p) => p.user > 50).map((p) => ({ host: p.host, user: p.user }));
    await sse.waitFor('rows after restart', (c) => c.adds().length >= expected.length);
    expect(sse.adds()).toEqual(expected);
  }, 60_000);
});

describe('execution - output channels end', () => {
  it("a bounded query's response ends after eos; its last event id asks for nothing more (204), a new client gets the result and the end", async () => {
    await ok(api.post(CPU, cpuBatch(70_000, 50)), 'post');
    const uri = await newSession();
    const response = await ok(api.put(uri, { queries: [{ id: 'h', body: `from historical ${CPU} where timestamp >= '${at(70_000)}' && timestamp < '${at(70_050)}' select host, user` }] }), 'put');
    const outputUri = entry(response, 'h').query.outputs[0].outputUri as string;
    const sse = await watch(outputUri);
    await ok(api.put(`${uri}/queries/h/_start`), 'start');
    await sse.eos;
    await Promise.race([sse.finished, new Promise((_, reject) => setTimeout(() => reject(new Error('the response did not end after eos')), 5_000))]);
    expect(sse.adds()).toHaveLength(50);
    expect(sse.lastEventId).toMatch(/\S/);
    const again = await fetch(`${node.url}${outputUri}`, { headers: { accept: 'text/event-stream', 'last-event-id': sse.lastEventId! } });
    expect(again.status).toBe(204);
    const late = await watch(outputUri);
    await late.finished;
    expect(late.messages.map((message) => message.type)).toEqual(['sos', 'increment', 'eos']);
    // An id of another time is not the end: the client is given the state again.
    const stale = await SseClient.connect(`${node.url}${outputUri}`, { 'last-event-id': 'another.1' });
    clients.push(stale);
    expect(stale.status).toBe(200);
    await stale.finished;
    expect(stale.adds()).toHaveLength(50);
  });

  it('a live query that stops ends its clients (started again, a new client follows it); a deleted session ends them and its output is 404', async () => {
    const uri = await newSession();
    const response = await ok(api.put(uri, { queries: [{ id: 'live', body: `from ${CPU} select host, user` }] }), 'put');
    const outputUri = entry(response, 'live').query.outputs[0].outputUri as string;
    const first = await watch(outputUri);
    await ok(api.put(`${uri}/queries/live/_start`), 'start');
    await first.waitFor('sos', (c) => c.messages.length > 0);
    await ok(api.post(CPU, cpuBatch(71_000, 3)), 'post');
    await first.waitFor('3 rows', (c) => c.adds().length === 3);
    expect(first.done).toBe(false);
    await ok(api.put(`${uri}/queries/live/_stop`), 'stop');
    await first.finished;
    // A client that comes back with the id of the end is told not to; one that comes fresh is given the state and the end.
    expect((await fetch(`${node.url}${outputUri}`, { headers: { 'last-event-id': first.lastEventId! } })).status).toBe(204);
    const fresh = await watch(outputUri);
    await fresh.finished;
    expect(fresh.messages.map((message) => message.type)).toEqual(['sos']);
    await ok(api.put(`${uri}/queries/live/_start`), 'start again');
    const second = await watch(outputUri);
    await second.waitFor('sos', (c) => c.messages.length > 0);
    expect((await fetch(`${node.url}${outputUri}`, { headers: { 'last-event-id': first.lastEventId! }, signal: AbortSignal.timeout(2_000) }).then((r) => { void r.body?.cancel(); return r.status; }))).toBe(200);
    await ok(api.post(CPU, cpuBatch(71_100, 2)), 'post again');
    await second.waitFor('2 rows', (c) => c.adds().length === 2);
    expect(await api.delete(uri).then((r) => r.status)).toBe(200);
    await Promise.race([second.finished, new Promise((_, reject) => setTimeout(() => reject(new Error('the response did not end with its session')), 5_000))]);
    expect((await fetch(`${node.url}${outputUri}`)).status).toBe(404);
  });
});

describe('execution - monitoring', () => {
  it("lists the tenant's hosted sessions, narrowed by uri; another tenant sees none, system sees all", async () => {
    const uri = await newSession();
    await ok(api.put(uri, { queries: [{ id: 'watch', body: `from ${CPU} select host` }] }), 'put');
    await ok(api.put(`${uri}/queries/watch/_start`), 'start');
    const other = await newSession();
    await ok(api.put(other, { queries: [{ id: 'idle', body: `from ${CPU} select user` }] }), 'put other');
    const sessionsOf = async (path: string) => {
      const response = await api.get(path);
      expect(response.status, response.text).toBe(200);
      return response.json.nodes[0].details.sessions as Array<{ session: string; queries: Array<{ id: string; state: string }> }>;
    };

    const filtered = await sessionsOf(`/monitoring/demo/execution?uri=${encodeURIComponent(uri)}`);
    expect(filtered).toEqual([{ session: uri, queries: [{ id: 'watch', state: 'running', lateRows: 0 }] }]);
    const all = (await sessionsOf('/monitoring/demo/execution')).map((each) => each.session);
    expect(all).toEqual(expect.arrayContaining([uri, other]));
    expect((await sessionsOf('/monitoring/system/execution')).map((each) => each.session)).toEqual(expect.arrayContaining([uri, other]));

    await ok(api.put('/cluster/tenants/elsewhere', {}), 'tenant');
    expect(await sessionsOf('/monitoring/elsewhere/execution')).toEqual([]);
    expect(await sessionsOf(`/monitoring/elsewhere/execution?uri=${encodeURIComponent(uri)}`)).toEqual([]);

    const twice = await api.get(`/monitoring/demo/execution?uri=${encodeURIComponent(uri)}&uri=${encodeURIComponent(other)}`);
    expect(twice.status).toBe(400);
    const notFiltered = await api.get(`/monitoring/demo/handoff?uri=${encodeURIComponent(uri)}`);
    expect(notFiltered.status).toBe(400);
    expect(notFiltered.json.error.message).toMatch(/takes no uri filter/);
  });
});

describe('execution - daemons', () => {
  it('a daemon with a STREAM target and a contributor writes decorated rows; details; delete', async () => {
    const daemon = {
      query: { variables: [], queries: [{ id: 'd', body: `from ${CPU} where user > 95 select host, user` }] },
      settings: { contributor: '/contributors/demo/board/instances/b1', contributorFieldName: 'board', target: { type: 'STREAM', uri: ALERTS } },
    };
    const put = await api.put('/daemon/demo/ops/hot', daemon);
    expect(put.status).toBe(200);
    expect(put.headers.get('service-config-version')).toBeTruthy();
    expect((await api.get('/daemon/demo/ops')).json).toEqual({ instances: ['hot'] });
    expect((await api.get('/daemon/demo/ops/hot')).json).toEqual(daemon);
    const details = await ok(api.get('/daemon/demo/ops/hot/details'), 'details');
    expect(details.session).toBe('/execution/demo/sessions/daemon.ops.hot');
    expect(details.output).toMatchObject({ type: 'PHYSICAL_STREAM', outputUri: ALERTS });
    expect(details.output.schema.topDef.properties.board).toEqual({ type: 'contributor', definition: 'board' });
    const reader = await newSession();
    const read = await ok(api.put(reader, { queries: [{ id: 'r', body: `from historical ${ALERTS} select host, user, board` }] }), 'reader');
    const payloads = cpuBatch(50_000, 300);
    await ok(api.post(CPU, payloads), 'post');
    const expected = payloads.filter((p) => p.user > 95).map((p) => ({ host: p.host, user: p.user, board: 'b1' }));
    await expect
      .poll(
        async () => {
          const sse = await watch(entry(read, 'r').query.outputs[0].outputUri);
          await ok(api.put(`${reader}/queries/r/_stop`), 'stop');
          await ok(api.put(`${reader}/queries/r/_start`), 'start');
          await sse.waitFor('eos', (c) => c.messages.some((m) => m.type === 'eos'));
          sse.close();
          return sse.adds().filter((row) => row.board === 'b1');
        },
        { timeout: 15_000, interval: 300 },
      )
      .toEqual(expected);
    const conflicting = await api.put('/daemon/demo/ops/bad', { ...daemon, query: { queries: [{ id: 'd', body: `from ${CPU} select host, user into ${LOG}` }] } });
    expect(conflicting.status).toBe(400);
    expect((await api.delete('/daemon/demo/ops/hot')).status).toBe(200);
    expect((await api.get('/daemon/demo/ops/hot/details')).status).toBe(404);
  });

  it('_daemonise makes a daemon of the system collection from a session query', async () => {
    const uri = await newSession();
    await ok(api.put(uri, { queries: [{ id: 'q', body: `from ${CPU} select host` }] }), 'put');
    const daemonised = await ok(api.put(`${uri}/queries/q/_daemonise`, { target: { type: 'QUERY' } }), 'daemonise');
    expect(daemonised.daemonUri).toMatch(/^\/daemon\/demo\/system\/[0-9a-f-]{36}$/);
    const details = await ok(api.get(`${daemonised.daemonUri}/details`), 'details');
    expect(details.output).toMatchObject({ type: 'OUTPUT_CHANNEL', outputType: 'UNBOUNDED' });
    await ok(api.delete(daemonised.daemonUri), 'delete');
  });
});
