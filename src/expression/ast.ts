// The typed syntax tree of an expression. One tree serves the search query's `base`, domains
// and the query language's `where`/`select`, so it holds no search-specific nodes: search, like
// and prefix are ordinary function calls.

/** Where a node starts in the source: `offset` is 0-based, `line` and `column` 1-based. */
export interface Position {
  readonly offset: number;
  readonly line: number;
  readonly column: number;
}

/** A JSON value as rows carry it; a missing field reads as null. */
export type Value = null | boolean | number | bigint | string | readonly Value[] | { readonly [key: string]: Value };

/**
 * What is statically known about a number, which decides whether `/` truncates
 * (docs/query-language.md: integer arithmetic stays integer). 'unknown' divides exactly.
 */
export type NumericKind = 'int' | 'double' | 'unknown';

export type ArithmeticOperator = '*' | '/' | '%' | '+' | '-';
export type ComparisonOperator = '<' | '<=' | '==' | '!=' | '>=' | '>';
export type BinaryOperator = ArithmeticOperator | ComparisonOperator;
export type LogicalOperator = '&&' | '||';
export type UnaryOperator = '!' | '-';

export interface LiteralExpr {
  readonly kind: 'literal';
  readonly value: null | boolean | number | bigint | string;
  /** For numbers: 'int' when written without '.' or exponent (`3`), else 'double' (`3.0`). */
  readonly numericKind?: 'int' | 'double';
  readonly position: Position;
}

/** `a.b.c`: a path into the row's JSON object. */
export interface FieldExpr {
  readonly kind: 'field';
  readonly path: readonly string[];
  readonly position: Position;
}

/** `@name`: a variable, resolved once when the expression is compiled. */
export interface VariableExpr {
  readonly kind: 'variable';
  readonly name: string;
  readonly position: Position;
}

export interface CallExpr {
  readonly kind: 'call';
  readonly name: string;
  readonly args: readonly Expr[];
  readonly position: Position;
}

export interface UnaryExpr {
  readonly kind: 'unary';
  readonly operator: UnaryOperator;
  readonly operand: Expr;
  readonly position: Position;
}

export interface BinaryExpr {
  readonly kind: 'binary';
  readonly operator: BinaryOperator;
  readonly left: Expr;
  readonly right: Expr;
  /** The operator's position, which is what an error about the operation points at. */
  readonly position: Position;
}

/**
 * `a && b && c` as one node with three operands: long generated chains of `||` stay one
 * level deep, so the depth bound does not reject them and evaluation is a loop.
 */
export interface LogicalExpr {
  readonly kind: 'logical';
  readonly operator: LogicalOperator;
  readonly operands: readonly Expr[];
  readonly position: Position;
}

export type Expr = LiteralExpr | FieldExpr | VariableExpr | CallExpr | UnaryExpr | BinaryExpr | LogicalExpr;

/** `a.b.c` for messages and for the analysis helpers. */
export function formatPath(path: readonly string[]): string {
  return path.join('.');
}
