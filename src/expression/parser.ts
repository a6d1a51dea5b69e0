// A recursive-descent parser for expressions. Precedence, tightest first, as
// docs/query-language.md ("Expressions") fixes it:
//
//   ( )  >  unary -  >  * / %  >  + -  >  < <= == != >= >  >  !  >  &&  >  ||
//
// Equal precedence binds left to right. `!` binds looser than comparisons, so `!a == b`
// is `!(a == b)`; a `!` where an operand is expected (`a == !b`) is an error that says to
// use parentheses, rather than a silent second reading.

import type { BinaryOperator, Expr, LiteralExpr, LogicalOperator, Position } from './ast.js';
import { ExpressionSyntaxError, quoteForMessage } from './errors.js';
import { lex, type LexOptions, type Token } from './lexer.js';

/** Deepest accepted expression tree; it bounds the parser's and the evaluator's recursion. */
export const expressionDepthMax = 256;

export interface ParseOptions extends LexOptions {
  readonly depthMax?: number;
}

const COMPARISONS = new Set(['<', '<=', '==', '!=', '>=', '>']);
const ADDITIVE = new Set(['+', '-']);
const MULTIPLICATIVE = new Set(['*', '/', '%']);
const LITERAL_WORDS = new Map<string, null | boolean>([
  ['true', true],
  ['false', false],
  ['null', null],
]);

/** Parses a whole expression. Throws ExpressionSyntaxError (a 400) naming line and column. */
export function parseExpression(source: string, options: ParseOptions = {}): Expr {
  const parser = new ExpressionParser(lex(source, options), 0, options);
  const expression = parser.parseExpression();
  const next = parser.peek();
  if (next.kind !== 'end') {
    throw new ExpressionSyntaxError(next.position, `expected an operator or end of input but found ${describeToken(next)}`);
  }
  return expression;
}

/**
 * Parses one expression from `tokens[start]` and stops at the first token that cannot
 * continue it, e.g. the query language's `select` after `where user > 90`.
 */
export function parseExpressionTokens(
  tokens: readonly Token[],
  start: number,
  options: ParseOptions = {},
): { expression: Expr; next: number } {
  const parser = new ExpressionParser(tokens, start, options);
  const expression = parser.parseExpression();
  return { expression, next: parser.index };
}

