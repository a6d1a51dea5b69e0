// Types one expression against the rows it reads: field references, variables, functions and
// aggregates, reporting each problem as a query error and going on, so that one check lists
// every error a query has. Rules (docs/query-language.md, "Expressions"), where the checker
// rejects only what is certainly wrong:
// - unknown and null types fit anywhere; arithmetic needs numbers (`+` also joins text);
//   comparisons need operands of one family (numbers, text and datetimes, booleans);
//   `!`, `&&`, `||` and `where` need booleans.
// - Integer arithmetic stays integer: int op int is int, int op double is double.
// - Aggregates only where the caller allows them (a select), never nested; their
//   arguments read the input rows even when the select reads groups.
// - A variable's expected type (for MISSING_VARIABLE) is the type of what it meets: the
//   other operand of an operator, or the argument a function wants.

import {
  compile,
  ExpressionError,
  visit,
  type CallExpr,
  type Expr,
  type FunctionDefinition,
  type Position,
  type Value,
} from '../expression/index.js';
import type { QueryError } from './errors.js';
import { formatExpression } from './format.js';
import {
  acceptsArgument,
  AGGREGATE_SIGNATURES,
  BUILTIN_SIGNATURES,
  expectedTypeName,
  type FunctionSignature,
} from './functions.js';
import {
  comparable,
  isInteger,
  isNumeric,
  isOpen,
  isText,
  scalarType,
  typeName,
  UNKNOWN,
  type ValueType,
} from './types.js';

/** Where field references lead: a row type, the keys of a group, or nothing. */
export interface FieldScope {
  resolve(path: readonly string[]): ValueType | undefined;
  /** Why a reference that does not resolve is wrong, for the message. */
  readonly unresolvedReason: string;
}

/** What an expression may use where it stands. */
export interface Frame {
  readonly fields: FieldScope;
  /** The input rows, for aggregate arguments; undefined where aggregates are not allowed. */
  readonly aggregateFields?: FieldScope;
  readonly searchAllowed: boolean;
  readonly insideAggregate?: boolean;
}

export interface TypingEnvironment {
  report(position: Position, error: QueryError, message: string): void;
  /** A variable's type and value (undefined when the value does not read as the type). */
  variable(name: string): { type: ValueType; value: Value | undefined } | undefined;
  isSessionFunction(name: string): boolean;
}

const BOOLEAN = scalarType('boolean');

/** Whether a call is an aggregate: an aggregate's name that no session function takes. */
export function isAggregateCall(expr: Expr, environment: Pick<TypingEnvironment, 'isSessionFunction'>): boolean {
  return (
    expr.kind === 'call' && !environment.isSessionFunction(expr.name) && AGGREGATE_SIGNATURES.has(expr.name.toLowerCase())
  );
}

export function containsAggregate(expr: Expr, environment: Pick<TypingEnvironment, 'isSessionFunction'>): boolean {
  let found = false;
  visit(expr, (node) => {
    found ||= isAggregateCall(node, environment);
  });
  return found;
}

export class ExpressionTyper {
  private reported = 0;

  constructor(private readonly environment: TypingEnvironment) {}

  /**
   * The type of a whole expression of a clause; with `expected` 'boolean', a condition.
   * An expression that typed cleanly is also compiled once, which finds what only the
   * compiler knows (a search pattern that is not a constant or does not parse).
   */
  check(expr: Expr, frame: Frame, expected?: 'boolean'): ValueType {
    const before = this.reported;
    const type = this.type(expr, frame, expected);
    if (expected === 'boolean') this.require(expr, type, isOpen(type) || type.kind === 'boolean', 'boolean');
    if (this.reported === before) this.probeCompile(expr);
    return type;
  }

  private type(expr: Expr, frame: Frame, expected: string | undefined): ValueType {
    switch (expr.kind) {
      case 'literal':
        return literalType(expr.value, expr.numericKind);
      case 'variable':
        return this.variable(expr.name, expr.position, expected);
      case 'field':
        return this.field(expr.path, expr.position, frame.insideAggregate === true ? frame.aggregateFields : frame.fields);
      case 'unary':
        return this.unary(expr.operator, expr.operand, frame);
      case 'binary':
        return '*/%+-'.includes(expr.operator)
          ? this.arithmetic(expr.operator, expr.left, expr.right, frame)
          : this.comparison(expr.left, expr.right, frame);
      case 'logical':
        for (const operand of expr.operands) this.condition(operand, frame);
        return BOOLEAN;
      case 'call':
        return this.call(expr, frame);
    }
  }

