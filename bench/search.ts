// Search benchmark: loads N payloads (1M by default) into one node's ssr stream and measures
// p50/p99 of _search (text + filter), _facet and _timeRangeHistogram against PostgreSQL on the
// same rows in the same run (a tsvector column with a GIN index, GROUP BY for facets,
// date_trunc for histograms). The goal is our p50 ≤ PostgreSQL's for each. It also measures
// what the lazy index costs: the node's start time with N payloads stored (restart, until
// /cluster/localNode answers), the first search (which indexes every partition from LevelDB),
// and the node's RSS after indexing. Each answer is checked against PostgreSQL's (totals, facet
// trees, buckets): a mismatch fails the bench. Results go to bench/results/search.json and
// markdown to stdout.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { cleanup, client, NodeProcess } from '../test/kit/node-process.js';
import { expectOk, log, nodeFlags, postBatch, round, type Api } from './ingest.js';
import { findPostgres, startPostgres, type PostgresCluster } from './postgres.js';
import type { BenchOptions } from './options.js';
import { machine } from './machine.js';
import { Prng } from '../test/sim/prng.js';

const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'search.json');
const SEED = 0x5ea4c4;
const TENANT = 'demo';
const STREAM_PATH = '/streams/demo/bench/observations';
/** 1M indexed payloads need ~4–5 GB of heap; V8's default limit is ~4 GB on this machine. */
const NODE_EXEC_ARGV = ['--max-old-space-size=12288'];

// ---------------------------------------------------------------- data

/** Distinct words of the summaries, used with Zipf-like frequencies (rank r ∝ 1/r). */
const VOCABULARY_SIZE = 4_000;
const ZIPF_EXPONENT = 1;
/** Words per summary: uniform in [min, min + spread); ~380 bytes of canonical JSON per payload. */
const SUMMARY_WORDS_MIN = 24;
const SUMMARY_WORDS_SPREAD = 20;
const PAYLOAD_BYTES_AVG_RANGE = [300, 500] as const;
/** Observations spread over 2024 (366 days), second precision. */
const FIRST_DAY_MS = Date.UTC(2024, 0, 1);
const DAYS = 366;
const DAY_MS = 86_400_000;
const TEMPERATURE_MIN = -10;
const TEMPERATURE_SPREAD = 45;

/** Country code → cities (one word each), most observed first. */
const PLACES: Array<[string, string[]]> = [
  ['DE', ['Berlin', 'Munich', 'Hamburg', 'Cologne', 'Frankfurt', 'Stuttgart']],
  ['FR', ['Paris', 'Lyon', 'Marseille', 'Toulouse', 'Nice', 'Nantes']],
  ['GB', ['London', 'Manchester', 'Birmingham', 'Glasgow', 'Leeds']],
  ['IT', ['Rome', 'Milan', 'Naples', 'Turin', 'Palermo']],
  ['ES', ['Madrid', 'Barcelona', 'Valencia', 'Seville', 'Bilbao']],
  ['PL', ['Warsaw', 'Krakow', 'Gdansk', 'Wroclaw', 'Poznan']],
  ['NL', ['Amsterdam', 'Rotterdam', 'Utrecht', 'Eindhoven']],
  ['SE', ['Stockholm', 'Gothenburg', 'Malmo', 'Uppsala']],
  ['BE', ['Brussels', 'Antwerp', 'Ghent', 'Liege']],
  ['AT', ['Vienna', 'Graz', 'Linz', 'Salzburg']],
  ['PT', ['Lisbon', 'Porto', 'Braga', 'Coimbra']],
  ['NO', ['Oslo', 'Bergen', 'Trondheim', 'Stavanger']],
];
const STATIONS_PER_CITY = 20;

const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      id: { type: 'long' },
      station: { type: 'string' },
      country: { type: 'string' },
      city: { type: 'string' },
      observed: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      temperature: { type: 'double' },
      summary: { type: 'string' },
    },
  },
};
const TAXONOMY = { nodes: [{ name: 'place', expression: ['country', 'city'] }] };

/** Keys in alphabetical order: JSON.stringify gives the canonical JSON the node stores. */
interface Observation {
  city: string;
  country: string;
  id: number;
  observed: string;
  station: string;
  summary: string;
  temperature: number;
}

