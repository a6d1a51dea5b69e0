// Small helpers for untrusted JSON values and for quoting them in error messages.

import { isInteger, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Sets a field of that name, even '__proto__' (JSON.parse makes it an own field; `=` would set the prototype). */
export function setField(object: Record<string, unknown>, name: string, value: unknown): void {
  if (name === '__proto__') Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  else object[name] = value;
}

/** The JSON type of a value, as error messages name it: null, array, object, string, … */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  // A long beyond 2^53 is a number in JSON.
  if (typeof value === 'bigint') return 'number';
  return typeof value;
}

const QUOTED_CHARS_MAX = 64;

/** A client's string, shortened and with control characters escaped, for an error message. */
export function quoteForMessage(text: string): string {
  const shortened = text.length > QUOTED_CHARS_MAX ? `${text.slice(0, QUOTED_CHARS_MAX)}…` : text;
  return `'${JSON.stringify(shortened).slice(1, -1)}'`;
}

/** Reads a dotted path ("position.latitude") of a payload's own fields; undefined when a part is missing. */
export function pathReader(path: string): (payload: Record<string, unknown>) => unknown {
  const parts = path.split('.');
  return (payload) => {
    let value: unknown = payload;
    for (const part of parts) {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  };
}

// Integers beyond 2^53 (tweet ids such as 855448618232418304) are kept exactly:
// they are read into BigInt, written back as the same digits, and compared
// exactly. JSON.parse rounds them, so its result is checked for an integer it could not
// hold exactly (a walk over the values, not the text: about a tenth of the parse for
// ingest batches), and only then is the text read again by lossless-json. Numbers with a
// fraction or an exponent are doubles either way.
export function parseJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return walk(value, Infinity) === UNSAFE_INTEGER ? parseLossless(text, null, readNumber) : value;
}

/**
 * parseJson, for untrusted text: undefined when the value nests arrays and objects deeper
 * than `depthMax` (`[[1]]` is 2 deep), so no code after it (schema checks, canonical JSON,
 * indexing, all recursive) ever meets a value deep enough to overflow the stack. The depth
 * is found by the walk that looks for unsafe integers: JSON.parse itself does not recurse
 * (V8 parses iteratively), and a scan of the text before it cost a third of the parse.
 */
export function parseJsonWithin(text: string, depthMax: number): { value: unknown } | undefined {
  const value: unknown = JSON.parse(text);
  const found = walk(value, depthMax);
  if (found === TOO_DEEP) return undefined;
  return { value: found === UNSAFE_INTEGER ? parseLossless(text, null, readNumber) : value };
}

const PLAIN = 0;
const UNSAFE_INTEGER = 1;
const TOO_DEEP = 2;

/** TOO_DEEP when the value nests deeper than depthMax, else UNSAFE_INTEGER when it holds one, else PLAIN. */
function walk(value: unknown, depthMax: number): number {
  if (typeof value !== 'object' || value === null) return isUnsafeInteger(value) ? UNSAFE_INTEGER : PLAIN;
  if (depthMax < 1) return TOO_DEEP;
  let found = PLAIN;
  const containers: object[] = [value];
  const depths: number[] = [1];
  /** Notes an item met at `depth`, a container queued; false when it nests deeper than depthMax. */
  const take = (item: unknown, depth: number): boolean => {
    if (typeof item !== 'object' || item === null) {
      if (isUnsafeInteger(item)) found = UNSAFE_INTEGER;
      return true;
    }
    if (depth >= depthMax) return false;
    containers.push(item);
    depths.push(depth + 1);
    return true;
  };
  while (containers.length > 0) {
    const container = containers.pop()!;
    const depth = depths.pop()!;
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) if (!take(container[i], depth)) return TOO_DEEP;
    } else {
      // for-in, not Object.values: no array per object (JSON.parse makes plain objects, whose
      // keys for-in gives as Object.keys would).
      for (const key in container) if (!take((container as Record<string, unknown>)[key], depth)) return TOO_DEEP;
    }
  }
  return found;
}

function isUnsafeInteger(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value);
}

function readNumber(text: string): number | bigint {
  if (isInteger(text)) {
    const value = Number(text);
    return Number.isSafeInteger(value) ? value : BigInt(text);
  }
  return Number(text);
}

/** JSON text of a value that may hold BigInt (written as plain digits). */
export function stringifyJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    if (!(error instanceof TypeError) || !/BigInt/.test(error.message)) throw error;
    return stringifyLossless(value) as string;
  }
}

/**
 * JSON with object keys sorted at every level, so equal payloads give equal text. Frozen:
 * the partitioner hashes it (docs/storage.md, "One database per node").
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return scalarJson(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) out += (i === 0 ? '' : ',') + canonicalJson(value[i] ?? null);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const field = record[key];
    if (field === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(field);
    first = false;
  }
  return out + '}';
}

/** A scalar's JSON; a BigInt (a long beyond 2^53) is its digits. */
function scalarJson(value: unknown): string {
  return typeof value === 'bigint' ? value.toString() : (JSON.stringify(value) ?? 'null');
}
