// The partition index and one node's share of a search: own postings scored as
// MiniSearch scored them, appends read like a bulk build, answers equal a scan of every
// document with the evaluator, and the fast paths (sorted times, bounded top hits) equal
// the plain ways.

import MiniSearch from 'minisearch';
import { describe, expect, it } from 'vitest';
import { compileExpression, matches, parseSearchPattern, tokenize, type Analyzer, type TermPattern } from '../../src/expression/index.js';
import { addSortedTimes, addToHistogram, emptyHistogram, FREQUENCIES, type Frequency } from '../../src/search/histogram.js';
import { compareHits, compiledQuery, levelReader, searchLocally, treeToJson, type LocalSearchRequest, type StreamSearchPart } from '../../src/search/local-search.js';
import { countPath, emptyTree } from '../../src/search/facets.js';
import { forEachString, PartitionIndex, type SsrDocument } from '../../src/search/partition-index.js';
import { SsrIndex, type IndexSource } from '../../src/search/ssr-index.js';
import { TopHits } from '../../src/search/top-hits.js';
import type { StoredPayload, StoredRecord } from '../../src/storage/repository.js';
import { Prng } from '../sim/prng.js';
import { logs, weather } from '../kit/search-fixture.js';

const STREAM = 'demo/fixture/weather';
const PARTITIONS = 4;

function documents(count: number, seed: number): SsrDocument[] {
  return weather(count, seed).map((row, i) => ({
    writeId: `${(1_000_000 + i).toString(16).padStart(14, '0')}.node-1`,
    timestamp: Date.parse(row.observed),
    // Now and then a temperature that is no number, and a city missing: tests and facets treat those as the expression does.
    payload: {
      ...row,
      ...(i % 13 === 0 ? { temperature: String(row.temperature) } : i % 17 === 0 ? { temperature: null } : {}),
      ...(i % 19 === 0 ? { city: undefined } : i % 23 === 0 ? { country: null } : {}),
      note: i % 7 === 0 ? 'Ünïcode Straße ÉCOLE storm' : i % 11 === 0 ? ['nested', { deep: 'STORMY Weather' }] : null,
    },
  }));
}

function built(docs: readonly SsrDocument[], analyzer: Analyzer = 'standard'): PartitionIndex {
  const index = new PartitionIndex(analyzer);
  for (const document of docs) index.add(document);
  index.compact();
  return index;
}

/** The index before its own postings: MiniSearch over the string values, as the old code set it up. */
function miniSearchScores(docs: readonly SsrDocument[], analyzer: Analyzer, patterns: readonly TermPattern[]): Map<number, number> | undefined {
  const separator = '\u0000';
  const text = new MiniSearch<{ id: number; text: string }>({
    fields: ['text'],
    tokenize: (value) => value.split(separator).flatMap((part) => tokenize(part, analyzer)),
    processTerm: (term) => term,
    searchOptions: { tokenize: (query) => [query], processTerm: (term) => term, prefix: false, fuzzy: false },
  });
  const vocabulary = new Set<string>();
  docs.forEach((document, id) => {
    const strings: string[] = [];
    forEachString(document.payload, (value) => strings.push(value), 0);
    text.add({ id, text: strings.join(separator) });
    for (const value of strings) for (const term of tokenize(value, analyzer)) vocabulary.add(term);
  });
  let result: Map<number, number> | undefined;
  for (const pattern of patterns) {
    const terms = [...vocabulary].filter((term) => pattern.matches(term)).sort();
    const hits = new Map<number, number>();
    if (terms.length > 0) for (const hit of text.search({ queries: terms, combineWith: 'OR' })) hits.set(hit.id as number, hit.score);
    result = result === undefined ? hits : new Map([...result].flatMap(([id, score]) => (hits.has(id) ? [[id, score + hits.get(id)!] as [number, number]] : [])));
  }
  return result;
}

function matchedMap(index: PartitionIndex, patterns: readonly TermPattern[]): Map<number, number> {
  const { matched } = index.match(patterns);
  const out = new Map<number, number>();
  for (let at = 0; at < (matched?.length ?? 0); at++) out.set(matched!.documents[at]!, matched!.scores[at]!);
  return out;
}

const PATTERNS = ['storm', 'STORM', 'st*m', 'r?in', 'sunyy~', 'cloudz~0.8', '*o*', 'storm then', 'straße', 'ünïcode', 'st-00*', 'nothing', 'stormy weather'];