/** The simulation's seeded PRNG: every run writes the same payloads. */
function seededRandom(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'cr', 'dr', 'gr', 'pl', 'st', 'tr', 'sh', 'ch', 'th'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou'];
const CODAS = ['', '', '', 'n', 'r', 's', 'l', 'm', 'x'];

/** Tokens of the other string fields: no summary word may equal one, so a word search is the summary's. */
function reservedTokens(): Set<string> {
  const reserved = new Set<string>(['st']);
  for (const [country, cities] of PLACES) {
    reserved.add(country.toLowerCase());
    for (const city of cities) reserved.add(city.toLowerCase());
  }
  return reserved;
}

/** Pronounceable letter-only words, in rank order (the first is the most frequent). */
function makeVocabulary(random: () => number): string[] {
  const reserved = reservedTokens();
  const words = new Set<string>();
  while (words.size < VOCABULARY_SIZE) {
    const syllables = 1 + Math.floor(random() * 3);
    let word = '';
    for (let s = 0; s < syllables; s += 1) {
      word += ONSETS[Math.floor(random() * ONSETS.length)]! + VOWELS[Math.floor(random() * VOWELS.length)]!;
    }
    word += CODAS[Math.floor(random() * CODAS.length)]!;
    if (word.length >= 3 && !reserved.has(word)) words.add(word);
  }
  return [...words];
}

/** Cumulative weights of a Zipf-like distribution over `count` ranks, for sampling. */
function zipfCumulative(count: number, exponent: number): Float64Array {
  const cumulative = new Float64Array(count);
  let sum = 0;
  for (let rank = 1; rank <= count; rank += 1) {
    sum += 1 / rank ** exponent;
    cumulative[rank - 1] = sum;
  }
  return cumulative;
}

function sample(cumulative: Float64Array, random: () => number): number {
  const target = random() * cumulative[cumulative.length - 1]!;
  let low = 0;
  let high = cumulative.length - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (cumulative[middle]! < target) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The payloads, in order, generated on demand (the same sequence every run). */
export class ObservationSource {
  readonly vocabulary: string[];
  private readonly random = seededRandom(SEED);
  private readonly words: Float64Array;
  private readonly countries: Float64Array;
  private readonly cities: Float64Array[];
  private nextId = 0;

  constructor() {
    this.vocabulary = makeVocabulary(seededRandom(SEED ^ 0xffff));
    this.words = zipfCumulative(this.vocabulary.length, ZIPF_EXPONENT);
    this.countries = zipfCumulative(PLACES.length, 0.7);
    this.cities = PLACES.map(([, cities]) => zipfCumulative(cities.length, 0.7));
  }

  next(): Observation {
    const random = this.random;
    const countryIndex = sample(this.countries, random);
    const [country, cities] = PLACES[countryIndex]!;
    const cityIndex = sample(this.cities[countryIndex]!, random);
    const station = countryIndex * 1000 + cityIndex * 100 + Math.floor(random() * STATIONS_PER_CITY);
    const observedMs = FIRST_DAY_MS + Math.floor(random() * DAYS * 86_400) * 1000;
    const wordCount = SUMMARY_WORDS_MIN + Math.floor(random() * SUMMARY_WORDS_SPREAD);
    const words = new Array<string>(wordCount);
    for (let w = 0; w < wordCount; w += 1) words[w] = this.vocabulary[sample(this.words, random)]!;
    const observation: Observation = {
      city: cities[cityIndex]!,
      country,
      id: this.nextId,
      observed: new Date(observedMs).toISOString(),
      station: `ST${String(station).padStart(5, '0')}`,
      summary: words.join(' '),
      temperature: Math.round((TEMPERATURE_MIN + random() * TEMPERATURE_SPREAD) * 10) / 10,
    };
    this.nextId += 1;
    return observation;
  }
}

/** A row of PostgreSQL's COPY text format (no value here holds a tab, newline or backslash). */
function tsvRow(o: Observation): string {
  return `${o.id}\t${o.station}\t${o.country}\t${o.city}\t${o.observed}\t${o.temperature}\t${o.summary}\n`;
}

// ---------------------------------------------------------------- loading

interface LoadResult {
  payloads: number;
  payloadBytesAvg: number;
  seconds: number;
  payloadsPerSecond: number;
}

/**
 * Posts every payload to the node in batches, `concurrency` batches in flight, and writes
 * the same rows to `tsvPath` for PostgreSQL's COPY (undefined: no comparison).
 */
async function loadNode(node: NodeProcess, source: ObservationSource, options: BenchOptions, tsvPath: string | undefined): Promise<LoadResult> {
  const api = client(node);
  await expectOk(`PUT ${STREAM_PATH}`, api.put(STREAM_PATH, { schema: SCHEMA }));
  await expectOk(`PUT ${STREAM_PATH}/repository`, api.put(`${STREAM_PATH}/repository`, { name: 'ssr', config: { defaultStringAnalyzer: 'standard' } }));
  await expectOk(`PUT ${STREAM_PATH}/taxonomy`, api.put(`${STREAM_PATH}/taxonomy`, { taxonomy: TAXONOMY }));
  const url = node.url + STREAM_PATH;
  const tsv = tsvPath === undefined ? undefined : openSync(tsvPath, 'w');
  let produced = 0;
  let bytes = 0;
  let lastReport = performance.now();
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (produced < options.payloads) {
      const count = Math.min(options.batch, options.payloads - produced);
      produced += count;
      const rows = Array.from({ length: count }, () => source.next());
      const body = JSON.stringify(rows);
      bytes += Buffer.byteLength(body) - 2 - (count - 1); // the payloads' canonical JSON, without [ , ]
      if (tsv !== undefined) writeSync(tsv, rows.map(tsvRow).join(''));
      await postBatch(url, Buffer.from(body, 'utf8'));
      if (performance.now() - lastReport > 15_000) {
        lastReport = performance.now();
        log(`  ${produced.toLocaleString('en-US')} payloads posted…`);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency }, worker));
  } finally {
    if (tsv !== undefined) closeSync(tsv);
  }
  const seconds = (performance.now() - started) / 1000;
  const stored = await api.get(`/_internal/repos/ssr/${STREAM_PATH.slice('/streams/'.length)}`);
  if (stored.status !== 200 || stored.json.total !== options.payloads) {
    throw new Error(`the node stores ${stored.json?.total ?? `? (HTTP ${stored.status})`} payloads, ${options.payloads} were posted`);
  }
  return {
    payloads: options.payloads,
    payloadBytesAvg: Math.round(bytes / options.payloads),
    seconds: round(seconds, 1),
    payloadsPerSecond: Math.round(options.payloads / seconds),
  };
}

