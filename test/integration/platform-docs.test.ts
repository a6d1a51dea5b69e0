// The platform interface's OpenAPI document against real answers: a node
// is driven through every operation of the document, every request body is checked against
// the document's request schema and every answer against the status, media type and
// schema the document declares for it. At the end every operation has been answered with
// a success at least once.

import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClusterNode, until, waitState } from '../kit/cluster.js';
import { cleanup, http, type HttpResult, type NodeProcess } from '../kit/node-process.js';
import { OpenApiCheck } from '../kit/openapi-check.js';
import { SseClient } from '../kit/sse-client.js';

const BODY_BYTES_MAX = 65_536;

let node: NodeProcess;
let check: OpenApiCheck;

beforeAll(async () => {
  node = await startClusterNode('docs-1', { args: ['--limits-body-bytes-max', String(BODY_BYTES_MAX), '--storage-move-grace-ms', '0'] });
  check = new OpenApiCheck((await http(`${node.url}/openapi.json`, 'GET')).json);
});
afterAll(cleanup);

interface Call {
  body?: unknown;
  headers?: Record<string, string>;
  /** Send the body as given, unchecked (a test of a bad body). */
  raw?: boolean;
  /** A query string, `?…`, after the path. */
  query?: string;
}

/** Calls the operation `METHOD template` with `params` filled in, checking both ways. */
async function call(method: string, template: string, params: Record<string, string> = {}, options: Call = {}): Promise<HttpResult> {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!)) + (options.query ?? '');
  if (options.body !== undefined && options.raw !== true) check.expectRequest(method, template, options.body);
  const response = await http(node.url + path, method, options.body, options.headers);
  check.expectAnswer(method, template, response);
  return response;
}

/** An SSE operation: the status and media type of the answer, and its first event. */
async function callSse(template: string, params: Record<string, string>): Promise<SseClient> {
  const path = template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name]!));
  const client = await SseClient.connect(node.url + path);
  const head = await fetch(node.url + path, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
  expect(head).toBeDefined();
  check.expectAnswer('GET', template, { status: head!.status, headers: head!.headers });
  await head!.body?.cancel();
  return client;
}

const STREAM = '/streams/{tenant}/{collection}/{name}';
const obs = { tenant: 'demo', collection: 'weather', name: 'obs' };
const schema = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      station: { type: 'string' },
      country: { type: 'string' },
      city: { type: 'string' },
      temperature: { type: 'double' },
      observed: { type: 'datetime' },
      board: { type: 'contributor', definition: 'board' },
    },
  },
};
const payloads = Array.from({ length: 40 }, (_, index) => ({
  station: `s-${index}`,
  country: index % 2 === 0 ? 'FR' : 'NO',
  city: index % 4 < 2 ? 'north' : 'south',
  temperature: index,
  observed: new Date(Date.UTC(2024, 0, 1 + index)).toISOString(),
  board: 'board-00001',
}));

