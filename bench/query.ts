// Query benchmark. Five figures, all in one run on one machine:
// 1. Operator throughput: the pipeline a live query runs (src/pipeline, fed in
//    batches exactly as the node's runner feeds it) for (a) `where` + `select` and (b)
//    `group by` with a 1-minute window, against a plain JavaScript loop computing the same
//    result over the same payload objects. Goal: ≥ 25% of the loop.
// 2. End to end on one node: payloads/s from the first POST until the last row arrives on
//    SSE, for the same two queries (informational: it includes HTTP, validation and the
//    fsync of every batch before it is published).
// 3. Delay from POST to the row arriving on SSE at a steady 5,000 payloads/s (batches of
//    50 every 10 ms): p50 and p99. Goal: p99 ≤ 50 ms.
// 4. Hopping windows from panes: `window of 24 hour every 10 seconds` (8,640 windows
//    per row) against `window of 24 hour` over the same payloads, through the same live
//    pipeline; a sample of the emitted hopping windows checked against a plain computation
//    over the payloads that had arrived. Goal: the hopping query costs at most 2x the
//    tumbling one.
// 5. Live emission (docs/query-language.md, "Live windows"): payloads stamped as they
//    arrive at 10,000 per second of the node's clock, fed as the node's runner feeds them
//    (batches, and a tick every 250 ms), into `window of 24 hour every 10 seconds` and
//    `window of 1 minute` grouped by 200 hosts: payloads in against messages out (the
//    increments a client is sent) and the items they carry. Coalesced per period, messages
//    follow the clock, not the payloads.
// Every pipeline here runs as the node's do: changes coalesced over 1 s (hopping windows:
// their hop), on a clock that moves 1 ms per 10 payloads (10,000 payloads per second).
// Results go to bench/results/query.json and a markdown table to stdout.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { analyseQuery } from '../src/query/index.js';
import { createPipeline } from '../src/pipeline/index.js';
import { cleanup, client, NodeProcess } from '../test/kit/node-process.js';
import { SseClient } from '../test/kit/sse-client.js';
import { Prng } from '../test/sim/prng.js';
import { machine } from './machine.js';
import type { BenchOptions } from './options.js';

const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'query.json');
const STREAM = '/streams/demo/bench/metrics';
const FIRST_EVENT_MS = Date.UTC(2024, 0, 1);
/** 20 events per second of event time: a 1-minute window holds 1,200 payloads. */
const EVENT_SPACING_MS = 50;
const HOSTS = 200;
const RATIO_MIN = 0.25;
const DELAY_P99_MS_MAX = 50;
const STEADY_RATE = 5_000;
const STEADY_BATCH = 50;
const STEADY_SECONDS = 10;
const OPERATOR_RUNS = 5;
const HOPPING_COST_RATIO_MAX = 2;
/** Emitted hopping windows checked against a plain computation, per run. */
const HOPPING_SAMPLE = 50;
/** As the node runs live groupings (src/node.ts): changes coalesced over 1 s, a tick every 250 ms. */
const EMIT_INTERVAL_MS = 1_000;
const TICK_INTERVAL_MS = 250;
/** Payloads per second of the clock the pipelines are given. */
const ARRIVAL_RATE = 10_000;
const CLOCK_START_MS = 1_000_000;

interface Metric {
  at: string;
  cpu: number;
  host: string;
  mem: number;
  seq: number;
}

const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      cpu: { type: 'double' },
      host: { type: 'string' },
      mem: { type: 'double' },
      seq: { type: 'long' },
    },
  },
};

const QUERIES = {
  whereSelect: `from ${STREAM} where cpu > 50 select host, cpu`,
  groupWindow: `from ${STREAM} group by host, at window of 1 minute select host, at, count() as n, avg(cpu) as cpu`,
};

const WINDOW_QUERIES = {
  hopping: `from ${STREAM} group by host, at window of 24 hour every 10 seconds select host, at, count() as n, avg(cpu) as cpu`,
  tumbling: `from ${STREAM} group by host, at window of 24 hour select host, at, count() as n, avg(cpu) as cpu`,
};