interface PostgresLoad {
  copySeconds: number;
  ginIndexSeconds: number;
  btreeIndexSeconds: number;
  vacuumAnalyzeSeconds: number;
  tableMegabytes: number;
  ginIndexMegabytes: number;
}

async function loadPostgres(db: pg.Client, tsvPath: string): Promise<PostgresLoad> {
  const timed = async (sql: string) => {
    const started = performance.now();
    await db.query(sql);
    return round((performance.now() - started) / 1000, 1);
  };
  await db.query(`CREATE TABLE observations (
    id bigint PRIMARY KEY,
    station text NOT NULL,
    country text NOT NULL,
    city text NOT NULL,
    observed timestamptz NOT NULL,
    temperature double precision NOT NULL,
    summary text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', station || ' ' || country || ' ' || city || ' ' || summary)) STORED
  )`);
  const copySeconds = await timed(`COPY observations (id, station, country, city, observed, temperature, summary) FROM '${tsvPath}'`);
  const ginIndexSeconds = await timed('CREATE INDEX observations_tsv ON observations USING gin (tsv)');
  const btreeIndexSeconds = await timed('CREATE INDEX observations_observed ON observations (observed)');
  const vacuumAnalyzeSeconds = await timed('VACUUM ANALYZE observations');
  const sizes = await db.query(`SELECT pg_table_size('observations') AS t, pg_relation_size('observations_tsv') AS g`);
  return {
    copySeconds,
    ginIndexSeconds,
    btreeIndexSeconds,
    vacuumAnalyzeSeconds,
    tableMegabytes: Math.round(Number(sizes.rows[0].t) / 1e6),
    ginIndexMegabytes: Math.round(Number(sizes.rows[0].g) / 1e6),
  };
}

// ---------------------------------------------------------------- our node over HTTP

/** Keep-alive, and no client timeout: the first search indexes every partition. */
class NodeClient {
  private agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

  constructor(private readonly baseUrl: string) {}

  post(path: string, body: unknown): Promise<any> {
    const data = Buffer.from(JSON.stringify(body), 'utf8');
    return new Promise((resolvePost, reject) => {
      const request = http.request(
        this.baseUrl + path,
        { method: 'POST', agent: this.agent, headers: { 'content-type': 'application/json', 'content-length': data.length } },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (response.statusCode !== 200) reject(new Error(`POST ${path}: HTTP ${response.statusCode} ${text.slice(0, 500)}`));
            else resolvePost(JSON.parse(text));
          });
        },
      );
      request.on('error', reject);
      request.end(data);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Resident and peak resident memory of a process, in MB (Linux). */
function memoryOf(pid: number | undefined): { rssMegabytes: number; peakRssMegabytes: number } | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rssMegabytes: Math.round(kb('VmRSS') / 1024), peakRssMegabytes: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return undefined;
  }
}

