// A client-compatibility test: the node driven as the 2016–2018 Valo JavaScript clients drive
// it. axios parses any JSON body into an object (and throws on non-2xx, with the parsed body on
// error.response), definitions are created then retried on 409 with the version read by a
// regular expression over the raw response text, events go one object per POST, sessions are
// reset with a PUT without a body, query ids are free text used URL-encoded in paths, outputs
// are read with the `eventsource` package after `_start`, and the sample data has the
// tutorial's shapes: missing and null fields, tweet ids beyond 2^53, and hopping windows of
// many windows per row. Then what the 2017 SDK's dashboards and scripts met
// (docs/valo-compatibility.md): a live `window of 1 minute every 1 second` over events stamped
// now, a change of repository on a stream that holds data (through retryOnConflict), the
// collections listed under `instances`, and outputs that end, read with an EventSource that
// reconnects.

import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/lib/json.js';
import { cleanup, NodeProcess } from '../kit/node-process.js';

const DASHBOARD = 'http://dashboard.example:3000';
const VERSION_PHRASE = /Valo-Config-Version: *([^ \n\r]*)/;

let node: NodeProcess;
let valo: AxiosInstance;
const sources: EventSource[] = [];

/** What the clients do for a definition: PUT; on 409, read the current version from the text and PUT again with it. */
async function putDefinition(path: string, body: unknown, version?: string): Promise<AxiosResponse> {
  try {
    return await valo.put(path, body, { headers: version === undefined ? {} : { 'Valo-Config-Version': version } });
  } catch (error) {
    const response = axios.isAxiosError(error) ? error.response : undefined;
    if (response?.status !== 409) throw error;
    // The body must reach the client as text: an object would have no phrase to match.
    expect(typeof response.data).toBe('string');
    const current = VERSION_PHRASE.exec(response.data as string)?.[1];
    expect(current).toBeTruthy();
    return valo.put(path, body, { headers: { 'Valo-Config-Version': current! } });
  }
}

/** Reads `data:` messages of an output with the eventsource package, as browsers and the clients do. */
function listen(path: string): { messages: any[]; raw: string[]; arrivals: number[]; opened: Promise<void> } {
  const messages: any[] = [];
  const raw: string[] = [];
  const arrivals: number[] = [];
  const source = new EventSource(`${node.url}${path}`);
  sources.push(source);
  const opened = new Promise<void>((resolve) => (source.onopen = () => resolve()));
  source.onmessage = (event) => {
    raw.push(event.data);
    messages.push(JSON.parse(event.data));
    arrivals.push(Date.now());
  };
  return { messages, raw, arrivals, opened };
}

const schema = (properties: object) => ({ schema: { version: '1.0', topDef: { type: 'record', properties } } });
const timestamp = { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] };

beforeAll(async () => {
  // The old repository's copy of a moved stream goes 2 s (not 30 s) after its last read: the test waits for the end of a move.
  node = await NodeProcess.start({ name: 'valo', env: { TRIBUTARY_CORS_ORIGINS: `${DASHBOARD},http://other.example` }, args: ['--storage-move-grace-ms', '2000'] });
  valo = axios.create({ baseURL: node.url, timeout: 15_000 });
}, 30_000);

afterAll(async () => {
  for (const source of sources) source.close();
  await cleanup();
});