export class ExpressionParser {
  private readonly depthMax: number;
  /** Tree height of each node built, checked against depthMax as the tree grows. */
  private readonly heights = new WeakMap<Expr, number>();
  /** How deep the parser's own recursion is (parentheses, calls, unary operators). */
  private nesting = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private position: number,
    options: ParseOptions = {},
  ) {
    this.depthMax = options.depthMax ?? expressionDepthMax;
    if (tokens[tokens.length - 1]?.kind !== 'end') throw new Error('token list must end with an end token');
  }

  /** Index of the next token not consumed. */
  get index(): number {
    return this.position;
  }

  peek(): Token {
    // The list ends with an 'end' token and the parser never moves past it.
    return this.tokens[this.position] ?? (this.tokens[this.tokens.length - 1] as Token);
  }

  parseExpression(): Expr {
    return this.logical('||', () => this.logical('&&', () => this.not()));
  }

  private logical(operator: LogicalOperator, operand: () => Expr): Expr {
    const first = operand();
    if (!this.atSymbol(operator)) return first;
    const position = this.peek().position;
    const operands = [first];
    while (this.atSymbol(operator)) {
      this.advance();
      operands.push(operand());
    }
    return this.build({ kind: 'logical', operator, operands, position }, operands);
  }

  private not(): Expr {
    const token = this.peek();
    if (!this.atSymbol('!')) return this.binary(COMPARISONS, () => this.additive());
    this.advance();
    const operand = this.nested(token.position, () => this.not());
    return this.build({ kind: 'unary', operator: '!', operand, position: token.position }, [operand]);
  }

  private additive(): Expr {
    return this.binary(ADDITIVE, () => this.binary(MULTIPLICATIVE, () => this.unary()));
  }

  /** A left-to-right chain of one precedence level's operators. */
  private binary(operators: ReadonlySet<string>, operand: () => Expr): Expr {
    let left = operand();
    for (;;) {
      const token = this.peek();
      if (token.kind !== 'symbol' || !operators.has(token.text)) return left;
      this.advance();
      const right = operand();
      const operator = token.text as BinaryOperator;
      left = this.build({ kind: 'binary', operator, left, right, position: token.position }, [left, right]);
    }
  }

  private unary(): Expr {
    const token = this.peek();
    if (this.atSymbol('!')) {
      throw new ExpressionSyntaxError(
        token.position,
        "expected an operand but found '!' (put it in parentheses: '!' binds looser than comparisons)",
      );
    }
    if (!this.atSymbol('-')) return this.primary();
    this.advance();
    const operand = this.nested(token.position, () => this.unary());
    if (operand.kind === 'literal' && typeof operand.value === 'number') {
      // `-3` is the literal -3: constants stay constants for analysis and patterns.
      const folded: LiteralExpr = { ...operand, value: -operand.value, position: token.position };
      return this.build(folded, []);
    }
    return this.build({ kind: 'unary', operator: '-', operand, position: token.position }, [operand]);
  }

  private primary(): Expr {
    const token = this.peek();
    switch (token.kind) {
      case 'number': {
        this.advance();
        const numericKind = token.numericKind ?? 'double';
        return this.build({ kind: 'literal', value: token.value as number | bigint, numericKind, position: token.position }, []);
      }
      case 'string':
        this.advance();
        return this.build({ kind: 'literal', value: token.value as string, position: token.position }, []);
      case 'variable':
        this.advance();
        return this.build({ kind: 'variable', name: token.value as string, position: token.position }, []);
      case 'identifier':
        return this.identifier(token);
      default:
        if (this.atSymbol('(')) return this.parenthesized(token);
        throw new ExpressionSyntaxError(
          token.position,
          `expected an operand (a field, literal, function call or '(') but found ${describeToken(token)}`,
        );
    }
  }

  private parenthesized(open: Token): Expr {
    this.advance();
    const inner = this.nested(open.position, () => this.parseExpression());
    this.expectSymbol(')');
    return inner;
  }

  /** A literal word, a function call or a field path. */
  private identifier(token: Token): Expr {
    this.advance();
    const word = LITERAL_WORDS.get(token.text.toLowerCase());
    if (word !== undefined) return this.build({ kind: 'literal', value: word, position: token.position }, []);
    if (this.atSymbol('(')) return this.call(token);
    const path = [token.text];
    while (this.atSymbol('.')) {
      this.advance();
      const segment = this.peek();
      // After a '.', any identifier is a name: `a.null` is the field 'null' of a.
      if (segment.kind !== 'identifier') {
        throw new ExpressionSyntaxError(segment.position, `expected a field name after '.' but found ${describeToken(segment)}`);
      }
      this.advance();
      path.push(segment.text);
    }
    if (this.atSymbol('(')) {
      throw new ExpressionSyntaxError(this.peek().position, `expected an operator but found '(' (function names have no '.')`);
    }
    return this.build({ kind: 'field', path, position: token.position }, []);
  }

  private call(name: Token): Expr {
    this.advance();
    const args: Expr[] = [];
    if (!this.atSymbol(')')) {
      for (;;) {
        args.push(this.nested(name.position, () => this.parseExpression()));
        if (!this.atSymbol(',')) break;
        this.advance();
      }
    }
    if (!this.atSymbol(')')) {
      const found = this.peek();
      throw new ExpressionSyntaxError(found.position, `expected ',' or ')' but found ${describeToken(found)}`);
    }
    this.advance();
    return this.build({ kind: 'call', name: name.text, args, position: name.position }, args);
  }

  /** Runs a nested parse, refusing to recurse past depthMax (which would overflow the stack). */
  private nested<T>(position: Position, parse: () => T): T {
    if (++this.nesting > this.depthMax) throw this.tooDeep(position);
    try {
      return parse();
    } finally {
      this.nesting--;
    }
  }

  private build<T extends Expr>(expr: T, children: readonly Expr[]): T {
    let height = 1;
    for (const child of children) height = Math.max(height, (this.heights.get(child) ?? 1) + 1);
    if (height > this.depthMax) throw this.tooDeep(expr.position);
    this.heights.set(expr, height);
    return expr;
  }

  private tooDeep(position: Position): ExpressionSyntaxError {
    return new ExpressionSyntaxError(position, `expression is nested deeper than ${this.depthMax} levels`);
  }

  private atSymbol(symbol: string): boolean {
    const token = this.peek();
    return token.kind === 'symbol' && token.text === symbol;
  }

  private expectSymbol(symbol: string): void {
    const token = this.peek();
    if (token.kind !== 'symbol' || token.text !== symbol) {
      throw new ExpressionSyntaxError(token.position, `expected '${symbol}' but found ${describeToken(token)}`);
    }
    this.advance();
  }

  private advance(): void {
    if (this.peek().kind !== 'end') this.position++;
  }
}

/** How a message names a token: "end of input", "number 3", "string 'abc'", "'+'". */
export function describeToken(token: Token): string {
  switch (token.kind) {
    case 'end':
      return 'end of input';
    case 'number':
      return `number ${token.text}`;
    case 'string':
      return `string ${quoteForMessage(String(token.value))}`;
    default:
      return quoteForMessage(token.text);
  }
}
