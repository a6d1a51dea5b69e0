// The shapes shared by the compiler and the function definitions (kept apart from both
// so that neither imports the other).

import type { CallExpr, Expr, NumericKind, Value } from './ast.js';
import { ExpressionSyntaxError } from './errors.js';
import type { Analyzer } from './patterns.js';

/** A row: any JSON value, normally an object. */
export type Row = unknown;
export type Evaluator = (row: Row) => Value;
export type FieldAccessor = (row: Row) => unknown;

export interface CompileOptions {
  /** Overrides how a path is read (e.g. following a contributor); undefined: the default. */
  readonly resolveField?: (path: readonly string[]) => FieldAccessor | undefined;
  /** A variable's value; undefined when there is no such variable. Read once, at compile time. */
  readonly variable?: (name: string) => Value | undefined;
  /** The static numeric kind of a field (from the schema), which decides integer division. */
  readonly numericKindOf?: (path: readonly string[]) => NumericKind | undefined;
  /** How search() splits text and patterns (the ssr's defaultStringAnalyzer); 'standard'. */
  readonly analyzer?: Analyzer;
  /** Epoch milliseconds for now(); without a clock, now() is an error. */
  readonly clock?: () => number;
  /** Extra functions (the session's own, aggregates), found before the built-ins. */
  readonly functions?: Readonly<Record<string, FunctionDefinition>>;
}

/** A compiled subtree: its evaluator, whether it is a constant, and its numeric kind. */
export interface CompiledNode {
  readonly evaluate: Evaluator;
  readonly constant: boolean;
  readonly kind: NumericKind;
}

export interface FunctionContext {
  readonly options: CompileOptions;
  readonly analyzer: Analyzer;
}

export interface FunctionDefinition {
  readonly minArgs: number;
  readonly maxArgs: number;
  /**
   * Whether a call with constant arguments is itself a constant, computed once at compile
   * time. Off unless set: a function may read the row without an argument saying so
   * (search(pattern), an aggregate like count()) or change over time (now()).
   */
  readonly constantFolding?: boolean;
  readonly resultKind?: (argKinds: readonly NumericKind[]) => NumericKind;
  /** Builds the evaluator from the compiled arguments; may throw an ExpressionError. */
  compile(args: readonly CompiledNode[], call: CallExpr, context: FunctionContext): Evaluator;
}

/**
 * The value of argument `index`, which must be a constant string (a literal, a variable or
 * an expression of those): patterns are compiled once, and the index needs them up front.
 */
export function constantStringArgument(args: readonly CompiledNode[], call: CallExpr, index: number, what: string): string {
  const arg = args[index];
  const expr = call.args[index];
  if (arg === undefined || expr === undefined) throw new Error(`${call.name}() has no argument ${index}`);
  const value = arg.constant ? arg.evaluate(null) : undefined;
  if (typeof value === 'string') return value;
  const found = arg.constant ? `a constant ${value === null ? 'null' : typeof value}` : `a ${describeKind(expr)}`;
  throw new ExpressionSyntaxError(expr.position, `${call.name}() expects ${what} as a constant string but found ${found}`);
}

function describeKind(expr: Expr): string {
  return expr.kind === 'field' ? 'field reference' : expr.kind === 'call' ? 'function call' : 'computed value';
}

/** The numeric kind of an arithmetic result: int only when both operands are int. */
export function combineKinds(a: NumericKind, b: NumericKind): NumericKind {
  if (a === 'int' && b === 'int') return 'int';
  return a === 'double' || b === 'double' ? 'double' : 'unknown';
}
