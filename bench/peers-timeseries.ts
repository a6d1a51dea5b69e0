// Peers time-series benchmark: `--payloads` metric points (1M: host, cpu,
// mem, event time) into a tsr stream of one node and into InfluxDB 1.x (the Debian package
// `influxdb`, started by the bench, skipped with a message when missing), in batches of
// `--batch` (5,000: JSON arrays to us, line protocol over HTTP to InfluxDB), `--concurrency`
// batches in flight on both; then the same historical aggregations both ways, `--runs`
// measured runs each (after warm-up runs), ours and InfluxDB's alternating:
//   1. count and mean of cpu and mem per host per 1-minute window over the whole range,
//   2. the same over a 1% time range (a different one each run),
//   3. the latest point per host (its time, cpu and mem).
// Ours through the query language: an execution session with a `from historical` query per
// run, its rows read over SSE; the time is from `_start` to `eos` (the session is made and
// the output connected beforehand, and that setup is reported apart). InfluxDB's is one
// GET /query, its JSON parsed. Every answer pair is compared exactly (a difference fails
// the bench): cpu and mem are multiples of 1/4 and 1/16, so every sum is exact in any
// order and a mean is the same double on both sides.
// Goals: ingest ≥ 0.9 of the floor and ≥ 1.0 × InfluxDB; each query's p50 ≤ 1.0 × InfluxDB's.
// Then a dashboard during ingest, on both: the same points into a new stream (database)
// alone, then into another while the latest values per host are asked every 250 ms, its
// last answer checked against the whole stream's; reported as the ratio of the two ingests.
// Beside the ingests, the floor (ingest-floor.ts): one bare process taking the same bodies
// with only what any store of them built on Node and LevelDB must do, parsing on two worker
// threads as our node does, so that the report says how far any design on these parts gets;
// and the floor with our tsr blocks, whose threads pack each batch with our own code, so
// that it says what our stored format costs alone. Server CPU per point is given by thread
// class (thread-cpu.ts) for ours and both floors.
// Ours and the floors take the points in turn, first as they start, then STEADY_ROUNDS times
// after a warm-up of every batch and a wait until quiet (the goal takes those rounds' median);
// ours into a new stream each round after the first, whose stream the queries read.
// Results go to bench/results/peers-timeseries.json and a markdown table to stdout.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { cleanup, client, NodeProcess, sleep } from '../test/kit/node-process.js';
import { SseClient } from '../test/kit/sse-client.js';
import { Prng } from '../test/sim/prng.js';
import { expectOk, log, medianOf, nodeFlags, percentile, phase, round, type Timing } from './ingest.js';
import { installDebianPackage } from './debian-package.js';
import { findInfluxd, INFLUX_SETTINGS, influxQuery, type InfluxServer, startInfluxd } from './influxdb.js';
import { machine } from './machine.js';
import { runIngestFloor } from './ingest-floor.js';
import { BodyFile, type ReadySender, sendBatches, startSender } from './batch-sender.js';
import type { BenchOptions } from './options.js';
import { cpuSecondsOf, folderBytes, waitQuiet } from './server-process.js';
import { type CpuByClass, cpuByClassSince, perItemUs, THREAD_CLASSES, threadTimesOf } from './thread-cpu.js';
import { assert } from '../src/lib/assert.js';

const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'peers-timeseries.json');
const SEED = 0x715e;
const TENANT = 'demo';
const STREAM = `/streams/${TENANT}/bench/metrics`;
const DATABASE = 'bench';
const MEASUREMENT = 'metrics';
const FIRST_EVENT_MS = Date.UTC(2024, 0, 1);
/** Each host reports every 2 s, the hosts 40 ms apart: every (host, time) and every time is distinct. */
const HOSTS = 50;
const HOST_PERIOD_MS = 2_000;
const HOST_OFFSET_MS = HOST_PERIOD_MS / HOSTS;
const WINDOW_MS = 60_000;
/** The narrow query's range: 1% of the data's span, whole minutes. */
const NARROW_FRACTION = 0.01;
const WARMUP_RUNS = 2;
/** Batches each side takes into a throwaway stream (database) before its ingest is timed: JIT, first files. */
const WARMUP_BATCHES = 4;
/** After a first round as started, ours and both floors take the points this many times more in a steady state (the ratios are their medians). */
const STEADY_ROUNDS = 5;
const INGEST_RATIO_MIN = 1;
/** Ours against the floor on the same bodies (issue 37's goal): what the parts allow. */
const INGEST_OF_FLOOR_MIN = 0.9;
const QUERY_P50_RATIO_MAX = 1;
const QUERY_TIMEOUT_MS = 600_000;
/** How often the dashboard asks for the latest values while its ingest runs. */
const DASHBOARD_INTERVAL_MS = 250;

const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      cpu: { type: 'double' },
      host: { type: 'string' },
      mem: { type: 'double' },
    },
  },
};

// ---------------------------------------------------------------- data

interface Point {
  host: string;
  atMs: number;
  /** A multiple of 1/4 in [0, 100]. */
  cpu: number;
  /** A multiple of 1/16 in [0, 64]. */
  mem: number;
}

function hostName(index: number): string {
  return `host-${String(index).padStart(3, '0')}`;
}

/** The i-th point: hosts in turn, time rising; values from the seeded PRNG. */
function makePoints(count: number): Point[] {
  const prng = new Prng(SEED);
  return Array.from({ length: count }, (_, index) => {
    const host = index % HOSTS;
    return {
      host: hostName(host),
      atMs: FIRST_EVENT_MS + Math.floor(index / HOSTS) * HOST_PERIOD_MS + host * HOST_OFFSET_MS,
      cpu: prng.int(0, 400) / 4,
      mem: prng.int(0, 1024) / 16,
    };
  });
}