describe('valo client - definitions and versions', () => {
  it('creates, then retries a stale Valo-Config-Version with the one read from the 409 text', async () => {
    const type = { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, user: { type: 'record', properties: { name: { type: 'string' }, gender: { type: 'string' }, typeOfParticipant: { type: 'string' } } } } } };
    const created = await putDefinition('/contributors/demo/mobile_user', type);
    expect(created.status).toBe(200);
    expect(created.headers['valo-config-version']).toBe('1');
    // A client run again later holds a stale version: 409 as text, then the retry succeeds.
    const again = await putDefinition('/contributors/demo/mobile_user', type, '0');
    expect(again.status).toBe(200);
    expect(again.headers['valo-config-version']).toBe('2');
    // A client that sends Service-Config-Version keeps the JSON error.
    const json = await valo.put('/contributors/demo/mobile_user', type, { headers: { 'Service-Config-Version': '1' }, validateStatus: () => true });
    expect(json.status).toBe(409);
    expect(json.data).toMatchObject({ error: { type: 'VERSION_CONFLICT' }, currentVersion: '2' });
  });

  it('accepts a contributor instance whose declared fields are missing or null, as Valo did', async () => {
    const id = '2d1e7a52-64e2-4bd8-9a5f-8f51c2c1a0d4';
    const instance = { contributor: id, user: { name: 'Ann', typeOfParticipant: 'student' } };
    expect((await valo.put(`/contributors/demo/mobile_user/instances/${id}`, instance)).status).toBe(200);
    expect((await valo.get(`/contributors/demo/mobile_user/instances/${id}`)).data).toEqual(instance);
    const nulled = { contributor: 'b9', user: { name: null, gender: null } };
    expect((await valo.put('/contributors/demo/mobile_user/instances/b9', nulled)).status).toBe(200);
    const wrong = await valo.put('/contributors/demo/mobile_user/instances/b8', { contributor: 'b8', user: { name: 42 } }, { validateStatus: () => true });
    expect(wrong.status).toBe(400);
  });

  it("changes the repository of a stream that holds payloads as the repository's scripts do (tsr, an event, then ssr): 200, and the event is searchable at once and stays", async () => {
    const stream = '/streams/demo/mobile/happiness';
    await putDefinition(stream, schema({ contributor: { type: 'contributor' }, timestamp, happiness: { type: 'int' }, note: { type: 'string' } }));
    await putDefinition(`${stream}/repository`, { name: 'tsr', config: {} });
    expect((await valo.post(stream, { contributor: 'b9', timestamp: '2017-04-21T10:00:00Z', happiness: 7, note: 'kept' })).status).toBe(200);
    // create_all_contributors_and_streams.js puts ssr next, through retryOnConflict: no 409 comes.
    const moved = await putDefinition(`${stream}/repository`, { name: 'ssr', config: {} });
    expect(moved.status).toBe(200);
    expect(moved.data).toEqual({ name: 'ssr', config: {} });
    expect((await valo.get(`${stream}/repository`)).data).toEqual({ name: 'ssr', config: {} });
    const found = async () => (await valo.post('/ssr/demo/_search', { uris: [stream], query: { base: "search('kept')" }, count: 10, from: 0 })).data.total;
    expect(await found()).toBe(1);
    await expect.poll(async () => (await valo.get(`${stream}/repository/move`)).data.move.complete, { timeout: 30_000, interval: 500 }).toBe(true);
    expect(await found()).toBe(1);
    // A second run of the script finds the mapping as it wants it.
    expect((await putDefinition(`${stream}/repository`, { name: 'ssr', config: {} })).status).toBe(200);
  }, 60_000);
});

