// The chaos table of docs/cluster.md ("The chaos suite"): one row per
// scenario, summed over its seeds. `settled`: runs whose cluster settled (one table, no
// change, hints, hand-offs or refills left) before the checker read it. `before repair`:
// lost and under-replicated once settled and before any repair run.

import type { ChaosRunResult } from './run.js';

export function chaosTable(results: readonly ChaosRunResult[]): string {
  const rows = new Map<string, ChaosRunResult[]>();
  for (const result of results) rows.set(result.scenario, [...(rows.get(result.scenario) ?? []), result]);
  const lines = [
    '| scenario | seeds | acknowledged | unknown | lost | under-replicated | before repair: lost / under-replicated | duplicates | misplaced | answer mismatches | changes done | settled | 5xx | 507 | unavailable s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const [scenario, runs] of rows) {
    const sum = (pick: (run: ChaosRunResult) => number) => runs.reduce((total, run) => total + pick(run), 0);
    lines.push(
      `| ${scenario} | ${runs.length} | ${sum((r) => r.verdict.acknowledged)} | ${sum((r) => r.verdict.unknown)} | ${sum((r) => r.verdict.lost)} | ${sum((r) => r.verdict.underReplicated)} | ${sum((r) => r.beforeRepair.lost)} / ${sum((r) => r.beforeRepair.underReplicated)} | ${sum((r) => r.verdict.duplicates)} | ${sum((r) => r.verdict.misplaced)} | ${sum((r) => r.verdict.answerMismatches)} | ${sum((r) => r.changesCompleted)}/${sum((r) => r.changesPlanned)} | ${sum((r) => (r.unsettled === undefined ? 1 : 0))}/${runs.length} | ${sum((r) => r.writes.status5xx)} | ${sum((r) => r.writes.status507)} | ${sum((r) => r.writes.unavailableSeconds)} |`,
    );
  }
  return lines.join('\n');
}