interface Bodies {
  ours: Buffer[];
  influx: Buffer[];
}

/** Both request bodies of every batch, encoded before any timing. */
function makeBodies(points: readonly Point[], batch: number): Bodies {
  const bodies: Bodies = { ours: [], influx: [] };
  for (let first = 0; first < points.length; first += batch) {
    const slice = points.slice(first, first + batch);
    bodies.ours.push(Buffer.from(JSON.stringify(slice.map((p) => ({ at: new Date(p.atMs).toISOString(), cpu: p.cpu, host: p.host, mem: p.mem }))), 'utf8'));
    // No `i` suffix: cpu and mem are floats to InfluxDB, as they are doubles to us.
    bodies.influx.push(Buffer.from(slice.map((p) => `${MEASUREMENT},host=${p.host} cpu=${p.cpu},mem=${p.mem} ${p.atMs}`).join('\n'), 'utf8'));
  }
  return bodies;
}

// ---------------------------------------------------------------- ingest

async function defineStream(node: NodeProcess, path: string): Promise<string> {
  const api = client(node);
  await expectOk(`PUT ${path}`, api.put(path, { schema: SCHEMA }));
  await expectOk(`PUT ${path}/repository`, api.put(`${path}/repository`, { name: 'tsr', config: {} }));
  return node.url + path;
}

/**
 * A timed ingest, the CPU seconds the server used meanwhile, and those the other server
 * used (both run throughout: work it still does on its own load takes the machine's cores).
 */
type IngestTiming = Timing & {
  serverCpuSeconds: number | undefined;
  otherCpuSeconds: number | undefined;
  clientCpuSeconds: number;
  /** The server's CPU seconds by thread class (thread-cpu.ts); undefined without gdb (and for InfluxDB, whose threads are Go's). */
  cpuByClass: CpuByClass | undefined;
};

async function timedIngest(pid: number | undefined, other: number | undefined, sender: ReadySender, byThread: boolean): Promise<IngestTiming> {
  const before = cpuSecondsOf([pid]);
  const otherBefore = cpuSecondsOf([other]);
  const threadsBefore = byThread ? threadTimesOf([pid]) : undefined;
  const { timing, cpuSeconds: clientSeconds } = await sender.run();
  const after = cpuSecondsOf([pid]);
  const otherAfter = cpuSecondsOf([other]);
  const cpuByClass = threadsBefore === undefined ? undefined : cpuByClassSince(threadsBefore);
  const spent = (from: number | undefined, to: number | undefined) => (from === undefined || to === undefined ? undefined : round(to - from, 2));
  return {
    ...timing,
    serverCpuSeconds: spent(before, after),
    otherCpuSeconds: spent(otherBefore, otherAfter),
    clientCpuSeconds: round(clientSeconds, 2),
    cpuByClass,
  };
}

/**
 * Into `stream` of the node (STREAM, which the queries read, in the first round), after a
 * warm-up: WARMUP_BATCHES one at a time, or with `steady` every batch as the timed ones come
 * and then until the node is quiet.
 */
async function ingestOurs(node: NodeProcess, other: number | undefined, bodies: BodyFile, concurrency: number, expected: number, stream: string, steady: boolean): Promise<IngestTiming> {
  const api = client(node);
  const warmup = await defineStream(node, `${stream}-warmup`);
  if (steady) {
    await sendBatches(bodies, { urls: [warmup], concurrency });
    await waitQuiet([node.child?.pid]);
  } else {
    await sendBatches(bodies, { urls: [warmup], concurrency: 1, count: WARMUP_BATCHES });
  }
  const url = await defineStream(node, stream);
  const sender = await startSender(bodies, { urls: [url], concurrency });
  phase('ingest-start');
  const timing = await timedIngest(node.child?.pid, other, sender, true);
  phase('ingest-end');
  const stored = await api.get(`/_internal/repos/tsr/${stream.slice('/streams/'.length)}`);
  if (stored.status !== 200 || stored.json.total !== expected) throw new Error(`the node stores ${stored.json?.total ?? `? (HTTP ${stored.status})`} points, ${expected} were acknowledged`);
  return timing;
}

/** What InfluxDB's writes take and answer. */
const INFLUX_LINES = { contentType: 'text/plain; charset=utf-8', okStatus: 204 };

function influxWriteUrl(server: InfluxServer, database: string): string {
  return `${server.url}/write?db=${database}&precision=ms`;
}

async function ingestInflux(server: InfluxServer, other: number | undefined, bodies: BodyFile, concurrency: number, expected: number): Promise<IngestTiming> {
  await influxQuery(server, undefined, `CREATE DATABASE ${DATABASE}_warmup`, 'POST');
  await sendBatches(bodies, { urls: [influxWriteUrl(server, `${DATABASE}_warmup`)], concurrency: 1, count: WARMUP_BATCHES, ...INFLUX_LINES });
  await influxQuery(server, undefined, `CREATE DATABASE ${DATABASE}`, 'POST');
  const sender = await startSender(bodies, { urls: [influxWriteUrl(server, DATABASE)], concurrency, ...INFLUX_LINES });
  const timing = await timedIngest(server.pid, other, sender, false);
  const series = await influxQuery(server, DATABASE, `SELECT count(cpu) FROM ${MEASUREMENT}`);
  const stored = Number(series[0]?.values?.[0]?.[1] ?? 0);
  if (stored !== expected) throw new Error(`InfluxDB stores ${stored} points, ${expected} were acknowledged`);
  return timing;
}