describe('search index - postings and scores', () => {
  const docs = documents(3_000, 5);

  it('matches the documents MiniSearch found, with its BM25 scores', () => {
    for (const analyzer of ['standard', 'keyword'] as const) {
      const index = built(docs, analyzer);
      for (const source of [...PATTERNS, 'Paris', 'ST-001']) {
        const patterns = parseSearchPattern(source, analyzer);
        const expected = miniSearchScores(docs, analyzer, patterns)!;
        const actual = matchedMap(index, patterns);
        expect([...actual.keys()], `${analyzer} ${source}`).toEqual([...expected.keys()].sort((a, b) => a - b));
        for (const [id, score] of actual) expect(score).toBeCloseTo(expected.get(id)!, 9);
      }
    }
  });

  it('scores documents of more distinct terms than a byte or two bytes count as MiniSearch did', () => {
    // Document lengths are kept in the narrowest array that holds them: these widen it twice.
    const words = (count: number, prefix: string) => Array.from({ length: count }, (_, i) => `${prefix}${i.toString(36)}`).join(' ');
    const long = [300, 70_000].map((count, i): SsrDocument => ({ writeId: `${(2_000_000 + i).toString(16).padStart(14, '0')}.node-2`, timestamp: 0, payload: { summary: `storm ${words(count, `w${i}x`)}` } }));
    const mixed = [...docs.slice(0, 200), long[0]!, ...docs.slice(200, 400), long[1]!];
    const index = built(mixed);
    for (const source of ['storm', 'w0x1*', 'w1x2?']) {
      const patterns = parseSearchPattern(source, 'standard');
      const expected = miniSearchScores(mixed, 'standard', patterns)!;
      const actual = matchedMap(index, patterns);
      expect([...actual.keys()], source).toEqual([...expected.keys()].sort((a, b) => a - b));
      for (const [id, score] of actual) expect(score).toBeCloseTo(expected.get(id)!, 9);
    }
  });

  it('reads appended documents as a bulk build of the same documents does', () => {
    // Enough postings that some are compacted while others are still pending.
    const many = documents(6_000, 6);
    const bulk = built(many);
    const appended = new PartitionIndex('standard');
    many.forEach((document, i) => {
      appended.add(document);
      appended.add(document); // a replayed record is indexed once
      if (i % 500 === 0) appended.match(parseSearchPattern('storm', 'standard'));
    });
    expect(appended.size).toBe(many.length);
    for (const source of PATTERNS) {
      const patterns = parseSearchPattern(source, 'standard');
      expect(matchedMap(appended, patterns), source).toEqual(matchedMap(bulk, patterns));
    }
  });

  it('keeps documents in time order as they are appended', () => {
    const index = new PartitionIndex('standard');
    const prng = new Prng(3);
    for (const document of prng.shuffle(docs)) {
      index.add(document);
      if (prng.chance(0.01)) index.byTime();
    }
    const order = index.byTime();
    const times = Array.from(order.times.subarray(0, order.length));
    expect(times).toEqual(docs.map((document) => document.timestamp).sort((a, b) => a - b));
    for (let at = 0; at < order.length; at++) expect(index.timestamp(order.documents[at]!)).toBe(order.times[at]);
  });
});

describe('search index - histograms and top hits', () => {
  it('counts sorted times into the buckets each time would go to', () => {
    const prng = new Prng(9);
    for (let round = 0; round < 200; round++) {
      const frequency: Frequency = prng.pick(FREQUENCIES.filter((f) => f !== 'MILLIS' && f !== 'SECOND'));
      const base = Date.UTC(2023, 10, 1);
      const times = Float64Array.from({ length: prng.int(0, 400) }, () => base + Math.floor(prng.next() * 500 * 86_400_000)).sort();
      const start = base + Math.floor(prng.next() * 200 * 86_400_000);
      const end = start + Math.floor(prng.next() * (frequency === 'MINUTE' ? 2 : 300) * 86_400_000);
      const expected = emptyHistogram(start, end, frequency);
      for (const ms of times) addToHistogram(expected, start, end, ms);
      const actual = emptyHistogram(start, end, frequency);
      const from = prng.int(0, times.length);
      addSortedTimes(actual, start, end, times, 0, from);
      addSortedTimes(actual, start, end, times, from, times.length);
      expect(actual, `${frequency} ${start} ${end}`).toEqual(expected);
    }
  });

  it('keeps the best hits as sorting them all would, ties in write order', () => {
    const prng = new Prng(4);
    for (const limit of [0, 1, 5, 50]) {
      const hits = Array.from({ length: 300 }, (_, i) => ({ score: prng.int(0, 20) / 4, writeId: `w${String(prng.int(0, 10_000)).padStart(5, '0')}-${i}` }));
      const top = new TopHits<(typeof hits)[number]>(limit);
      for (const hit of hits) if (top.admits(hit.score, hit.writeId)) top.offer(hit);
      expect(top.sorted()).toEqual([...hits].sort(compareHits).slice(0, limit));
    }
  });
});

