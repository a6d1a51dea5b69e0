// The Contributors table over HTTP against a real node process: types, instances, lists,
// versions and the 409 rule, bad input, and the streams a contributor published to.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';

let api: ReturnType<typeof client>;

const boardType = {
  schema: {
    type: 'record',
    properties: {
      id: { type: 'contributor', annotations: ['urn:example:key'] },
      region: { type: 'string', annotations: ['urn:example:label'] },
      slots: { type: 'int' },
      location: { type: 'record', optional: true, properties: { site: { type: 'string' } } },
    },
  },
};
const sensorType = { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, kind: { type: 'string' } } } };
const UUID = '8d1c5f8e-3b0a-4b8e-9d7e-2f1a3c4b5d6e';

beforeAll(async () => {
  api = client(await NodeProcess.start({ name: 'contributors' }));
});
afterAll(cleanup);

describe('contributors - types', () => {
  it('PUT /contributors/:tenant/:type answers the same schema body with a version; GET returns it, annotations kept', async () => {
    const put = await api.put('/contributors/demo/board', boardType);
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual(boardType);
    const version = put.headers.get('service-config-version');
    expect(version).toBeTruthy();
    expect(put.headers.get('valo-config-version')).toBe(version);
    const get = await api.get('/contributors/demo/board');
    expect(get.status).toBe(200);
    expect(get.json).toEqual(boardType);
    expect(get.headers.get('service-config-version')).toBe(version);
  });

  it('the spec field name contributor works as well as id', async () => {
    expect((await api.put('/contributors/demo/sensor', sensorType)).status).toBe(200);
  });

  it('GET /contributors/:tenant lists the types (200, not the 410 the spec shows)', async () => {
    const list = await api.get('/contributors/demo');
    expect(list.status).toBe(200);
    expect(list.json).toEqual({ instances: ['board', 'sensor'] });
  });

  it('a schema with no or two contributor fields, or a misnamed one, is 400 naming the problem', async () => {
    const none = await api.put('/contributors/demo/bad', { schema: { type: 'record', properties: { name: { type: 'string' } } } });
    expect(none.status).toBe(400);
    expect(none.json.error.message).toMatch(/field of type 'contributor'/);
    const two = await api.put('/contributors/demo/bad', { schema: { type: 'record', properties: { id: { type: 'contributor' }, contributor: { type: 'contributor' } } } });
    expect(two.status).toBe(400);
    expect(two.json.error.message).toMatch(/exactly one field of type 'contributor'; it has 2/);
    const misnamed = await api.put('/contributors/demo/bad', { schema: { type: 'record', properties: { owner: { type: 'contributor' } } } });
    expect(misnamed.status).toBe(400);
    expect(misnamed.json.error.message).toMatch(/'contributor' or 'id'/);
    expect((await api.put('/contributors/demo/bad', { schema: { type: 'record', properties: { id: { type: 'nope' } } } })).status).toBe(400);
    expect((await api.get('/contributors/demo/bad')).status).toBe(404);
  });

  it('updates follow the 409 rule: a stale version changes nothing and the body names the current one', async () => {
    const current = (await api.get('/contributors/demo/sensor')).headers.get('service-config-version')!;
    const updated = { schema: { ...sensorType.schema, properties: { ...sensorType.schema.properties, site: { type: 'string', optional: true } } } };
    const next = await api.put('/contributors/demo/sensor', updated, { 'Service-Config-Version': current });
    expect(next.status).toBe(200);
    const stale = await api.put('/contributors/demo/sensor', sensorType, { 'Valo-Config-Version': current });
    expect(stale.status).toBe(409);
    const now = next.headers.get('service-config-version')!;
    // A client that sent Valo-Config-Version reads the 409 as text.
    expect(stale.headers.get('content-type')).toContain('text/plain');
    expect(stale.text).toContain(`Valo-Config-Version: ${now} `);
    const staleJson = await api.put('/contributors/demo/sensor', sensorType, { 'Service-Config-Version': current });
    expect(staleJson.status).toBe(409);
    expect(staleJson.json.error.message).toContain(`Service-Config-Version: ${now} `);
    expect((await api.get('/contributors/demo/sensor')).json).toEqual(updated);
  });

  it('unknown tenant or type is 404', async () => {
    expect((await api.get('/contributors/nobody')).status).toBe(404);
    expect((await api.get('/contributors/demo/pump')).status).toBe(404);
    expect((await api.get('/contributors/demo/pump/instances')).status).toBe(404);
    expect((await api.put('/contributors/demo/pump/instances/p-1', { id: 'p-1' })).status).toBe(404);
  });
});