async function heapUsedMegabytes(api: Api): Promise<number | undefined> {
  const response = await api.get(`/monitoring/${TENANT}/system?node=local`);
  const bytes = response.json?.nodes?.[0]?.details?.metrics?.heapUsedBytes;
  return typeof bytes === 'number' ? Math.round(bytes / 1e6) : undefined;
}

// ---------------------------------------------------------------- the queries

/** Mid-frequency summary words, by rank: each in ~0.3–3% of the payloads. */
export function queryWords(vocabulary: readonly string[]): string[] {
  const words: string[] = [];
  for (let rank = 200; rank < 2000 && words.length < 50; rank += 36) words.push(vocabulary[rank - 1]!);
  return words;
}

const SEARCH_COUNT = 20;
const SEARCH_TEMPERATURE_ABOVE = 20;
const FACET_TOP_N = 5;
const FACET_DEPTH = 2;
const HISTOGRAM_DAYS = 120;
const HISTOGRAM_FIRST_START_MS = Date.UTC(2024, 2, 1);

/** One comparable answer: what both sides must agree on, and how many payloads it counted. */
interface Answer {
  key: string;
  matched: number;
}

interface QueryKind {
  name: 'search' | 'facet' | 'histogram';
  label: string;
  ours(run: number): Promise<Answer>;
  postgres(run: number): Promise<Answer>;
  /** The SQL and parameters of run 0, for EXPLAIN. */
  sql(run: number): { text: string; values: unknown[] };
}

interface FacetTree {
  count: number;
  children: Map<string, FacetTree>;
}

/** Our topN/depth cut (facets.ts): highest count first, ties by value. */
function renderTree(tree: FacetTree, level = 1): unknown[] {
  if (level > FACET_DEPTH) return [];
  return [...tree.children]
    .sort(([a, x], [b, y]) => y.count - x.count || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, FACET_TOP_N)
    .map(([value, child]) => ({ value, count: child.count, children: renderTree(child, level + 1) }));
}

function histogramRange(run: number): { start: number; end: number } {
  const start = HISTOGRAM_FIRST_START_MS + (run % 60) * DAY_MS;
  return { start, end: start + HISTOGRAM_DAYS * DAY_MS - 1 };
}

