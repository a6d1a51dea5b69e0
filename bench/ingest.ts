// Ingest benchmark: persisted ingest of ~1 KiB payloads in batches, over HTTP into a real
// node's tsr and ssr streams, against a raw classic-level batch write of the same bytes in the
// same run. The goal is tsr at 40% or more of the raw rate, at the same concurrency. Results go
// to bench/results/ingest.json and a markdown table to stdout.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClassicLevel } from 'classic-level';
import { canonicalJson } from '../src/lib/json.js';
import { partitionOfCanonical } from '../src/streams/partitioner.js';
import { DEFAULT_POLICY } from '../src/streams/policy.js';
import { DEFAULT_WRITE_BUFFER_BYTES } from '../src/storage/database.js';
import { encodePartition, encodeTimestamp } from '../src/storage/repository.js';
import { WriteIdGenerator } from '../src/storage/write-ids.js';
import { cleanup, client, NodeProcess } from '../test/kit/node-process.js';
import type { BenchOptions } from './options.js';
import { machine } from './machine.js';
import { Prng } from '../test/sim/prng.js';

// dist/bench/ingest.js → the package root, so results land in the source tree's bench/results.
const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'ingest.json');
const TSR_RATIO_MIN = 0.4;
export const SEED = 0x7a1b;
// Payload size: a message of words is grown until the canonical JSON reaches a target drawn
// uniformly from [min, min + spread), so the average lands near 1 KiB.
const PAYLOAD_CHARS_MIN = 980;
const PAYLOAD_CHARS_SPREAD = 100;
export const PAYLOAD_BYTES_AVG_RANGE = [1000, 1100] as const;
// A few batches into a throwaway stream before timing: the node's first requests pay for
// JIT compilation and the stream's compile, which a long-running node has long paid.
const WARMUP_BATCHES = 4;
export const TENANT = 'demo';
export const COLLECTION = 'bench';
const FIRST_EVENT_MS = Date.UTC(2024, 0, 1);
const EVENT_SPACING_MS = 100;

export const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      host: { type: 'string' },
      region: { type: 'string' },
      at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      cpu: { type: 'double' },
      mem: { type: 'double' },
      message: { type: 'string' },
      tags: { type: 'array', items: { type: 'string' } },
      seq: { type: 'long' },
    },
  },
};

// ---------------------------------------------------------------- payloads

/** Keys in alphabetical order, so JSON.stringify of a payload is its canonical JSON. */
interface Payload {
  at: string;
  cpu: number;
  host: string;
  mem: number;
  message: string;
  region: string;
  seq: number;
  tags: string[];
}

const WORDS = (
  'ingest partition replica stream payload timestamp latency throughput cluster node ring ' +
  'owner schema tenant collection search query transfer compaction snapshot checksum batch ' +
  'request response timeout retry backoff leader follower quorum commit durable fsync ' +
  'segment index shard bucket window aggregate histogram gauge counter metric alert warning ' +
  'error recovered degraded healthy started stopped joined leaving pending'
).split(' ');
const REGIONS = ['eu-west-1', 'eu-central-1', 'us-east-1', 'us-west-2', 'ap-south-1', 'ap-northeast-1'];
const TAGS = ['prod', 'staging', 'canary', 'edge', 'core', 'batch', 'web', 'db', 'cache', 'queue'];

