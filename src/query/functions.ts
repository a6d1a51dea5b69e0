// The static signatures of the query language's functions (docs/query-language.md,
// "Expressions"): how many arguments each takes, what each argument must be, and the type
// of the result. The evaluator (src/expression/functions.ts) defines what they do;
// this table must name the same built-ins.

import {
  comparable,
  isInteger,
  isNumeric,
  isOpen,
  isStructured,
  isText,
  recordType,
  scalarType,
  UNKNOWN,
  withOptional,
  type ValueType,
} from './types.js';

/** What an argument must be. Datetimes are ISO strings, so text passes where one is wanted. */
export type ArgumentClass = 'any' | 'number' | 'text' | 'datetime' | 'scalar' | 'measurable' | 'like-first';

export interface FunctionSignature {
  readonly minArgs: number;
  readonly maxArgs: number;
  readonly argument: (index: number, argCount: number) => ArgumentClass;
  readonly result: (args: readonly ValueType[]) => ValueType;
  /** Aggregates fold the rows of a group (or of the whole input) into one value. */
  readonly aggregate?: boolean;
  /** search, like and prefix: only over a historical source stored in the ssr. */
  readonly search?: boolean;
}

const constant = (type: ValueType) => (): ValueType => type;
const every = (argument: ArgumentClass) => (): ArgumentClass => argument;
const INT = scalarType('int');
const DOUBLE = scalarType('double');
const STRING = scalarType('string');
const BOOLEAN = scalarType('boolean');

function fixed(argCount: number, argument: ArgumentClass, result: ValueType): FunctionSignature {
  return { minArgs: argCount, maxArgs: argCount, argument: every(argument), result: constant(result) };
}

/** The first argument's type, as a value that may be null. */
const sameAsFirst = (args: readonly ValueType[]): ValueType => withOptional(args[0] ?? UNKNOWN, true);

/** Integers stay integers (docs/query-language.md: integer arithmetic stays integer). */
const numericLikeFirst = (args: readonly ValueType[]): ValueType => {
  const first = args[0] ?? UNKNOWN;
  return isInteger(first) ? INT : first.kind === 'double' ? DOUBLE : UNKNOWN;
};

const ifNull: FunctionSignature = {
  minArgs: 2,
  maxArgs: 2,
  argument: (index) => (index === 0 ? 'any' : 'like-first'),
  result: ([value, fallback]) => {
    const chosen = value === undefined || isOpen(value) ? (fallback ?? UNKNOWN) : value;
    return withOptional(chosen, fallback?.optional ?? true);
  },
};

const searchFunction = (minArgs: number): FunctionSignature => ({
  minArgs,
  maxArgs: 2,
  // The pattern is the last argument; search(pattern) looks at every field.
  argument: (index, argCount) => (index === argCount - 1 ? 'text' : 'any'),
  result: constant(withOptional(BOOLEAN, false)),
  search: true,
});

const datetimePart = fixed(1, 'datetime', INT);

/** Scalar built-ins by lowercased name. */
export const BUILTIN_SIGNATURES: ReadonlyMap<string, FunctionSignature> = new Map([
  ['ifnull', ifNull],
  ['contains', fixed(2, 'text', BOOLEAN)],
  ['todouble', fixed(1, 'scalar', DOUBLE)],
  ['toint', fixed(1, 'scalar', INT)],
  ['tostring', fixed(1, 'any', STRING)],
  ['lower', fixed(1, 'text', STRING)],
  ['upper', fixed(1, 'text', STRING)],
  ['length', fixed(1, 'measurable', INT)],
  ['abs', { ...fixed(1, 'number', UNKNOWN), result: numericLikeFirst }],
  ['round', fixed(1, 'number', INT)],
  ['floor', fixed(1, 'number', INT)],
  ['ceil', fixed(1, 'number', INT)],
  ['year', datetimePart],
  ['month', datetimePart],
  ['day', datetimePart],
  ['hour', datetimePart],
  ['minute', datetimePart],
  ['second', datetimePart],
  ['now', fixed(0, 'any', withOptional(scalarType('datetime'), false))],
  ['search', searchFunction(1)],
  ['like', searchFunction(2)],
  ['prefix', searchFunction(2)],
]);

export const BIVAR_FIELDS = ['pearsonsR', 'slopeYX', 'interceptYX', 'slopeXY', 'interceptXY'] as const;

const aggregate = (argument: ArgumentClass, result: FunctionSignature['result']): FunctionSignature => ({
  minArgs: 1,
  maxArgs: 1,
  argument: every(argument),
  result,
  aggregate: true,
});

/** Aggregates by lowercased name. `count(x)` counts the rows where x is not null. */
export const AGGREGATE_SIGNATURES: ReadonlyMap<string, FunctionSignature> = new Map([
  ['count', { ...aggregate('any', constant(withOptional(INT, false))), minArgs: 0 }],
  ['sum', aggregate('number', numericLikeFirst)],
  ['avg', aggregate('number', constant(DOUBLE))],
  ['stddev', aggregate('number', constant(DOUBLE))],
  ['min', aggregate('scalar', sameAsFirst)],
  ['max', aggregate('scalar', sameAsFirst)],
  ['first', aggregate('any', sameAsFirst)],
  ['last', aggregate('any', sameAsFirst)],
  [
    'bivar',
    {
      ...aggregate('number', constant(recordType(BIVAR_FIELDS.map((name) => [name, DOUBLE] as const), true))),
      minArgs: 2,
      maxArgs: 2,
    },
  ],
]);

/** Whether a value of `type` may be passed where `argument` is wanted; `first` for like-first. */
export function acceptsArgument(argument: ArgumentClass, type: ValueType, first: ValueType | undefined): boolean {
  if (isOpen(type)) return true;
  switch (argument) {
    case 'any':
      return true;
    case 'number':
      return isNumeric(type);
    case 'text':
      return isText(type) || type.kind === 'datetime';
    case 'datetime':
      return type.kind === 'datetime' || isText(type) || isNumeric(type);
    case 'scalar':
      return !isStructured(type);
    case 'measurable':
      return isText(type) || type.kind === 'array';
    case 'like-first':
      return first === undefined || first.kind === type.kind || comparable(first, type);
  }
}

/** The type name an error says is wanted for an argument class. */
export function expectedTypeName(argument: ArgumentClass, first: ValueType | undefined): string {
  switch (argument) {
    case 'number':
      return 'double';
    case 'text':
    case 'measurable':
      return 'string';
    case 'datetime':
      return 'datetime';
    case 'like-first':
      return first?.kind ?? 'unknown';
    default:
      return 'unknown';
  }
}
