// `npm run chaos -- [--scenario S|all] [--seeds N] [--seed n] [--duration-ms ms] [--out FILE] [--node-logs DIR]`
// runs each scenario for N seeds starting at n, prints a line per run
// and the table of docs/cluster.md, and writes every result to FILE (default
// bench/results/chaos.json when more than one run is asked for). `--seed n --seeds 1
// --scenario S` replays one run's schedule. Exit code 1 when any run found a failure.

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { packageRoot } from '../../src/lib/package-root.js';
import { cleanup } from '../kit/node-process.js';
import { unmountAll } from '../kit/tmpfs.js';
import { ChaosDisk } from './disk-full.js';
import { cleanupNetworks, networkUnsupported } from './network.js';
import { runChaos, type ChaosRunResult } from './run.js';
import { SCENARIOS, scenarioNamed, type Scenario } from './scenarios.js';
import { chaosTable } from './report.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scenario: { type: 'string', default: 'all' },
      seeds: { type: 'string', default: '1' },
      seed: { type: 'string', default: '1' },
      'duration-ms': { type: 'string', default: '60000' },
      'settle-timeout-ms': { type: 'string', default: '180000' },
      writers: { type: 'string', default: '4' },
      out: { type: 'string' },
      verbose: { type: 'boolean', default: false },
      'node-logs': { type: 'string' },
    },
  });
  const scenarios = values.scenario === 'all' ? await runnableScenarios() : values.scenario!.split(',').map(scenarioNamed);
  const unsupported = scenarios.some((scenario) => scenario.network === true) ? await networkUnsupported() : undefined;
  if (unsupported !== undefined) throw new Error(`${unsupported}: the partition-* scenarios cannot run here`);
  const seeds = integer('seeds', values.seeds!);
  const firstSeed = integer('seed', values.seed!);
  const options = { durationMs: integer('duration-ms', values['duration-ms']!), settleTimeoutMs: integer('settle-timeout-ms', values['settle-timeout-ms']!), writers: integer('writers', values.writers!) };
  if (values.verbose) process.env.CHAOS_VERBOSE = '1';

  const out = values.out ?? (seeds * scenarios.length > 1 ? join(packageRoot(), 'bench', 'results', 'chaos.json') : undefined);
  const results: ChaosRunResult[] = [];
  const startedAt = new Date().toISOString();
  // Seed by seed across the scenarios: a long run cut short still covers each scenario alike.
  for (let seed = firstSeed; seed < firstSeed + seeds; seed += 1) {
    for (const scenario of scenarios) {
      if (values['node-logs'] !== undefined) {
        // Each run's node logs in their own folder: DIR/<scenario>-seed<n>/<node>.log.
        process.env.CHAOS_NODE_LOGS = join(values['node-logs'], `${scenario.name}-seed${seed}`);
        mkdirSync(process.env.CHAOS_NODE_LOGS, { recursive: true });
      }
      const result = await runChaos(scenario, seed, options);
      results.push(result);
      console.log(summaryLine(result));
      if (!passed(result)) {
        for (const example of [...result.beforeRepair.examples.map((line) => `before repair: ${line}`), ...result.verdict.examples]) console.log(`    ${example}`);
        console.log(`    replay: npm run chaos -- --scenario ${scenario.name} --seed ${seed} --seeds 1 --duration-ms ${options.durationMs}`);
        if (values.verbose) console.log(result.log.map((line) => `    | ${line}`).join('\n'));
      }
      if (out !== undefined) save(out, startedAt, options, results);
    }
  }
  console.log('');
  console.log(chaosTable(results));
  const failed = results.filter((result) => !passed(result));
  process.exitCode = failed.length > 0 ? 1 : 0;
}

/** Every scenario, less those this machine cannot make (a tmpfs, network namespaces), saying so. */
async function runnableScenarios(): Promise<readonly Scenario[]> {
  let scenarios = SCENARIOS;
  const noDisk = ChaosDisk.unavailable();
  if (noDisk !== undefined) {
    console.log(`disk-full scenarios left out: ${noDisk}`);
    scenarios = scenarios.filter((scenario) => scenario.diskFull !== true);
  }
  const noNetwork = await networkUnsupported();
  if (noNetwork !== undefined) {
    console.log(`partition scenarios left out: ${noNetwork}`);
    scenarios = scenarios.filter((scenario) => scenario.network !== true);
  }
  return scenarios;
}

/** Nothing wrong found (nothing missing before repair either), every change done, and the cluster settled before it was read. */
function passed(result: ChaosRunResult): boolean {
  const whole = result.beforeRepair.lost === 0 && result.beforeRepair.underReplicated === 0;
  return result.verdict.ok && whole && result.changesCompleted === result.changesPlanned && result.unsettled === undefined;
}

function summaryLine(result: ChaosRunResult): string {
  const v = result.verdict;
  const flag = passed(result) ? 'ok  ' : 'FAIL';
  const afterHeal = result.changesDoneAfterHealSeconds === null ? '' : `, changes done ${result.changesDoneAfterHealSeconds}s after the last partition healed (${result.changesDoneAfterFaultsSeconds}s after the last fault ended; in flight then: done ${result.inFlightDoneAfterFaultsSeconds ?? '–'}s after; asked after: ${result.startedAfterFaultsSeconds ?? '–'}s each)`;
  return `${flag} ${result.scenario} seed ${result.seed}: acknowledged ${v.acknowledged}, unknown ${v.unknown}, lost ${v.lost}, under-replicated ${v.underReplicated} (before repair: lost ${result.beforeRepair.lost}, under-replicated ${result.beforeRepair.underReplicated}, answer mismatches ${result.beforeRepair.answerMismatches}), duplicates ${v.duplicates}, misplaced ${v.misplaced}, phantoms ${v.phantoms}, answer mismatches ${v.answerMismatches}, changes ${result.changesCompleted}/${result.changesPlanned}, 5xx ${result.writes.status5xx}, 507 ${result.writes.status507}, unavailable ${result.writes.unavailableSeconds}s, ${result.unsettled === undefined ? 'settled' : `NOT settled (${result.unsettled})`}, repair ${result.repair.records} records in ${result.repair.rounds} rounds${afterHeal}, ${result.seconds}s`;
}

function save(path: string, startedAt: string, options: object, results: ChaosRunResult[]): void {
  mkdirSync(dirname(path), { recursive: true });
  const runs = results.map(({ log: _log, ...rest }) => rest);
  writeFileSync(path, `${JSON.stringify({ startedAt, options, runs }, null, 2)}\n`);
}

function integer(name: string, text: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got '${text}'`);
  return value;
}

// Stopped from outside (Ctrl-C, a timeout's SIGTERM): the nodes of the run in progress
// are stopped by pid, paused ones resumed first, before the process ends.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`${signal}: stopping the run's nodes`);
    // Nodes first (a namespace goes only once nothing runs in it), then tmpfs and network.
    void cleanup()
      .then(() => unmountAll())
      .then(() => cleanupNetworks())
      .finally(() => process.exit(130));
  });
}

// Every node is stopped by then; a client's idle sockets or timers must not keep the
// process up after the results are written.
main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  })
  .finally(() => process.exit());
