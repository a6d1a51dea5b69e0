// The built-in scalar functions of docs/query-language.md ("Expressions"), shared by search,
// domains and the query language, plus the search functions. Names are matched without
// regard to case (`YEAR(ts)` is year). Every scalar function but ifNull gives null for a
// null argument or one of the wrong type, like the operators do.
//
// - year/month/day/hour/minute/second: parts in UTC of an ISO 8601 datetime string (or of
//   a number, taken as epoch milliseconds), as integers; month is 1–12.
// - round/floor/ceil give integers (`round` rounds half up, as Java's Math.round does).
// - length counts code points of a string, or items of an array.
// - contains(s, part) is case-sensitive, like ==; the search functions are not.

import type { NumericKind, Value } from './ast.js';
import { combineKinds, type CompiledNode, type FunctionDefinition } from './compiled.js';
import { toUtcDate } from './datetime.js';
import { ExpressionSyntaxError } from './errors.js';
import { searchFunctions } from './search-functions.js';
import { stringifyJson } from '../lib/json.js';

type Present = Exclude<Value, null>;

const intKind = (): NumericKind => 'int';
const doubleKind = (): NumericKind => 'double';
const sameKind = (kinds: readonly NumericKind[]): NumericKind => kinds[0] ?? 'unknown';

/** A one-argument function that is null for null and otherwise `apply`. */
function unary(apply: (value: Present) => Value, resultKind?: FunctionDefinition['resultKind']): FunctionDefinition {
  return {
    minArgs: 1,
    maxArgs: 1,
    constantFolding: true,
    resultKind,
    compile: ([arg]) => {
      const evaluate = (arg as CompiledNode).evaluate;
      return (row) => {
        const value = evaluate(row);
        return value === null ? null : apply(value);
      };
    },
  };
}

function binary(apply: (a: Present, b: Present) => Value): FunctionDefinition {
  return {
    minArgs: 2,
    maxArgs: 2,
    constantFolding: true,
    compile: ([a, b]) => {
      const left = (a as CompiledNode).evaluate;
      const right = (b as CompiledNode).evaluate;
      return (row) => {
        const x = left(row);
        const y = x === null ? null : right(row);
        return x === null || y === null ? null : apply(x, y);
      };
    },
  };
}

const ifNull: FunctionDefinition = {
  minArgs: 2,
  maxArgs: 2,
  constantFolding: true,
  resultKind: ([a, b]) => combineKinds(a ?? 'unknown', b ?? 'unknown'),
  compile: ([value, fallback]) => {
    const read = (value as CompiledNode).evaluate;
    const otherwise = (fallback as CompiledNode).evaluate;
    return (row) => read(row) ?? otherwise(row);
  },
};

const now: FunctionDefinition = {
  minArgs: 0,
  maxArgs: 0,
  compile: (_args, call, context) => {
    const clock = context.options.clock;
    if (clock === undefined) throw new ExpressionSyntaxError(call.position, 'now() is not available here (no clock)');
    return () => new Date(clock()).toISOString();
  },
};

function datetimePart(part: (date: Date) => number): FunctionDefinition {
  return unary((value) => {
    const date = toUtcDate(value);
    return date === undefined ? null : part(date);
  }, intKind);
}

function numeric(apply: (n: number) => number, resultKind: FunctionDefinition['resultKind']): FunctionDefinition {
  return unary((value) => (typeof value === 'number' ? apply(value) : null), resultKind);
}

function parseNumber(value: Present): number | null {
  if (typeof value === 'number') return value;
  if (typeof value !== 'string' || value.trim() === '') return null;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : null;
}

function codePointCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) count++;
  }
  return count;
}

const text = (apply: (s: string) => Value): FunctionDefinition =>
  unary((value) => (typeof value === 'string' ? apply(value) : null));

const scalarFunctions: Record<string, FunctionDefinition> = {
  ifnull: ifNull,
  contains: binary((s, part) => (typeof s === 'string' && typeof part === 'string' ? s.includes(part) : null)),
  todouble: unary(parseNumber, doubleKind),
  toint: unary((value) => {
    const n = parseNumber(value);
    return n === null ? null : Math.trunc(n) + 0;
  }, intKind),
  tostring: unary((value) => {
    if (typeof value === 'string') return value;
    return typeof value === 'object' ? stringifyJson(value) : String(value);
  }),
  lower: text((s) => s.toLowerCase()),
  upper: text((s) => s.toUpperCase()),
  length: unary((value) => {
    if (typeof value === 'string') return codePointCount(value);
    return Array.isArray(value) ? value.length : null;
  }, intKind),
  abs: numeric(Math.abs, sameKind),
  // `+ 0` turns the -0 of round(-0.4) into 0.
  round: numeric((n) => Math.round(n) + 0, intKind),
  floor: numeric((n) => Math.floor(n) + 0, intKind),
  ceil: numeric((n) => Math.ceil(n) + 0, intKind),
  year: datetimePart((d) => d.getUTCFullYear()),
  month: datetimePart((d) => d.getUTCMonth() + 1),
  day: datetimePart((d) => d.getUTCDate()),
  hour: datetimePart((d) => d.getUTCHours()),
  minute: datetimePart((d) => d.getUTCMinutes()),
  second: datetimePart((d) => d.getUTCSeconds()),
  now,
};

/** Built-ins by lowercased name. */
export const builtinFunctions: Readonly<Record<string, FunctionDefinition>> = { ...scalarFunctions, ...searchFunctions };
