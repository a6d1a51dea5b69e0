// A client-compatibility test (issue 13 item 4): the node driven as the 2016–2018 Valo
// JavaScript clients drive it. axios parses any JSON body into an object (and throws on
// non-2xx, with the parsed body on error.response), definitions are created then retried on
// 409 with the version read by a regular expression over the raw response text, events go
// one object per POST, sessions are reset with a PUT without a body, query ids are free
// text used URL-encoded in paths, outputs are read with the `eventsource` package after
// `_start`, and the sample data has the tutorial's shapes: missing and null fields, tweet
// ids beyond 2^53, and hopping windows of many windows per row.

import axios, { type AxiosInstance, type AxiosResponse } from 'axios';
import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJson } from '../../src/json.js';
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
function listen(path: string): { messages: any[]; raw: string[]; opened: Promise<void> } {
  const messages: any[] = [];
  const raw: string[] = [];
  const source = new EventSource(`${node.url}${path}`);
  sources.push(source);
  const opened = new Promise<void>((resolve) => (source.onopen = () => resolve()));
  source.onmessage = (event) => {
    raw.push(event.data);
    messages.push(JSON.parse(event.data));
  };
  return { messages, raw, opened };
}

const schema = (properties: object) => ({ schema: { version: '1.0', topDef: { type: 'record', properties } } });
const timestamp = { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] };

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'valo', env: { TRIBUTARY_CORS_ORIGINS: `${DASHBOARD},http://other.example` } });
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

  it('changing a stream from ssr to tsr while it holds payloads is refused with 409; before it has any, allowed', async () => {
    const stream = '/streams/demo/mobile/notes';
    await putDefinition(stream, schema({ timestamp, note: { type: 'string' } }));
    await putDefinition(`${stream}/repository`, { name: 'ssr', config: {} });
    expect((await putDefinition(`${stream}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
    await putDefinition(`${stream}/repository`, { name: 'ssr', config: {} });
    expect((await valo.post(stream, { timestamp: '2017-04-21T10:00:00Z', note: 'kept' })).status).toBe(200);
    const moved = await valo.put(`${stream}/repository`, { name: 'tsr', config: {} }, { validateStatus: () => true });
    expect(moved.status).toBe(409);
    expect(moved.data.error.type).toBe('STATE_CONFLICT');
    // The stored payload is still found where it is.
    const found = await valo.post('/ssr/demo/_search', { uris: [stream], query: { base: "search('kept')" }, count: 10, from: 0 });
    expect(found.data.total).toBe(1);
  });
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
    // Windows close as event time passes their end: the latest closed one per board is on the channel.
    const average = (startMs: number) => {
      const inside = readings.filter((reading) => Date.parse(reading.timestamp) >= startMs && Date.parse(reading.timestamp) < startMs + 86_400_000);
      return { n: inside.length, Temperature: inside.reduce((sum, reading) => sum + reading.temperature, 0) / inside.length };
    };
    await expect.poll(() => output.messages.flatMap((message) => message.items ?? []).filter((item: any) => item.action === 'add').length, { timeout: 15_000 }).toBeGreaterThan(3);
    for (const item of output.messages.flatMap((message) => message.items ?? []).filter((each: any) => each.action === 'add')) {
      expect(item.data).toMatchObject({ contributor: 'board-1', ...average(Date.parse(item.data.timestamp)) });
    }
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