function queryKinds(ours: NodeClient, db: pg.Client | undefined, words: readonly string[]): QueryKind[] {
  const word = (run: number) => words[run % words.length]!;
  const uris = [STREAM_PATH];
  const noPostgres = (): Promise<Answer> => Promise.reject(new Error('no PostgreSQL'));

  const searchSql = (run: number) => ({
    text: `SELECT id, station, country, city, observed, temperature, summary, ts_rank(tsv, q) AS rank, count(*) OVER () AS total
      FROM observations, to_tsquery('simple', $1) AS q
      WHERE tsv @@ q AND temperature > $2
      ORDER BY rank DESC, id LIMIT ${SEARCH_COUNT}`,
    values: [word(run), SEARCH_TEMPERATURE_ABOVE],
  });
  const facetSql = (run: number) => ({
    text: `SELECT country, city, count(*)::int AS n FROM observations WHERE tsv @@ to_tsquery('simple', $1) GROUP BY country, city`,
    values: [word(run)],
  });
  const histogramSql = (run: number) => {
    const range = histogramRange(run);
    // date_trunc's timestamptz (the session is UTC), turned into a bucket by the client:
    // cheaper for the server than epoch arithmetic in numeric.
    return {
      text: `SELECT date_trunc('day', observed) AS day, count(*)::int AS n
        FROM observations WHERE observed BETWEEN $1 AND $2 GROUP BY 1`,
      values: [new Date(range.start).toISOString(), new Date(range.end).toISOString()],
    };
  };

  return [
    {
      name: 'search',
      label: `_search: search('<word>') && temperature > ${SEARCH_TEMPERATURE_ABOVE}, count ${SEARCH_COUNT}`,
      sql: searchSql,
      ours: async (run) => {
        const answer = await ours.post(`/ssr/${TENANT}/_search`, {
          uris,
          query: { base: `search('${word(run)}') && temperature > ${SEARCH_TEMPERATURE_ABOVE}` },
          count: SEARCH_COUNT,
        });
        return { key: JSON.stringify({ total: answer.total, hits: answer.values.length }), matched: answer.total };
      },
      postgres: db === undefined ? noPostgres : async (run) => {
        const { rows } = await db.query(searchSql(run));
        const total = rows.length === 0 ? 0 : Number(rows[0].total);
        return { key: JSON.stringify({ total, hits: rows.length }), matched: total };
      },
    },
    {
      name: 'facet',
      label: `_facet: search('<word>'), taxonomy place topN ${FACET_TOP_N} depth ${FACET_DEPTH}`,
      sql: facetSql,
      ours: async (run) => {
        const answer = await ours.post(`/ssr/${TENANT}/_facet`, {
          uris,
          query: { base: `search('${word(run)}')` },
          facets: [{ type: 'taxonomy', dimension: 'place', topN: FACET_TOP_N, depth: FACET_DEPTH }],
        });
        const place = answer.facets[0];
        const strip = (nodes: any[]): unknown[] => nodes.map((node) => ({ value: node.value, count: node.count, children: strip(node.children) }));
        return { key: JSON.stringify({ count: place.count, children: strip(place.children) }), matched: place.count };
      },
      postgres: db === undefined ? noPostgres : async (run) => {
        const { rows } = await db.query(facetSql(run));
        const tree: FacetTree = { count: 0, children: new Map() };
        for (const row of rows) {
          let node = tree;
          node.count += row.n;
          for (const value of [row.country as string, row.city as string]) {
            let child = node.children.get(value);
            if (child === undefined) node.children.set(value, (child = { count: 0, children: new Map() }));
            child.count += row.n;
            node = child;
          }
        }
        return { key: JSON.stringify({ count: tree.count, children: renderTree(tree) }), matched: tree.count };
      },
    },
    {
      name: 'histogram',
      label: `_timeRangeHistogram: every payload, DAY buckets over ${HISTOGRAM_DAYS} days`,
      sql: histogramSql,
      ours: async (run) => {
        const range = histogramRange(run);
        const answer = await ours.post(`/ssr/${TENANT}/_timeRangeHistogram`, {
          uris,
          query: {},
          range: { start: new Date(range.start).toISOString(), end: new Date(range.end).toISOString() },
          frequency: 'DAY',
        });
        const buckets = answer.histogram.buckets as number[];
        return { key: JSON.stringify(buckets), matched: buckets.reduce((sum, count) => sum + count, 0) };
      },
      postgres: db === undefined ? noPostgres : async (run) => {
        const range = histogramRange(run);
        const { rows } = await db.query(histogramSql(run));
        const buckets = new Array<number>(HISTOGRAM_DAYS).fill(0);
        for (const row of rows) buckets[Math.floor(((row.day as Date).getTime() - range.start) / DAY_MS)]! += row.n;
        return { key: JSON.stringify(buckets), matched: buckets.reduce((sum, count) => sum + count, 0) };
      },
    },
  ];
}

// ---------------------------------------------------------------- measuring

interface Latency {
  p50: number;
  p99: number;
  mean: number;
  min: number;
  max: number;
}

interface QueryResult {
  query: string;
  runs: number;
  /** Payloads counted per answer (search: its total), averaged over the runs. */
  matchedAvg: number;
  oursMs: Latency;
  postgresMs: Latency | undefined;
  /** Our p50 / PostgreSQL's: the goal is ≤ 1. */
  p50Ratio: number | undefined;
  goalMet: boolean | undefined;
  postgresPlan: string[] | undefined;
}

/** Nearest-rank percentile. */
function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)]!;
}

function latency(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    p50: round(percentile(sorted, 0.5), 2),
    p99: round(percentile(sorted, 0.99), 2),
    mean: round(sorted.reduce((sum, value) => sum + value, 0) / sorted.length, 2),
    min: round(sorted[0]!, 2),
    max: round(sorted[sorted.length - 1]!, 2),
  };
}

/**
 * When the node under test is profiled (BENCH_NODE_FLAGS=--cpu-prof…), logs the monotonic
 * clock (µs, the clock of .cpuprofile timestamps) at each phase, to slice the profile by.
 */
function phase(name: string): void {
  if (nodeFlags().some((flag) => flag.startsWith('--cpu-prof'))) log(`phase ${name} ${process.hrtime.bigint() / 1000n}`);
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await work();
  return [value, performance.now() - started];
}