  private condition(expr: Expr, frame: Frame): void {
    const type = this.type(expr, frame, 'boolean');
    this.require(expr, type, isOpen(type) || type.kind === 'boolean', 'boolean');
  }

  private variable(name: string, position: Position, expected: string | undefined): ValueType {
    const found = this.environment.variable(name);
    if (found === undefined) {
      const expectedType = expected ?? 'unknown';
      this.report(position, { type: 'MISSING_VARIABLE', name, expectedType }, `no variable named '@${name}'`);
      return UNKNOWN;
    }
    if (found.value === undefined) {
      const error: QueryError = { type: 'TYPE_MISMATCH', expected: typeName(found.type), actual: 'string', expression: `@${name}` };
      this.report(position, error, `the value of '@${name}' does not read as its type ${typeName(found.type)}`);
    }
    return found.type;
  }

  private field(path: readonly string[], position: Position, scope: FieldScope | undefined): ValueType {
    const type = scope?.resolve(path);
    if (type !== undefined) return type;
    const field = path.join('.');
    const reason = scope?.unresolvedReason ?? 'no such field';
    this.report(position, { type: 'INVALID_FIELD_REFERENCE', field }, `'${field}': ${reason}`);
    return UNKNOWN;
  }

  private unary(operator: '!' | '-', operand: Expr, frame: Frame): ValueType {
    if (operator === '!') {
      this.condition(operand, frame);
      return BOOLEAN;
    }
    const type = this.type(operand, frame, 'double');
    this.require(operand, type, isOpen(type) || isNumeric(type), 'double');
    return numericResult(type, type);
  }

  private arithmetic(operator: string, leftExpr: Expr, rightExpr: Expr, frame: Frame): ValueType {
    const [left, right] = this.operands(leftExpr, rightExpr, frame, operator === '+' ? undefined : 'double');
    const textual = (type: ValueType): boolean => isText(type) || type.kind === 'datetime';
    if (operator === '+' && (textual(left) || textual(right))) {
      // `+` joins two strings; with one string operand, the other must be one too.
      this.require(leftExpr, left, isOpen(left) || textual(left), 'string');
      this.require(rightExpr, right, isOpen(right) || textual(right), 'string');
      return scalarType('string');
    }
    this.require(leftExpr, left, isOpen(left) || isNumeric(left), 'double');
    this.require(rightExpr, right, isOpen(right) || isNumeric(right), 'double');
    return numericResult(left, right);
  }

  private comparison(leftExpr: Expr, rightExpr: Expr, frame: Frame): ValueType {
    const [left, right] = this.operands(leftExpr, rightExpr, frame, undefined);
    if (!comparable(left, right)) {
      const error: QueryError = { type: 'TYPE_MISMATCH', expected: typeName(left), actual: typeName(right), expression: formatExpression(rightExpr) };
      this.report(rightExpr.position, error, `cannot compare ${typeName(left)} with ${typeName(right)}`);
    }
    return BOOLEAN;
  }

  /** Both operands' types; a variable is typed after the other side, whose type it is expected to have. */
  private operands(leftExpr: Expr, rightExpr: Expr, frame: Frame, fallback: string | undefined): [ValueType, ValueType] {
    const hint = (type: ValueType): string | undefined => (isOpen(type) ? fallback : typeName(type));
    if (leftExpr.kind === 'variable' && rightExpr.kind !== 'variable') {
      const right = this.type(rightExpr, frame, fallback);
      return [this.type(leftExpr, frame, hint(right)), right];
    }
    const left = this.type(leftExpr, frame, fallback);
    return [left, this.type(rightExpr, frame, hint(left))];
  }

  private call(expr: CallExpr, frame: Frame): ValueType {
    if (this.environment.isSessionFunction(expr.name)) {
      // A session function is tenant code: its arguments and result are not typed.
      for (const arg of expr.args) this.type(arg, frame, undefined);
      return UNKNOWN;
    }
    const name = expr.name.toLowerCase();
    const aggregate = AGGREGATE_SIGNATURES.get(name);
    if (aggregate !== undefined) return this.aggregate(expr, aggregate, frame);
    const signature = BUILTIN_SIGNATURES.get(name);
    if (signature === undefined) {
      this.report(expr.position, { type: 'UNKNOWN_FUNCTION', name: expr.name }, `unknown function '${expr.name}'`);
      for (const arg of expr.args) this.type(arg, frame, undefined);
      return UNKNOWN;
    }
    if (signature.search === true && !frame.searchAllowed) {
      const message = `${expr.name}() is available only over a historical source stored in the ssr`;
      this.report(expr.position, { type: 'UNKNOWN_FUNCTION', name: expr.name }, message);
    }
    return this.apply(expr, signature, frame);
  }

