// The chaos table of docs/cluster.md ("The chaos suite"): one row per
// scenario, summed over its seeds. `settled`: runs whose cluster settled (one table, no
// change, hints, hand-offs or refills left) before the checker read it. `before repair`:
// lost and under-replicated once settled and before any repair run.

import type { ChaosRunResult } from './run.js';

export function chaosTable(results: readonly ChaosRunResult[]): string {
  const rows = new Map<string, ChaosRunResult[]>();
  for (const result of results) rows.set(result.scenario, [...(rows.get(result.scenario) ?? []), result]);
  const lines = [
    '| scenario | seeds | acknowledged | unknown | lost | under-replicated | before repair: lost / under-replicated | duplicates | misplaced | answer mismatches | before repair | changes done | settled | 5xx | 507 | unavailable s | partition healed → done s | faults ended → done s | in flight at the end → done s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [scenario, runs] of rows) {
    const sum = (pick: (run: ChaosRunResult) => number) => runs.reduce((total, run) => total + pick(run), 0);
    lines.push(
      `| ${scenario} | ${runs.length} | ${sum((r) => r.verdict.acknowledged)} | ${sum((r) => r.verdict.unknown)} | ${sum((r) => r.verdict.lost)} | ${sum((r) => r.verdict.underReplicated)} | ${sum((r) => r.beforeRepair.lost)} / ${sum((r) => r.beforeRepair.underReplicated)} | ${sum((r) => r.verdict.duplicates)} | ${sum((r) => r.verdict.misplaced)} | ${sum((r) => r.verdict.answerMismatches)} | ${sum((r) => r.beforeRepair.answerMismatches)} | ${sum((r) => r.changesCompleted)}/${sum((r) => r.changesPlanned)} | ${sum((r) => (r.unsettled === undefined ? 1 : 0))}/${runs.length} | ${sum((r) => r.writes.status5xx)} | ${sum((r) => r.writes.status507)} | ${sum((r) => r.writes.unavailableSeconds)} | ${medianAndLongest(runs.map((run) => run.changesDoneAfterHealSeconds))} | ${medianAndLongest(runs.map((run) => run.changesDoneAfterFaultsSeconds))} | ${medianAndLongest(runs.map((run) => run.inFlightDoneAfterFaultsSeconds))} |`,
    );
  }
  return lines.join('\n');
}

/**
 * Seconds from a heal to the last change's completion: the median and the longest over the
 * runs that had both (a change done before the heal counts as 0).
 */
function medianAndLongest(values: ReadonlyArray<number | null | undefined>): string {
  const seconds = values.filter((value): value is number => typeof value === 'number').map((value) => Math.max(0, value)).sort((a, b) => a - b);
  if (seconds.length === 0) return '–';
  return `${seconds[Math.floor((seconds.length - 1) / 2)]} / ${seconds.at(-1)}`;
}