function payloads(count: number, firstSeq = 0): Metric[] {
  const prng = new Prng(0x9e27 + firstSeq);
  return Array.from({ length: count }, (_, index) => {
    const seq = firstSeq + index;
    return {
      at: new Date(FIRST_EVENT_MS + seq * EVENT_SPACING_MS).toISOString(),
      cpu: Math.round(prng.next() * 10_000) / 100,
      host: `host-${String(prng.int(0, HOSTS - 1)).padStart(3, '0')}`,
      mem: prng.next() * 64,
      seq,
    };
  });
}

// ---------------------------------------------------------------- 1. operators vs a plain loop

function checked(text: string) {
  const analysis = analyseQuery(text, { streams: new Map([[STREAM, { schema: SCHEMA, repository: 'tsr' }]]) });
  if (analysis.errors.length > 0 || analysis.check === undefined) throw new Error(`bench query does not check: ${JSON.stringify(analysis.errors)}`);
  return analysis.check;
}

/** What a pipeline run gave: each emission (a message to clients) with the payloads that had arrived before it. */
interface Emission {
  readonly arrived: number;
  readonly changes: ReturnType<ReturnType<typeof createPipeline>['push']>;
}

/**
 * Payloads/s through the pipeline, fed `batch` rows at a time as the runner does, on a
 * clock that moves as ARRIVAL_RATE payloads a second arrive, ticked every TICK_INTERVAL_MS
 * of it and once more an emission interval after the last batch (what is still coalesced
 * goes out); every row it gave, last value per key; and its emissions.
 */
function pipelineRate(text: string, rows: readonly Metric[], batch: number): { rate: number; result: Map<string, unknown>; emissions: Emission[] } {
  const check = checked(text);
  const pipeline = createPipeline({ check, historical: false, compile: { clock: Date.now }, limits: { groupsMax: 10_000_000, rowsHeldMax: 10_000_000 }, emitIntervalMs: EMIT_INTERVAL_MS });
  const emissions: Emission[] = [];
  const clockAt = (arrived: number) => CLOCK_START_MS + Math.floor((arrived * 1000) / ARRIVAL_RATE);
  let nextTickMs = CLOCK_START_MS + TICK_INTERVAL_MS;
  const start = performance.now();
  for (let first = 0; first < rows.length; first += batch) {
    const nowMs = clockAt(first);
    for (; nextTickMs <= nowMs; nextTickMs += TICK_INTERVAL_MS) {
      const ticked = pipeline.tick(nextTickMs);
      if (ticked.length > 0) emissions.push({ arrived: first, changes: ticked });
    }
    const changes = pipeline.push(rows.slice(first, first + batch), nowMs);
    if (changes.length > 0) emissions.push({ arrived: Math.min(rows.length, first + batch), changes });
  }
  const last = pipeline.tick(clockAt(rows.length) + EMIT_INTERVAL_MS);
  if (last.length > 0) emissions.push({ arrived: rows.length, changes: last });
  const rate = rows.length / ((performance.now() - start) / 1000);
  // Outside the timing: what the query's client would end up knowing about each key.
  const keys = check.output.schema.config.key;
  const result = new Map<string, unknown>();
  let index = 0;
  for (const change of emissions.flatMap((emission) => emission.changes)) {
    if (change.action === 'remove') continue;
    result.set(keys.length === 0 ? String(index++) : JSON.stringify(keys.map((key) => change.data[key])), change.data);
  }
  return { rate, result, emissions };
}

/** The same result by hand: the rows of `where cpu > 50 select host, cpu`. */
function loopWhereSelect(rows: readonly Metric[]): { rate: number; result: Map<string, unknown> } {
  const start = performance.now();
  const out: Array<{ host: string; cpu: number }> = [];
  for (const row of rows) if (row.cpu > 50) out.push({ host: row.host, cpu: row.cpu });
  const rate = rows.length / ((performance.now() - start) / 1000);
  return { rate, result: new Map(out.map((row, index) => [String(index), row])) };
}

