// Time-range histograms (spec, "Histogram"): counts of stored payloads per UTC calendar
// bucket over an inclusive range. Pure.

import { BadRequestError } from '../lib/errors.js';

export const FREQUENCIES = ['YEAR', 'MONTH', 'DAY', 'HOUR', 'MINUTE', 'SECOND', 'MILLIS'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

export interface Histogram {
  start: string;
  end: string;
  frequency: Frequency;
  buckets: number[];
}

/** Bounds the memory of one answer; a finer frequency over a long range is a 400. */
export const BUCKETS_MAX = 100_000;
/** What the service aims for when the client names neither a frequency nor a count. */
export const DEFAULT_BUCKETS_TARGET = 60;

const FIXED_MS: Partial<Record<Frequency, number>> = { DAY: 86_400_000, HOUR: 3_600_000, MINUTE: 60_000, SECOND: 1_000, MILLIS: 1 };

/** Index of the bucket of `ms` counted from the bucket of `startMs`. */
export function bucketIndex(startMs: number, ms: number, frequency: Frequency): number {
  const fixed = FIXED_MS[frequency];
  if (fixed !== undefined) return Math.floor(ms / fixed) - Math.floor(startMs / fixed);
  const from = new Date(startMs);
  const at = new Date(ms);
  const years = at.getUTCFullYear() - from.getUTCFullYear();
  return frequency === 'YEAR' ? years : years * 12 + at.getUTCMonth() - from.getUTCMonth();
}

export function bucketCount(startMs: number, endMs: number, frequency: Frequency): number {
  return bucketIndex(startMs, endMs, frequency) + 1;
}

/** The frequency whose bucket count over the range is closest to `buckets` (ties: the finer). */
export function chooseFrequency(startMs: number, endMs: number, buckets = DEFAULT_BUCKETS_TARGET): Frequency {
  let best: Frequency = 'YEAR';
  let bestDistance = Infinity;
  for (const frequency of FREQUENCIES) {
    const distance = Math.abs(Math.log(bucketCount(startMs, endMs, frequency) / buckets));
    if (distance <= bestDistance) {
      best = frequency;
      bestDistance = distance;
    }
  }
  return best;
}

/** Empty buckets for the range; `add` then counts a timestamp in it (outside: ignored). */
export function emptyHistogram(startMs: number, endMs: number, frequency: Frequency): Histogram {
  const count = bucketCount(startMs, endMs, frequency);
  if (count > BUCKETS_MAX) {
    throw new BadRequestError(`${frequency} over this range gives ${count} buckets; at most ${BUCKETS_MAX}`);
  }
  return { start: new Date(startMs).toISOString(), end: new Date(endMs).toISOString(), frequency, buckets: new Array<number>(count).fill(0) };
}

/** The first millisecond of bucket `index`, counted from the bucket of `startMs`. */
export function bucketBoundary(startMs: number, index: number, frequency: Frequency): number {
  const fixed = FIXED_MS[frequency];
  if (fixed !== undefined) return (Math.floor(startMs / fixed) + index) * fixed;
  const date = new Date(startMs);
  const year = date.getUTCFullYear();
  return frequency === 'YEAR' ? Date.UTC(year + index, 0, 1) : Date.UTC(year, date.getUTCMonth() + index, 1);
}

/**
 * Counts into the histogram the times in `times[from, to)`, which are sorted ascending:
 * one binary search per bucket when buckets are fewer than times, else one step per time.
 */
export function addSortedTimes(histogram: Histogram, startMs: number, endMs: number, times: Float64Array, from: number, to: number): void {
  let at = lowerBound(times, startMs, from, to);
  const end = upperBound(times, endMs, at, to);
  const buckets = histogram.buckets;
  if (buckets.length * Math.log2(end - at + 2) > end - at) {
    for (; at < end; at++) buckets[bucketIndex(startMs, times[at]!, histogram.frequency)]! += 1;
    return;
  }
  for (let index = 0; index < buckets.length && at < end; index++) {
    const next = index + 1 === buckets.length ? end : lowerBound(times, bucketBoundary(startMs, index + 1, histogram.frequency), at, end);
    buckets[index]! += next - at;
    at = next;
  }
}

/** The first position in sorted `times[from, to)` holding a time not below `ms` (else `to`). */
export function lowerBound(times: Float64Array, ms: number, from: number, to: number): number {
  let low = from;
  let high = to;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (times[middle]! < ms) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The first position in sorted `times[from, to)` holding a time above `ms` (else `to`). */
export function upperBound(times: Float64Array, ms: number, from: number, to: number): number {
  let low = from;
  let high = to;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (times[middle]! <= ms) low = middle + 1;
    else high = middle;
  }
  return low;
}

export function addToHistogram(histogram: Histogram, startMs: number, endMs: number, ms: number): void {
  if (ms < startMs || ms > endMs) return;
  histogram.buckets[bucketIndex(startMs, ms, histogram.frequency)]! += 1;
}

/** Sums histograms of the same range and frequency (from several nodes): exact. */
export function mergeHistograms(into: Histogram, other: Histogram): void {
  if (into.buckets.length !== other.buckets.length || into.frequency !== other.frequency) {
    throw new Error('histograms of different shapes cannot be merged');
  }
  other.buckets.forEach((count, index) => (into.buckets[index]! += count));
}
