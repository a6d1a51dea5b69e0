// The Streams table, versions and bad input, driven over HTTP against a real node process.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, http, NodeProcess } from '../kit/node-process.js';

let node: NodeProcess;
let api: ReturnType<typeof client>;

const weatherSchema = {
  version: '1.0',
  topDef: {
    type: 'record',
    properties: {
      station: { type: 'string' },
      observed: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      temperature: { type: 'double' },
      position: { type: 'record', properties: { latitude: { type: 'double' }, longitude: { type: 'double' } } },
      contributor: { type: 'contributor', definition: 'station' },
      note: { type: 'string', optional: true },
    },
  },
};

beforeAll(async () => {
  node = await NodeProcess.start();
  api = client(node);
});
afterAll(cleanup);

describe('streams - definitions', () => {
  it('PUT then GET a stream returns the schema with a version header, and lists show it', async () => {
    const put = await api.put('/streams/demo/weather/obs', { schema: weatherSchema });
    expect(put.status).toBe(200);
    const version = put.headers.get('service-config-version');
    expect(version).toBeTruthy();
    expect(put.headers.get('valo-config-version')).toBe(version);

    const get = await api.get('/streams/demo/weather/obs');
    expect(get.status).toBe(200);
    expect(get.json).toEqual({ schema: weatherSchema });
    expect(get.headers.get('service-config-version')).toBe(version);

    expect((await api.get('/streams/demo')).json.instances).toContain('weather');
    expect((await api.get('/streams/demo/weather')).json).toEqual({ streams: ['obs'], instances: ['obs'] });
  });

  it('a PUT with a stale version gets 409 with the current version in the body, and nothing changes', async () => {
    const first = await api.put('/streams/demo/weather/v', { schema: weatherSchema });
    const v1 = first.headers.get('service-config-version')!;
    const second = await api.put('/streams/demo/weather/v', { schema: { ...weatherSchema, version: '2' } }, {
      'Service-Config-Version': v1,
    });
    expect(second.status).toBe(200);
    const v2 = second.headers.get('service-config-version')!;
    expect(v2).not.toBe(v1);

    const stale = await api.put('/streams/demo/weather/v', { schema: { ...weatherSchema, version: '3' } }, {
      'Valo-Config-Version': v1,
    });
    expect(stale.status).toBe(409);
    // Existing clients extract the version with a regular expression and retry with it.
    expect(/Valo-Config-Version: (\S+)\s/.exec(stale.text)?.[1]).toBe(v2);
    expect(stale.text).toContain(`Service-Config-Version: ${v2}`);
    expect((await api.get('/streams/demo/weather/v')).json.schema.version).toBe('2');

    const retried = await api.put('/streams/demo/weather/v', { schema: { ...weatherSchema, version: '3' } }, {
      'Valo-Config-Version': v2,
    });
    expect(retried.status).toBe(200);
  });

  it('an invalid type is 400 naming its path', async () => {
    const bad = structuredClone(weatherSchema) as any;
    bad.topDef.properties.position.properties.latitude.type = 'dbl';
    const response = await api.put('/streams/demo/weather/bad', { schema: bad });
    expect(response.status).toBe(400);
    expect(response.json.error.message).toContain('schema.topDef.properties.position.properties.latitude.type');
    expect((await api.get('/streams/demo/weather/bad')).status).toBe(404);
  });

  it('accepts every type name of the platform', async () => {
    const properties: Record<string, unknown> = {};
    for (const type of ['string', 'double', 'int', 'datetime', 'ip', 'boolean', 'byte', 'short', 'long', 'date',
      'time', 'duration', 'uuid', 'email', 'uri', 'geoPoint']) {
      properties[`f_${type}`] = { type };
    }
    properties.seq = { type: 'sequence', underlying: { type: 'int' } };
    properties.arr = { type: 'array', underlying: { type: 'string' } };
    properties.contributorByUri = { type: 'contributor', uri: { tenant: 'demo', collection: 'boards' } };
    properties.nested = { type: 'record', properties: { inner: { type: 'record', properties: { x: { type: 'int' } } } } };
    const response = await api.put('/streams/demo/types/all', { schema: { version: '1', topDef: { type: 'record', properties } } });
    expect(response.status).toBe(200);
  });

  it('taxonomy, tags, repository and policy round-trip with versions', async () => {
    const base = '/streams/demo/weather/obs';
    expect((await api.get(`${base}/taxonomy`)).json).toEqual({ taxonomy: { nodes: [] } });
    const taxonomy = { nodes: [{ name: 'place', expression: ['station'] }, { name: 'when', expression: ['year(observed)', 'month(observed)'] }] };
    const putTaxonomy = await api.put(`${base}/taxonomy`, { taxonomy });
    expect(putTaxonomy.status).toBe(200);
    const taxonomyGet = await api.get(`${base}/taxonomy`);
    expect(taxonomyGet.json).toEqual({ taxonomy });
    expect(taxonomyGet.headers.get('service-config-version')).toBe(putTaxonomy.headers.get('service-config-version'));
    expect((await api.put(`${base}/taxonomy`, { taxonomy: { nodes: [{ name: 'x', expression: ['nope'] }] } })).status).toBe(400);
    expect((await api.put(`${base}/taxonomy`, { taxonomy: { nodes: [{ name: 'x', expression: ['year(station)'] }] } })).status).toBe(400);

    expect((await api.get(`${base}/repository`)).status).toBe(404);
    expect((await api.put(`${base}/repository`, { name: 'es', config: {} })).status).toBe(400);
    const repository = { name: 'ssr', config: { defaultStringAnalyzer: 'standard' } };
    expect((await api.put(`${base}/repository`, repository)).status).toBe(200);
    expect((await api.get(`${base}/repository`)).json).toEqual(repository);

    expect((await api.get(`${base}/policy`)).json).toEqual({ replicas: 3, ring_size: 128, hash_payload: { bytes: 128 } });
    const policy = { replicas: 2, ring_size: 64, hash_payload: { bytes: 64 } };
    expect((await api.put(`${base}/policy`, policy)).status).toBe(200);
    expect((await api.get(`${base}/policy`)).json).toEqual(policy);
    for (const bad of [
      { replicas: 0, ring_size: 64, hash_payload: { bytes: 64 } },
      { replicas: 65, ring_size: 64, hash_payload: { bytes: 64 } },
      { replicas: 2, ring_size: 1.5, hash_payload: { bytes: 64 } },
      { replicas: 2, ring_size: 64 },
    ]) {
      expect((await api.put(`${base}/policy`, bad)).status).toBe(400);
    }

    const tags = [{ field: 'labels', lang: 'javascript', enabled: true, script: 'function tag(p) { return [p.station]; }' }];
    expect((await api.put(`${base}/tags`, { tags })).status).toBe(200);
    expect((await api.get(`${base}/tags`)).json).toEqual({ tags });
    const syntaxError = [{ field: 'labels', lang: 'javascript', enabled: true, script: 'function tag(p) { return [' }];
    expect((await api.put(`${base}/tags`, { tags: syntaxError })).status).toBe(400);
    expect((await api.put(`${base}/tags`, { tags: [{ ...tags[0], lang: 'python' }] })).status).toBe(400);
  });

  it('the system collection answers GET only', async () => {
    expect((await api.put('/streams/demo/system/x', { schema: weatherSchema })).status).toBe(403);
    expect((await api.post('/streams/demo/system/x', [{}])).status).toBe(403);
  });

  it('unknown tenant, collection or stream is 404', async () => {
    expect((await api.get('/streams/nobody')).status).toBe(404);
    expect((await api.put('/streams/nobody/c/s', { schema: weatherSchema })).status).toBe(404);
    expect((await api.get('/streams/demo/nothing-here')).status).toBe(404);
    expect((await api.get('/streams/demo/weather/missing')).status).toBe(404);
    expect((await api.post('/streams/demo/weather/missing', [{}])).status).toBe(404);
  });
});

