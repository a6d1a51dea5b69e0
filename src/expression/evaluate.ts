// Compiles an expression tree once into a tree of closures, then evaluates it per row:
// search runs it over thousands of documents per query, so nothing is looked up by name
// and nothing is parsed per row (patterns, constant datetimes and variables are prepared
// at compile time, constant subtrees are folded).
//
// Semantics (docs/query-language.md, "Expressions", and decisions of ours):
// - Any operator other than && and || with a null operand gives null, and so does an
//   operand of the wrong type ('a' * 2, 1 < 'x', !5): rows are schemaless JSON, and the
//   query checker rejects what it can statically before anything runs.
// - && and || are evaluated left to right, literally as the spec says: `false && x` is
//   false, `true || x` is true, otherwise a null operand makes the result null. So
//   `null && false` is null (SQL would say false); a `where` drops the row either way.
// - Comparisons need operands of one kind: numbers, strings (by UTF-16 code units),
//   booleans (false < true). Two strings that both parse as ISO 8601 datetimes compare as
//   instants, so '2024-01-01T01:00:00+01:00' == '2024-01-01T00:00:00Z'.
//   `x == null` is null; use ifNull.
// - `/` truncates when both operands are statically integers (integer literals, integer
//   fields per `numericKindOf`, integer functions); otherwise it divides exactly.
//   Division or remainder by zero gives null. `+` also joins two strings.

import { assert } from '../lib/assert.js';
import type { BinaryOperator, CallExpr, ComparisonOperator, Expr, NumericKind, Value } from './ast.js';
import {
  combineKinds,
  type CompiledNode,
  type CompileOptions,
  type Evaluator,
  type FunctionContext,
  type Row,
} from './compiled.js';
import { datetimeMs } from './datetime.js';
import { ExpressionSyntaxError, MissingVariableError, UnknownFunctionError } from './errors.js';
import { builtinFunctions } from './functions.js';
import { expressionDepthMax, parseExpression, type ParseOptions } from './parser.js';
import type { Analyzer } from './patterns.js';

export type {
  CompiledNode,
  CompileOptions,
  Evaluator,
  FieldAccessor,
  FunctionDefinition,
  Row,
} from './compiled.js';

/** Parses and compiles in one step; every problem is a 400 naming line and column. */
export function compileExpression(source: string, options: CompileOptions & ParseOptions = {}): Evaluator {
  return compile(parseExpression(source, options), options);
}

/** Compiles a tree into one evaluator. Throws ExpressionError (a 400) for unknown functions etc. */
export function compile(expr: Expr, options: CompileOptions = {}): Evaluator {
  assert(EXPRESSION_KINDS.has(expr.kind), `compiling a node of kind ${String(expr.kind)}`);
  const compiler = new Compiler(options);
  const evaluate = compiler.compile(expr).evaluate;
  assert(compiler.nesting() === 0 && typeof evaluate === 'function', 'compiling left the tree half-walked');
  return evaluate;
}

const EXPRESSION_KINDS: ReadonlySet<string> = new Set<Expr['kind']>(['literal', 'variable', 'field', 'unary', 'binary', 'logical', 'call']);
const NUMERIC_KINDS: ReadonlySet<string> = new Set<NumericKind>(['int', 'double', 'unknown']);

/** What a `where` keeps: only rows for which the expression is exactly true. */
export function matches(evaluator: Evaluator, row: Row): boolean {
  const value = evaluator(row);
  // Evaluation gives a value or null (missing fields read as null), never undefined.
  assert(value !== undefined, 'an expression evaluated to undefined');
  return value === true;
}

class Compiler implements FunctionContext {
  readonly analyzer: Analyzer;
  private depth = 0;

  constructor(readonly options: CompileOptions) {
    this.analyzer = options.analyzer ?? 'standard';
  }

  /** How deep compile() is in the tree: 0 between compiles. */
  nesting(): number {
    return this.depth;
  }

  compile(expr: Expr): CompiledNode {
    // Parsed trees are bounded already; this guards trees built by hand.
    if (++this.depth > expressionDepthMax) {
      throw new ExpressionSyntaxError(expr.position, `expression is nested deeper than ${expressionDepthMax} levels`);
    }
    try {
      const node = fold(this.compileNode(expr));
      assert(NUMERIC_KINDS.has(node.kind), `a ${expr.kind} node of numeric kind ${String(node.kind)}`);
      return node;
    } finally {
      this.depth--;
    }
  }

  private compileNode(expr: Expr): CompiledNode & { foldable: boolean } {
    switch (expr.kind) {
      case 'literal':
        return { ...constantNode(expr.value, expr.numericKind ?? 'unknown'), foldable: false };
      case 'variable':
        return { ...constantNode(this.variable(expr.name, expr), 'unknown'), foldable: false };
      case 'field': {
        const kind = this.options.numericKindOf?.(expr.path) ?? 'unknown';
        return { evaluate: this.fieldAccessor(expr.path), constant: false, kind, foldable: false };
      }
      case 'unary':
        return this.withFolding([expr.operand], ([operand]) => unaryNode(expr.operator, operand as CompiledNode));
      case 'binary':
        return this.withFolding([expr.left, expr.right], ([left, right]) =>
          binaryNode(expr.operator, left as CompiledNode, right as CompiledNode),
        );
      case 'logical':
        return this.withFolding(expr.operands, (operands) => logicalNode(expr.operator, operands));
      case 'call':
        return this.call(expr);
    }
  }

