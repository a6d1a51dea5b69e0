// The seeded deterministic simulation of the cluster core: at least 1,000
// seeds per run. A failure names its seed; replay it alone with a full trace:
//   SIM_SEED=<seed> npx vitest run test/unit/cluster-core.sim.test.ts
// SIM_SEEDS=<n> and SIM_FIRST_SEED=<n> run another range (e.g. a longer soak).

import { describe, expect, it } from 'vitest';
import { simulate, type SimulationResult } from '../sim/simulate.js';

const SEEDS_PER_RUN = Number(process.env.SIM_SEEDS ?? 1_000);
const FIRST_SEED = Number(process.env.SIM_FIRST_SEED ?? 1);
const REPLAY_SEED = process.env.SIM_SEED === undefined ? undefined : Number(process.env.SIM_SEED);

function report(result: SimulationResult): string {
  return [
    `seed ${result.seed} failed:`,
    ...result.failures.map((failure) => `  ${failure}`),
    `replay: ${result.replay}`,
    'last trace lines:',
    ...result.trace.slice(-40),
  ].join('\n');
}

describe('cluster core - seeded simulation', () => {
  if (REPLAY_SEED !== undefined) {
    it(`replays seed ${REPLAY_SEED} with a verbose trace`, () => {
      const result = simulate(REPLAY_SEED, { verbose: true });
      console.log(result.trace.join('\n'));
      console.log(JSON.stringify(result.stats));
      expect(result.failures, report(result)).toEqual([]);
    });
    return;
  }

  it(`keeps every invariant over ${SEEDS_PER_RUN} seeds`, () => {
    const started = performance.now();
    const failed: SimulationResult[] = [];
    let changes = 0;
    for (let seed = FIRST_SEED; seed < FIRST_SEED + SEEDS_PER_RUN; seed += 1) {
      const result = simulate(seed);
      changes += result.stats.changes;
      if (!result.ok) failed.push(result);
    }
    const seconds = (performance.now() - started) / 1_000;
    console.log(`cluster core simulation: ${SEEDS_PER_RUN} seeds, ${changes} membership changes, ${seconds.toFixed(1)} s (${(SEEDS_PER_RUN / seconds).toFixed(0)} seeds/s)`);
    expect(failed.map((result) => result.seed), failed.slice(0, 3).map(report).join('\n\n')).toEqual([]);
    // Every seed changes the membership at least once, so the run really exercises changes.
    expect(changes).toBeGreaterThanOrEqual(SEEDS_PER_RUN);
  }, 120_000);

  it('is deterministic: one seed gives one trace', () => {
    const first = simulate(4242);
    const second = simulate(4242);
    expect(second.trace).toEqual(first.trace);
    expect(second.stats).toEqual(first.stats);
  });
});
