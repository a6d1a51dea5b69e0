// Search across a cluster: three nodes, replicas 2. Every node answers every search the same
// and completely, also while one node is killed during the queries.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinedCluster } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';
import { loadFixture, logs, tokens, weather } from '../kit/search-fixture.js';

const data = { weather: weather(4_000, 21), logs: logs(1_000, 22) };
const WEATHER = '/streams/demo/fixture/weather';
let nodes: NodeProcess[];

beforeAll(async () => {
  nodes = await startJoinedCluster(3);
  await loadFixture(nodes[0]!, data, { replicas: 2, ring_size: 16, hash_payload: { bytes: 64 } });
}, 180_000);
afterAll(cleanup);

const requests: Array<[string, object]> = [
  ['_search', { uris: [WEATHER], query: { base: "search('storm') && temperature > 10" }, count: 50, from: 10 }],
  ['_facet', { uris: [WEATHER], query: { base: "search('st*m')" }, facets: [{ type: 'taxonomy', dimension: 'place', topN: 3 }, { type: 'range', field: 'temperature', ranges: [{ from: -10, to: 10 }] }] }],
  ['_timeRangeHistogram', { uris: [WEATHER], query: {}, range: { start: '2024-01-01T00:00:00Z', end: '2024-04-30T23:59:59Z' }, frequency: 'MONTH' }],
  ['_discover', { query: { base: "search('snow')" }, range: { start: '2024-01-01T00:00:00Z', end: '2024-12-31T00:00:00Z' }, results: { topN: 3 }, facets: { topN: 2 } }],
];

async function answers(from: NodeProcess[]): Promise<unknown[][]> {
  return Promise.all(from.map(async (node) => Promise.all(requests.map(async ([operation, body]) => {
    const response = await client(node).post(`/ssr/demo/${operation}`, body);
    expect(response.status, `${node.name} ${operation}: ${response.text}`).toBe(200);
    return response.json;
  }))));
}

describe('cluster search - three nodes, replicas 2', () => {
  it('answers completely and identically on every node', async () => {
    const [first, ...others] = await answers(nodes);
    for (const other of others) expect(other).toEqual(first);
    const storms = data.weather.filter((row) => tokens(row.summary).includes('storm') && row.temperature > 10).length;
    expect((first![0] as { total: number }).total).toBe(storms);
    const histogram = (first![2] as { histogram: { buckets: number[] } }).histogram;
    expect(histogram.buckets.reduce((sum, count) => sum + count, 0)).toBe(data.weather.length);
  });

  it('stays complete and identical while a node is killed during the queries', async () => {
    const [before] = await answers([nodes[0]!]);
    const killed = nodes[2]!.kill('SIGKILL');
    const during = await answers([nodes[0]!, nodes[1]!]);
    await killed;
    const after = await answers([nodes[0]!, nodes[1]!]);
    for (const answer of [...during, ...after]) expect(answer).toEqual(before);
  });
});