  private withFolding(
    children: readonly Expr[],
    build: (compiled: CompiledNode[]) => Omit<CompiledNode, 'constant'>,
  ): CompiledNode & { foldable: boolean } {
    const compiled = children.map((child) => this.compile(child));
    const foldable = compiled.every((child) => child.constant);
    return { ...build(compiled), constant: false, foldable };
  }

  private call(expr: CallExpr): CompiledNode & { foldable: boolean } {
    const definition = ownValue(this.options.functions, expr.name) ?? ownValue(builtinFunctions, expr.name.toLowerCase());
    if (definition === undefined) throw new UnknownFunctionError(expr.position, expr.name);
    const count = expr.args.length;
    const { minArgs, maxArgs } = definition;
    if (count < minArgs || count > maxArgs) {
      const expected = minArgs === maxArgs ? `${minArgs}` : `${minArgs} to ${maxArgs}`;
      const noun = expected === '1' ? 'argument' : 'arguments';
      throw new ExpressionSyntaxError(expr.position, `${expr.name}() takes ${expected} ${noun} but got ${count}`);
    }
    const args = expr.args.map((arg) => this.compile(arg));
    const evaluate = definition.compile(args, expr, this);
    const kind = definition.resultKind?.(args.map((arg) => arg.kind)) ?? 'unknown';
    const foldable = definition.constantFolding === true && args.every((arg) => arg.constant);
    return { evaluate, constant: false, kind, foldable };
  }

  private variable(name: string, expr: Expr): Value {
    const value = this.options.variable?.(name);
    if (value === undefined) throw new MissingVariableError(expr.position, name);
    return value;
  }

  private fieldAccessor(path: readonly string[]): Evaluator {
    const custom = this.options.resolveField?.(path);
    if (custom !== undefined) return (row) => (custom(row) ?? null) as Value;
    return defaultFieldAccessor(path);
  }
}

/** A record's own entry: a function named `constructor` must not find Object's. */
function ownValue<T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** A node whose operands are all constants is evaluated once, here. */
function fold(node: CompiledNode & { foldable?: boolean }): CompiledNode {
  if (node.constant || node.foldable !== true) {
    return { evaluate: node.evaluate, constant: node.constant, kind: node.kind };
  }
  return constantNode(node.evaluate(null), node.kind);
}

function constantNode(value: Value, kind: NumericKind): CompiledNode {
  // A constant is a value or null: undefined would read as a missing operand everywhere.
  assert(value !== undefined, 'a constant of undefined');
  return { evaluate: () => value, constant: true, kind };
}

/** Reads a dotted path through own properties of objects; anything missing is null. */
export function defaultFieldAccessor(path: readonly string[]): Evaluator {
  const [first, second] = path;
  if (path.length === 1 && first !== undefined) return (row) => property(row, first);
  if (path.length === 2 && first !== undefined && second !== undefined) {
    return (row) => property(property(row, first), second);
  }
  return (row) => {
    let value: unknown = row;
    for (const segment of path) value = property(value, segment);
    return value as Value;
  };
}

function property(value: unknown, key: string): Value {
  // Own properties only: `constructor` or `__proto__` must not reach Object.prototype.
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, key)) return null;
  return ((value as Record<string, unknown>)[key] ?? null) as Value;
}

function unaryNode(operator: '!' | '-', operand: CompiledNode): Omit<CompiledNode, 'constant'> {
  const inner = operand.evaluate;
  if (operator === '!') {
    const not = (row: Row): Value => {
      const v = inner(row);
      return v === true ? false : v === false ? true : null;
    };
    return { kind: 'unknown', evaluate: not };
  }
  const negate = (row: Row): Value => {
    const v = inner(row);
    return typeof v === 'number' || typeof v === 'bigint' ? -v : null;
  };
  return { kind: operand.kind, evaluate: negate };
}

function logicalNode(operator: '&&' | '||', operands: readonly CompiledNode[]): Omit<CompiledNode, 'constant'> {
  const evaluators = operands.map((operand) => operand.evaluate);
  // `&&`: the first operand that is not true decides (false, or null for null or a
  // non-boolean); `||` mirrors it. That is the spec's left-to-right rule applied along a chain.
  const decisive = operator === '&&' ? false : true;
  return {
    kind: 'unknown',
    evaluate: (row) => {
      for (let i = 0; i < evaluators.length; i++) {
        const v = (evaluators[i] as Evaluator)(row);
        if (v !== !decisive) return v === decisive ? decisive : null;
      }
      return !decisive;
    },
  };
}

