// Rows of the spec that a black-box conformance run found wrong, each checked against one real
// node over HTTP, with a default configuration.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';

let node: NodeProcess;
let api: ReturnType<typeof client>;
const open: SseClient[] = [];

const schema = (properties: object) => ({ schema: { version: '1', topDef: { type: 'record', properties } } });
const ts = { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] };

async function ok(promise: Promise<{ status: number; text: string; json: any }>, what: string): Promise<any> {
  const done = await promise;
  if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 400)}`);
  return done.json;
}

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'conformance' });
  api = client(node);
}, 30_000);

afterAll(async () => {
  for (const sse of open) sse.close();
  await cleanup();
});

describe('spec conformance - _timeRangeHistogram with tsField', () => {
  it('decides which payloads fall in the range by tsField, not by the primary timestamp', async () => {
    const STREAM = '/streams/demo/conf/visits';
    await ok(api.put(STREAM, schema({ at: ts, seen: { type: 'datetime' }, page: { type: 'string' } })), 'stream');
    await ok(api.put(`${STREAM}/repository`, { name: 'ssr', config: {} }), 'mapping');
    // Stored (primary) time in 2020; `seen` on three days of March 2024.
    const days = [1, 1, 1, 2, 3, 3];
    const payloads = days.map((day, i) => ({ at: `2020-06-0${1 + i}T00:00:00Z`, seen: `2024-03-0${day}T10:00:00Z`, page: `p${i}` }));
    await ok(api.post(STREAM, payloads), 'post');
    const request = (extra: object) => ({ uris: [STREAM], query: {}, range: { start: '2024-03-01T00:00:00Z', end: '2024-03-03T23:59:59Z' }, frequency: 'DAY', ...extra });
    const bySeen = await ok(api.post('/ssr/demo/_timeRangeHistogram', request({ tsField: 'seen' })), 'histogram by seen');
    expect(bySeen.histogram).toMatchObject({ frequency: 'DAY', buckets: [3, 1, 2] });
    const byPrimary = await ok(api.post('/ssr/demo/_timeRangeHistogram', request({})), 'histogram by primary');
    expect(byPrimary.histogram.buckets).toEqual([0, 0, 0]);
    // The range still applies: a narrower one over seen leaves the other days out.
    const narrow = await ok(api.post('/ssr/demo/_timeRangeHistogram', request({ tsField: 'seen', range: { start: '2024-03-02T00:00:00Z', end: '2024-03-02T23:59:59Z' } })), 'narrow');
    expect(narrow.histogram.buckets).toEqual([1]);
    // And search() narrows it as in _search.
    const searched = await ok(api.post('/ssr/demo/_timeRangeHistogram', request({ tsField: 'seen', query: { base: "page == 'p3' || page == 'p4'" } })), 'searched');
    expect(searched.histogram.buckets).toEqual([0, 1, 1]);
  });
});

describe('spec conformance - daemon decoration', () => {
  it('adds the contributor field before the target stream checks the row, so a target requiring it accepts the daemon', async () => {
    const SOURCE = '/streams/demo/conf/readings';
    const TARGET = '/streams/demo/conf/alerts';
    await ok(api.put('/contributors/demo/board', { schema: { type: 'record', properties: { id: { type: 'contributor' }, region: { type: 'string' } } } }), 'type');
    await ok(api.put('/contributors/demo/board/instances/b7', { id: 'b7', region: 'north' }), 'instance');
    await ok(api.put(SOURCE, schema({ at: ts, value: { type: 'double' } })), 'source');
    // The target requires the contributor field (optional: false).
    await ok(api.put(TARGET, schema({ value: { type: 'double' }, board: { type: 'contributor', definition: 'board', optional: false } })), 'target');
    await ok(api.put(`${TARGET}/repository`, { name: 'tsr', config: {} }), 'target mapping');
    const daemon = {
      query: { queries: [{ id: 'hot', body: `from ${SOURCE} where value > 50 select value` }] },
      settings: { contributor: '/contributors/demo/board/instances/b7', contributorFieldName: 'board', target: { type: 'STREAM', uri: TARGET } },
    };
    await ok(api.put('/daemon/demo/conf/hot', daemon), 'daemon');
    await ok(api.post(SOURCE, [{ at: '2024-03-01T00:00:00Z', value: 70 }, { at: '2024-03-01T00:00:01Z', value: 10 }, { at: '2024-03-01T00:00:02Z', value: 90 }]), 'post');
    await expect
      .poll(async () => (await ok(api.get('/_internal/repos/tsr/demo/conf/alerts?payloads=true'), 'stored')).payloads.map((each: any) => each.payload).sort((a: any, b: any) => a.value - b.value), { timeout: 15_000, interval: 200 })
      .toEqual([{ board: 'b7', value: 70 }, { board: 'b7', value: 90 }]);
    // Without the decoration the same target refuses the query, naming the missing field.
    const undecorated = await api.put('/daemon/demo/conf/plain', { ...daemon, settings: { target: daemon.settings.target } });
    expect(undecorated.status).toBe(400);
    expect(undecorated.json.errors).toEqual([{ type: 'TYPE_MISMATCH', expected: 'contributor', actual: 'null', expression: 'board' }]);
  });
});

describe('spec conformance - session domain', () => {
  it('a session PUT naming a domain that does not exist is 400 INVALID_DOMAIN, also with no queries', async () => {
    const session = (await ok(api.post('/execution/demo/sessions'), 'session')).session as string;
    const missing = '/domain/demo/conf/nowhere';
    const empty = await api.put(session, { domain: missing, queries: [] });
    expect(empty.status).toBe(400);
    expect(empty.json.errors).toEqual([{ type: 'INVALID_DOMAIN', domain: missing }]);
    const withQuery = await api.put(session, { domain: missing, queries: [{ id: 'q', body: 'from /streams/demo/conf/readings select value' }] });
    expect(withQuery.status).toBe(400);
    expect(withQuery.json.errors).toEqual([{ type: 'INVALID_DOMAIN', domain: missing }]);
    // Nothing was stored: the session is still the empty one.
    expect((await ok(api.get(session), 'get')).domain).toBeNull();
  });
});

describe('spec conformance - CORS by default', () => {
  it('answers any origin with * (as Valo did), preflights included, with both version headers exposed, SSE too', async () => {
    const origin = { Origin: 'http://dashboard.example:3000' };
    const preflight = await fetch(`${node.url}/streams/demo/conf/readings`, {
      method: 'OPTIONS',
      headers: { ...origin, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'content-type,valo-config-version' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(preflight.headers.get('access-control-allow-headers')?.split(',')).toEqual(expect.arrayContaining(['Content-Type', 'Authorization', 'Service-Config-Version', 'Valo-Config-Version']));
    const get = await fetch(`${node.url}/streams/demo/conf/readings`, { headers: origin });
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
    expect(get.headers.get('access-control-expose-headers')?.split(',')).toEqual(expect.arrayContaining(['Service-Config-Version', 'Valo-Config-Version']));
    const missing = await fetch(`${node.url}/streams/demo/conf/none`, { headers: origin });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('access-control-allow-origin')).toBe('*');
    const controller = new AbortController();
    const sse = await fetch(`${node.url}/output/cluster`, { headers: origin, signal: controller.signal });
    expect(sse.headers.get('content-type')).toContain('text/event-stream');
    expect(sse.headers.get('access-control-allow-origin')).toBe('*');
    controller.abort();
  });
});