/** The same result by hand: per host and minute, the count and average cpu. */
function loopGroupWindow(rows: readonly Metric[]): { rate: number; result: Map<string, unknown> } {
  const start = performance.now();
  const groups = new Map<string, { host: string; windowMs: number; n: number; sum: number }>();
  for (const row of rows) {
    const windowMs = Math.floor(Date.parse(row.at) / 60_000) * 60_000;
    const key = `${row.host}|${windowMs}`;
    let group = groups.get(key);
    if (group === undefined) groups.set(key, (group = { host: row.host, windowMs, n: 0, sum: 0 }));
    group.n += 1;
    group.sum += row.cpu;
  }
  const rate = rows.length / ((performance.now() - start) / 1000);
  const result = new Map<string, unknown>();
  for (const group of groups.values()) {
    const at = new Date(group.windowMs).toISOString();
    result.set(JSON.stringify([group.host, at]), { host: group.host, at, n: group.n, cpu: group.sum / group.n });
  }
  return { rate, result };
}

/** Whether two results hold the same rows (averages compared to 1e-9). */
function sameResult(a: Map<string, unknown>, b: Map<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  const close = (x: unknown, y: unknown): boolean =>
    typeof x === 'number' && typeof y === 'number' ? Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x)) : JSON.stringify(x) === JSON.stringify(y);
  for (const [key, row] of a) {
    const other = b.get(key) as Record<string, unknown> | undefined;
    if (other === undefined) return false;
    const fields = row as Record<string, unknown>;
    if (Object.keys(fields).length !== Object.keys(other).length || !Object.keys(fields).every((field) => close(fields[field], other[field]))) return false;
  }
  return true;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function operatorFigures(rows: readonly Metric[], batch: number) {
  const figure = (text: string, loop: (rows: readonly Metric[]) => { rate: number; result: Map<string, unknown> }) => {
    // Alternate the two so that both see the same machine load; keep the median of each.
    const pipelineRates: number[] = [];
    const loopRates: number[] = [];
    for (let run = 0; run < OPERATOR_RUNS; run += 1) {
      const p = pipelineRate(text, rows, batch);
      const l = loop(rows);
      if (!sameResult(p.result, l.result)) throw new Error(`the pipeline and the loop disagree on ${text}: ${p.result.size} vs ${l.result.size} rows`);
      pipelineRates.push(p.rate);
      loopRates.push(l.rate);
    }
    const pipelinePerSecond = Math.round(median(pipelineRates));
    const loopPerSecond = Math.round(median(loopRates));
    return { pipelinePerSecond, loopPerSecond, ratio: round(pipelinePerSecond / loopPerSecond, 3), rows: loop(rows).result.size };
  };
  return { whereSelect: figure(QUERIES.whereSelect, loopWhereSelect), groupWindow: figure(QUERIES.groupWindow, loopGroupWindow) };
}

// ---------------------------------------------------------------- 4. hopping windows from panes

/** A sample of the emitted hopping windows, each against its count and average computed plainly over the payloads that had arrived. */
function checkHoppingSample(rows: readonly Metric[], emissions: readonly Emission[]): number {
  const emitted = emissions.flatMap((emission) => emission.changes.filter((change) => change.action !== 'remove').map((change) => ({ arrived: emission.arrived, row: change.data as unknown as Metric & { n: number; at: string } })));
  const prng = new Prng(0x51);
  for (let i = 0; i < Math.min(HOPPING_SAMPLE, emitted.length); i++) {
    const { arrived, row } = emitted[prng.int(0, emitted.length - 1)]!;
    const startMs = Date.parse(row.at);
    const inside = rows.slice(0, arrived).filter((each) => each.host === row.host && Date.parse(each.at) >= startMs && Date.parse(each.at) < startMs + 86_400_000);
    const average = inside.reduce((sum, each) => sum + each.cpu, 0) / inside.length;
    if (row.n !== inside.length || Math.abs(row.cpu - average) > 1e-9 * Math.max(1, Math.abs(average))) {
      throw new Error(`hopping window ${row.host} ${row.at}: n ${row.n} cpu ${row.cpu}, plainly ${inside.length} and ${average}`);
    }
  }
  return emitted.length;
}

