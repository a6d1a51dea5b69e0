// Search over stored streams on one node, every expected answer computed by the test.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { editDistance, loadFixture, logs, tokens, weather, type Weather } from '../kit/search-fixture.js';

const data = { weather: weather(7_000), logs: logs(3_000) };
const WEATHER = '/streams/demo/fixture/weather';
const LOGS = '/streams/demo/fixture/logs';
let api: ReturnType<typeof client>;
let node: NodeProcess;

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'search' });
  api = client(node);
  await loadFixture(node, data);
}, 120_000);
afterAll(async () => {
  if (process.env.SHOW_NODE_OUTPUT) console.log(node.output.slice(-5000));
  await cleanup();
});

async function search(base: string | undefined, extra: object = {}) {
  const response = await api.post('/ssr/demo/_search', { uris: [WEATHER], query: base === undefined ? {} : { base }, count: 10_000, ...extra });
  expect(response.status, response.text).toBe(200);
  return response.json as { total: number; values: Array<{ score: number; data: Weather }> };
}

const summaryMatches = (predicate: (token: string) => boolean) => data.weather.filter((row) => tokens(row.summary).some(predicate) || tokens(row.station).some(predicate) || tokens(row.city).some(predicate) || tokens(row.country).some(predicate) || tokens(row.observed).some(predicate));