/**
 * `warmup` unmeasured runs, then `runs` measured ones; ours and PostgreSQL's alternate
 * (which goes first alternates too), so both see the same machine load. Every answer pair
 * is compared; a mismatch is collected and fails the bench.
 */
async function measure(kind: QueryKind, warmup: number, runs: number, db: pg.Client | undefined, mismatches: string[]): Promise<QueryResult> {
  const oursMs: number[] = [];
  const postgresMs: number[] = [];
  let matched = 0;
  phase(`${kind.name}-start`);
  for (let run = 0; run < warmup + runs; run += 1) {
    const measured = run >= warmup;
    let oursAnswer: Answer;
    let postgresAnswer: Answer | undefined;
    let oursTime: number;
    let postgresTime = 0;
    if (db !== undefined && run % 2 === 1) {
      [postgresAnswer, postgresTime] = await timed(() => kind.postgres(run));
      [oursAnswer, oursTime] = await timed(() => kind.ours(run));
    } else {
      [oursAnswer, oursTime] = await timed(() => kind.ours(run));
      if (db !== undefined) [postgresAnswer, postgresTime] = await timed(() => kind.postgres(run));
    }
    if (postgresAnswer !== undefined && postgresAnswer.key !== oursAnswer.key) {
      mismatches.push(`${kind.name} run ${run}: ours ${oursAnswer.key.slice(0, 300)} ≠ PostgreSQL ${postgresAnswer.key.slice(0, 300)}`);
    }
    if (!measured) continue;
    oursMs.push(oursTime);
    if (db !== undefined) postgresMs.push(postgresTime);
    matched += oursAnswer.matched;
  }
  phase(`${kind.name}-end`);
  let plan: string[] | undefined;
  if (db !== undefined) {
    const { text, values } = kind.sql(warmup);
    const explained = await db.query({ text: `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) ${text}`, values });
    plan = explained.rows.map((row) => row['QUERY PLAN'] as string);
  }
  const ours = latency(oursMs);
  const postgres = db === undefined ? undefined : latency(postgresMs);
  const ratio = postgres === undefined ? undefined : round(ours.p50 / postgres.p50, 2);
  return {
    query: kind.label,
    runs,
    matchedAvg: Math.round(matched / runs),
    oursMs: ours,
    postgresMs: postgres,
    p50Ratio: ratio,
    goalMet: ratio === undefined ? undefined : ratio <= 1,
    postgresPlan: plan,
  };
}

// ---------------------------------------------------------------- reporting

