// Benchmark dispatcher: `node dist/bench/run.js <name> [options]`, or `npm run bench -- <name>
// [options]`, which builds first. Each benchmark is a module with one run function; the options
// common to them are parsed here, once.

import { parseArgs } from 'node:util';
import { runHeartbeatBench } from './heartbeat.js';
import { runIngestBench } from './ingest.js';
import { runPeersIngestBench } from './peers-ingest.js';
import { runPeersTimeseriesBench } from './peers-timeseries.js';
import { runQueryBench } from './query.js';
import { runScaleBench } from './scale.js';
import { runSearchBench } from './search.js';
import { runTransferBench } from './transfer.js';
import type { BenchOptions } from './options.js';

type BenchRun = (options: BenchOptions) => Promise<void>;

const BENCHES: Record<string, BenchRun> = {
  ingest: runIngestBench,
  transfer: runTransferBench,
  search: runSearchBench,
  query: runQueryBench,
  'peers-ingest': runPeersIngestBench,
  'peers-timeseries': runPeersTimeseriesBench,
  scale: runScaleBench,
  heartbeat: runHeartbeatBench,
};

const DEFAULTS: BenchOptions = { payloads: 200_000, batch: 500, concurrency: 1, extraConcurrency: 4, runs: 100, nodes: 32 };
/** Where a benchmark's defaults differ (search: --concurrency is the load's). */
const BENCH_DEFAULTS: Record<string, Partial<BenchOptions>> = {
  search: { payloads: 1_000_000, batch: 1000, concurrency: 2 },
  // 4 clients, each with one batch of 500 (ours) or 500 publishes (JetStream) unacknowledged;
  // --runs: rounds of the whole plan (the goals take the median of the rounds' ratios).
  'peers-ingest': { concurrency: 4, runs: 3 },
  // 1M points in batches of 5,000 (line protocol to InfluxDB), 10 measured runs per query.
  'peers-timeseries': { payloads: 1_000_000, batch: 5000, concurrency: 4, runs: 10 },
  // Growing to 32 nodes one join at a time, twice: 20,000 payloads keep each change short.
  scale: { payloads: 20_000 },
  // 5 rounds of 3,000 heartbeats each way, in turn.
  heartbeat: { payloads: 3_000, runs: 5 },
};

const USAGE = `usage: node dist/bench/run.js <name> [--payloads N] [--batch N] [--concurrency N] [--extra-concurrency N] [--runs N] [--nodes N]
benchmarks: ${Object.keys(BENCHES).join(', ')}`;

function positiveInteger(name: string, text: string | undefined, fallback: number, allowZero = false): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw new Error(`--${name} must be an integer of at least ${allowZero ? 0 : 1}, got '${text}'`);
  }
  return value;
}

function parseOptions(argv: string[]): { name: string | undefined; options: BenchOptions } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      payloads: { type: 'string' },
      batch: { type: 'string' },
      concurrency: { type: 'string' },
      'extra-concurrency': { type: 'string' },
      runs: { type: 'string' },
      nodes: { type: 'string' },
    },
  });
  const name = positionals[0];
  const defaults = { ...DEFAULTS, ...(name === undefined ? {} : BENCH_DEFAULTS[name]) };
  return {
    name,
    options: {
      payloads: positiveInteger('payloads', values.payloads, defaults.payloads),
      batch: positiveInteger('batch', values.batch, defaults.batch),
      concurrency: positiveInteger('concurrency', values.concurrency, defaults.concurrency),
      extraConcurrency: positiveInteger('extra-concurrency', values['extra-concurrency'], defaults.extraConcurrency, true),
      runs: positiveInteger('runs', values.runs, defaults.runs),
      nodes: positiveInteger('nodes', values.nodes, defaults.nodes),
    },
  };
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  const run = parsed.name === undefined ? undefined : BENCHES[parsed.name];
  if (run === undefined) {
    console.error(`${parsed.name === undefined ? 'no benchmark named' : `unknown benchmark '${parsed.name}'`}\n${USAGE}`);
    process.exit(2);
  }
  await run(parsed.options);
}

main().catch((error: unknown) => {
  console.error((error as Error).stack ?? String(error));
  process.exit(1);
});