/** The simulation's seeded PRNG: every run writes the same payloads. */
function seededRandom(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function makePayload(seq: number, random: () => number): Payload {
  const payload: Payload = {
    at: new Date(FIRST_EVENT_MS + seq * EVENT_SPACING_MS).toISOString(),
    cpu: Math.round(random() * 10_000) / 100,
    host: `host-${String(Math.floor(random() * 500)).padStart(3, '0')}`,
    mem: random() * 64,
    message: '',
    region: pick(random, REGIONS),
    seq,
    tags: Array.from({ length: 1 + Math.floor(random() * 3) }, () => pick(random, TAGS)),
  };
  const targetChars = PAYLOAD_CHARS_MIN + Math.floor(random() * PAYLOAD_CHARS_SPREAD);
  let chars = canonicalJson(payload).length;
  const words: string[] = [];
  while (chars < targetChars) {
    const word = pick(random, WORDS);
    chars += word.length + (words.length === 0 ? 0 : 1);
    words.push(word);
  }
  payload.message = words.join(' ');
  return payload;
}

// ---------------------------------------------------------------- batches

export interface PreparedBatch {
  /** The request body, serialised and encoded once, before any timing. */
  body: Buffer;
  /** The canonical JSON of each payload: what a repository stores. */
  payloadJsons: string[];
  timestamps: number[];
  payloadBytes: number;
}

export function prepareBatches(options: Pick<BenchOptions, 'payloads' | 'batch'>): PreparedBatch[] {
  const random = seededRandom(SEED);
  const batches: PreparedBatch[] = [];
  for (let first = 0; first < options.payloads; first += options.batch) {
    const count = Math.min(options.batch, options.payloads - first);
    const payloads = Array.from({ length: count }, (_, offset) => makePayload(first + offset, random));
    const payloadJsons = payloads.map((payload) => canonicalJson(payload));
    batches.push({
      body: Buffer.from(JSON.stringify(payloads), 'utf8'),
      payloadJsons,
      timestamps: payloads.map((payload) => Date.parse(payload.at)),
      payloadBytes: payloadJsons.reduce((sum, json) => sum + Buffer.byteLength(json, 'utf8'), 0),
    });
  }
  return batches;
}

export function payloadBytesOf(batches: readonly PreparedBatch[]): number {
  return batches.reduce((sum, batch) => sum + batch.payloadBytes, 0);
}

// ---------------------------------------------------------------- timing

export interface Timing {
  elapsedMs: number;
  latenciesMs: number[];
}

/** Sends every batch with `concurrency` of them in flight; times the whole and each one. */
export async function runBatches(count: number, concurrency: number, send: (index: number) => Promise<void>): Promise<Timing> {
  const latenciesMs = new Array<number>(count);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next;
      next += 1;
      const started = performance.now();
      await send(index);
      latenciesMs[index] = performance.now() - started;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return { elapsedMs: performance.now() - started, latenciesMs };
}

// ---------------------------------------------------------------- raw baseline

type RawOperation = { type: 'put'; key: string; value: string };

/** tsr-shaped keys for the same payloads, built before timing as the node builds them per request. */
export function rawOperations(batches: readonly PreparedBatch[]): RawOperation[][] {
  const writeIds = new WriteIdGenerator('bench');
  return batches.map((batch) =>
    batch.payloadJsons.map((json, index) => ({
      type: 'put',
      key:
        `${TENANT}/${COLLECTION}/raw/${encodePartition(partitionOfCanonical(json, DEFAULT_POLICY))}` +
        `/${encodeTimestamp(batch.timestamps[index]!)}/${writeIds.next()}`,
      value: json,
    })),
  );
}

/** The same bytes in the same batches, straight into a fresh classic-level, each batch synced. */
async function runRaw(batches: readonly PreparedBatch[], concurrency: number): Promise<Timing> {
  const operations = rawOperations(batches);
  // Beside the node's data folder (the kit's is in os.tmpdir()), so both fsync to one disk.
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-raw-'));
  const level = new ClassicLevel<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
  try {
    await level.open();
    return await runBatches(operations.length, concurrency, (index) => level.batch(operations[index]!, { sync: true }));
  } finally {
    await level.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- the node under test

// The kit's NodeProcess finds main.js relative to its own file: right when vitest runs it
// from test/kit, but dist/dist/src/main.js once compiled to dist/test/kit, where the bench
// imports it from. Until the kit looks for the package root itself, the bench starts its
// node here with the kit's flags, ports and data folders (which cleanup() removes).
/**
 * Extra Node flags for the node under test, from BENCH_NODE_FLAGS, for profiling it, e.g.
 * BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof'. NODE_OPTIONS would also reach the
 * bench process and npm. The node is stopped with SIGTERM, so a profile gets written.
 */
export function nodeFlags(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '');
}

/**
 * When the node under test is profiled (BENCH_NODE_FLAGS=--cpu-prof…), logs the monotonic
 * clock (µs, the clock of .cpuprofile timestamps) at each phase, to slice the profile by.
 * (search.ts has its own copy, from before this one was shared.)
 */
export function phase(name: string): void {
  if (nodeFlags().some((flag) => flag.startsWith('--cpu-prof'))) log(`phase ${name} ${process.hrtime.bigint() / 1000n}`);
}

function startNode(): Promise<NodeProcess> {
  return NodeProcess.start({ name: 'bench', execArgv: nodeFlags() });
}

async function stopNode(node: NodeProcess): Promise<void> {
  await node.kill('SIGTERM');
}

// ---------------------------------------------------------------- over HTTP

export type Api = ReturnType<typeof client>;

export async function expectOk(what: string, result: Promise<{ status: number; text: string }>): Promise<void> {
  const { status, text } = await result;
  if (status !== 200) throw new Error(`${what}: HTTP ${status} ${text.slice(0, 500)}`);
}

async function defineStream(api: Api, name: string, repository: 'tsr' | 'ssr'): Promise<string> {
  const path = `/streams/${TENANT}/${COLLECTION}/${name}`;
  await expectOk(`PUT ${path}`, api.put(path, { schema: SCHEMA }));
  await expectOk(`PUT ${path}/repository`, api.put(`${path}/repository`, { name: repository, config: {} }));
  return path;
}

/** Posts one body; an answer other than `okStatus` fails the bench. */
export async function postBatch(url: string, body: Buffer, contentType = 'application/json', okStatus = 200): Promise<void> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
  const text = await response.text();
  if (response.status !== okStatus) throw new Error(`POST ${url}: HTTP ${response.status} ${text.slice(0, 500)}`);
}

async function storedTotal(api: Api, repository: 'tsr' | 'ssr', name: string): Promise<number> {
  const response = await api.get(`/_internal/repos/${repository}/${TENANT}/${COLLECTION}/${name}`);
  if (response.status !== 200) throw new Error(`internal read of ${repository} ${name}: HTTP ${response.status}`);
  return (response.json as { total: number }).total;
}

/** Posts every batch to a fresh stream, then checks the node stored every payload. */
async function runHttp(
  node: NodeProcess,
  repository: 'tsr' | 'ssr',
  name: string,
  batches: readonly PreparedBatch[],
  concurrency: number,
): Promise<Timing> {
  const api = client(node);
  const url = node.url + (await defineStream(api, name, repository));
  const timing = await runBatches(batches.length, concurrency, (index) => postBatch(url, batches[index]!.body));
  const expected = batches.reduce((sum, batch) => sum + batch.payloadJsons.length, 0);
  const total = await storedTotal(api, repository, name);
  if (total !== expected) throw new Error(`${repository} stream ${name} holds ${total} payloads, ${expected} were posted`);
  return timing;
}

async function warmUp(node: NodeProcess, batches: readonly PreparedBatch[]): Promise<void> {
  const url = node.url + (await defineStream(client(node), 'warmup', 'tsr'));
  for (const batch of batches.slice(0, WARMUP_BATCHES)) await postBatch(url, batch.body);
}

// ---------------------------------------------------------------- results

export interface StoreResult {
  payloads: number;
  payloadBytes: number;
  seconds: number;
  payloadsPerSecond: number;
  /** 10^6 bytes of payload (canonical JSON) per second. */
  megabytesPerSecond: number;
  batchLatencyMs: { p50: number; p99: number };
  ratioToRaw: number;
}

interface RunSet {
  concurrency: number;
  raw: StoreResult;
  tsr: StoreResult;
  ssr: StoreResult;
}

/** Nearest-rank percentile. */
export function percentile(sorted: ArrayLike<number>, fraction: number): number {
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)]!;
}