function hoppingFigures(rows: readonly Metric[], batch: number) {
  const hoppingRates: number[] = [];
  const tumblingRates: number[] = [];
  let windows = 0;
  for (let run = 0; run < OPERATOR_RUNS; run += 1) {
    const hopping = pipelineRate(WINDOW_QUERIES.hopping, rows, batch);
    if (run === 0) windows = checkHoppingSample(rows, hopping.emissions);
    hoppingRates.push(hopping.rate);
    tumblingRates.push(pipelineRate(WINDOW_QUERIES.tumbling, rows, batch).rate);
  }
  const hoppingPerSecond = Math.round(median(hoppingRates));
  const tumblingPerSecond = Math.round(median(tumblingRates));
  return { hoppingPerSecond, tumblingPerSecond, costRatio: round(tumblingPerSecond / hoppingPerSecond, 3), hoppingWindowsEmitted: windows };
}

// ---------------------------------------------------------------- 5. live emission: payloads in, messages out

/** Payloads stamped as they arrive, ARRIVAL_RATE a second on the pipelines' clock, over HOSTS hosts. */
function realTimePayloads(count: number): Metric[] {
  const prng = new Prng(0x7e1);
  return Array.from({ length: count }, (_, seq) => ({
    at: new Date(CLOCK_START_MS + Math.floor((seq * 1000) / ARRIVAL_RATE)).toISOString(),
    cpu: Math.round(prng.next() * 10_000) / 100,
    host: `host-${String(prng.int(0, HOSTS - 1)).padStart(3, '0')}`,
    mem: prng.next() * 64,
    seq,
  }));
}

/**
 * Payloads in against the messages (and items) a client is sent, for a query over
 * real-time payloads; and the most messages coalescing per `periodMs` allows: one per
 * period, the first at once, and the last at the end (pipelineRate's final tick).
 */
function emissionFigure(text: string, rows: readonly Metric[], batch: number, periodMs: number) {
  const { emissions } = pipelineRate(text, rows, batch);
  const items = emissions.map((emission) => emission.changes.length);
  const seconds = rows.length / ARRIVAL_RATE;
  const messagesMax = Math.floor((seconds * 1000) / periodMs) + 2;
  return {
    payloadsIn: rows.length,
    clockSeconds: seconds,
    messagesOut: emissions.length,
    messagesMax,
    itemsOut: items.reduce((sum, count) => sum + count, 0),
    itemsPerMessageMax: Math.max(0, ...items),
    messagesPerSecond: round(emissions.length / seconds, 2),
  };
}

function emissionFigures(count: number, batch: number) {
  const rows = realTimePayloads(count);
  // One payload per POST is how the Valo clients post; the node's runner then pushes them one by one.
  return {
    hopping: emissionFigure(WINDOW_QUERIES.hopping, rows, batch, 10_000),
    hoppingOnePerPush: emissionFigure(WINDOW_QUERIES.hopping, rows.slice(0, Math.min(rows.length, 100_000)), 1, 10_000),
    tumbling: emissionFigure(QUERIES.groupWindow, rows, batch, EMIT_INTERVAL_MS),
  };
}

// ---------------------------------------------------------------- 2 and 3. live on one node

async function startSession(node: NodeProcess, text: string): Promise<{ session: string; sse: SseClient }> {
  const api = client(node);
  const session = (await api.post('/execution/demo/sessions')).json.session as string;
  const put = await api.put(session, { queries: [{ id: 'q', body: text }] });
  if (put.status !== 200) throw new Error(`PUT session: ${put.status} ${put.text}`);
  const sse = await SseClient.connect(`${node.url}${put.json[0].query.outputs[0].outputUri}`);
  const started = await api.put(`${session}/queries/q/_start`);
  if (started.status !== 200) throw new Error(`_start: ${started.status} ${started.text}`);
  await sse.waitFor('sos', (c) => c.messages.length > 0);
  return { session, sse };
}

/** Payloads/s from the first POST until the output holds the last payload's row. */
async function endToEnd(node: NodeProcess, text: string, rows: readonly Metric[], batch: number, done: (sse: SseClient) => boolean): Promise<number> {
  const { session, sse } = await startSession(node, text);
  const api = client(node);
  const start = performance.now();
  for (let first = 0; first < rows.length; first += batch * 2) {
    await Promise.all([0, 1].map(async (lane) => {
      const from = first + lane * batch;
      if (from >= rows.length) return;
      const response = await api.post(STREAM, rows.slice(from, from + batch));
      if (response.status !== 200) throw new Error(`POST: ${response.status} ${response.text.slice(0, 200)}`);
    }));
  }
  await sse.waitFor('the last row', done, 120_000);
  const seconds = (performance.now() - start) / 1000;
  sse.close();
  await api.delete(session);
  return Math.round(rows.length / seconds);
}

