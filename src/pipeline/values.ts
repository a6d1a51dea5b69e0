// Value helpers of the operator runtime: equality of output rows (an update that changes
// nothing is not sent), a total order for `order by` and group keys, Map keys for group
// lookup, and event times for windows.

import { compareValues, datetimeMs, type Value } from '../expression/index.js';
import type { OutputRow } from './types.js';
import { stringifyJson } from '../lib/json.js';

/** Deep equality of JSON values; rows built by the runtime hold nothing else. */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!valuesEqual(a[i] as Value, b[i] as Value)) return false;
    return true;
  }
  const left = a as Record<string, Value>;
  const right = b as Record<string, Value>;
  const names = Object.keys(left);
  if (names.length !== Object.keys(right).length) return false;
  for (const name of names) {
    if (!Object.hasOwn(right, name) || !valuesEqual(left[name] as Value, right[name] as Value)) return false;
  }
  return true;
}

/** Equality of two rows of one select, whose fields are the same names. */
export function rowsEqual(a: OutputRow, b: OutputRow, names: readonly string[]): boolean {
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    if (!valuesEqual(a[name] as Value, b[name] as Value)) return false;
  }
  return true;
}

function rank(value: Value): number {
  if (value === null) return 0;
  switch (typeof value) {
    case 'boolean':
      return 1;
    case 'number':
    case 'bigint':
      return 2;
    case 'string':
      return 3;
    default:
      return Array.isArray(value) ? 4 : 5;
  }
}

/**
 * A total order over values for `order by` and for listing groups by key. Values of one
 * kind compare as the expression language compares them (datetime strings as instants);
 * across kinds, null sorts first, then booleans, numbers, strings, arrays and records, so
 * that rows of mixed kinds still sort deterministically. Arrays and records compare by
 * their JSON text: they have no natural order, and this one is at least stable.
 */
export function orderValues(a: Value, b: Value): number {
  if (a === b) return 0;
  const rankA = rank(a);
  const rankB = rank(b);
  if (rankA !== rankB) return rankA - rankB;
  const sign = compareValues(a, b);
  if (sign !== null) return sign;
  const textA = stringifyJson(a);
  const textB = stringifyJson(b);
  return textA < textB ? -1 : textA > textB ? 1 : 0;
}

/**
 * The Map key of a group key value. Scalars key the Map as they are (1 and '1' stay apart,
 * as they are different values); records and arrays by their JSON text behind a NUL, which
 * no string of a row starts with in practice.
 */
export function mapKey(value: Value | undefined): unknown {
  return typeof value === 'object' && value !== null ? `\u0000${stringifyJson(value)}` : value;
}

/**
 * Half of what Date reaches (ECMA-262 21.4.1.1: 8.64e15), so that a window start, which is
 * earlier than its event by less than the window's size, still has an ISO form.
 */
const DATE_MS_MAX = 4.32e15;

/** A window key's event time: an ISO 8601 string, or epoch milliseconds; else undefined. */
export function eventTimeMs(value: Value): number | undefined {
  const ms = typeof value === 'string' ? datetimeMs(value) : typeof value === 'number' ? value : undefined;
  return ms !== undefined && Number.isFinite(ms) && Math.abs(ms) <= DATE_MS_MAX ? ms : undefined;
}