describe('platform docs - the document', () => {
  it('GET /openapi.json is a valid OpenAPI 3.1 document naming every route of the spec', async () => {
    const response = await call('GET', '/openapi.json');
    expect(response.status).toBe(200);
    const result = await new Validator().validate(response.json);
    expect(result.errors ?? []).toEqual([]);
    expect(response.json.openapi).toBe('3.1.0');
    const operations = Object.entries(response.json.paths).flatMap(([path, methods]) => Object.keys(methods as object).map((method) => `${method.toUpperCase()} ${path}`));
    expect(operations).toEqual(expect.arrayContaining(['PUT /streams/{tenant}/{collection}/{name}', 'POST /ssr/{tenant}/_discover', 'GET /output/cluster', 'PUT /execution/{tenant}/sessions/{id}/queries/{queryId}/_daemonise']));
  });

  it('GET /docs serves Swagger UI of /openapi.json from the node itself, and GET / links to it', async () => {
    const page = await call('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/https?:\/\//);
    const initialiser = await call('GET', '/docs/{asset}', { asset: 'initialiser.js' });
    expect(initialiser.text).toContain("url: '/openapi.json'");
    expect((await call('GET', '/docs/{asset}', { asset: 'swagger-ui-bundle.js' })).text).toContain('SwaggerUIBundle');
    expect((await call('GET', '/docs/{asset}', { asset: 'package.json' })).status).toBe(404);
    const index = await call('GET', '/');
    expect(index.json.links).toMatchObject({ console: '/console', docs: '/docs', openapi: '/openapi.json' });
    const consolePage = await call('GET', '/console');
    expect(consolePage.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(consolePage.text).not.toMatch(/https?:\/\//);
    for (const [, asset] of consolePage.text.matchAll(/(?:src|href)="\/console\/([^"]+)"/g)) expect((await call('GET', '/console/{asset}', { asset: asset! })).status).toBe(200);
    expect((await call('GET', '/console/{asset}', { asset: 'package.json' })).status).toBe(404);
    // Its first paint, before any read: each part says it is loading, none says it is empty.
    expect(consolePage.text).toMatch(/<p id="streams-loading" class="note loading">[^<]+<\/p>/);
    expect(consolePage.text).toMatch(/<p id="nodes-loading" class="note loading">[^<]+<\/p>/);
    expect(consolePage.text).toMatch(/<p id="history-loading" class="note loading">[^<]+<\/p>/);
    expect(consolePage.text).toMatch(/<div id="charts" class="charts" hidden>/);
    expect(consolePage.text).toMatch(/<p id="no-streams" class="note" hidden>/);
    expect(consolePage.text).toMatch(/<p id="no-transfers" class="note" hidden>/);
    const html = await http(`${node.url}/`, 'GET', undefined, { accept: 'text/html' });
    expect(html.text).toContain('href="/console"');
    expect(html.text).toContain('href="/docs"');
  });
});

describe('platform docs - every operation answers as documented', () => {
  it('streams: definition, parts, payloads, and the errors of bodies', async () => {
    expect((await call('PUT', STREAM, obs, { body: { schema } })).status).toBe(200);
    const got = await call('GET', STREAM, obs);
    expect(got.json).toEqual({ schema });
    const version = got.headers.get('service-config-version')!;
    expect((await call('GET', '/streams/{tenant}', { tenant: 'demo' })).json.instances).toContain('weather');
    expect((await call('GET', '/streams/{tenant}/{collection}', obs)).json.streams).toEqual(['obs']);
    expect((await call('PUT', `${STREAM}/repository`, obs, { body: { name: 'ssr', config: { defaultStringAnalyzer: 'standard' } } })).status).toBe(200);
    expect((await call('GET', `${STREAM}/repository`, obs)).json.name).toBe('ssr');
    expect((await call('PUT', `${STREAM}/policy`, obs, { body: { replicas: 1, ring_size: 8, hash_payload: { bytes: 64 } } })).status).toBe(200);
    expect((await call('GET', `${STREAM}/policy`, obs)).json.ring_size).toBe(8);
    expect((await call('PUT', `${STREAM}/taxonomy`, obs, { body: { taxonomy: { nodes: [{ name: 'place', expression: ['country', 'city'] }] } } })).status).toBe(200);
    expect((await call('GET', `${STREAM}/taxonomy`, obs)).json.taxonomy.nodes).toHaveLength(1);
    const tags = { tags: [{ field: 'words', lang: 'javascript', enabled: true, script: 'function tag(p) { return [p.city] }' }] };
    expect((await call('PUT', `${STREAM}/tags`, obs, { body: tags })).status).toBe(200);
    expect((await call('GET', `${STREAM}/tags`, obs)).json).toEqual(tags);
    expect((await call('POST', `${STREAM}/tags`, obs, { body: payloads[0] })).json.words).toEqual(['north']);
    expect((await call('POST', STREAM, obs, { body: payloads })).status).toBe(200);
    const failed = await call('POST', STREAM, obs, { body: [payloads[0], { ...payloads[1], temperature: 'warm' }] });
    expect(failed.status).toBe(500);
    expect(Object.keys(failed.json)).toEqual(['1']);

    // The errors every body may meet, each as the document declares it.
    const bad = await call('PUT', `${STREAM}/policy`, obs, { body: { replicas: 9, ring_size: 8, hash_payload: { bytes: 1 } }, raw: true });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toBe('replicas: must not exceed ring_size (8), got 9');
    const badTag = await call('PUT', `${STREAM}/tags`, obs, { body: { tags: [{ field: 'f', lang: 'python', script: '' }] }, raw: true });
    expect(badTag.json.error.message).toBe("tags[0].lang: expected 'javascript', got 'python'");
    expect((await call('GET', STREAM, { ...obs, name: 'missing' })).status).toBe(404);
    expect((await call('PUT', STREAM, obs, { body: { schema }, headers: { 'service-config-version': `${version}9` } })).status).toBe(409);
    expect((await call('POST', STREAM, { ...obs, collection: 'system' }, { body: payloads })).status).toBe(403);
    expect((await call('PUT', STREAM, obs, { body: 'schema', raw: true, headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await call('POST', STREAM, obs, { body: [{ pad: 'x'.repeat(BODY_BYTES_MAX) }], raw: true })).status).toBe(413);

    // A change of repository on a stream that holds payloads moves them; its progress.
    const moved = { tenant: 'moves', collection: 'weather', name: 'moved' };
    expect((await call('PUT', '/cluster/tenants/{name}', { name: 'moves' })).status).toBe(200);
    expect((await call('PUT', STREAM, moved, { body: { schema } })).status).toBe(200);
    expect((await call('PUT', `${STREAM}/policy`, moved, { body: { replicas: 1, ring_size: 8, hash_payload: { bytes: 64 } } })).status).toBe(200);
    expect((await call('GET', `${STREAM}/repository/move`, moved)).status).toBe(404);
    // (In a tenant of its own: the searches, contributors and domains below are demo's.)
    expect((await call('PUT', `${STREAM}/repository`, moved, { body: { name: 'ssr', config: {} } })).status).toBe(200);
    expect((await call('POST', STREAM, moved, { body: payloads.slice(0, 5) })).status).toBe(200);
    expect((await call('PUT', `${STREAM}/repository`, moved, { body: { name: 'tsr', config: {} } })).status).toBe(200);
    expect((await call('GET', `${STREAM}/repository/move`, moved)).json.move).toMatchObject({ from: 'ssr', to: 'tsr' });
    // A move holds membership changes back (the cluster test below) until it is complete.
    await until('the move to complete', async () => (await call('GET', `${STREAM}/repository/move`, moved)).json.move.complete === true);
  });

  it('search: _search, _facet, _timeRangeHistogram and _discover', async () => {
    const uris = ['/streams/demo/weather/obs'];
    const range = { start: '2024-01-01T00:00:00Z', end: '2024-03-01T00:00:00Z' };
    const search = await call('POST', '/ssr/{tenant}/_search', { tenant: 'demo' }, { body: { uris, query: { base: 'temperature >= 30' }, count: 5 } });
    expect(search.json.total).toBe(10);
    const facet = await call('POST', '/ssr/{tenant}/_facet', { tenant: 'demo' }, {
      body: { uris, facets: [{ type: 'taxonomy', dimension: 'place', topN: 5, depth: 2 }, { type: 'range', field: 'temperature', ranges: [{ from: 0, to: 9 }] }] },
    });
    // 41: the failed batch above stored its first payload.
    expect(facet.json.facets[0].count).toBe(41);
    const histogram = await call('POST', '/ssr/{tenant}/_timeRangeHistogram', { tenant: 'demo' }, { body: { uris, range, frequency: 'MONTH' } });
    expect(histogram.json.histogram.buckets).toEqual([32, 9, 0]);
    const discover = await call('POST', '/ssr/{tenant}/_discover', { tenant: 'demo' }, { body: { query: { base: "city == 'north'" }, range, results: { topN: 3 } } });
    expect(discover.json.streams[0].values).toHaveLength(3);
    const bad = await call('POST', '/ssr/{tenant}/_search', { tenant: 'demo' }, { body: { uris, count: -1 }, raw: true });
    expect(bad.json.error.message).toBe('count: must be at least 0, got -1');
  });

  it('contributors and domains', async () => {
    const type = { tenant: 'demo', type: 'board' };
    const instance = { ...type, id: 'board-00001' };
    const typeBody = { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, region: { type: 'string' } } } };
    expect((await call('PUT', '/contributors/{tenant}/{type}', type, { body: typeBody })).json).toEqual(typeBody);
    expect((await call('GET', '/contributors/{tenant}/{type}', type)).status).toBe(200);
    expect((await call('GET', '/contributors/{tenant}', type)).json.instances).toEqual(['board']);
    expect((await call('PUT', '/contributors/{tenant}/{type}/instances/{id}', instance, { body: { contributor: 'board-00001', region: 'north' } })).status).toBe(200);
    expect((await call('GET', '/contributors/{tenant}/{type}/instances/{id}', instance)).json.region).toBe('north');
    expect((await call('GET', '/contributors/{tenant}/{type}/instances', type)).json.instances).toEqual(['board-00001']);
    expect((await call('GET', '/contributors/{tenant}/{type}/instances/{id}/streams', instance)).json.streams).toEqual(['/streams/demo/weather/obs']);

    const domain = { tenant: 'demo', collection: 'ops', name: 'north' };
    const domainBody = { contributorFilters: [{ contributor: '/contributors/demo/board', query: "region == 'north'" }], userData: { owner: 'ops' } };
    expect((await call('PUT', '/domain/{tenant}/{collection}/{name}', domain, { body: domainBody })).json).toEqual(domainBody);
    expect((await call('GET', '/domain/{tenant}/{collection}/{name}', domain)).json).toEqual(domainBody);
    expect((await call('GET', '/domain/{tenant}', domain)).json.instances).toEqual(['ops']);
    expect((await call('GET', '/domain/{tenant}/{collection}', domain)).json.instances).toEqual(['north']);
    expect((await call('GET', '/domain/{tenant}/{collection}/{name}/contributors', domain)).json.contributors[0].items).toEqual([{ id: 'board-00001' }]);
    expect((await call('GET', '/domain/{tenant}/{collection}/{name}/streams', domain)).json.streams).toEqual(['/streams/demo/weather/obs']);
  });

  it('execution: sessions, domain, variables, queries, outputs, daemons', async () => {
    const created = await call('POST', '/execution/{tenant}/sessions', { tenant: 'demo' });
    const session = { tenant: 'demo', id: created.json.session.split('/').pop() };
    const query = { id: 'warm', body: 'from /streams/demo/weather/obs\nwhere temperature > @threshold\nselect station, temperature' };
    const body = { variables: [{ id: 'threshold', value: 30, type: 'double' }], queries: [query] };
    const put = await call('PUT', '/execution/{tenant}/sessions/{id}', session, { body });
    expect(put.json[0].id).toBe('warm');
    expect((await call('GET', '/execution/{tenant}/sessions/{id}', session)).json.queries[0].body).toBe(query.body);
    expect((await call('PUT', '/execution/{tenant}/sessions/{id}/domain', session, { body: { domain: '/domain/demo/ops/north' } })).status).toBe(200);
    expect((await call('GET', '/execution/{tenant}/sessions/{id}/domain', session)).json).toEqual({ domain: '/domain/demo/ops/north' });
    expect((await call('DELETE', '/execution/{tenant}/sessions/{id}/domain', session)).status).toBe(200);
    expect((await call('GET', '/execution/{tenant}/sessions/{id}/domain', session)).status).toBe(404);
    expect((await call('PUT', '/execution/{tenant}/sessions/{id}/variables', session, { body: { id: 'unused', value: 'x', type: 'string' } })).status).toBe(200);
    expect((await call('GET', '/execution/{tenant}/sessions/{id}/variables/{variableId}', { ...session, variableId: 'unused' })).json).toEqual({ value: 'x', type: 'string' });
    expect((await call('DELETE', '/execution/{tenant}/sessions/{id}/variables/{variableId}', { ...session, variableId: 'unused' })).status).toBe(200);
    const live = { id: 'live', body: 'from /streams/demo/weather/obs\nselect station, city' };
    expect((await call('PUT', '/execution/{tenant}/sessions/{id}/queries', session, { body: live })).status).toBe(200);
    const bad = await call('PUT', '/execution/{tenant}/sessions/{id}/queries', session, { body: { id: 'bad', body: 'from /streams/demo/weather/obs\nselect nope' } });
    expect(bad.status).toBe(400);
    expect(bad.json.errors.length).toBeGreaterThan(0);
    const queryOf = { ...session, queryId: 'live' };
    expect((await call('GET', '/execution/{tenant}/sessions/{id}/queries/{queryId}', queryOf)).json.query.state).toBe('initialised');
    const started = await call('PUT', '/execution/{tenant}/sessions/{id}/queries/{queryId}/_start', queryOf);
    const output = started.json.find((entry: any) => entry.id === 'live').query.outputs[0];
    const [, , tenant, outputId] = output.outputUri.split('/');
    const sse = await callSse('/output/{tenant}/{outputId}', { tenant, outputId });
    await call('POST', STREAM, obs, { body: [payloads[3]] });
    await sse.waitFor('the posted row', (client) => client.adds().some((row) => row.station === 's-3'));
    sse.close();
    expect((await call('GET', '/execution/{tenant}/sessions/{id}/queries', session)).json).toHaveLength(2);
    expect((await call('PUT', '/execution/{tenant}/sessions/{id}/queries/{queryId}/_stop', queryOf)).status).toBe(200);
    const daemonised = await call('PUT', '/execution/{tenant}/sessions/{id}/queries/{queryId}/_daemonise', { ...session, queryId: 'warm' }, { body: { target: { type: 'QUERY' } } });
    expect(daemonised.json.daemonUri).toMatch(/^\/daemon\/demo\/system\//);
    expect((await call('DELETE', '/execution/{tenant}/sessions/{id}/queries/{queryId}', queryOf)).status).toBe(200);
    expect((await call('DELETE', '/execution/{tenant}/sessions/{id}', session)).status).toBe(200);
    expect((await call('GET', '/execution/{tenant}/sessions/{id}', session)).status).toBe(404);

    const daemon = { tenant: 'demo', collection: 'alerts', id: 'warm' };
    const daemonBody = { query: { queries: [query], variables: body.variables }, settings: { target: { type: 'QUERY' } } };
    expect((await call('PUT', '/daemon/{tenant}/{collection}/{id}', daemon, { body: daemonBody })).json).toEqual(daemonBody);
    expect((await call('GET', '/daemon/{tenant}/{collection}/{id}', daemon)).json).toEqual(daemonBody);
    expect((await call('GET', '/daemon/{tenant}/{collection}', daemon)).json.instances).toEqual(['warm']);
    expect((await call('GET', '/daemon/{tenant}/{collection}/{id}/details', daemon)).json.output.type).toBe('OUTPUT_CHANNEL');
    expect((await call('DELETE', '/daemon/{tenant}/{collection}/{id}', daemon)).status).toBe(200);

    // Deleted only now: the domain was in use by the session above.
    const domain = { tenant: 'demo', collection: 'ops', name: 'north' };
    expect((await call('DELETE', '/domain/{tenant}/{collection}/{name}', domain)).status).toBe(200);
    const instance = { tenant: 'demo', type: 'board', id: 'board-00001' };
    expect((await call('DELETE', '/contributors/{tenant}/{type}/instances/{id}', instance)).status).toBe(200);
    expect((await call('DELETE', '/contributors/{tenant}/{type}', instance)).status).toBe(200);
  });

  it('monitoring and admin', async () => {
    expect((await call('GET', '/monitoring/{tenant}', { tenant: 'demo' })).json.instances).toContain('cluster');
    expect((await call('GET', '/monitoring/{tenant}/{service}', { tenant: 'demo', service: 'cluster' })).json.nodes[0].node).toBe('docs-1');
    const vendor = { tenant: 'demo', id: 'acme' };
    const vendorBody = { id: 'acme', key: 'k-1', support: 'ops@acme.example' };
    expect((await call('PUT', '/admin/{tenant}/vendors/{id}', vendor, { body: vendorBody })).json).toEqual(vendorBody);
    expect((await call('GET', '/admin/{tenant}/vendors/{id}', vendor)).json).toEqual(vendorBody);
    expect((await call('GET', '/admin/{tenant}/vendors', vendor)).json.instances).toEqual(['acme']);
    expect((await call('DELETE', '/admin/{tenant}/vendors/{id}', vendor)).status).toBe(200);
  });

  it('cluster: nodes, tenants, events, transfers, a node added and removed', async () => {
    expect((await call('GET', '/cluster', {})).json.nodes).toHaveLength(1);
    expect((await call('GET', '/cluster/nodes', {})).json.nodes[0].name).toBe('docs-1');
    expect((await call('GET', '/cluster/localNode', {})).json.node.state).toBe('Joined');
    expect((await call('GET', '/cluster/nodes/{name}', { name: 'docs-1' })).status).toBe(200);
    expect((await call('PUT', '/cluster/tenants/{name}', { name: 'acme' })).status).toBe(200);
    expect((await call('GET', '/cluster/tenants/{name}', { name: 'acme' })).json).toEqual({ name: 'acme' });
    expect((await call('GET', '/cluster/tenants', {})).json.tenants).toContainEqual({ name: 'acme' });
    expect((await call('GET', '/cluster/join-token', {})).json.joinToken).toMatch(/^tribjoin1\./);
    const events = await callSse('/output/cluster', {});
    const joining = await startClusterNode('docs-2', { join: true });
    const { publicKey } = (await http(`${joining.url}/cluster/localNode`, 'GET')).json.node;
    const added = await call('POST', '/cluster/nodes', {}, { body: { nodes: [{ name: 'docs-2', publicKey, address: '127.0.0.1', port: joining.peerPort }] } });
    expect(added.status).toBe(200);
    await waitState(joining, 'Joined');
    const transfers = await call('GET', '/cluster/transfers', {});
    expect(transfers.json.actions.some((action: any) => action.to === 'docs-2')).toBe(true);
    const repair = await call('POST', '/cluster/repair', {}, { body: { stream: '/streams/demo/weather/obs' } });
    expect(repair.status).toBe(202);
    expect(repair.json.repair.nodes.sort()).toEqual(['docs-1', 'docs-2']);
    await until('the repair run completes', async () => (await call('GET', '/cluster/repair/{id}', { id: repair.json.repair.id })).json.repair.complete === true, 30_000);
    expect((await call('DELETE', '/cluster/nodes/{name}', { name: 'docs-2' })).status).toBe(200);
    await waitState(joining, 'Left');
    await events.waitFor('NODE_STATE_UPDATED of docs-2', (client) => client.messages.some((message: any) => message.type === 'NODE_STATE_UPDATED' && message.node === 'docs-2'));
    const validate = check.schemaAt('components', 'schemas', 'ClusterEvent');
    for (const message of events.messages) expect(validate(message), JSON.stringify(validate.errors)).toBe(true);
    events.close();
  });

  it('the console view of the ring', async () => {
    const ring = await call('GET', '/console/data/ring', {});
    expect(ring.json.rings.map((each: any) => [each.ringSize, each.replicas])).toEqual([[8, 1]]);
    expect(ring.json.rings[0].holdings['docs-1'].held).toBe(8);
    // docs-2 has left: only docs-1 is charted, with its readiness now.
    const history = async () => (await call('GET', '/console/data/history', {})).json;
    expect(await history()).toMatchObject({ intervalMs: 5_000, windowMs: 900_000, nodes: [expect.objectContaining({ node: 'docs-1', ready: true, reasons: [] })] });
    // Payloads were posted above: a sample (every 5 s) counts them.
    await until('a sample of docs-1 counts ingest', async () => Math.max(0, ...(await history()).nodes[0].samples.ingestPayloadsPerSecond) > 0, 15_000);
  });

  it("operators' routes: health, readiness, metrics and the _cat tables (text and JSON)", async () => {
    expect((await call('GET', '/health', {})).json).toMatchObject({ status: 'up', node: 'docs-1' });
    expect((await call('GET', '/ready', {})).json).toMatchObject({ ready: true, state: 'Joined', reasons: [] });
    expect((await call('GET', '/metrics', {})).text).toContain('tributary_node_info');
    expect((await call('GET', '/_cat', {})).text).toContain('/_cat/streams');
    // The console counts stored payloads from these rows.
    const streams = await call('GET', '/_cat/streams', {}, { query: '?format=json' });
    expect(streams.json).toEqual([
      { stream: 'demo/weather/obs', repo: 'ssr', replicas: 1, ring_size: 8, partitions: expect.any(Number), records: 42 },
      { stream: 'moves/weather/moved', repo: 'tsr', replicas: 1, ring_size: 8, partitions: expect.any(Number), records: 5 },
    ]);
    expect((await call('GET', '/_cat/streams', {}, { query: '?v' })).text).toMatch(/^stream\s+repo/);
    // docs-2 was added and removed above.
    expect((await call('GET', '/_cat/nodes', {}, { query: '?format=json&h=name,state' })).json).toEqual([{ name: 'docs-1', state: 'Joined' }, { name: 'docs-2', state: 'Left' }]);
    const transfers = await call('GET', '/_cat/transfers', {}, { query: '?format=json' });
    expect(transfers.json.some((transfer: any) => transfer.to === 'docs-2' && transfer.state === 'done')).toBe(true);
    expect((await call('GET', '/_cat/nodes', {}, { query: '?colour=red' })).status).toBe(400);
  });

  it('every operation of the document was answered with a success', () => {
    expect(check.neverSucceeded()).toEqual([]);
  });
});
