// The shell simulation: the real cluster shell, write path, hint replay,
// hand-offs and repair of every node, over simulated storage (failing reads and writes,
// unsynced writes lost at a crash, damaged data), virtual timers and a simulated network.
// A failure names its seed; replay it alone with its log:
//   SHELL_SIM_SEED=<seed> npx vitest run test/unit/cluster-shell.sim.test.ts
// SHELL_SIM_SEEDS=<n> and SHELL_SIM_FIRST_SEED=<n> run another range (a longer soak).

import { describe, expect, it } from 'vitest';
import { shellSimReplay, simulateShell, type ShellSimResult } from '../sim/shell-simulate.js';

const SEEDS_PER_RUN = Number(process.env.SHELL_SIM_SEEDS ?? 1_000);
const FIRST_SEED = Number(process.env.SHELL_SIM_FIRST_SEED ?? 1);
const REPLAY_SEED = process.env.SHELL_SIM_SEED === undefined ? undefined : Number(process.env.SHELL_SIM_SEED);

function report(result: ShellSimResult): string {
  return [`seed ${result.seed} failed:`, ...result.failures.map((failure) => `  ${failure}`), `replay: ${shellSimReplay(result.seed)}`, 'last log lines:', ...result.log.slice(-40)].join('\n');
}

describe('cluster shell - seeded simulation of the real shell and data plane', () => {
  if (REPLAY_SEED !== undefined) {
    it(`replays seed ${REPLAY_SEED}`, async () => {
      const result = await simulateShell(REPLAY_SEED, { nodeLogs: true });
      console.log(result.log.join('\n'));
      console.log(JSON.stringify(result.stats));
      expect(result.failures, report(result)).toEqual([]);
    }, 600_000);
    return;
  }

  it(`loses no acknowledged write over ${SEEDS_PER_RUN} seeds`, async () => {
    const started = performance.now();
    const failed: ShellSimResult[] = [];
    const totals = { acknowledged: 0, failedWrites: 0, unevenFailed: 0, unevenUnanswered: 0, changes: 0, crashes: 0, damagedRestarts: 0, tablesLost: 0, tableCopiesLost: 0, repairedAfterSettle: 0, moves: 0, ioFailures: 0 };
    for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS_PER_RUN; seed += 1) {
      const result = await simulateShell(seed);
      for (const key of Object.keys(totals) as Array<keyof typeof totals>) totals[key] += result.stats[key];
      if (!result.ok) failed.push(result);
    }
    const seconds = (performance.now() - started) / 1_000;
    console.log(`cluster shell simulation: ${SEEDS_PER_RUN} seeds in ${seconds.toFixed(1)} s: ${JSON.stringify(totals)}`);
    expect(failed.map((result) => result.seed), failed.slice(0, 2).map(report).join('\n\n')).toEqual([]);
    // The runs really exercise what they claim.
    expect(totals.changes).toBeGreaterThanOrEqual(SEEDS_PER_RUN);
    expect(totals.acknowledged).toBeGreaterThan(SEEDS_PER_RUN * 10);
    expect(totals.damagedRestarts).toBeGreaterThan(0);
    // Some took the table's copy (no admission needed), some not (admitted again).
    expect(totals.tableCopiesLost).toBeGreaterThan(0);
    expect(totals.tablesLost).toBeGreaterThan(totals.tableCopiesLost);
    expect(totals.ioFailures).toBeGreaterThan(0);
    // Repair after settling is for the rare damaged copy whose other copy was only a hint
    // (settleWithRepair): the hand-offs, hints and refills must bring back all the rest.
    expect(totals.repairedAfterSettle).toBeLessThan(totals.acknowledged / 1_000);
    // A record whose write was answered as failed is on all of its owners or none once
    // settled (docs/cluster.md, "Writes of unknown outcome"). One whose write never answered
    // (its coordinator crashed) is counted, not checked: unevenUnanswered, the gaps listed there.
    expect(totals.unevenFailed).toBe(0);
  }, 900_000);

  it('is deterministic: one seed gives one log', async () => {
    const first = await simulateShell(4242);
    const second = await simulateShell(4242);
    expect(second.log).toEqual(first.log);
    expect(second.stats).toEqual(first.stats);
  }, 60_000);
});