  private aggregate(expr: CallExpr, signature: FunctionSignature, frame: Frame): ValueType {
    const misplaced =
      frame.aggregateFields === undefined
        ? `aggregate ${expr.name}() is allowed only in a select`
        : frame.insideAggregate === true
          ? `aggregate ${expr.name}() cannot be used inside another aggregate`
          : undefined;
    if (misplaced !== undefined) {
      this.report(expr.position, { type: 'UNKNOWN_FUNCTION', name: expr.name }, misplaced);
      return this.apply(expr, signature, frame);
    }
    return this.apply(expr, signature, { ...frame, insideAggregate: true });
  }

  private apply(expr: CallExpr, signature: FunctionSignature, frame: Frame): ValueType {
    const count = expr.args.length;
    if (count < signature.minArgs || count > signature.maxArgs) {
      const { minArgs, maxArgs } = signature;
      const expected = minArgs === maxArgs ? `${minArgs}` : `${minArgs} to ${maxArgs}`;
      const message = `${expr.name}() takes ${expected} argument${expected === '1' ? '' : 's'} but got ${count}`;
      const { line, column } = expr.position;
      this.report(expr.position, { type: 'SYNTAX_ERROR', line, column, message }, message);
    }
    const args: ValueType[] = [];
    expr.args.forEach((arg, index) => {
      const argument = signature.argument(index, count);
      const wanted = expectedTypeName(argument, args[0]);
      const type = this.type(arg, frame, wanted);
      this.require(arg, type, acceptsArgument(argument, type, args[0]), wanted);
      args.push(type);
    });
    return signature.result(args);
  }

  private require(expr: Expr, type: ValueType, ok: boolean, expected: string): void {
    if (ok) return;
    const error: QueryError = { type: 'TYPE_MISMATCH', expected, actual: typeName(type), expression: formatExpression(expr) };
    this.report(expr.position, error, `expected ${expected} but '${error.expression}' is ${typeName(type)}`);
  }

  private report(position: Position, error: QueryError, message: string): void {
    this.reported++;
    this.environment.report(position, error, message);
  }

  /** Compiles the expression with stand-ins for aggregates and session functions. */
  private probeCompile(expr: Expr): void {
    const functions: Record<string, FunctionDefinition> = {};
    visit(expr, (node) => {
      if (node.kind !== 'call') return;
      const signature = AGGREGATE_SIGNATURES.get(node.name.toLowerCase());
      if (this.environment.isSessionFunction(node.name)) functions[node.name] = standIn(0, Number.MAX_SAFE_INTEGER);
      else if (signature !== undefined) functions[node.name] = standIn(signature.minArgs, signature.maxArgs);
    });
    try {
      compile(expr, { functions, variable: (name) => this.environment.variable(name)?.value ?? null, clock: () => 0 });
    } catch (error) {
      if (!(error instanceof ExpressionError)) throw error;
      const { line, column } = error;
      this.report({ offset: error.offset, line, column }, { type: 'SYNTAX_ERROR', line, column, message: error.reason }, error.reason);
    }
  }
}

function standIn(minArgs: number, maxArgs: number): FunctionDefinition {
  return { minArgs, maxArgs, compile: () => () => null };
}

function literalType(value: null | boolean | number | bigint | string, numericKind: 'int' | 'double' | undefined): ValueType {
  if (value === null) return scalarType('null');
  // An integer literal beyond 2^53 is a long.
  if (typeof value === 'bigint') return scalarType('long', false);
  if (typeof value === 'boolean') return scalarType('boolean', false);
  if (typeof value === 'string') return scalarType('string', false);
  return scalarType(numericKind === 'int' ? 'int' : 'double', false);
}

/** int with int stays int; a double makes a double; anything not known is unknown. */
function numericResult(left: ValueType, right: ValueType): ValueType {
  if (isInteger(left) && isInteger(right)) return scalarType('int');
  if (isNumeric(left) && isNumeric(right)) return scalarType('double');
  return UNKNOWN;
}