function markdown(report: any): string {
  const ms = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(1));
  const lines = [
    '| query | matched (avg) | ours p50 ms | ours p99 ms | PostgreSQL p50 ms | PostgreSQL p99 ms | ours/PG p50 | goal p50 ≤ PG |',
    '|---|---:|---:|---:|---:|---:|---:|---|',
    ...report.queries.map(
      (q: QueryResult) =>
        `| ${q.query} | ${q.matchedAvg.toLocaleString('en-US')} | ${ms(q.oursMs.p50)} | ${ms(q.oursMs.p99)} | ${ms(q.postgresMs?.p50)} | ` +
        `${ms(q.postgresMs?.p99)} | ${q.p50Ratio === undefined ? '–' : q.p50Ratio.toFixed(2)} | ${q.goalMet === undefined ? 'no comparison' : q.goalMet ? 'met' : '**NOT met**'} |`,
    ),
    '',
    '| the node with N payloads stored | figure |',
    '|---|---:|',
    `| load over HTTP (batches of ${report.params.batch}, ${report.params.loadConcurrency} in flight) | ${report.node.load.seconds} s (${report.node.load.payloadsPerSecond.toLocaleString('en-US')} payloads/s) |`,
    `| start, empty data folder (spawn → /cluster/localNode answers) | ${report.node.startEmptyMs} ms |`,
    `| start with ${report.params.payloads.toLocaleString('en-US')} payloads stored | ${report.node.startLoadedMs} ms |`,
    `| RSS after start (nothing indexed) | ${report.node.afterStart?.rssMegabytes ?? '?'} MB |`,
    `| first search (indexes all ${report.params.partitions} partitions from LevelDB) | ${round(report.node.firstSearchMs / 1000, 1)} s |`,
    `| second search (same query) | ${report.node.secondSearchMs} ms |`,
    `| RSS after indexing (peak) | ${report.node.afterIndexing?.rssMegabytes ?? '?'} MB (${report.node.afterIndexing?.peakRssMegabytes ?? '?'} MB), heap used ${report.node.heapUsedAfterIndexingMegabytes ?? '?'} MB |`,
    `| RSS after the queries | ${report.node.afterQueries?.rssMegabytes ?? '?'} MB |`,
  ];
  if (report.postgres.load !== undefined) {
    const load = report.postgres.load as PostgresLoad;
    lines.push(
      `| PostgreSQL load: COPY / GIN index / btree / VACUUM ANALYZE | ${load.copySeconds} / ${load.ginIndexSeconds} / ${load.btreeIndexSeconds} / ${load.vacuumAnalyzeSeconds} s (table ${load.tableMegabytes} MB, GIN ${load.ginIndexMegabytes} MB) |`,
    );
  }
  const machine = report.machine;
  lines.push(
    '',
    `Params: ${JSON.stringify(report.params)}. PostgreSQL: ${report.postgres.version ?? 'not run'} ${report.postgres.settings ? JSON.stringify(report.postgres.settings) : ''}. ` +
      `Machine: ${machine.cpus} × ${machine.model}, Node ${machine.node}, load average ${machine.loadAverage1m.before} → ${machine.loadAverage1m.after}.`,
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------- entry point

/** For a throw-away cluster: everything cached, no durability (it is never written to while measured). */
const POSTGRES_SETTINGS = {
  shared_buffers: '2GB',
  work_mem: '64MB',
  maintenance_work_mem: '1GB',
  effective_cache_size: '8GB',
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_wal_size: '8GB',
  timezone: 'UTC',
  jit: 'off',
};

export async function runSearchBench(options: BenchOptions): Promise<void> {
  const loadAverageBefore = os.loadavg()[0]!;
  const binaries = findPostgres();
  if (binaries === undefined) log('PostgreSQL binaries (initdb, pg_ctl, postgres) not found: measuring without the comparison.');
  else log(`PostgreSQL: ${binaries.version} in ${binaries.dir}`);

  let cluster: PostgresCluster | undefined;
  let db: pg.Client | undefined;
  let node: NodeProcess | undefined;
  let ours: NodeClient | undefined;
  const emergencyStop = () => {
    try {
      cluster?.stop();
    } finally {
      node?.child?.kill('SIGKILL');
      process.exit(130);
    }
  };
  process.once('SIGINT', emergencyStop);
  process.once('SIGTERM', emergencyStop);
  try {
    const source = new ObservationSource();
    let tsvPath: string | undefined;
    if (binaries !== undefined) {
      cluster = await startPostgres(binaries, POSTGRES_SETTINGS);
      log(`PostgreSQL started on 127.0.0.1:${cluster.port} in ${cluster.dir}`);
      tsvPath = join(cluster.dir, 'observations.tsv');
    }

    let started = performance.now();
    node = await NodeProcess.start({ name: 'bench-search', execArgv: [...NODE_EXEC_ARGV, ...nodeFlags()] });
    const startEmptyMs = Math.round(performance.now() - started);
    log(`loading ${options.payloads.toLocaleString('en-US')} payloads into the node (batches of ${options.batch}, ${options.concurrency} in flight)…`);
    const load = await loadNode(node, source, options, tsvPath);
    const policy = (await client(node).get(`${STREAM_PATH}/policy`)).json;
    log(`  ${load.seconds} s, ${load.payloadsPerSecond} payloads/s, ${load.payloadBytesAvg} bytes on average`);
    if (load.payloadBytesAvg < PAYLOAD_BYTES_AVG_RANGE[0] || load.payloadBytesAvg > PAYLOAD_BYTES_AVG_RANGE[1]) {
      throw new Error(`payloads average ${load.payloadBytesAvg} bytes, outside ${PAYLOAD_BYTES_AVG_RANGE.join('–')}`);
    }

    let postgresLoad: PostgresLoad | undefined;
    if (cluster !== undefined && tsvPath !== undefined) {
      cluster.handOver(tsvPath);
      db = new pg.Client({ host: cluster.host, port: cluster.port, user: cluster.user, database: 'postgres' });
      await db.connect();
      log('loading PostgreSQL (COPY, GIN index, btree index, VACUUM ANALYZE)…');
      postgresLoad = await loadPostgres(db, tsvPath);
      rmSync(tsvPath, { force: true });
      log(`  ${JSON.stringify(postgresLoad)}`);
    }

    log('restarting the node…');
    const stopMs = await node.kill('SIGTERM');
    started = performance.now();
    await node.launch();
    const startLoadedMs = Math.round(performance.now() - started);
    const afterStart = memoryOf(node.child?.pid);
    log(`  stopped in ${stopMs} ms, answered after ${startLoadedMs} ms; RSS ${afterStart?.rssMegabytes} MB`);

    ours = new NodeClient(node.url);
    const words = queryWords(source.vocabulary);
    const kinds = queryKinds(ours, db, words);
    log('first search (indexes every partition)…');
    phase('first-search-start');
    const [firstAnswer, firstSearchMs] = await timed(() => kinds[0]!.ours(0));
    phase('first-search-end');
    const afterIndexing = memoryOf(node.child?.pid);
    const heapUsedAfterIndexingMegabytes = await heapUsedMegabytes(client(node));
    const [, secondSearchMs] = await timed(() => kinds[0]!.ours(0));
    log(`  ${Math.round(firstSearchMs)} ms (${firstAnswer.matched} matches); second ${Math.round(secondSearchMs)} ms; RSS ${afterIndexing?.rssMegabytes} MB`);

    const mismatches: string[] = [];
    const queries: QueryResult[] = [];
    for (const kind of kinds) {
      log(`${kind.name}: ${words.length} warm-up runs, ${options.runs} measured…`);
      const result = await measure(kind, words.length, options.runs, db, mismatches);
      log(`  ours p50 ${result.oursMs.p50} ms p99 ${result.oursMs.p99} ms; PostgreSQL p50 ${result.postgresMs?.p50} ms p99 ${result.postgresMs?.p99} ms`);
      queries.push(result);
    }
    const afterQueries = memoryOf(node.child?.pid);
    if (mismatches.length > 0) {
      throw new Error(`${mismatches.length} answers differ from PostgreSQL's:\n${mismatches.slice(0, 10).join('\n')}`);
    }

    const report = {
      date: new Date().toISOString(),
      machine: machine(loadAverageBefore),
      params: {
        payloads: options.payloads,
        payloadBytesAvg: load.payloadBytesAvg,
        batch: options.batch,
        loadConcurrency: options.concurrency,
        runs: options.runs,
        warmupRuns: words.length,
        seed: SEED,
        vocabulary: `${VOCABULARY_SIZE} words, Zipf exponent ${ZIPF_EXPONENT}, ${SUMMARY_WORDS_MIN}–${SUMMARY_WORDS_MIN + SUMMARY_WORDS_SPREAD - 1} per summary`,
        queryWords: `${words.length} words of frequency ranks 200–2000`,
        policy: `ring_size ${policy?.ring_size ?? '?'}, replicas ${policy?.replicas ?? '?'}`,
        partitions: policy?.ring_size,
        nodeExecArgv: [...NODE_EXEC_ARGV, ...nodeFlags()],
      },
      node: {
        load,
        startEmptyMs,
        stopMs,
        startLoadedMs,
        afterStart,
        firstSearchMs: Math.round(firstSearchMs),
        secondSearchMs: round(secondSearchMs, 1),
        afterIndexing,
        heapUsedAfterIndexingMegabytes,
        afterQueries,
        indexAcrossRestarts: 'rebuilt lazily from LevelDB: nothing at start, each partition on the first search that touches it',
      },
      postgres: {
        version: binaries?.version,
        settings: binaries === undefined ? undefined : POSTGRES_SETTINGS,
        load: postgresLoad,
        compared: db !== undefined,
      },
      queries,
      verified: db === undefined ? 'no PostgreSQL: answers not cross-checked' : 'every answer pair equal (search totals, facet trees, histogram buckets)',
      goal: {
        p50AtMostPostgres: db === undefined ? undefined : queries.every((query) => query.goalMet === true),
      },
    };
    mkdirSync(dirname(RESULTS_PATH), { recursive: true });
    writeFileSync(RESULTS_PATH, JSON.stringify(report, null, 2) + '\n');
    console.log(markdown(report));
    if (db === undefined) console.log('\nPostgreSQL not installed: comparison skipped.');
    else console.log(`\nGoal p50 ≤ PostgreSQL's for each query: ${report.goal.p50AtMostPostgres ? 'met' : 'NOT met'}.`);
    log(`results written to ${RESULTS_PATH}`);
  } finally {
    ours?.close();
    await db?.end().catch(() => undefined);
    if (node !== undefined) await node.kill('SIGTERM');
    await cleanup();
    cluster?.stop();
    process.removeListener('SIGINT', emergencyStop);
    process.removeListener('SIGTERM', emergencyStop);
  }
}