describe('valo client - sample data', () => {
  it('takes location events one per POST, with altitude missing or null; present values are still checked', async () => {
    const stream = '/streams/demo/mobile/location';
    await putDefinition(stream, schema({ contributor: { type: 'contributor', definition: 'mobile_user' }, timestamp, position: { type: 'record', properties: { latitude: { type: 'double' }, longitude: { type: 'double' }, altitude: { type: 'double' } } } }));
    await putDefinition(`${stream}/repository`, { name: 'tsr', config: {} });
    const events = [
      { contributor: 'b9', timestamp: '2017-04-21T10:00:00Z', position: { latitude: 51.5, longitude: -0.12 } },
      { contributor: 'b9', timestamp: '2017-04-21T10:00:01Z', position: { latitude: 51.6, longitude: -0.13, altitude: null } },
      { contributor: 'b9', timestamp: '2017-04-21T10:00:02Z', position: { latitude: 51.7, longitude: -0.14, altitude: 12.5 } },
    ];
    for (const event of events) {
      const response = await valo.post(stream, event);
      expect(response.status).toBe(200);
      expect(response.data).toBe('');
    }
    const refused = await valo.post(stream, { contributor: 'b9', timestamp: '2017-04-21T10:00:03Z', position: { latitude: 'north' } }, { validateStatus: () => true });
    expect(refused.status).toBe(500);
    expect(refused.data['0'].msg).toMatch(/position\.latitude/);
  });

  it('keeps tweet ids beyond 2^53 exactly: read back, searched and queried', async () => {
    const stream = '/streams/demo/twitter/tweets';
    const id = '855448618232418307';
    await putDefinition(stream, schema({ timestamp, tweet: { type: 'record', properties: { id: { type: 'long' }, text: { type: 'string' }, user: { type: 'record', properties: { followers_count: { type: 'int' } } } } } }));
    await putDefinition(`${stream}/repository`, { name: 'ssr', config: {} });
    // The body as a client that kept the id exactly would send it.
    const text = (tweetId: string, words: string) => `{"timestamp":"2017-04-21T09:00:00Z","tweet":{"id":${tweetId},"text":"${words}","user":{"followers_count":10}}}`;
    for (const body of [text(id, 'exact ids matter'), text('855448618232418308', 'the next one')]) {
      expect((await valo.post(stream, body, { headers: { 'Content-Type': 'application/json' } })).status).toBe(200);
    }
    // Read back as text: the digits are the ones sent (a JSON.parse in the client would round them).
    const raw = (await valo.post('/ssr/demo/_search', { uris: [stream], query: { base: `tweet.id == ${id}` }, count: 10, from: 0 }, { transformResponse: (data) => data })).data as string;
    expect(raw).toContain(`"id":${id}`);
    expect(raw).not.toContain('"id":855448618232418308');
    const hits = parseJson(raw) as any;
    expect(JSON.stringify(hits, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))).toContain(id);
    // Queried: a historical query's output carries the same digits.
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    const queries = (await valo.put(session, { queries: [{ id: 'big ids', body: `from historical ${stream} where tweet.id == ${id} select tweet.id as id, tweet.text as text` }] })).data;
    const output = listen(queries[0].query.outputs[0].outputUri);
    await output.opened;
    await valo.put(`${session}/queries/${encodeURIComponent('big ids')}/_start`);
    await expect.poll(() => output.messages.some((message) => message.type === 'eos'), { timeout: 15_000 }).toBe(true);
    const increments = output.raw.filter((data) => data.includes('"increment"'));
    expect(increments.join('')).toContain(`"id":${id}`);
    expect(output.messages.flatMap((message) => message.items ?? []).map((item: any) => item.data.text)).toEqual(['exact ids matter']);
  });
});