/** Whether the group of the last payload shows its final count. */
function lastGroupSeen(sse: SseClient, rows: readonly Metric[]): boolean {
  const last = rows[rows.length - 1]!;
  const windowMs = Math.floor(Date.parse(last.at) / 60_000) * 60_000;
  const n = rows.filter((row) => row.host === last.host && Math.floor(Date.parse(row.at) / 60_000) * 60_000 === windowMs).length;
  const at = new Date(windowMs).toISOString();
  return sse.items().some((item) => item.data.host === last.host && item.data.at === at && item.data.n === n);
}

/** Delay from the start of each POST to the arrival of its rows, at a steady rate. */
async function steadyDelays(node: NodeProcess, firstSeq: number): Promise<{ p50: number; p99: number; max: number; rows: number }> {
  const { session, sse } = await startSession(node, `from ${STREAM} where cpu >= 0 select seq, cpu`);
  const api = client(node);
  const total = STEADY_RATE * STEADY_SECONDS;
  const rows = payloads(total, firstSeq);
  const sentAt = new Map<number, number>();
  const intervalMs = (STEADY_BATCH / STEADY_RATE) * 1000;
  const start = performance.now();
  const posts: Array<Promise<unknown>> = [];
  for (let index = 0; index * STEADY_BATCH < total; index += 1) {
    const due = start + index * intervalMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolveWait) => setTimeout(resolveWait, wait));
    const slice = rows.slice(index * STEADY_BATCH, (index + 1) * STEADY_BATCH);
    const now = performance.now();
    for (const row of slice) sentAt.set(row.seq, now);
    posts.push(api.post(STREAM, slice));
  }
  await Promise.all(posts);
  await sse.waitFor(`${total} rows`, (c) => c.adds().length >= total, 60_000);
  const items = sse.items();
  const delays = items.map((item, index) => sse.arrivals[messageIndexOf(sse, index)]! - sentAt.get(item.data.seq as number)!);
  sse.close();
  await api.delete(session);
  delays.sort((a, b) => a - b);
  const at = (q: number) => round(delays[Math.min(delays.length - 1, Math.floor(q * delays.length))]!, 1);
  return { p50: at(0.5), p99: at(0.99), max: round(delays[delays.length - 1]!, 1), rows: delays.length };
}