/** The floor's threads: our node's default `limits.ingestThreads`. */
const FLOOR_THREADS = 2;
/** The floor's partitions, as our node's default policy. */
const FLOOR_RING_SIZE = 128;
const FLOOR_HASH_BYTES = 128;

type FloorIngest = IngestResult & { threads: number };

/**
 * The same bodies into the floor (one process), what it stored checked as ours is, after
 * the warm-up ours gets (`steady`: ingestOurs). With
 * `blocks`, its threads pack each batch as our ingest workers do (our packTsrBatch: the
 * schema's checks, partitions, columns): what our stored format costs with none of the
 * node's other work.
 */
async function ingestFloor(bodies: BodyFile, concurrency: number, expected: number, blocks: boolean, steady: boolean): Promise<FloorIngest> {
  const warmup = steady ? { warmupBatches: bodies.count, warmupConcurrency: concurrency, quietAfterWarmup: true } : { warmupBatches: WARMUP_BATCHES };
  const run = await runIngestFloor(
    bodies,
    { processes: 1, ...warmup, threads: FLOOR_THREADS, ringSize: FLOOR_RING_SIZE, hashBytes: FLOOR_HASH_BYTES, clients: concurrency, ...(blocks ? { blocks, schema: SCHEMA } : {}) },
  );
  const stored = Object.values(run.storedCopies).reduce((sum, count) => sum + count, 0);
  if (stored !== expected) throw new Error(`the floor stores ${stored} points, ${expected} were acknowledged`);
  const servers = run.cpuSeconds.servers === undefined ? undefined : round(run.cpuSeconds.servers, 2);
  const timing = { ...run.timing, serverCpuSeconds: servers, otherCpuSeconds: undefined, clientCpuSeconds: round(run.cpuSeconds.clients, 2), cpuByClass: run.cpuByClass };
  return { ...ingestResult(timing, expected, run.bytesOnDisk), threads: FLOOR_THREADS };
}

/** One round of the ingests compared with the floor. */
interface IngestRound {
  round: number;
  /** After a warm-up of every batch and a wait until quiet; else as started (WARMUP_BATCHES). */
  steady: boolean;
  ours: IngestResult;
  floor: FloorIngest;
  floorBlocks: FloorIngest;
}

interface IngestResult {
  points: number;
  seconds: number;
  pointsPerSecond: number;
  batchLatencyMs: { p50: number; p99: number };
  bytesOnDisk: number;
  serverCpuSeconds: number | undefined;
  /** CPU seconds the other server used meanwhile. */
  otherCpuSeconds: number | undefined;
  /** CPU seconds the bench itself used sending the batches (on the same cores). */
  clientCpuSeconds: number;
  /** The server's CPU per point, µs, by thread class. */
  cpuPerPointUsByThread: CpuByClass | undefined;
}

function ingestResult(timing: IngestTiming, points: number, bytesOnDisk: number): IngestResult {
  const sorted = [...timing.latenciesMs].sort((a, b) => a - b);
  return {
    points,
    seconds: round(timing.elapsedMs / 1000, 3),
    pointsPerSecond: Math.round(points / (timing.elapsedMs / 1000)),
    batchLatencyMs: { p50: round(percentile(sorted, 0.5), 2), p99: round(percentile(sorted, 0.99), 2) },
    bytesOnDisk,
    serverCpuSeconds: timing.serverCpuSeconds,
    otherCpuSeconds: timing.otherCpuSeconds,
    clientCpuSeconds: timing.clientCpuSeconds,
    cpuPerPointUsByThread: perItemUs(timing.cpuByClass, points, 2),
  };
}

// ---------------------------------------------------------------- queries

/** host|time → the row's values: what both sides must agree on exactly. */
type Answer = Map<string, string>;

interface Range {
  fromMs: number;
  /** Exclusive. */
  toMs: number;
}

interface QueryKind {
  name: 'windows' | 'narrowWindows' | 'latest';
  label: string;
  range(run: number): Range | undefined;
  ours(range: Range | undefined): string;
  influx(range: Range | undefined): string;
}

const iso = (ms: number) => new Date(ms).toISOString();

function windowsQuery(name: 'windows' | 'narrowWindows', label: string, range: (run: number) => Range): QueryKind {
  return {
    name,
    label,
    range,
    ours: (r) =>
      `from historical ${STREAM} where at >= '${iso(r!.fromMs)}' && at < '${iso(r!.toMs)}' ` +
      'group by host, at window of 1 minute select host, at, count() as n, avg(cpu) as cpu, avg(mem) as mem',
    influx: (r) =>
      `SELECT count(cpu) AS n, mean(cpu) AS cpu, mean(mem) AS mem FROM ${MEASUREMENT} ` +
      `WHERE time >= '${iso(r!.fromMs)}' AND time < '${iso(r!.toMs)}' GROUP BY time(1m), host fill(none)`,
  };
}

