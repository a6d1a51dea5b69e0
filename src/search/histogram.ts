// Time-range histograms (spec, "Histogram"): counts of stored payloads per UTC calendar
// bucket over an inclusive range. Pure.

import { BadRequestError } from '../errors.js';

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

export function parseFrequency(value: unknown): Frequency {
  if (typeof value !== 'string' || !(FREQUENCIES as readonly string[]).includes(value)) {
    throw new BadRequestError(`frequency must be one of ${FREQUENCIES.join(', ')}`);
  }
  return value as Frequency;
}

/** The start of the bucket holding `ms`. */
export function bucketStart(ms: number, frequency: Frequency): number {
  const fixed = FIXED_MS[frequency];
  if (fixed !== undefined) return Math.floor(ms / fixed) * fixed;
  const date = new Date(ms);
  return frequency === 'YEAR' ? Date.UTC(date.getUTCFullYear(), 0, 1) : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

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