describe('valo client - sessions and queries', () => {
  it('resets a session with a PUT without a body, runs "unnamed query" by its URL-encoded id and reads it with eventsource', async () => {
    const stream = '/streams/demo/iot_board/temperature';
    await putDefinition(stream, schema({ contributor: { type: 'contributor' }, timestamp, temperature: { type: 'double' } }));
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    expect((await valo.put(session)).data).toEqual([]);
    const queries = (await valo.put(session, { queries: [{ id: 'unnamed query', body: `from ${stream} select contributor, temperature` }] })).data;
    expect(queries[0].id).toBe('unnamed query');
    const output = listen(queries[0].query.outputs[0].outputUri);
    await output.opened;
    const started = await valo.put(`${session}/queries/unnamed%20query/_start`);
    expect(started.data[0]).toMatchObject({ id: 'unnamed query', query: { state: 'running' } });
    expect((await valo.get(`${session}/queries/unnamed%20query`)).data.query.state).toBe('running');
    for (const [index, temperature] of [21.5, 22, 23.25].entries()) {
      await valo.post(stream, { contributor: 'board-00001', timestamp: `2017-04-21T10:00:0${index}Z`, temperature });
    }
    await expect
      .poll(() => output.messages.flatMap((message) => message.items ?? []).map((item: any) => item.data.temperature), { timeout: 15_000 })
      .toEqual([21.5, 22, 23.25]);
    expect((await valo.put(`${session}/queries/unnamed%20query/_stop`)).data[0].query.state).toBe('stopped');
    // PUT without a body resets the session.
    expect((await valo.put(session)).data).toEqual([]);
    expect((await valo.get(session)).data.queries).toEqual([]);
  });

  it('runs the tutorial hopping window (24 hour every 10 seconds) live and historical', async () => {
    const stream = '/streams/demo/iot_board/readings';
    await putDefinition(stream, schema({ contributor: { type: 'contributor' }, timestamp, temperature: { type: 'double' } }));
    await putDefinition(`${stream}/repository`, { name: 'tsr', config: {} });
    const body = (historical: boolean) =>
      `from ${historical ? 'historical ' : ''}${stream} group by contributor, timestamp window of 24 hour every 10 seconds select contributor, timestamp, avg(temperature) as Temperature, count() as n`;
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    const live = (await valo.put(session, { queries: [{ id: 'live', body: body(false) }] })).data;
    const output = listen(live[0].query.outputs[0].outputUri);
    await output.opened;
    await valo.put(`${session}/queries/live/_start`);
    const start = Date.UTC(2017, 3, 21, 0, 0, 0);
    const readings = Array.from({ length: 30 }, (_, i) => ({ contributor: 'board-1', timestamp: new Date(start + i * 3_600_000).toISOString(), temperature: 10 + i }));
    for (const reading of readings) expect((await valo.post(stream, reading)).status).toBe(200);
    // The channel shows the board's trailing window (the oldest still open), once per 10 s:
    // at the last reading's time it starts 24 hours before it, plus a hop, and holds 24 readings.
    const average = (startMs: number) => {
      const inside = readings.filter((reading) => Date.parse(reading.timestamp) >= startMs && Date.parse(reading.timestamp) < startMs + 86_400_000);
      return { n: inside.length, Temperature: inside.reduce((sum, reading) => sum + reading.temperature, 0) / inside.length };
    };
    const trailing = new Date(start + 29 * 3_600_000 - 86_400_000 + 10_000).toISOString();
    const adds = () => output.messages.flatMap((message) => message.items ?? []).filter((item: any) => item.action === 'add');
    await expect.poll(() => adds().some((item: any) => item.data.timestamp === trailing), { timeout: 25_000 }).toBe(true);
    for (const item of adds()) expect(item.data).toMatchObject({ contributor: 'board-1', ...average(Date.parse(item.data.timestamp)) });
    expect(adds().find((item: any) => item.data.timestamp === trailing).data.n).toBe(24);
    // Historical: every window holding data, from the first reading minus 24 hours to the last.
    const historical = (await valo.put(`${session}/queries`, { id: 'past', body: body(true) })).data.find((each: any) => each.id === 'past');
    const past = listen(historical.query.outputs[0].outputUri);
    await past.opened;
    await valo.put(`${session}/queries/past/_start`);
    await expect.poll(() => past.messages.some((message) => message.type === 'eos'), { timeout: 30_000 }).toBe(true);
    const rows = past.messages.flatMap((message) => message.items ?? []).map((item: any) => item.data);
    const lastMs = start + 29 * 3_600_000;
    expect(rows).toHaveLength((lastMs - (start - 86_400_000 + 10_000)) / 10_000 + 1);
    for (const row of rows.filter((_: unknown, index: number) => index % 97 === 0)) expect(row).toMatchObject(average(Date.parse(row.timestamp)));
  });
});