function queryKinds(points: readonly Point[]): QueryKind[] {
  const lastMs = points[points.length - 1]!.atMs;
  const whole: Range = { fromMs: FIRST_EVENT_MS, toMs: lastMs + 1 };
  const minutes = Math.ceil((whole.toMs - whole.fromMs) / WINDOW_MS);
  const narrowMinutes = Math.max(1, Math.round(minutes * NARROW_FRACTION));
  // A different 1% each run (a fixed stride through the span), whole minutes.
  const narrow = (run: number): Range => {
    const startMinute = Math.floor(((run * 0.377) % 1) * Math.max(1, minutes - narrowMinutes));
    const fromMs = FIRST_EVENT_MS + startMinute * WINDOW_MS;
    return { fromMs, toMs: fromMs + narrowMinutes * WINDOW_MS };
  };
  return [
    windowsQuery('windows', 'count, mean(cpu), mean(mem) per host per 1-minute window, whole range', () => whole),
    windowsQuery('narrowWindows', `the same over 1% of the range (${narrowMinutes} minute${narrowMinutes === 1 ? '' : 's'}, a different one each run)`, narrow),
    latestKind(STREAM),
  ];
}

function latestKind(stream: string): QueryKind {
  return {
    name: 'latest',
    label: 'the latest point per host (time, cpu, mem)',
    range: () => undefined,
    ours: () => `from historical ${stream} group by host select host, last(at) as at, last(cpu) as cpu, last(mem) as mem`,
    influx: () => `SELECT last(cpu) AS cpu, mem FROM ${MEASUREMENT} GROUP BY host`,
  };
}

function timeMs(value: unknown): number {
  return typeof value === 'number' ? value : Date.parse(String(value));
}

/** The final table of a grouped output: its add/update/remove items applied by key. */
function oursAnswer(sse: SseClient, kind: QueryKind): Answer {
  const keyFields = sse.messages.find((message) => message.type === 'sos')?.schema?.config.key ?? [];
  const rows = new Map<string, Record<string, unknown>>();
  for (const item of sse.items()) {
    const key = JSON.stringify(keyFields.map((field) => item.data[field]));
    if (item.action === 'remove') rows.delete(key);
    else rows.set(key, item.data);
  }
  const answer: Answer = new Map();
  for (const row of rows.values()) {
    const values = kind.name === 'latest' ? [row.cpu, row.mem] : [row.n, row.cpu, row.mem];
    answer.set(`${row.host}|${timeMs(row.at)}`, JSON.stringify(values));
  }
  return answer;
}

function influxAnswer(series: any[]): Answer {
  const answer: Answer = new Map();
  for (const each of series) {
    const columns = each.columns as string[];
    for (const values of each.values as unknown[][]) {
      const row = Object.fromEntries(columns.map((column, index) => [column, values[index]]));
      const fields = 'n' in row ? [row.n, row.cpu, row.mem] : [row.cpu, row.mem];
      answer.set(`${each.tags.host}|${row.time}`, JSON.stringify(fields));
    }
  }
  return answer;
}

/** undefined when equal, else what differs (a few keys). */
function difference(ours: Answer, theirs: Answer): string | undefined {
  const differing: string[] = [];
  for (const [key, value] of ours) if (theirs.get(key) !== value) differing.push(`${key}: ours ${value}, InfluxDB ${theirs.get(key) ?? 'none'}`);
  for (const [key, value] of theirs) if (!ours.has(key)) differing.push(`${key}: ours none, InfluxDB ${value}`);
  return differing.length === 0 ? undefined : `${differing.length} rows differ (ours ${ours.size} rows, InfluxDB ${theirs.size}): ${differing.slice(0, 5).join('; ')}`;
}

interface OursTiming {
  /** POST session + PUT query + SSE connected: not in the query time. */
  setupMs: number;
  /** `_start` sent → `eos` received. */
  queryMs: number;
  answer: Answer;
}

/** One run of a historical query the way a client runs one: a session of its own, deleted after. */
async function runOurs(node: NodeProcess, text: string, kind: QueryKind): Promise<OursTiming> {
  const api = client(node);
  const setupStarted = performance.now();
  const session = (await api.post(`/execution/${TENANT}/sessions`)).json?.session as string | undefined;
  if (session === undefined) throw new Error('POST session: no session URI');
  const put = await api.put(session, { queries: [{ id: 'q', body: text }] });
  if (put.status !== 200) throw new Error(`PUT session: HTTP ${put.status} ${put.text.slice(0, 500)}`);
  const sse = await SseClient.connect(`${node.url}${put.json[0].query.outputs[0].outputUri}`);
  const setupMs = performance.now() - setupStarted;
  try {
    const started = performance.now();
    const start = await api.put(`${session}/queries/q/_start`);
    if (start.status !== 200) throw new Error(`_start: HTTP ${start.status} ${start.text.slice(0, 500)}`);
    await withTimeout(sse.eos, QUERY_TIMEOUT_MS, `eos of ${text}`);
    const queryMs = performance.now() - started;
    return { setupMs, queryMs, answer: oursAnswer(sse, kind) };
  } finally {
    sse.close();
    await api.delete(session);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

async function runInflux(server: InfluxServer, text: string): Promise<{ queryMs: number; answer: Answer }> {
  const started = performance.now();
  const series = await influxQuery(server, DATABASE, text);
  const queryMs = performance.now() - started;
  return { queryMs, answer: influxAnswer(series) };
}

interface Latency {
  p50: number;
  p99: number;
  min: number;
  max: number;
}

function latency(samples: readonly number[]): Latency {
  const sorted = [...samples].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 0.5), 1), p99: round(percentile(sorted, 0.99), 1), min: round(sorted[0]!, 1), max: round(sorted[sorted.length - 1]!, 1) };
}

interface QueryResult {
  name: string;
  query: string;
  ours: string;
  influx: string;
  runs: number;
  rows: number;
  oursMs: Latency;
  oursSetupMs: Latency;
  influxMs: Latency | undefined;
  p50Ratio: number | undefined;
}