function binaryNode(operator: BinaryOperator, left: CompiledNode, right: CompiledNode): Omit<CompiledNode, 'constant'> {
  switch (operator) {
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
      return arithmeticNode(operator, left, right);
    default:
      return { kind: 'unknown', evaluate: comparisonEvaluator(operator, left, right) };
  }
}

function arithmeticNode(
  operator: '+' | '-' | '*' | '/' | '%',
  left: CompiledNode,
  right: CompiledNode,
): Omit<CompiledNode, 'constant'> {
  const l = left.evaluate;
  const r = right.evaluate;
  const kind = combineKinds(left.kind, right.kind);
  const numeric = (compute: (a: number, b: number) => number | null): Evaluator => (row) => {
    const a = toArithmetic(l(row));
    const b = toArithmetic(r(row));
    return a === null || b === null ? null : compute(a, b);
  };
  switch (operator) {
    case '+':
      return { kind, evaluate: (row) => add(l(row), r(row)) };
    case '-':
      return { kind, evaluate: numeric((a, b) => a - b) };
    case '*':
      return { kind, evaluate: numeric((a, b) => a * b) };
    case '%':
      return { kind, evaluate: numeric((a, b) => (b === 0 ? null : a % b)) };
    case '/':
      // (a - a % b) / b is exact, unlike Math.trunc(a / b) whose quotient may round up.
      if (kind === 'int') return { kind, evaluate: numeric((a, b) => (b === 0 ? null : (a - (a % b)) / b + 0)) };
      return { kind, evaluate: numeric((a, b) => (b === 0 ? null : a / b)) };
  }
}

/**
 * A number for arithmetic: longs beyond 2^53 (BigInt) are computed as doubles; comparisons,
 * not arithmetic, are what keep them exact.
 */
function toArithmetic(value: Value): number | null {
  if (typeof value === 'number') return value;
  return typeof value === 'bigint' ? Number(value) : null;
}

function add(a: Value, b: Value): Value {
  if (isNumeric(a) && isNumeric(b)) return toArithmetic(a)! + toArithmetic(b)!;
  if (typeof a === 'string' && typeof b === 'string') return a + b;
  return null;
}

const SIGN_TESTS: Record<ComparisonOperator, (sign: number) => boolean> = {
  '<': (s) => s < 0,
  '<=': (s) => s <= 0,
  '==': (s) => s === 0,
  '!=': (s) => s !== 0,
  '>=': (s) => s >= 0,
  '>': (s) => s > 0,
};
/** The operator that gives the same answer with the operands swapped. */
const MIRRORED: Record<ComparisonOperator, ComparisonOperator> = {
  '<': '>',
  '<=': '>=',
  '==': '==',
  '!=': '!=',
  '>=': '<=',
  '>': '<',
};

function comparisonEvaluator(operator: ComparisonOperator, left: CompiledNode, right: CompiledNode): Evaluator {
  // Against a constant, the constant's kind and datetime parse are settled once here.
  if (right.constant || left.constant) {
    const [variable, constant, op] = right.constant ? [left, right, operator] : [right, left, MIRRORED[operator]];
    const compare = comparatorAgainst(constant.evaluate(null));
    const test = SIGN_TESTS[op];
    const evaluate = variable.evaluate;
    return (row) => {
      const sign = compare(evaluate(row));
      return sign === null ? null : test(sign);
    };
  }
  const test = SIGN_TESTS[operator];
  const l = left.evaluate;
  const r = right.evaluate;
  return (row) => {
    const sign = compareValues(l(row), r(row));
    return sign === null ? null : test(sign);
  };
}

/** How a value compares with a fixed constant: a sign, or null when they do not compare. */
function comparatorAgainst(constant: Value): (value: Value) => number | null {
  if (isNumeric(constant)) return (v) => (isNumeric(v) ? numberSign(v, constant) : null);
  if (typeof constant === 'boolean') return (v) => (typeof v === 'boolean' ? Number(v) - Number(constant) : null);
  if (typeof constant !== 'string') return () => null;
  const instant = datetimeMs(constant);
  if (instant === undefined) return (v) => (typeof v === 'string' ? stringSign(v, constant) : null);
  return (v) => {
    if (typeof v !== 'string') return null;
    const ms = datetimeMs(v);
    return ms === undefined ? stringSign(v, constant) : numberSign(ms, instant);
  };
}

/** The order of two values (-1, 0, 1), or null when either is null or their kinds differ. */
export function compareValues(a: Value, b: Value): number | null {
  if (isNumeric(a) && isNumeric(b)) return numberSign(a, b);
  if (typeof a === 'string' && typeof b === 'string') {
    const x = datetimeMs(a);
    const y = x === undefined ? undefined : datetimeMs(b);
    return y === undefined ? stringSign(a, b) : numberSign(x as number, y);
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return null;
}

/** Numbers and BigInts compare exactly with each other in JavaScript. */
function numberSign(a: number | bigint, b: number | bigint): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isNumeric(value: Value): value is number | bigint {
  return typeof value === 'number' || typeof value === 'bigint';
}

function stringSign(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
