// The console's history of a node's figures (src/node-history/history.ts), without processes:
// rates from counter deltas, p50/p99 from histogram bucket deltas, a bounded ring; and the
// answer gathered from every member (src/node-history/history-peer.ts) with a fake peer endpoint.

import { describe, expect, it } from 'vitest';
import { HISTORY_SAMPLES_MAX, HistoryRing, quantileOfBuckets, sampleBetween, type HistoryReading, type NodeHistory } from '../../src/node-history/history.js';
import { clusterHistory, HISTORY_DEADLINE_MS_MAX, HISTORY_NODES_MAX } from '../../src/node-history/history-peer.js';
import type { PeerEndpoint } from '../../src/peer/endpoint.js';
import type { Membership, NodeState } from '../../src/protocol/cluster-types.js';

const BOUNDS = [0.001, 0.01, 0.1, 1];

function reading(atMs: number, figures: Partial<HistoryReading> = {}): HistoryReading {
  return { atMs, ingestPayloads: 0, latencyBoundsSeconds: BOUNDS, latencyCounts: [0, 0, 0, 0, 0], transferBytes: 0, diskUsedBytes: 1_000, ...figures };
}

describe('console history - quantiles of histogram buckets', () => {
  it('interpolates inside the bucket that holds the rank, as histogram_quantile does', () => {
    // 100 requests: 10 under 1 ms, 80 between 1 and 10 ms, 10 between 10 and 100 ms.
    const cumulative = [10, 90, 100, 100, 100];
    // Rank 50 is the 40th of 80 in (1 ms, 10 ms]: half-way.
    expect(quantileOfBuckets(BOUNDS, cumulative, 0.5)).toBeCloseTo(0.0055, 9);
    // Rank 99 is the 9th of 10 in (10 ms, 100 ms].
    expect(quantileOfBuckets(BOUNDS, cumulative, 0.99)).toBeCloseTo(0.091, 9);
    // The first bucket starts at 0.
    expect(quantileOfBuckets(BOUNDS, cumulative, 0.05)).toBeCloseTo(0.0005, 9);
  });

  it('answers the highest finite bound when the rank is in +Inf, and null without requests', () => {
    expect(quantileOfBuckets(BOUNDS, [0, 0, 0, 0, 4], 0.5)).toBe(1);
    expect(quantileOfBuckets(BOUNDS, [0, 0, 0, 0, 0], 0.99)).toBeNull();
  });

  it('refuses counts that do not match the bounds (a bug, not input)', () => {
    expect(() => quantileOfBuckets(BOUNDS, [1, 2], 0.5)).toThrow(/invariant broken/);
  });
});

describe('console history - samples between two readings', () => {
  it('computes rates per second from counter deltas and quantiles from bucket deltas', () => {
    const before = reading(10_000, { ingestPayloads: 500, transferBytes: 1_000, latencyCounts: [100, 100, 100, 100, 100] });
    const after = reading(15_000, { ingestPayloads: 5_500, transferBytes: 51_000, latencyCounts: [110, 190, 200, 200, 200], diskUsedBytes: 4_096 });
    const sample = sampleBetween(before, after)!;
    expect(sample.atMs).toBe(15_000);
    expect(sample.ingestPayloadsPerSecond).toBe(1_000);
    expect(sample.transferBytesPerSecond).toBe(10_000);
    // Only the 100 requests of the interval count: the same shape as above.
    expect(sample.latencyP50Ms).toBeCloseTo(5.5, 6);
    expect(sample.latencyP99Ms).toBeCloseTo(91, 6);
    expect(sample.diskUsedBytes).toBe(4_096);
  });

  it('says null latency for an interval without requests, and no sample when no time passed', () => {
    const sample = sampleBetween(reading(0, { latencyCounts: [3, 3, 3, 3, 3] }), reading(5_000, { latencyCounts: [3, 3, 3, 3, 3] }))!;
    expect(sample.latencyP50Ms).toBeNull();
    expect(sample.latencyP99Ms).toBeNull();
    expect(sample.ingestPayloadsPerSecond).toBe(0);
    expect(sampleBetween(reading(5_000), reading(5_000))).toBeUndefined();
  });

  it('never draws a negative rate', () => {
    expect(sampleBetween(reading(0, { ingestPayloads: 10 }), reading(1_000, { ingestPayloads: 4 }))!.ingestPayloadsPerSecond).toBe(0);
  });
});