/** Warm-up runs, then `runs` measured ones; which side goes first alternates. */
async function measure(kind: QueryKind, node: NodeProcess, influx: InfluxServer | undefined, runs: number, mismatches: string[]): Promise<QueryResult> {
  const oursMs: number[] = [];
  const setupMs: number[] = [];
  const influxMs: number[] = [];
  let rows = 0;
  for (let run = 0; run < WARMUP_RUNS + runs; run += 1) {
    const range = kind.range(run);
    let ours: OursTiming;
    let theirs: { queryMs: number; answer: Answer } | undefined;
    if (influx !== undefined && run % 2 === 1) {
      theirs = await runInflux(influx, kind.influx(range));
      ours = await runOurs(node, kind.ours(range), kind);
    } else {
      ours = await runOurs(node, kind.ours(range), kind);
      if (influx !== undefined) theirs = await runInflux(influx, kind.influx(range));
    }
    if (ours.answer.size === 0) mismatches.push(`${kind.name} run ${run}: our answer is empty`);
    if (theirs !== undefined) {
      const differs = difference(ours.answer, theirs.answer);
      if (differs !== undefined) mismatches.push(`${kind.name} run ${run}: ${differs}`);
    }
    if (run < WARMUP_RUNS) continue;
    oursMs.push(ours.queryMs);
    setupMs.push(ours.setupMs);
    if (theirs !== undefined) influxMs.push(theirs.queryMs);
    rows += ours.answer.size;
  }
  const oursLatency = latency(oursMs);
  const influxLatency = influxMs.length === 0 ? undefined : latency(influxMs);
  return {
    name: kind.name,
    query: kind.label,
    ours: kind.ours(kind.range(WARMUP_RUNS)),
    influx: kind.influx(kind.range(WARMUP_RUNS)),
    runs,
    rows: Math.round(rows / runs),
    oursMs: oursLatency,
    oursSetupMs: latency(setupMs),
    influxMs: influxLatency,
    p50Ratio: influxLatency === undefined ? undefined : round(oursLatency.p50 / influxLatency.p50, 2),
  };
}

// ---------------------------------------------------------------- a dashboard during ingest

/** One side of the dashboard phase: where its points go, and how it is asked for the latest values. */
interface DashboardSide {
  pid: number | undefined;
  other: number | undefined;
  /** A new stream (database) of the points; what send and ask take. */
  create(name: string): Promise<string>;
  /** A sender of the points into the target (batch-sender.ts), ready. */
  sender(target: string, concurrency: number): Promise<ReadySender>;
  ask(target: string): Promise<{ queryMs: number; answer: Answer }>;
}

interface DashboardIngest {
  /** The points into a new stream (database), nothing asked meanwhile. */
  alone: { pointsPerSecond: number; serverCpuSeconds: number | undefined };
  /** Into another, the latest values asked every DASHBOARD_INTERVAL_MS meanwhile. */
  asked: { pointsPerSecond: number; serverCpuSeconds: number | undefined; questions: number; questionMs: Latency };
  /** asked / alone, points per second. */
  ratio: number;
}

/** The ingest alone, then with the dashboard asking; its last answer must be `expected` (the whole stream's, the same points). */
async function dashboardIngest(side: DashboardSide, points: number, concurrency: number, expected: Answer): Promise<DashboardIngest> {
  const rate = (timing: IngestTiming) => Math.round(points / (timing.elapsedMs / 1000));
  const lone = await side.create('alone');
  const alone = await timedIngest(side.pid, side.other, await side.sender(lone, concurrency), false);
  await waitQuiet([side.pid]);
  const target = await side.create('asked');
  const sender = await side.sender(target, concurrency);
  const questionMs: number[] = [];
  let ingesting = true;
  const dashboard = (async () => {
    while (ingesting) {
      const started = performance.now();
      questionMs.push((await side.ask(target)).queryMs);
      await sleep(Math.max(0, DASHBOARD_INTERVAL_MS - (performance.now() - started)));
    }
  })();
  let asked: IngestTiming;
  try {
    asked = await timedIngest(side.pid, side.other, sender, false);
  } finally {
    ingesting = false;
    await dashboard;
  }
  const differs = difference((await side.ask(target)).answer, expected);
  if (differs !== undefined) throw new Error(`the latest values asked after the dashboard's ingest: ${differs}`);
  await waitQuiet([side.pid]);
  return {
    alone: { pointsPerSecond: rate(alone), serverCpuSeconds: alone.serverCpuSeconds },
    asked: { pointsPerSecond: rate(asked), serverCpuSeconds: asked.serverCpuSeconds, questions: questionMs.length, questionMs: latency(questionMs) },
    ratio: round(rate(asked) / rate(alone), 2),
  };
}

function oursDashboard(node: NodeProcess, other: number | undefined, bodies: BodyFile): DashboardSide {
  return {
    pid: node.child?.pid,
    other,
    create: (name) => defineStream(node, `${STREAM}-${name}`),
    sender: (url, concurrency) => startSender(bodies, { urls: [url], concurrency }),
    ask: (url) => {
      const kind = latestKind(url.slice(node.url.length));
      return runOurs(node, kind.ours(undefined), kind);
    },
  };
}

