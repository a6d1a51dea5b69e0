// The console's charts of the cluster over time (docs/operating.md, "Console and API
// documentation"): every node keeps a short history of its own figures, one sample every
// HISTORY_INTERVAL_MS for HISTORY_WINDOW_MS. A sample is computed from two readings of the
// node's Prometheus instruments a few seconds apart, as Prometheus itself would compute
// them: rates from counter deltas, latency quantiles from the deltas of the histogram's
// buckets (histogram_quantile's linear interpolation inside the bucket that holds the
// rank). Pure: readings come in, samples go out; the timer and the instruments are the
// caller's.

import { assert } from '../lib/assert.js';

export const HISTORY_INTERVAL_MS = 5_000;
export const HISTORY_WINDOW_MS = 15 * 60_000;
/** 15 minutes of 5-second samples. */
export const HISTORY_SAMPLES_MAX = HISTORY_WINDOW_MS / HISTORY_INTERVAL_MS;

/** A node's cumulative figures at one moment: counters since the process started, the disk now. */
export interface HistoryReading {
  atMs: number;
  /** Payloads accepted by ingest on this node (every stream). */
  ingestPayloads: number;
  /** The request duration histogram: finite upper bounds in seconds, ascending. */
  latencyBoundsSeconds: readonly number[];
  /** Cumulative counts per bound, then the count of every request (+Inf): one more than the bounds. */
  latencyCounts: readonly number[];
  /** Bytes of transfer chunks this node sent and received. */
  transferBytes: number;
  /** Bytes used on the data folder's filesystem, null before the disk was first read. */
  diskUsedBytes: number | null;
}

export interface HistorySample {
  atMs: number;
  ingestPayloadsPerSecond: number;
  /** Null when no request ended in the interval. */
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  transferBytesPerSecond: number;
  diskUsedBytes: number | null;
}

/** Samples as columns, oldest first: what a chart draws, and a third of the bytes of rows. */
export interface HistoryColumns {
  atMs: number[];
  ingestPayloadsPerSecond: number[];
  latencyP50Ms: Array<number | null>;
  latencyP99Ms: Array<number | null>;
  transferBytesPerSecond: number[];
  diskUsedBytes: Array<number | null>;
}

/** What one node answers: its samples and its readiness now (the reasons of GET /ready). */
export interface NodeHistory {
  node: string;
  intervalMs: number;
  samples: HistoryColumns;
  ready: boolean;
  reasons: string[];
}

/** The answer of GET /console/data/history: every member's history, or why it has none. */
export interface ClusterHistory {
  intervalMs: number;
  windowMs: number;
  nodes: Array<NodeHistory | { node: string; error: string }>;
}

/** The sample between two readings; undefined when no time passed between them. */
export function sampleBetween(before: HistoryReading, after: HistoryReading): HistorySample | undefined {
  const seconds = (after.atMs - before.atMs) / 1_000;
  if (!(seconds > 0)) return undefined;
  const deltas = after.latencyCounts.map((count, index) => increase(before.latencyCounts[index] ?? 0, count));
  return {
    atMs: after.atMs,
    ingestPayloadsPerSecond: thousandths(increase(before.ingestPayloads, after.ingestPayloads) / seconds),
    latencyP50Ms: toMs(quantileOfBuckets(after.latencyBoundsSeconds, deltas, 0.5)),
    latencyP99Ms: toMs(quantileOfBuckets(after.latencyBoundsSeconds, deltas, 0.99)),
    transferBytesPerSecond: thousandths(increase(before.transferBytes, after.transferBytes) / seconds),
    diskUsedBytes: after.diskUsedBytes,
  };
}

/**
 * The q-quantile of the observations counted by cumulative bucket counts (one per bound, then
 * +Inf), as Prometheus's histogram_quantile: linear inside the bucket that holds the rank;
 * the highest finite bound when the rank falls in +Inf; null without observations.
 */
export function quantileOfBuckets(boundsSeconds: readonly number[], cumulative: readonly number[], q: number): number | null {
  assert(cumulative.length === boundsSeconds.length + 1, `${cumulative.length} bucket counts for ${boundsSeconds.length} bounds and +Inf`);
  assert(q >= 0 && q <= 1, `quantile ${q} is outside [0, 1]`);
  const total = cumulative[cumulative.length - 1]!;
  if (total <= 0) return null;
  const rank = q * total;
  const index = cumulative.findIndex((count) => count >= rank);
  if (index >= boundsSeconds.length) return boundsSeconds[boundsSeconds.length - 1] ?? null;
  const lower = index === 0 ? 0 : boundsSeconds[index - 1]!;
  const upper = boundsSeconds[index]!;
  const below = index === 0 ? 0 : cumulative[index - 1]!;
  const inside = cumulative[index]! - below;
  if (inside <= 0) return upper;
  return lower + ((upper - lower) * (rank - below)) / inside;
}

/** A counter's increase; never negative (a counter read out of order would otherwise draw a dip below zero). */
function increase(before: number, after: number): number {
  return Math.max(0, after - before);
}

function toMs(seconds: number | null): number | null {
  return seconds === null ? null : thousandths(seconds * 1_000);
}

/** Rounded to 0.001: more digits say nothing about a 5-second rate, and would double the answer's bytes. */
function thousandths(value: number): number {
  return Math.round(value * 1_000) / 1_000;
}

/** The last HISTORY_SAMPLES_MAX samples of one node, from its readings in time order. */
export class HistoryRing {
  private readonly samples: HistorySample[] = [];
  private last: HistoryReading | undefined;

  constructor(private readonly samplesMax = HISTORY_SAMPLES_MAX) {
    assert(Number.isInteger(samplesMax) && samplesMax > 0, `a history of ${samplesMax} samples`);
  }

  /** Takes a reading: from the second one on, each adds the sample since the one before. */
  record(reading: HistoryReading): void {
    const before = this.last;
    if (before !== undefined && reading.atMs <= before.atMs) return;
    this.last = reading;
    const sample = before === undefined ? undefined : sampleBetween(before, reading);
    if (sample === undefined) return;
    this.samples.push(sample);
    if (this.samples.length > this.samplesMax) this.samples.shift();
    assert(this.samples.length <= this.samplesMax, `${this.samples.length} samples kept, the limit is ${this.samplesMax}`);
  }

  columns(): HistoryColumns {
    return {
      atMs: this.samples.map((sample) => sample.atMs),
      ingestPayloadsPerSecond: this.samples.map((sample) => sample.ingestPayloadsPerSecond),
      latencyP50Ms: this.samples.map((sample) => sample.latencyP50Ms),
      latencyP99Ms: this.samples.map((sample) => sample.latencyP99Ms),
      transferBytesPerSecond: this.samples.map((sample) => sample.transferBytesPerSecond),
      diskUsedBytes: this.samples.map((sample) => sample.diskUsedBytes),
    };
  }
}