describe('search - expressions', () => {
  it('filters with comparisons and && / ||, answering every match', async () => {
    const expected = data.weather.filter((row) => (row.temperature > 25 && row.country === 'FR') || row.city === 'Oslo');
    const result = await search("temperature > 25 && country == 'FR' || city == 'Oslo'");
    expect(result.total).toBe(expected.length);
    expect(result.values).toHaveLength(expected.length);
    expect(result.values.every(({ data: row }) => (row.temperature > 25 && row.country === 'FR') || row.city === 'Oslo')).toBe(true);
  });

  it('year, month and day of a datetime field', async () => {
    const expected = data.weather.filter((row) => new Date(row.observed).getUTCMonth() === 2 && new Date(row.observed).getUTCDate() <= 10);
    expect((await search('year(observed) == 2024 && month(observed) == 3 && day(observed) <= 10')).total).toBe(expected.length);
  });

  it('search(pattern): exact, * at the end and mid-term, ?, fuzzy and fuzzy with similarity', async () => {
    expect((await search("search('storm')")).total).toBe(summaryMatches((token) => token === 'storm').length);
    expect((await search("search('stor*')")).total).toBe(summaryMatches((token) => token.startsWith('stor')).length);
    expect((await search("search('st*m')")).total).toBe(summaryMatches((token) => /^st.*m$/.test(token)).length);
    expect((await search("search('r?in')")).total).toBe(summaryMatches((token) => /^r.in$/.test(token)).length);
    expect((await search("search('sunyy~')")).total).toBe(summaryMatches((token) => editDistance(token, 'sunyy') <= 1).length);
    expect((await search("search('cloudz~0.8')")).total).toBe(summaryMatches((token) => editDistance(token, 'cloudz') <= 1).length);
  });

  it('search(field, pattern), like and prefix', async () => {
    expect((await search("search(summary, 'fog')")).total).toBe(data.weather.filter((row) => tokens(row.summary).includes('fog')).length);
    expect((await search("like(city, 'par*')")).total).toBe(data.weather.filter((row) => row.city.toLowerCase().startsWith('par')).length);
    expect((await search("prefix(station, 'ST-01')")).total).toBe(data.weather.filter((row) => row.station.startsWith('ST-01')).length);
    const snowy = new Set(summaryMatches((token) => token === 'snow'));
    expect((await search("!like(city, '*o*') && search('snow')")).total).toBe(
      data.weather.filter((row) => !row.city.toLowerCase().includes('o') && snowy.has(row)).length,
    );
  });

  it('taxonomy drilldown filters, alone and in an and group', async () => {
    const filters = [{ type: 'group', clause: 'and', filters: [{ type: 'taxonomy', dimension: 'place', drilldown: ['FR', 'Paris'] }] }];
    const result = await search("temperature < 0", { query: { base: 'temperature < 0', filters } });
    expect(result.total).toBe(data.weather.filter((row) => row.city === 'Paris' && row.temperature < 0).length);
  });

  it('pages stably: pages in a row are the one big page, most relevant first', async () => {
    const all = await search("search('storm') || search('snow')");
    const scores = all.values.map((value) => value.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    const pages = [];
    for (let from = 0; from < 300; from += 100) pages.push(...(await search("search('storm') || search('snow')", { from, count: 100 })).values);
    expect(pages).toEqual(all.values.slice(0, 300));
  });

  it('a bad expression is 400 naming the position', async () => {
    const response = await api.post('/ssr/demo/_search', { uris: [WEATHER], query: { base: "temperature > && x" } });
    expect(response.status).toBe(400);
    expect(response.json.error.message).toMatch(/line 1, column 15/);
    expect((await api.post('/ssr/demo/_search', { uris: ['/streams/other/x/y'], query: {} })).status).toBe(400);
  });
});

describe('search - facets, histograms and discover', () => {
  it('_facet: taxonomy topN/depth/include and range facets, highest count first', async () => {
    const response = await api.post('/ssr/demo/_facet', {
      uris: [WEATHER],
      query: { base: "search('storm')" },
      facets: [
        { type: 'taxonomy', dimension: 'place', topN: 2, depth: 2, include: [{ path: ['NO', 'Oslo'] }] },
        { type: 'range', field: 'temperature', ranges: [{ from: -10, to: 0, toInclusive: false }, { label: 'warm', from: 0, to: 40 }] },
      ],
    });
    expect(response.status, response.text).toBe(200);
    const rows = summaryMatches((token) => token === 'storm');
    const byCountry = new Map<string, number>();
    for (const row of rows) byCountry.set(row.country, (byCountry.get(row.country) ?? 0) + 1);
    const top = [...byCountry].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const [place, range] = response.json.facets;
    expect(place.name).toBe('place');
    expect(place.count).toBe(rows.length);
    const expectedValues = new Set([top[0]![0], top[1]![0], 'NO']);
    expect(place.children.map((child: { value: string }) => child.value).sort()).toEqual([...expectedValues].sort());
    for (const child of place.children) expect(child.count).toBe(byCountry.get(child.value));
    expect(range.children).toEqual([
      { value: '-10-0', count: rows.filter((row) => row.temperature >= -10 && row.temperature < 0).length, children: [] },
      { value: 'warm', count: rows.filter((row) => row.temperature >= 0 && row.temperature <= 40).length, children: [] },
    ]);
  });

  it('_timeRangeHistogram: buckets over the inclusive range, by frequency or bucket count', async () => {
    const range = { start: '2024-02-01T00:00:00.000Z', end: '2024-02-29T23:59:59.999Z' };
    const response = await api.post('/ssr/demo/_timeRangeHistogram', { uris: [WEATHER, LOGS], query: {}, range, frequency: 'DAY' });
    expect(response.status, response.text).toBe(200);
    const { histogram } = response.json;
    expect(histogram.frequency).toBe('DAY');
    expect(histogram.buckets).toHaveLength(29);
    // The weather stream has no annotated timestamp: its first datetime field is primary.
    const inRange = [...data.weather.map((row) => row.observed), ...data.logs.map((row) => row.at)]
      .map((text) => Date.parse(text))
      .filter((ms) => ms >= Date.parse(range.start) && ms <= Date.parse(range.end));
    expect(histogram.buckets.reduce((sum: number, count: number) => sum + count, 0)).toBe(inRange.length);
    expect(histogram.buckets[0]).toBe(inRange.filter((ms) => ms < Date.parse('2024-02-02')).length);
    const byCount = await api.post('/ssr/demo/_timeRangeHistogram', { uris: [WEATHER], query: {}, range, maxBucketCount: 4 });
    expect(byCount.json.histogram.frequency).toBe('MONTH');
  });

  it('_discover without uris: every ssr stream with facets, results and a shared histogram', async () => {
    const response = await api.post('/ssr/demo/_discover', {
      query: { base: "search('storm')" },
      range: { start: '2024-01-01T00:00:00Z', end: '2024-12-31T23:59:59Z' },
      histogram: { frequency: 'MONTH' },
      facets: { topN: 3 },
      results: { topN: 5 },
    });
    expect(response.status, response.text).toBe(200);
    const streams = response.json.streams as Array<{ name: string; atLeastNMoreResults: number; values: unknown[]; facets: Array<{ name: string }> }>;
    expect(streams.map((stream) => stream.name).sort()).toEqual([LOGS, WEATHER]);
    const weatherStream = streams.find((stream) => stream.name === WEATHER)!;
    const weatherMatches = summaryMatches((token) => token === 'storm').length;
    expect(weatherStream.values).toHaveLength(5);
    expect(weatherStream.atLeastNMoreResults).toBe(weatherMatches - 5);
    expect(weatherStream.facets.map((facet) => facet.name)).toEqual(['place', 'when']);
    const logMatches = data.logs.filter((row) => tokens(row.msg).includes('storm') || tokens(row.host).includes('storm')).length;
    expect(response.json.histogram.buckets.reduce((sum: number, count: number) => sum + count, 0)).toBe(weatherMatches + logMatches);
  });
});