describe('console history - the ring', () => {
  it('keeps one sample per reading after the first, oldest first, as columns', () => {
    const ring = new HistoryRing();
    ring.record(reading(0));
    expect(ring.columns().atMs).toEqual([]);
    ring.record(reading(5_000, { ingestPayloads: 50 }));
    ring.record(reading(10_000, { ingestPayloads: 50 }));
    const columns = ring.columns();
    expect(columns.atMs).toEqual([5_000, 10_000]);
    expect(columns.ingestPayloadsPerSecond).toEqual([10, 0]);
    expect(columns.latencyP50Ms).toEqual([null, null]);
    expect(columns.diskUsedBytes).toEqual([1_000, 1_000]);
  });

  it('holds at most 15 minutes of 5-second samples, dropping the oldest', () => {
    expect(HISTORY_SAMPLES_MAX).toBe(180);
    const ring = new HistoryRing();
    for (let index = 0; index <= 200; index += 1) ring.record(reading(index * 5_000, { ingestPayloads: index }));
    const columns = ring.columns();
    expect(columns.atMs).toHaveLength(180);
    expect(columns.atMs[0]).toBe(21 * 5_000);
    expect(columns.atMs[179]).toBe(200 * 5_000);
    for (const column of Object.values(columns)) expect(column).toHaveLength(180);
  });

  it('ignores a reading that is not later than the last one (a clock step back)', () => {
    const ring = new HistoryRing(4);
    ring.record(reading(10_000));
    ring.record(reading(9_000, { ingestPayloads: 1_000 }));
    ring.record(reading(15_000, { ingestPayloads: 10 }));
    expect(ring.columns().ingestPayloadsPerSecond).toEqual([2]);
  });
});

describe('console history - gathered across the cluster', () => {
  const history = (node: string): NodeHistory => ({ node, intervalMs: 5_000, samples: new HistoryRing().columns(), ready: true, reasons: [] });
  const membership = (states: Record<string, NodeState>): Membership => ({
    epoch: 3,
    members: Object.entries(states).map(([name, state]) => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 1, httpPort: 2, zone: 'local', state })),
    change: undefined,
  });
  /** A peer endpoint that answers for the names in `answers`, fails for the others, and notes the deadlines. */
  function endpoint(answers: Record<string, NodeHistory>, deadlines: number[]): PeerEndpoint {
    return {
      name: 'a',
      notify: () => false,
      call: (async (to: string, kind: { name: string }, _body: unknown, options: { deadlineMs: number }) => {
        expect(kind.name).toBe('ConsoleHistoryRead');
        deadlines.push(options.deadlineMs);
        const answer = answers[to];
        if (answer === undefined) throw new Error(`deadline of ${options.deadlineMs} ms passed`);
        return answer;
      }) as PeerEndpoint['call'],
      callEach: () => {
        throw new Error('not used: the history reads call each node alone');
      },
      handle: () => undefined,
      handleTransfer: () => undefined,
      openTransferStream: () => { throw new Error('not used'); },
    };
  }

  it('answers for itself, asks every other member that has not left, and says why one has no figures', async () => {
    const deadlines: number[] = [];
    const answer = await clusterHistory({
      endpoint: endpoint({ b: history('b'), d: { ...history('someone-else'), ready: false, reasons: ['node d is stopping'] } }, deadlines),
      membership: () => membership({ c: 'Joined', a: 'Joined', b: 'Joining', d: 'Leaving', e: 'Joined', gone: 'Left', f: 'Joined' }),
      available: (name) => name !== 'f',
      local: () => history('a'),
      deadlineMs: 10_000,
    });
    expect(answer).toMatchObject({ intervalMs: 5_000, windowMs: 900_000 });
    expect(answer.nodes.map((node) => [node.node, 'error' in node ? node.error.split(':')[0] : (node as NodeHistory).ready])).toEqual([
      ['a', true],
      ['b', true],
      ['c', 'did not answer'],
      // The name asked, not the one the answer claims.
      ['d', false],
      ['e', 'did not answer'],
      ['f', 'unavailable'],
    ]);
    // A slow member holds the page at most 2 s; the unavailable one is not asked.
    expect(deadlines).toEqual([HISTORY_DEADLINE_MS_MAX, HISTORY_DEADLINE_MS_MAX, HISTORY_DEADLINE_MS_MAX, HISTORY_DEADLINE_MS_MAX]);
  });

  it('charts the first 64 members by name and names the others', async () => {
    const names = Array.from({ length: HISTORY_NODES_MAX + 6 }, (_, index) => `n${String(index).padStart(3, '0')}`);
    const answers = Object.fromEntries(names.map((name) => [name, history(name)]));
    const deadlines: number[] = [];
    const answer = await clusterHistory({
      endpoint: { ...endpoint(answers, deadlines), name: 'n000' },
      membership: () => membership(Object.fromEntries(names.map((name) => [name, 'Joined' as const]))),
      available: () => true,
      local: () => history('n000'),
      deadlineMs: 500,
    });
    expect(answer.nodes).toHaveLength(names.length);
    expect(answer.nodes.filter((node) => !('error' in node))).toHaveLength(HISTORY_NODES_MAX);
    expect(answer.nodes.slice(HISTORY_NODES_MAX).every((node) => 'error' in node && node.error.startsWith('not charted'))).toBe(true);
    expect(deadlines).toHaveLength(HISTORY_NODES_MAX - 1);
    expect(new Set(deadlines)).toEqual(new Set([500]));
  });
});