describe('valo client - live dashboards', () => {
  it('a live `window of 1 minute every 1 second` emits the trailing window within a second of a burst, and keeps moving it with no later event', async () => {
    const stream = '/streams/demo/iot_board/temperature_now';
    await putDefinition(stream, schema({ contributor: { type: 'contributor' }, timestamp, temperature: { type: 'double' } }));
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    const body = `from ${stream} group by contributor, timestamp window of 1 minute every 1 second select contributor, timestamp, avg(temperature) as Temperature, count() as n`;
    const queries = (await valo.put(session, { queries: [{ id: 'dashboard', body }] })).data;
    const output = listen(queries[0].query.outputs[0].outputUri);
    await output.opened;
    await valo.put(`${session}/queries/dashboard/_start`);
    await expect.poll(() => output.messages.some((message) => message.type === 'sos'), { timeout: 5_000 }).toBe(true);
    expect(output.messages[0].schema.config.key).toEqual(['contributor', 'timestamp']);
    // The SDK's example programs post readings stamped now, one per POST.
    const temperatures = [20, 21, 22.5, 23];
    const postedAt = Date.now();
    for (const temperature of temperatures) expect((await valo.post(stream, { contributor: 'board-7', timestamp: new Date().toISOString(), temperature })).status).toBe(200);
    const items = () => output.messages.flatMap((message) => message.items ?? []);
    await expect.poll(() => items().some((item: any) => item.action !== 'remove' && item.data.n === 4), { timeout: 5_000 }).toBe(true);
    const firstAfterMs = output.arrivals[output.messages.findIndex((message) => (message.items ?? []).some((item: any) => item.action !== 'remove' && item.data.n === 4))]! - postedAt;
    // Within the period (1 s), the tick that carries it (0.25 s) and the four POSTs.
    expect(firstAfterMs).toBeGreaterThanOrEqual(0);
    expect(firstAfterMs).toBeLessThan(2_500);
    const average = temperatures.reduce((sum, value) => sum + value, 0) / temperatures.length;
    // With no later event, the node's clock moves the window on every second: a remove of the
    // old row and an add of the next, still holding the four readings of the last minute.
    const seen = items().length;
    await expect.poll(() => items().slice(seen).filter((item: any) => item.action === 'add').length, { timeout: 6_000 }).toBeGreaterThanOrEqual(2);
    const later = items().slice(seen);
    for (const item of later.filter((each: any) => each.action === 'add')) expect(item.data).toMatchObject({ contributor: 'board-7', n: 4, Temperature: average });
    const starts = later.filter((each: any) => each.action === 'add').map((each: any) => Date.parse(each.data.timestamp));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(later.filter((each: any) => each.action === 'remove').length).toBeGreaterThanOrEqual(1);
    // Keyed by config.key: every remove names a row added before.
    const added = new Set(items().filter((item: any) => item.action === 'add').map((item: any) => item.data.timestamp));
    for (const item of items().filter((each: any) => each.action === 'remove')) expect(added.has(item.data.timestamp)).toBe(true);
    await valo.delete(session);
  }, 30_000);

  it('lists the streams of a collection under both keys, `streams` and `instances` (what the SDK screens read)', async () => {
    const listed = (await valo.get('/streams/demo/iot_board')).data;
    expect(listed.instances).toEqual(listed.streams);
    expect(listed.instances).toContain('temperature_now');
  });
});

