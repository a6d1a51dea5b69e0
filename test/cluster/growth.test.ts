// A cluster grown as an operator grows one (docs/cluster.md, "Sizes"): real node processes
// on loopback, one node to eight in one POST /cluster/nodes of seven, to sixteen one node
// at a time while writers post, then four removed by four DELETEs in a row, down to
// twelve. Afterwards every acknowledged payload is on its partition's `replicas` current
// owners and on no other node, and every member answers the same search total, histogram
// sum and historical count. No node may exit on the way. Peak RSS and idle CPU of every
// node are printed: the cost of a node at this size.

import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { ChaosCluster } from '../chaos/chaos-cluster.js';
import { defineChaosStreams, judge } from '../chaos/run.js';
import { ChaosWriters } from '../chaos/writers.js';
import { CHAOS_STREAMS } from '../chaos/chaos-cluster.js';
import { cleanup, sleep, type NodeProcess } from '../kit/node-process.js';
import { Prng } from '../sim/prng.js';

const REPLICAS = 3;
const FIRST_GROWTH = 8;
const FULL_SIZE = 16;
const REMOVED = ['g03', 'g06', 'g10', 'g15'];
const CHANGE_TIMEOUT_MS = 120_000;
const IDLE_SAMPLE_MS = 5_000;
/** Bounds a node at this size must stay within (measured: see the printed report). */
const PEAK_RSS_BYTES_MAX = 512 * 1024 * 1024;
const IDLE_CPU_FRACTION_MAX = 0.1;

const nameOf = (index: number) => `g${String(index).padStart(2, '0')}`;

afterAll(cleanup);

describe('growth - a cluster grows from one node to sixteen and shrinks to twelve', () => {
  it('1 → 8 in one POST, → 16 one at a time under ingest, 4 DELETEs in a row → 12: every payload on its owners, every answer the same', async () => {
    // Heartbeats as a node has them by default (once a second, down after 3 s): at 16
    // processes on two cores the kit's fast settings would keep the machine busy.
    const cluster = new ChaosCluster(new Prng(32), ['--cluster-heartbeat-interval-ms', '1000', '--cluster-failure-timeout-ms', '3000']);
    onTestFailed(() => {
      console.log(cluster.log.join('\n'));
      for (const node of cluster.everyone()) {
        const lines = node.output.split('\n').filter((line) => line.length > 0);
        console.log(`--- ${node.name}: last ${Math.min(30, lines.length)} of ${lines.length} log lines\n${lines.slice(-30).join('\n')}`);
      }
    });
    const first = await cluster.startNode(nameOf(1), false);
    await defineChaosStreams(first, REPLICAS);
    const joiners = Array.from({ length: FIRST_GROWTH - 1 }, (_, index) => nameOf(index + 2));
    for (const name of joiners) await cluster.startNode(name, true);

    let started = performance.now();
    const firstChanges = await cluster.joinAll(first, joiners, CHANGE_TIMEOUT_MS);
    const toEightSeconds = (performance.now() - started) / 1000;
    // One join starts at once; the six others wait in the queue, in the order asked.
    expect(firstChanges).toEqual([
      { kind: 'join', node: joiners[0], status: 'started' },
      ...joiners.slice(1).map((node, index) => ({ kind: 'join', node, status: 'queued', position: index + 1, id: expect.stringMatching(/^q\d+\.\d+$/) })),
    ]);

    const writers = new ChaosWriters(
      { writers: 2, streams: CHAOS_STREAMS.map((stream) => stream.path), batchPayloadsMin: 10, batchPayloadsMax: 100, requestTimeoutMs: 10_000, attemptsMax: 3, avoidMs: 2_000, targets: () => cluster.targets() },
      new Prng(33),
    );
    const phaseStart = Date.now();
    writers.start();
    started = performance.now();
    for (let index = FIRST_GROWTH + 1; index <= FULL_SIZE; index += 1) {
      await cluster.startNode(nameOf(index), true);
      await cluster.join(nameOf(index), CHANGE_TIMEOUT_MS);
    }
    const toSixteenSeconds = (performance.now() - started) / 1000;

    started = performance.now();
    const removals = await cluster.removeAll(first, REMOVED, REMOVED.length * CHANGE_TIMEOUT_MS);
    const removalSeconds = (performance.now() - started) / 1000;
    expect(removals.map((change) => (change as { status: string }).status)).toEqual(['started', 'queued', 'queued', 'queued']);
    await writers.stop();

    expect(await cluster.settle(60_000)).toBeUndefined();
    const everyone = cluster.everyone();
    expect(everyone.filter((node) => !node.running).map((node) => node.name), 'nodes that exited').toEqual([]);
    // No repair run first: what the changes and the write path left must already be right.
    const verdict = await judge(cluster, REPLICAS, writers, phaseStart);
    expect(verdict.acknowledged).toBeGreaterThan(0);
    expect({ lost: verdict.lost, underReplicated: verdict.underReplicated, misplaced: verdict.misplaced, duplicates: verdict.duplicates, answerMismatches: verdict.answerMismatches }, verdict.examples.join('\n')).toEqual({
      lost: 0,
      underReplicated: 0,
      misplaced: 0,
      duplicates: 0,
      answerMismatches: 0,
    });
    expect(cluster.members()).toHaveLength(FULL_SIZE - REMOVED.length);

    const costs = await nodeCosts(everyone);
    console.log(report({ toEightSeconds, toSixteenSeconds, removalSeconds, acknowledged: verdict.acknowledged, costs }));
    for (const cost of costs) {
      expect(cost.peakRssBytes, `${cost.name} peak RSS`).toBeLessThan(PEAK_RSS_BYTES_MAX);
      expect(cost.idleCpuFraction, `${cost.name} idle CPU`).toBeLessThan(IDLE_CPU_FRACTION_MAX);
    }
  }, 900_000);
});