/** Documents in memory, as the index reads them (IndexSource). */
class MemoryRepository implements IndexSource {
  constructor(private readonly records: StoredRecord[]) {}
  async *scan(stream: string, options: { partition?: number } = {}): AsyncIterable<StoredPayload> {
    for (const record of this.records) {
      if (record.stream === stream && (options.partition === undefined || record.partition === options.partition)) yield { ...record, payload: JSON.parse(record.value) };
    }
  }
}

describe('search local - answers equal a scan of every document', () => {
  const docs = [...documents(2_000, 12), ...logs(300, 13).map((row, i) => ({ writeId: `${(2_000_000 + i).toString(16).padStart(14, '0')}.node-2`, timestamp: Date.parse(row.at), payload: { ...row } }))];
  const records: StoredRecord[] = docs.map((document, i) => ({ stream: STREAM, partition: i % PARTITIONS, timestamp: document.timestamp, writeId: document.writeId, value: JSON.stringify(document.payload) }));
  const index = new SsrIndex(() => new MemoryRepository(records), () => 'standard');
  const part = (base: string | undefined, extra: Partial<StreamSearchPart> = {}): StreamSearchPart => ({
    stream: STREAM, partitions: [0, 1, 2, 3], analyzer: 'standard', base, drilldowns: [], taxonomyFacets: [], rangeFacets: [], tsField: undefined, ...extra,
  });
  const request = (base: string | undefined, extra: Partial<LocalSearchRequest> = {}, partExtra: Partial<StreamSearchPart> = {}): LocalSearchRequest => ({
    parts: [part(base, partExtra)], range: undefined, hitsMax: 10_000, histogram: undefined, ...extra,
  });
  const expected = (base: string | undefined, keep: (document: SsrDocument) => boolean = () => true): string[] => {
    const evaluator = base === undefined ? undefined : compileExpression(base, { analyzer: 'standard' });
    return docs.filter((document) => keep(document) && (evaluator === undefined || matches(evaluator, document.payload))).map((document) => document.writeId).sort();
  };

  it('search, filters, negation, like, prefix and every pattern kind', async () => {
    const expressions = [
      "search('storm')", "search('storm') && temperature > 10", "search('st*m') && search('then')", "search('storm') || city == 'Oslo'",
      "!search('storm') && country == 'FR'", "search(summary, 'fog') && search('paris')", "like(city, 'par*') && search('r?in')",
      "search('sunyy~') && prefix(station, 'ST-01')", "search('cloudz~0.8')", "search('straße')", "search('stormy') && temperature < 0",
      "search('storm then rain')", "temperature > 30", "search('took') && search('error')",
      "search('storm') && temperature >= 10.5 && temperature <= 25", "search('rain') && 20 > temperature", "search('fog') && temperature == 12",
    ];
    for (const base of expressions) {
      const answer = await searchLocally(index, request(base));
      const [stream] = answer.streams;
      expect(stream!.total, base).toBe(expected(base).length);
      expect(stream!.hits.map((hit) => hit.writeId).sort(), base).toEqual(expected(base));
      expect(stream!.hits, base).toEqual([...stream!.hits].sort(compareHits));
      const top = await searchLocally(index, request(base, { hitsMax: 7 }));
      expect(top.streams[0]!.hits, base).toEqual(stream!.hits.slice(0, 7));
    }
  });

  it('time ranges, histograms, facets and drilldowns', async () => {
    const range = { start: Date.UTC(2024, 1, 3, 5), end: Date.UTC(2024, 2, 20) - 1 };
    const inRange = (document: SsrDocument) => document.timestamp >= range.start && document.timestamp <= range.end;
    for (const base of [undefined, "search('storm')", 'temperature > 5']) {
      const histogram = { ...range, frequency: 'DAY' as const };
      const answer = await searchLocally(index, request(base, { range, hitsMax: 0, histogram }));
      const expectedIds = new Set(expected(base, inRange));
      const matching = docs.filter((document) => expectedIds.has(document.writeId));
      expect(answer.streams[0]!.total, base).toBe(matching.length);
      const buckets = emptyHistogram(range.start, range.end, 'DAY');
      for (const document of matching) addToHistogram(buckets, range.start, range.end, document.timestamp);
      expect(answer.histogram, base).toEqual(buckets);
      const withHits = await searchLocally(index, request(base, { range, hitsMax: 10_000 }));
      expect(withHits.streams[0]!.hits.map((hit) => hit.writeId).sort()).toEqual(expected(base, inRange));
    }
    const faceted = await searchLocally(index, request("search('storm')", { hitsMax: 0 }, {
      taxonomyFacets: [{ dimension: 'place', levels: ['country', 'city'] }],
      drilldowns: [{ levels: ['country'], values: ['FR'] }],
    }));
    const stormIds = new Set(expected("search('storm') && country == 'FR'"));
    const storms = docs.filter((document) => stormIds.has(document.writeId));
    expect(faceted.streams[0]!.total).toBe(storms.length);
    expect(faceted.streams[0]!.facets[0]!.tree.children.FR!.count).toBe(storms.length);
    expect(Object.keys(faceted.streams[0]!.facets[0]!.tree.children)).toEqual(['FR']);
    // Every level of the tree, against counting the matching payloads one by one.
    for (const base of ["search('storm')", 'temperature > 12', undefined]) {
      const answer = await searchLocally(index, request(base, { hitsMax: 0 }, { taxonomyFacets: [{ dimension: 'place', levels: ['country', 'city'] }] }));
      const counted = emptyTree();
      const ids = new Set(expected(base));
      for (const document of docs) if (ids.has(document.writeId)) countPath(counted, [levelReader('country')(document.payload), levelReader('city')(document.payload)]);
      expect(answer.streams[0]!.facets[0]!.tree, base).toEqual(treeToJson(counted));
    }
  });

  it('facet counts of more matches in one partition than one run of counting takes', async () => {
    const one = new SsrIndex(() => new MemoryRepository(records.map((record) => ({ ...record, partition: 0 }))), () => 'standard');
    for (const base of ["search('st*')", "search('st')"]) {
      const answer = await searchLocally(one, request(base, { hitsMax: 0 }, { partitions: [0], taxonomyFacets: [{ dimension: 'place', levels: ['country', 'city'] }] }));
      const ids = new Set(expected(base));
      expect(ids.size, base).toBeGreaterThan(1_024);
      const counted = emptyTree();
      for (const document of docs) if (ids.has(document.writeId)) countPath(counted, [levelReader('country')(document.payload), levelReader('city')(document.payload)]);
      expect(answer.streams[0]!.total, base).toBe(ids.size);
      expect(answer.streams[0]!.facets[0]!.tree, base).toEqual(treeToJson(counted));
    }
  });

  it('facet counts take paths first seen in the search and in documents stored after it', async () => {
    const toRecord = (document: SsrDocument, i: number): StoredRecord => ({ stream: STREAM, partition: i % PARTITIONS, timestamp: document.timestamp, writeId: document.writeId, value: JSON.stringify(document.payload) });
    // A city of its own every third document: more paths than the counts are first made for.
    const withCities = (from: SsrDocument[], prefix: string, idBase: number): SsrDocument[] =>
      from.map((document, i) => ({ ...document, writeId: `${(idBase + i).toString(16).padStart(14, '0')}.node-3`, payload: i % 3 === 0 ? { ...document.payload, city: `${prefix} ${i}` } : document.payload }));
    const first = withCities(documents(600, 21), 'Old', 3_000_000);
    const own = new SsrIndex(() => new MemoryRepository(first.map(toRecord)), () => 'standard');
    const facetRequest: LocalSearchRequest = {
      parts: [part(undefined, { taxonomyFacets: [{ dimension: 'place', levels: ['country', 'city'] }] })], range: undefined, hitsMax: 0, histogram: undefined,
    };
    const tree = (payloads: readonly SsrDocument[]): unknown => {
      const counted = emptyTree();
      for (const document of payloads) countPath(counted, [levelReader('country')(document.payload), levelReader('city')(document.payload)]);
      return treeToJson(counted);
    };
    expect((await searchLocally(own, facetRequest)).streams[0]!.facets[0]!.tree).toEqual(tree(first));
    const later = withCities(documents(300, 22), 'New', 4_000_000);
    own.onStored(later.map(toRecord));
    expect((await searchLocally(own, facetRequest)).streams[0]!.facets[0]!.tree).toEqual(tree([...first, ...later]));
  });
});

describe('search local - compiled queries kept', () => {
  it('a query text is compiled once per analyzer while among the 64 last used; a bad one is a 400 each time', () => {
    const kept = compiledQuery("search('kept') && temperature > 1", 'standard');
    expect(compiledQuery("search('kept') && temperature > 1", 'standard')).toBe(kept);
    expect(compiledQuery("search('kept') && temperature > 1", 'keyword')).not.toBe(kept);
    // 62 others and the keyword one: still among the last 64 (this use made it the latest).
    expect(compiledQuery("search('kept') && temperature > 1", 'standard')).toBe(kept);
    for (let i = 0; i < 62; i++) compiledQuery(`temperature > ${i}`, 'standard');
    expect(compiledQuery("search('kept') && temperature > 1", 'standard')).toBe(kept);
    for (let i = 0; i < 64; i++) compiledQuery(`temperature < ${i}`, 'standard');
    expect(compiledQuery("search('kept') && temperature > 1", 'standard')).not.toBe(kept);
    for (let i = 0; i < 2; i++) expect(() => compiledQuery("search('x') &&", 'standard')).toThrow(/expected/);
  });
});
