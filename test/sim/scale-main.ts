// `npm run sim:scale`: the scale simulation (scale-simulate.ts) at the sizes of the README's
// table, or at one size: `npm run sim:scale -- --nodes 256 --ring-size 4096`. Prints one
// line of JSON per run, and a Markdown table at the end.

import { parseArgs } from 'node:util';
import { simulateScale, type ScaleSimResult } from './scale-simulate.js';

const { values } = parseArgs({
  options: {
    nodes: { type: 'string' },
    'ring-size': { type: 'string' },
    joins: { type: 'string', default: '2' },
    leaves: { type: 'string', default: '2' },
    records: { type: 'string', default: '4' },
    seed: { type: 'string', default: '7' },
  },
});

function whole(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} must be a whole number, not '${text}'`);
  return value;
}

const nodes = whole('nodes', values.nodes);
const ringSize = whole('ring-size', values['ring-size']);
const sizes = nodes === undefined ? [64, 128, 256] : [nodes];
const rings = ringSize === undefined ? [1024, 4096] : [ringSize];
const results: ScaleSimResult[] = [];
for (const size of sizes) {
  for (const ring of rings) {
    const result = await simulateScale({
      nodes: size, ringSize: ring, replicas: 3, recordsPerPartition: whole('records', values.records)!,
      joins: whole('joins', values.joins)!, leaves: whole('leaves', values.leaves)!,
      heartbeatIntervalMs: 1_000, idleMs: 5_000, changesLimitMs: 600_000, seed: whole('seed', values.seed)!,
    });
    results.push(result);
    console.log(JSON.stringify({ nodes: size, ringSize: ring, ok: result.ok, failures: result.failures.slice(0, 5), changes: result.changes, idle: result.idle, duringChanges: result.duringChanges, realSeconds: result.realSeconds }));
  }
}
console.log(table(results));
process.exitCode = results.every((result) => result.ok) ? 0 : 1;

function table(rows: readonly ScaleSimResult[]): string {
  const lines = ['| nodes | ring_size | changes done | one change: virtual s (mean) | messages (mean) | records moved / minimum | idle msgs/node/s | idle bytes/node/s | during changes bytes/node/s |', '|---:|---:|---:|---:|---:|---:|---:|---:|---:|'];
  for (const row of rows) {
    const count = Math.max(1, row.changes.length);
    const mean = (pick: (change: ScaleSimResult['changes'][number]) => number) => row.changes.reduce((sum, change) => sum + pick(change), 0) / count;
    const moved = row.changes.reduce((sum, change) => sum + change.recordsMoved, 0) / Math.max(1, row.changes.reduce((sum, change) => sum + change.recordsMinimum, 0));
    lines.push(`| ${row.options.nodes} | ${row.options.ringSize} | ${row.changes.length}/${row.options.joins + row.options.leaves} | ${(mean((change) => change.virtualMs) / 1000).toFixed(1)} | ${Math.round(mean((change) => change.messages)).toLocaleString('en-US')} | ${moved.toFixed(2)} | ${row.idle.messagesPerNodePerSecond.toFixed(0)} | ${Math.round(row.idle.bytesPerNodePerSecond).toLocaleString('en-US')} | ${Math.round(row.duringChanges.bytesPerNodePerSecond).toLocaleString('en-US')} |`);
  }
  return lines.join('\n');
}