interface NodeCost {
  name: string;
  peakRssBytes: number;
  idleCpuFraction: number;
}

/** Peak RSS (VmHWM) of each process, and the CPU it used over IDLE_SAMPLE_MS of a settled cluster. */
async function nodeCosts(nodes: readonly NodeProcess[]): Promise<NodeCost[]> {
  const before = nodes.map((node) => cpuTicks(node));
  const started = performance.now();
  await sleep(IDLE_SAMPLE_MS);
  const seconds = (performance.now() - started) / 1000;
  return nodes.map((node, index) => ({
    name: node.name,
    peakRssBytes: peakRss(node),
    idleCpuFraction: (cpuTicks(node) - before[index]!) / CLOCK_TICKS_PER_SECOND / seconds,
  }));
}

/** Linux's USER_HZ: /proc reports CPU time in hundredths of a second. */
const CLOCK_TICKS_PER_SECOND = 100;

function cpuTicks(node: NodeProcess): number {
  // Fields after the command name: state is field 3, utime 14 and stime 15.
  const stat = readFileSync(`/proc/${node.child!.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function peakRss(node: NodeProcess): number {
  const status = readFileSync(`/proc/${node.child!.pid}/status`, 'utf8');
  const kilobytes = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
  return Number(kilobytes) * 1024;
}

function report(figures: { toEightSeconds: number; toSixteenSeconds: number; removalSeconds: number; acknowledged: number; costs: NodeCost[] }): string {
  const rows = figures.costs.map((cost) => `| ${cost.name} | ${(cost.peakRssBytes / 1024 / 1024).toFixed(0)} | ${(100 * cost.idleCpuFraction).toFixed(1)} |`);
  return [
    `growth: 1 → ${FIRST_GROWTH} in one POST ${figures.toEightSeconds.toFixed(1)} s; → ${FULL_SIZE} one at a time under ingest ${figures.toSixteenSeconds.toFixed(1)} s; ${REMOVED.length} removed ${figures.removalSeconds.toFixed(1)} s; ${figures.acknowledged} payloads acknowledged`,
    '| node | peak RSS MiB | idle CPU % of a core |',
    '|---|---:|---:|',
    ...rows,
  ].join('\n');
}
