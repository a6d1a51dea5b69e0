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
  // A long beyond 2^53 (issue 13) is a number in JSON.
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

// Integers beyond 2^53 (tweet ids such as 855448618232418304) are kept exactly (issue 13
// item 3b): they are read into BigInt, written back as the same digits, and compared
// exactly. JSON.parse rounds them, so its result is checked for an integer it could not
// hold exactly (a walk over the values, not the text: about a tenth of the parse for
// ingest batches), and only then is the text read again by lossless-json. Numbers with a
// fraction or an exponent are doubles either way.
export function parseJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  return holdsUnsafeInteger(value) ? parseLossless(text, null, readNumber) : value;
}

function holdsUnsafeInteger(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return isUnsafeInteger(value);
  const stack: object[] = [value];
  while (stack.length > 0) {
    const container = stack.pop()!;
    const items: unknown[] = Array.isArray(container) ? container : Object.values(container);
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (typeof item === 'object' && item !== null) stack.push(item);
      else if (isUnsafeInteger(item)) return true;
    }
  }
  return false;
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
 * Whether JSON text nests arrays and objects deeper than `depthMax`, by one pass over the
 * text (brackets inside strings do not count). Malformed text is left to JSON.parse.
 */
export function jsonDeeperThan(text: string, depthMax: number): boolean {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 0x22) {
      // A string: jump to its closing quote (native indexOf, most of a payload's text is in
      // strings), one not escaped by an odd run of backslashes before it.
      at = closingQuote(text, at);
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > depthMax) return true;
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`; past the end if none does. */
function closingQuote(text: string, open: number): number {
  for (let quote = text.indexOf('"', open + 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return text.length;
}