describe('contributors - instances', () => {
  it('PUT answers the instance document with a version; GET returns it (200, not 410)', async () => {
    const board = { id: 'board-00001', region: 'north', slots: 8, location: { site: 'lab' } };
    const put = await api.put('/contributors/demo/board/instances/board-00001', board);
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual(board);
    const version = put.headers.get('service-config-version');
    expect(version).toBeTruthy();
    const get = await api.get('/contributors/demo/board/instances/board-00001');
    expect(get.status).toBe(200);
    expect(get.json).toEqual(board);
    expect(get.headers.get('service-config-version')).toBe(version);
  });

  it('ids may be UUIDs (the spec) or names like board-00001; lists answer 200 with every id', async () => {
    expect((await api.put(`/contributors/demo/sensor/instances/${UUID}`, { contributor: UUID, kind: 'temp' })).status).toBe(200);
    expect((await api.put('/contributors/demo/board/instances/board-00002', { id: 'board-00002', region: 'south', slots: 2 })).status).toBe(200);
    const boards = await api.get('/contributors/demo/board/instances');
    expect(boards.status).toBe(200);
    expect(boards.json).toEqual({ instances: ['board-00001', 'board-00002'] });
    expect((await api.get('/contributors/demo/sensor/instances')).json).toEqual({ instances: [UUID] });
  });

  it('an instance must follow its schema and carry the path id in its contributor field: else 400', async () => {
    const wrongId = await api.put('/contributors/demo/board/instances/board-00003', { id: 'board-00004', region: 'x', slots: 1 });
    expect(wrongId.status).toBe(400);
    expect(wrongId.json.error.message).toMatch(/must equal the id 'board-00003'/);
    const wrongType = await api.put('/contributors/demo/board/instances/board-00003', { id: 'board-00003', region: 'x', slots: 'many' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.json.error.message).toMatch(/field 'slots'/);
    const missing = await api.put('/contributors/demo/board/instances/board-00003', { region: 'x', slots: 1 });
    expect(missing.status).toBe(400);
    const badId = await api.put('/contributors/demo/board/instances/bad%20id', { id: 'bad id', region: 'x', slots: 1 });
    expect(badId.status).toBe(400);
    expect(badId.json.error.message).toMatch(/letters, digits/);
    expect((await api.get('/contributors/demo/board/instances/board-00003')).status).toBe(404);
  });

  it('instance updates follow the 409 rule; DELETE removes one', async () => {
    const path = '/contributors/demo/board/instances/board-00009';
    const first = await api.put(path, { id: 'board-00009', region: 'east', slots: 1 });
    const version = first.headers.get('service-config-version')!;
    expect((await api.put(path, { id: 'board-00009', region: 'west', slots: 1 }, { 'Service-Config-Version': version })).status).toBe(200);
    expect((await api.put(path, { id: 'board-00009', region: 'north', slots: 1 }, { 'Service-Config-Version': version })).status).toBe(409);
    expect((await api.get(path)).json.region).toBe('west');
    const removed = await api.delete(path);
    expect(removed.status).toBe(200);
    expect(removed.headers.get('service-config-version')).toBeTruthy();
    expect((await api.get(path)).status).toBe(404);
    expect((await api.delete(path)).status).toBe(404);
  });

  it('a type with instances cannot be deleted (409); an empty one can', async () => {
    expect((await api.delete('/contributors/demo/board')).status).toBe(409);
    expect((await api.put('/contributors/demo/empty', sensorType)).status).toBe(200);
    expect((await api.delete('/contributors/demo/empty')).status).toBe(200);
    expect((await api.get('/contributors/demo')).json.instances).not.toContain('empty');
  });
});

describe('contributors - streams published to', () => {
  const define = async (path: string, properties: Record<string, unknown>, persisted: boolean) => {
    const schema = { version: '1', topDef: { type: 'record', properties: { ...properties, value: { type: 'double' } } } };
    expect((await api.put(path, { schema })).status).toBe(200);
    if (persisted) expect((await api.put(`${path}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
  };

  it('lists the streams whose contributor fields named the instance, as soon as the POST answered', async () => {
    await define('/streams/demo/plant/readings', { board: { type: 'contributor', definition: 'board' } }, true);
    await define('/streams/demo/plant/live', { board: { type: 'contributor', definition: 'board' } }, false);
    await define('/streams/demo/plant/anyone', { source: { type: 'record', properties: { who: { type: 'contributor' } } } }, true);
    await define('/streams/demo/plant/sensors', { sensor: { type: 'contributor', uri: { tenant: 'demo', collection: 'sensor' } } }, true);

    expect((await api.get('/contributors/demo/board/instances/board-00001/streams')).json).toEqual({ streams: [] });
    const posts: Array<[string, object[]]> = [
      ['/streams/demo/plant/readings', [{ board: 'board-00001', value: 1 }, { board: 'board-00002', value: 2 }, { board: 'board-00001', value: 3 }]],
      ['/streams/demo/plant/live', [{ board: 'board-00002', value: 1 }]],
      ['/streams/demo/plant/anyone', [{ source: { who: 'board-00001' }, value: 1 }, { source: { who: UUID }, value: 2 }]],
      ['/streams/demo/plant/sensors', [{ sensor: UUID, value: 1 }, { sensor: 'board-00001', value: 1 }]],
    ];
    for (const [path, payloads] of posts) expect((await api.post(path, payloads)).status).toBe(200);

    const streamsOf = async (type: string, id: string) => {
      const response = await api.get(`/contributors/demo/${type}/instances/${id}/streams`);
      expect(response.status, response.text).toBe(200);
      return response.json;
    };
    // board-00001 appears in `sensors` too, but that field names the sensor type.
    expect(await streamsOf('board', 'board-00001')).toEqual({ streams: ['/streams/demo/plant/anyone', '/streams/demo/plant/readings'] });
    expect(await streamsOf('board', 'board-00002')).toEqual({ streams: ['/streams/demo/plant/live', '/streams/demo/plant/readings'] });
    expect(await streamsOf('sensor', UUID)).toEqual({ streams: ['/streams/demo/plant/anyone', '/streams/demo/plant/sensors'] });
    expect((await api.get('/contributors/demo/board/instances/board-00077/streams')).status).toBe(404);
  });

  it('a contributor registered after it published finds its streams', async () => {
    expect((await api.post('/streams/demo/plant/readings', [{ board: 'board-00050', value: 5 }])).status).toBe(200);
    expect((await api.put('/contributors/demo/board/instances/board-00050', { id: 'board-00050', region: 'north', slots: 1 })).status).toBe(200);
    expect((await api.get('/contributors/demo/board/instances/board-00050/streams')).json).toEqual({ streams: ['/streams/demo/plant/readings'] });
  });
});