describe('streams - bad input', () => {
  it('invalid JSON is 400, a body that is not JSON is 415, too large is 413', async () => {
    const invalid = await http(`${node.url}/streams/demo/weather/x`, 'PUT', '{"schema": ', { 'content-type': 'application/json' });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.message).toMatch(/invalid JSON/);
    const form = await http(`${node.url}/streams/demo/weather/x`, 'PUT', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(415);
    const huge = await http(`${node.url}/streams/demo/weather/obs`, 'POST', JSON.stringify([{ pad: 'x'.repeat(17 * 1024 * 1024) }]));
    expect(huge.status).toBe(413);
    // The node still answers after each.
    expect((await api.get('/cluster/localNode')).status).toBe(200);
  });

  it('names with .., control characters, encoded slashes or over 128 characters are 400', async () => {
    for (const name of ['a..b', 'a%01b', 'a%2Fb', 'x'.repeat(129)]) {
      const response = await api.put(`/streams/demo/c/${name}`, { schema: weatherSchema });
      expect(response.status, name).toBe(400);
      expect(response.json.error.message).toMatch(/stream name/);
    }
  });

  it('no response carries a stack trace, and unknown routes are JSON 404s', async () => {
    const response = await api.get('/no/such/route');
    expect(response.status).toBe(404);
    expect(response.json.error.type).toBe('NOT_FOUND');
    const malformed = await api.get('/streams/%E0%A4%A');
    expect(malformed.status).toBeGreaterThanOrEqual(400);
    expect(malformed.status).toBeLessThan(500);
    expect(malformed.text).not.toMatch(/at .*\.js:\d+/);
  });
});