function influxDashboard(server: InfluxServer, other: number | undefined, bodies: BodyFile): DashboardSide {
  return {
    pid: server.pid,
    other,
    create: async (name) => {
      await influxQuery(server, undefined, `CREATE DATABASE ${DATABASE}_${name}`, 'POST');
      return `${DATABASE}_${name}`;
    },
    sender: (database, concurrency) => startSender(bodies, { urls: [influxWriteUrl(server, database)], concurrency, ...INFLUX_LINES }),
    ask: async (database) => {
      const started = performance.now();
      const series = await influxQuery(server, database, latestKind(STREAM).influx(undefined));
      return { queryMs: performance.now() - started, answer: influxAnswer(series) };
    },
  };
}

// ---------------------------------------------------------------- report

function markdown(report: any): string {
  const n = (value: number | undefined) => (value === undefined ? '–' : value.toLocaleString('en-US'));
  const ms = (value: number | undefined) => (value === undefined ? '–' : value.toFixed(1));
  const ingest = report.ingest;
  const row = (name: string, result: IngestResult, other: number | undefined | '–') =>
    `| ${name} | ${n(result.pointsPerSecond)} | ${result.seconds} | ${ms(result.batchLatencyMs.p50)} | ${ms(result.batchLatencyMs.p99)} | ${Math.round(result.bytesOnDisk / 1e6)} | ${result.serverCpuSeconds ?? '–'} | ${other ?? '–'} |`;
  const lines = [
    '| ingest | points/s | seconds | p50 batch ms | p99 batch ms | on disk after, MB | server CPU s | the other server\'s CPU s meanwhile |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  if (ingest.influx !== undefined) lines.push(row('InfluxDB', ingest.influx, ingest.influx.otherCpuSeconds));
  const label = (r: IngestRound) => `round ${r.round} (${r.steady ? 'steady' : 'as started'})`;
  for (const r of ingest.rounds as IngestRound[]) {
    lines.push(
      row(`${label(r)}: Tributary, tsr, one node`, r.ours, r.ours.otherCpuSeconds),
      row(`${label(r)}: the floor: bare Node + LevelDB, one process, ${r.floor.threads} parsing threads`, r.floor, '–'),
      row(`${label(r)}: the floor with our tsr blocks, ${r.floorBlocks.threads} packing threads`, r.floorBlocks, '–'),
    );
  }
  lines.push(
    '',
    'The floor: Node http, JSON.parse on a worker thread, each point\'s JSON text and a partition of it, one record per partition per batch, one synced ' +
      'LevelDB batch; no Koa, schema, checks, columns or hints: a ceiling for any design on Node and LevelDB here. With our tsr blocks: the same, ' +
      'its threads packing each batch with our own code (packTsrBatch: the schema\'s checks, partitions, columns) instead of JSON lines. ' +
      'Ours and the floors take the points in turn: first as they start (fresh, a warm-up of a few batches), then in a steady state ' +
      '(each first takes every batch once and is left until quiet) several times; the ratios below are the steady rounds\' medians, each round\'s in brackets.',
  );
  if (ingest.influx !== undefined) {
    lines.push(
      '',
      `Ingest ratio (ours / InfluxDB, both as started): **${ingest.ratio}** (goal ≥ ${INGEST_RATIO_MIN}). The floor / InfluxDB: ${ingest.floorRatio}.`,
    );
  }
  const each = (pick: (round: IngestRound) => number) => (ingest.rounds as IngestRound[]).filter((r) => r.steady).map((r) => round(pick(r), 2)).join(', ');
  lines.push(
    '',
    `Ours / the floor, steady: **${ingest.oursOfFloor}** (${each((r) => r.ours.pointsPerSecond / r.floor.pointsPerSecond)}; goal ≥ ${INGEST_OF_FLOOR_MIN}); as started: ${ingest.oursOfFloorAsStarted}. ` +
      `The floor with our tsr blocks / the floor: ${ingest.floorBlocksOfFloor} (${each((r) => r.floorBlocks.pointsPerSecond / r.floor.pointsPerSecond)}); ` +
      `ours / the floor with our tsr blocks: ${ingest.oursOfFloorBlocks} (${each((r) => r.ours.pointsPerSecond / r.floorBlocks.pointsPerSecond)}).`,
  );
  const byThread = (ingest.rounds as IngestRound[])
    .flatMap((r) => [
      [`${label(r)}: Tributary, tsr, one node`, r.ours.cpuPerPointUsByThread],
      [`${label(r)}: the floor`, r.floor.cpuPerPointUsByThread],
      [`${label(r)}: the floor with our tsr blocks`, r.floorBlocks.cpuPerPointUsByThread],
    ])
    .filter((row): row is [string, CpuByClass] => row[1] !== undefined);
  if (byThread.length > 0) {
    lines.push(
      '',
      'Server CPU per point, µs, by thread class (thread-cpu.ts):',
      '',
      `| ingest | ${THREAD_CLASSES.join(' | ')} | all |`,
      `|---|${THREAD_CLASSES.map(() => '---:|').join('')}---:|`,
      ...byThread.map(([name, usByClass]) => {
        const cells = THREAD_CLASSES.map((threadClass) => usByClass[threadClass]);
        return `| ${name} | ${cells.join(' | ')} | ${round(cells.reduce((a, b) => a + b, 0), 2)} |`;
      }),
    );
  }
  lines.push(
    '',
    '| query | rows | ours p50 ms | ours p99 ms | InfluxDB p50 ms | InfluxDB p99 ms | ours/InfluxDB p50 | ours setup p50 ms |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.queries.map(
      (q: QueryResult) =>
        `| ${q.query} | ${n(q.rows)} | ${ms(q.oursMs.p50)} | ${ms(q.oursMs.p99)} | ${ms(q.influxMs?.p50)} | ${ms(q.influxMs?.p99)} | ` +
        `${q.p50Ratio === undefined ? '–' : `**${q.p50Ratio}**`} | ${ms(q.oursSetupMs.p50)} |`,
    ),
    '',
    `A dashboard during ingest: the points into a new stream alone, then into another while the latest values per host are asked every ${DASHBOARD_INTERVAL_MS} ms (the last answer checked):`,
    '',
    '| dashboard | alone, points/s | asked, points/s | asked / alone | questions | question p50 ms | question p99 ms |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...[
      ['Tributary', report.dashboard.ours],
      ['InfluxDB', report.dashboard.influx],
    ]
      .filter((row): row is [string, DashboardIngest] => row[1] !== undefined)
      .map(([name, d]) => `| ${name} | ${n(d.alone.pointsPerSecond)} | ${n(d.asked.pointsPerSecond)} | **${d.ratio}** | ${d.asked.questions} | ${ms(d.asked.questionMs.p50)} | ${ms(d.asked.questionMs.p99)} |`),
    '',
    `InfluxDB: ${report.influx.version ?? 'not run'}. Params: ${JSON.stringify(report.params)}. ` +
      `Machine: ${report.machine.cpus} × ${report.machine.model}, Node ${report.machine.node}, load average ${report.machine.loadAverage1m.before} → ${report.machine.loadAverage1m.after}.`,
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------- entry point

export async function runPeersTimeseriesBench(options: BenchOptions): Promise<void> {
  const loadAverageBefore = os.loadavg()[0]!;
  const binary = findInfluxd() ?? (installDebianPackage('influxdb') ? findInfluxd() : undefined);
  if (binary === undefined) log('influxd not found (apt-get install influxdb, or INFLUXD_BIN): measuring Tributary only.');
  else log(`InfluxDB: ${binary.version} at ${binary.path}`);
  const points = makePoints(options.payloads);
  const bodies = makeBodies(points, options.batch);
  log(`peers-timeseries: ${points.length} points of ${HOSTS} hosts, batches of ${options.batch}, ${options.concurrency} in flight`);

  let node: NodeProcess | undefined;
  let influx: InfluxServer | undefined;
  // The timed ingests' client is a sender process reading these (batch-sender.ts).
  const files = { ours: BodyFile.write(bodies.ours), influx: BodyFile.write(bodies.influx) };
  try {
    node = await NodeProcess.start({ name: 'bench-timeseries', execArgv: nodeFlags() });
    if (binary !== undefined) influx = await startInfluxd(binary);
    // InfluxDB first, then ours: each loads while the other is idle. InfluxDB compacts
    // what it took for seconds after its last answer: ours starts once it is quiet.
    let influxIngest: IngestResult | undefined;
    if (influx !== undefined) {
      log('peers-timeseries: ingest into InfluxDB…');
      influxIngest = ingestResult(await ingestInflux(influx, node.child?.pid, files.influx, options.concurrency, points.length), points.length, influx.bytesOnDisk());
      log(`  ${influxIngest.pointsPerSecond} points/s (the bench: ${influxIngest.clientCpuSeconds} CPU s); waiting for InfluxDB to be quiet…`);
      log(`  quiet after ${await waitQuiet([influx.pid])} s`);
    }
    // Ours and the floors in turn: first as they start (the node and the floors fresh, a
    // warm-up of WARMUP_BATCHES), then STEADY_ROUNDS times in a steady state (each first takes
    // every batch once and is then left until quiet: what a node running for hours is), as
    // single runs of ~1.5 s move by ±10% here; the goal takes the steady rounds' median.
    const rounds: IngestRound[] = [];
    for (let number = 1; number <= 1 + STEADY_ROUNDS; number += 1) {
      const steady = number > 1;
      const stream = number === 1 ? STREAM : `${STREAM}-round-${number}`;
      log(`peers-timeseries: round ${number} (${steady ? 'steady' : 'as started'}): ingest into Tributary…`);
      const ours = ingestResult(await ingestOurs(node, influx?.pid, files.ours, options.concurrency, points.length, stream, steady), points.length, folderBytes(node.dataDir));
      log(`  ${ours.pointsPerSecond} points/s (InfluxDB meanwhile: ${ours.otherCpuSeconds ?? '–'} CPU s; the bench: ${ours.clientCpuSeconds} CPU s)`);
      log('peers-timeseries: ingest into the floor…');
      const floor = await ingestFloor(files.ours, options.concurrency, points.length, false, steady);
      log(`  ${floor.pointsPerSecond} points/s`);
      log('peers-timeseries: ingest into the floor with our tsr blocks…');
      const floorBlocks = await ingestFloor(files.ours, options.concurrency, points.length, true, steady);
      log(`  ${floorBlocks.pointsPerSecond} points/s`);
      rounds.push({ round: number, steady, ours, floor, floorBlocks });
    }
    const [first] = rounds;
    assert(first !== undefined && !first.steady, 'the first round is as started');

    const mismatches: string[] = [];
    const queries: QueryResult[] = [];
    for (const kind of queryKinds(points)) {
      log(`peers-timeseries: ${kind.name}: ${WARMUP_RUNS} warm-up runs, ${options.runs} measured…`);
      phase(`${kind.name}-start`);
      const result = await measure(kind, node, influx, options.runs, mismatches);
      phase(`${kind.name}-end`);
      log(`  ours p50 ${result.oursMs.p50} ms; InfluxDB p50 ${result.influxMs?.p50 ?? '–'} ms; ${result.rows} rows`);
      queries.push(result);
    }
    if (mismatches.length > 0) throw new Error(`${mismatches.length} answers differ from InfluxDB's:\n${mismatches.slice(0, 10).join('\n')}`);

    log(`peers-timeseries: a dashboard during ingest, ours: the points alone, then with the latest values asked every ${DASHBOARD_INTERVAL_MS} ms…`);
    const latest = latestKind(STREAM);
    const oursLatest = (await runOurs(node, latest.ours(undefined), latest)).answer;
    const dashboard: { ours: DashboardIngest; influx: DashboardIngest | undefined } = {
      ours: await dashboardIngest(oursDashboard(node, influx?.pid, files.ours), points.length, options.concurrency, oursLatest),
      influx: undefined,
    };
    log(`  ${dashboard.ours.asked.pointsPerSecond} points/s asked, ${dashboard.ours.alone.pointsPerSecond} alone (${dashboard.ours.ratio}); ${dashboard.ours.asked.questions} questions, p50 ${dashboard.ours.asked.questionMs.p50} ms`);
    if (influx !== undefined) {
      log('peers-timeseries: a dashboard during ingest, InfluxDB…');
      const influxLatest = (await runInflux(influx, latest.influx(undefined))).answer;
      dashboard.influx = await dashboardIngest(influxDashboard(influx, node.child?.pid, files.influx), points.length, options.concurrency, influxLatest);
      log(`  ${dashboard.influx.asked.pointsPerSecond} points/s asked, ${dashboard.influx.alone.pointsPerSecond} alone (${dashboard.influx.ratio}); ${dashboard.influx.asked.questions} questions, p50 ${dashboard.influx.asked.questionMs.p50} ms`);
    }

    const steadyRounds = rounds.filter((r) => r.steady);
    const median = (pick: (round: IngestRound) => number) => medianOf(steadyRounds.map(pick))!;
    // InfluxDB's ingest ran once, as started (before the rounds): against ours and the floor's first.
    const ingestRatio = influxIngest === undefined ? undefined : round(first!.ours.pointsPerSecond / influxIngest.pointsPerSecond, 2);
    const floorRatio = influxIngest === undefined ? undefined : round(first!.floor.pointsPerSecond / influxIngest.pointsPerSecond, 2);
    const oursOfFloor = median((r) => r.ours.pointsPerSecond / r.floor.pointsPerSecond);
    const report = {
      date: new Date().toISOString(),
      machine: machine(loadAverageBefore),
      params: {
        points: points.length,
        hosts: HOSTS,
        hostPeriodMs: HOST_PERIOD_MS,
        batch: options.batch,
        concurrency: options.concurrency,
        runs: options.runs,
        steadyRounds: STEADY_ROUNDS,
        warmupRuns: WARMUP_RUNS,
        seed: SEED,
        nodeExecArgv: nodeFlags(),
      },
      influx: { version: binary?.version, settings: binary === undefined ? undefined : INFLUX_SETTINGS, compared: influx !== undefined },
      ingest: {
        // The first round's: ours of it holds the stream the queries read.
        ours: first!.ours,
        influx: influxIngest,
        floor: first!.floor,
        floorBlocks: first!.floorBlocks,
        rounds,
        ratio: ingestRatio,
        floorRatio,
        // As started, the first round's; then the steady rounds' medians.
        oursOfFloorAsStarted: round(first!.ours.pointsPerSecond / first!.floor.pointsPerSecond, 2),
        oursOfFloor,
        floorBlocksOfFloor: median((r) => r.floorBlocks.pointsPerSecond / r.floor.pointsPerSecond),
        oursOfFloorBlocks: median((r) => r.ours.pointsPerSecond / r.floorBlocks.pointsPerSecond),
      },
      queries,
      dashboard,
      verified: influx === undefined ? 'no InfluxDB: answers not cross-checked' : 'every answer pair equal, exactly (per host and window: count, mean cpu, mean mem; per host: time, cpu, mem)',
      goals: {
        ingestRatioMin: INGEST_RATIO_MIN,
        ingestMet: ingestRatio === undefined ? undefined : ingestRatio >= INGEST_RATIO_MIN,
        ingestOfFloorMin: INGEST_OF_FLOOR_MIN,
        ingestOfFloorMet: oursOfFloor >= INGEST_OF_FLOOR_MIN,
        queryP50RatioMax: QUERY_P50_RATIO_MAX,
        queriesMet: influx === undefined ? undefined : queries.every((query) => query.p50Ratio! <= QUERY_P50_RATIO_MAX),
      },
    };
    mkdirSync(dirname(RESULTS_PATH), { recursive: true });
    writeFileSync(RESULTS_PATH, `${JSON.stringify(report, null, 2)}\n`);
    console.log(markdown(report));
    if (influx === undefined) console.log('\nInfluxDB not installed: the comparison was skipped.');
    else console.log(`\nGoals: ingest ≥ ${INGEST_OF_FLOOR_MIN} of the floor ${report.goals.ingestOfFloorMet ? 'met' : '**NOT met**'}; ingest ≥ ${INGEST_RATIO_MIN} × InfluxDB ${report.goals.ingestMet ? 'met' : '**NOT met**'}; query p50 ≤ ${QUERY_P50_RATIO_MAX} × InfluxDB ${report.goals.queriesMet ? 'met' : '**NOT met**'}.`);
    log(`results written to ${RESULTS_PATH}`);
  } finally {
    if (node !== undefined) await node.kill('SIGTERM');
    await cleanup();
    await influx?.stop();
    files.ours.remove();
    files.influx.remove();
  }
}