/** The message (and so arrival time) that carried the n-th item. */
function messageIndexOf(sse: SseClient, itemIndex: number): number {
  let seen = 0;
  for (let index = 0; index < sse.messages.length; index += 1) {
    seen += sse.messages[index]!.items?.length ?? 0;
    if (itemIndex < seen) return index;
  }
  throw new Error(`no message carries item ${itemIndex}`);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export async function runQueryBench(options: BenchOptions): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const rows = payloads(options.payloads);
  console.error(`query bench: operators over ${rows.length} payloads, ${OPERATOR_RUNS} runs each`);
  const operators = operatorFigures(rows, options.batch);
  console.error(`query bench: hopping (24 hour every 10 seconds) against tumbling (24 hour) windows`);
  const hopping = hoppingFigures(rows, options.batch);
  console.error(`query bench: live emission at ${ARRIVAL_RATE} payloads/s`);
  const emission = emissionFigures(rows.length, options.batch);

  const node = await NodeProcess.start({ name: 'bench-query' });
  let live: { whereSelect: number; groupWindow: number };
  let delays: Awaited<ReturnType<typeof steadyDelays>>;
  try {
    const api = client(node);
    for (const [path, body] of [[STREAM, { schema: SCHEMA }], [`${STREAM}/repository`, { name: 'tsr', config: {} }]] as const) {
      const response = await api.put(path, body);
      if (response.status !== 200) throw new Error(`PUT ${path}: ${response.status} ${response.text}`);
    }
    const liveRows = rows.slice(0, Math.min(rows.length, 100_000));
    console.error(`query bench: end to end over ${liveRows.length} payloads`);
    live = {
      whereSelect: await endToEnd(node, QUERIES.whereSelect, liveRows, options.batch, (c) => c.adds().length >= loopWhereSelect(liveRows).result.size),
      groupWindow: await endToEnd(node, QUERIES.groupWindow, liveRows, options.batch, (c) => lastGroupSeen(c, liveRows)),
    };
    console.error(`query bench: ${STEADY_RATE} payloads/s for ${STEADY_SECONDS} s`);
    delays = await steadyDelays(node, 10_000_000);
  } finally {
    await cleanup();
  }

  const result = {
    date: new Date().toISOString(),
    machine: machine(loadBefore),
    options: { payloads: rows.length, batch: options.batch, operatorRuns: OPERATOR_RUNS, steady: { rate: STEADY_RATE, batch: STEADY_BATCH, seconds: STEADY_SECONDS } },
    queries: { ...QUERIES, ...WINDOW_QUERIES },
    operators,
    hopping,
    emission,
    endToEndPayloadsPerSecond: live,
    steadyDelayMs: delays,
    goals: {
      ratioMin: RATIO_MIN,
      ratioMet: operators.whereSelect.ratio >= RATIO_MIN && operators.groupWindow.ratio >= RATIO_MIN,
      delayP99MsMax: DELAY_P99_MS_MAX,
      delayMet: delays.p99 <= DELAY_P99_MS_MAX,
      hoppingCostRatioMax: HOPPING_COST_RATIO_MAX,
      hoppingMet: hopping.costRatio <= HOPPING_COST_RATIO_MAX,
      emissionBoundedMet: Object.values(emission).every((figure) => figure.messagesOut <= figure.messagesMax),
    },
  };
  mkdirSync(dirname(RESULTS_PATH), { recursive: true });
  writeFileSync(RESULTS_PATH, `${JSON.stringify(result, null, 2)}\n`);
  const n = (value: number) => value.toLocaleString('en-US');
  console.log(`| query | pipeline payloads/s | plain loop payloads/s | ratio | end to end on one node, payloads/s |`);
  console.log(`|---|---:|---:|---:|---:|`);
  console.log(`| where + select | ${n(operators.whereSelect.pipelinePerSecond)} | ${n(operators.whereSelect.loopPerSecond)} | **${operators.whereSelect.ratio}** | ${n(live.whereSelect)} |`);
  console.log(`| group by, 1-minute window | ${n(operators.groupWindow.pipelinePerSecond)} | ${n(operators.groupWindow.loopPerSecond)} | **${operators.groupWindow.ratio}** | ${n(live.groupWindow)} |`);
  console.log('');
  console.log(`| windows | pipeline payloads/s |`);
  console.log(`|---|---:|`);
  console.log(`| \`window of 24 hour\` | ${n(hopping.tumblingPerSecond)} |`);
  console.log(`| \`window of 24 hour every 10 seconds\` (${n(hopping.hoppingWindowsEmitted)} windows emitted) | ${n(hopping.hoppingPerSecond)} |`);
  console.log(`Hopping costs **${hopping.costRatio}x** the tumbling window (goal ≤ ${HOPPING_COST_RATIO_MAX}x).`);
  console.log('');
  console.log(`| live emission, ${n(ARRIVAL_RATE)} payloads/s, ${HOSTS} hosts | payloads in | messages out (at most) | items out | most items in a message |`);
  console.log(`|---|---:|---:|---:|---:|`);
  const line = (name: string, figure: ReturnType<typeof emissionFigure>) =>
    console.log(`| ${name} | ${n(figure.payloadsIn)} | ${n(figure.messagesOut)} (${n(figure.messagesMax)}) | ${n(figure.itemsOut)} | ${n(figure.itemsPerMessageMax)} |`);
  line(`\`window of 24 hour every 10 seconds\`, batches of ${options.batch}`, emission.hopping);
  line('`window of 24 hour every 10 seconds`, one payload per push', emission.hoppingOnePerPush);
  line(`\`window of 1 minute\`, batches of ${options.batch}`, emission.tumbling);
  console.log('');
  console.log(`Delay POST → SSE at ${n(STEADY_RATE)} payloads/s (${n(delays.rows)} rows): p50 ${delays.p50} ms, p99 **${delays.p99} ms**, max ${delays.max} ms.`);
  console.log(`Results: ${RESULTS_PATH}`);
}
