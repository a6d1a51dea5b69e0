// Datetimes in expressions are ISO 8601 strings (as the schema's `datetime` type stores
// them), read with the ingest path's own parser so both agree on what is a datetime.

import { parseDatetime } from '../lib/iso-time.js';

/**
 * Epoch milliseconds of an ISO 8601 datetime string, else undefined. Most strings fail
 * the character test before the regular expression runs, which keeps comparisons of
 * ordinary strings cheap.
 */
export function datetimeMs(text: string): number | undefined {
  if (text.length < 10 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return undefined;
  const c = text.charCodeAt(0);
  if (c < 48 || c > 57) return undefined;
  // `year(ts) == 2024 && month(ts) == 3` and `ts >= a && ts < b` read the same string
  // twice in a row; remembering the last one halves their cost. A pure memo: same input,
  // same output.
  if (text !== lastText) {
    lastText = text;
    lastMs = parseDatetime(text);
  }
  return lastMs;
}

let lastText = '';
let lastMs: number | undefined;

/** A datetime string, or a number taken as epoch milliseconds, as a Date; else undefined. */
export function toUtcDate(value: unknown): Date | undefined {
  const ms = typeof value === 'string' ? datetimeMs(value) : typeof value === 'number' ? value : undefined;
  if (ms === undefined) return undefined;
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