describe('valo client - output channels end', () => {
  /** An EventSource as the SDK opens it (it reconnects when a response ends), with what it saw. */
  function follow(path: string) {
    const source = new EventSource(`${node.url}${path}`);
    sources.push(source);
    const seen = { messages: [] as any[], errors: [] as Array<number | undefined>, opens: 0 };
    source.onopen = () => seen.opens++;
    source.onmessage = (event) => seen.messages.push(JSON.parse(event.data));
    source.onerror = (event) => seen.errors.push((event as unknown as { code?: number }).code);
    return { source, seen };
  }

  it('after eos the EventSource is told not to come back (204 to its Last-Event-ID): it closes, having seen the result once', async () => {
    const stream = '/streams/demo/iot_board/readings';
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    const queries = (await valo.put(session, { queries: [{ id: 'past', body: `from historical ${stream} select temperature` }] })).data;
    const { source, seen } = follow(queries[0].query.outputs[0].outputUri);
    await expect.poll(() => seen.opens, { timeout: 5_000 }).toBe(1);
    await valo.put(`${session}/queries/past/_start`);
    await expect.poll(() => seen.messages.some((message) => message.type === 'eos'), { timeout: 15_000 }).toBe(true);
    // The response ends; the EventSource reconnects (3 s) with the last id and gets 204.
    await expect.poll(() => source.readyState, { timeout: 10_000 }).toBe(EventSource.CLOSED);
    expect(seen.errors).toContain(204);
    expect(seen.messages.filter((message) => message.type === 'eos')).toHaveLength(1);
    expect(seen.messages.filter((message) => message.type === 'sos')).toHaveLength(1);
    expect(seen.messages.flatMap((message) => message.items ?? [])).toHaveLength(30);
  }, 30_000);

  it('a stopped query and a deleted session end the response: the reconnecting EventSource gets 204, then 404 for a deleted session', async () => {
    const stream = '/streams/demo/iot_board/temperature_now';
    const session = (await valo.post('/execution/demo/sessions')).data.session as string;
    const queries = (await valo.put(session, { queries: [{ id: 'a', body: `from ${stream} select temperature` }, { id: 'b', body: `from ${stream} select contributor` }] })).data;
    const a = follow(queries.find((each: any) => each.id === 'a').query.outputs[0].outputUri);
    const b = follow(queries.find((each: any) => each.id === 'b').query.outputs[0].outputUri);
    await valo.put(`${session}/queries/a/_start`);
    await valo.put(`${session}/queries/b/_start`);
    await expect.poll(() => a.seen.messages.length + b.seen.messages.length, { timeout: 5_000 }).toBe(2);
    await valo.put(`${session}/queries/a/_stop`);
    await expect.poll(() => a.source.readyState, { timeout: 10_000 }).toBe(EventSource.CLOSED);
    expect(a.seen.errors).toContain(204);
    expect(b.source.readyState).toBe(EventSource.OPEN);
    await valo.delete(session);
    await expect.poll(() => b.source.readyState, { timeout: 10_000 }).toBe(EventSource.CLOSED);
    expect(b.seen.errors).toContain(404);
  }, 30_000);
});

describe('valo client - browsers on another origin', () => {
  it('answers a configured origin (and no other) on calls, preflights and SSE, exposing both version headers', async () => {
    const preflight = await fetch(`${node.url}/contributors/demo/mobile_user`, {
      method: 'OPTIONS',
      headers: { Origin: DASHBOARD, 'Access-Control-Request-Method': 'PUT', 'Access-Control-Request-Headers': 'Content-Type, Valo-Config-Version' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Valo-Config-Version');
    const get = await fetch(`${node.url}/contributors/demo/mobile_user`, { headers: { Origin: DASHBOARD } });
    expect(get.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    expect(get.headers.get('vary')).toContain('Origin');
    expect(get.headers.get('access-control-expose-headers')).toContain('Service-Config-Version');
    expect(get.headers.get('access-control-expose-headers')).toContain('Valo-Config-Version');
    const stranger = await fetch(`${node.url}/contributors/demo/mobile_user`, { headers: { Origin: 'http://evil.example' } });
    expect(stranger.status).toBe(200);
    expect(stranger.headers.get('access-control-allow-origin')).toBeNull();
    const controller = new AbortController();
    const sse = await fetch(`${node.url}/output/cluster`, { headers: { Origin: DASHBOARD }, signal: controller.signal });
    expect(sse.headers.get('access-control-allow-origin')).toBe(DASHBOARD);
    controller.abort();
  });
});