/** The median of the values there are (the mean of the middle two of an even count), to two decimals; undefined without any. */
export function medianOf(values: ReadonlyArray<number | undefined>): number | undefined {
  const sorted = values.filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  return round(sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2, 2);
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function summarise(timing: Timing, payloads: number, payloadBytes: number, rawPayloadsPerSecond?: number): StoreResult {
  const seconds = timing.elapsedMs / 1000;
  const sorted = [...timing.latenciesMs].sort((a, b) => a - b);
  const payloadsPerSecond = payloads / seconds;
  return {
    payloads,
    payloadBytes,
    seconds: round(seconds, 3),
    payloadsPerSecond: Math.round(payloadsPerSecond),
    megabytesPerSecond: round(payloadBytes / 1e6 / seconds, 2),
    batchLatencyMs: { p50: round(percentile(sorted, 0.5), 2), p99: round(percentile(sorted, 0.99), 2) },
    ratioToRaw: round(payloadsPerSecond / (rawPayloadsPerSecond ?? payloadsPerSecond), 3),
  };
}

/**
 * raw, then tsr, then ssr at one concurrency. Each set gets a fresh node, so the concurrent
 * set does not write into (and compact) the headline set's data; ssr does follow tsr on it.
 */
async function runSet(batches: readonly PreparedBatch[], concurrency: number): Promise<RunSet> {
  const payloads = batches.reduce((sum, batch) => sum + batch.payloadJsons.length, 0);
  const bytes = payloadBytesOf(batches);
  log(`concurrency ${concurrency}: raw classic-level…`);
  const raw = summarise(await runRaw(batches, concurrency), payloads, bytes);
  let node: NodeProcess | undefined;
  try {
    node = await startNode();
    await warmUp(node, batches);
    log(`concurrency ${concurrency}: tsr over HTTP…`);
    const tsr = summarise(await runHttp(node, 'tsr', 'tsr', batches, concurrency), payloads, bytes, raw.payloadsPerSecond);
    log(`concurrency ${concurrency}: ssr over HTTP…`);
    const ssr = summarise(await runHttp(node, 'ssr', 'ssr', batches, concurrency), payloads, bytes, raw.payloadsPerSecond);
    return { concurrency, raw, tsr, ssr };
  } finally {
    if (node !== undefined) await stopNode(node);
    // Removes the node's data folder, also when it failed to start.
    await cleanup();
  }
}

function tableRows(set: RunSet): string[] {
  const row = (store: string, result: StoreResult) =>
    `| ${store} | ${set.concurrency} | ${result.payloadsPerSecond.toLocaleString('en-US')} | ` +
    `${result.megabytesPerSecond.toFixed(1)} | ${result.batchLatencyMs.p50.toFixed(1)} | ` +
    `${result.batchLatencyMs.p99.toFixed(1)} | ${result.ratioToRaw.toFixed(2)} |`;
  return [row('raw classic-level', set.raw), row('tsr over HTTP', set.tsr), row('ssr over HTTP', set.ssr)];
}

interface Machine {
  cpus: number;
  model: string;
  node: string;
  loadAverage1m: { before: number; after: number };
}

function markdownTable(sets: readonly RunSet[], report: { params: object; machine: Machine }): string {
  const { machine } = report;
  const load = `load average ${machine.loadAverage1m.before} → ${machine.loadAverage1m.after}`;
  return [
    '| store | concurrency | payloads/s | MB/s | p50 batch ms | p99 batch ms | ratio to raw |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...sets.flatMap(tableRows),
    '',
    `Params: ${JSON.stringify(report.params)}. Machine: ${machine.cpus} × ${machine.model}, Node ${machine.node}, ${load}.`,
  ].join('\n');
}

export function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

// ---------------------------------------------------------------- entry point

export async function runIngestBench(options: BenchOptions): Promise<void> {
  const batches = prepareBatches(options);
  const payloadBytesAvg = payloadBytesOf(batches) / options.payloads;
  if (payloadBytesAvg < PAYLOAD_BYTES_AVG_RANGE[0] || payloadBytesAvg > PAYLOAD_BYTES_AVG_RANGE[1]) {
    throw new Error(`payloads average ${payloadBytesAvg.toFixed(0)} bytes, outside ${PAYLOAD_BYTES_AVG_RANGE.join('–')}`);
  }
  log(`${options.payloads} payloads (${payloadBytesAvg.toFixed(0)} bytes on average) in ${batches.length} batches`);
  // Other processes on a small machine move these figures a lot; the load says how busy it was.
  const loadAverageBefore = os.loadavg()[0]!;

  const headline = await runSet(batches, options.concurrency);
  const extra =
    options.extraConcurrency > 0 && options.extraConcurrency !== options.concurrency
      ? await runSet(batches, options.extraConcurrency)
      : undefined;

  const report = {
    date: new Date().toISOString(),
    machine: machine(loadAverageBefore),
    params: {
      payloads: options.payloads,
      batch: options.batch,
      concurrency: options.concurrency,
      payloadBytesAvg: Math.round(payloadBytesAvg),
      seed: SEED,
      policy: 'default (ring_size 128)',
    },
    raw: headline.raw,
    tsr: headline.tsr,
    ssr: headline.ssr,
    // The same measurement with more requests in flight; the goal is judged on the headline.
    ...(extra === undefined ? {} : { concurrent: extra }),
    goal: { tsrRatioMin: TSR_RATIO_MIN, met: headline.tsr.ratioToRaw >= TSR_RATIO_MIN },
  };
  mkdirSync(dirname(RESULTS_PATH), { recursive: true });
  writeFileSync(RESULTS_PATH, JSON.stringify(report, null, 2) + '\n');
  console.log(markdownTable(extra === undefined ? [headline] : [headline, extra], report));
  console.log(`\nGoal tsr ≥ ${TSR_RATIO_MIN} × raw: ${report.goal.met ? 'met' : 'NOT met'} (${headline.tsr.ratioToRaw}).`);
  log(`results written to ${RESULTS_PATH}`);
}
