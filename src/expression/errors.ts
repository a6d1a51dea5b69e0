import { BadRequestError } from '../lib/errors.js';
import type { Position } from './ast.js';

/**
 * The problem kinds of docs/query-language.md ("Errors") that an expression alone can show;
 * the query checker later turns `details` into its `{ type, … }` error objects.
 */
export type ExpressionProblem = 'SYNTAX_ERROR' | 'UNKNOWN_FUNCTION' | 'MISSING_VARIABLE';

/**
 * A bad expression: a 400 whose message starts with the place, e.g.
 * "line 1, column 14: expected ')' but found end of input". `reason` is the message
 * without the place. Columns count UTF-16 code units, like JavaScript string indices.
 */
export class ExpressionError extends BadRequestError {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
  readonly reason: string;
  readonly problem: ExpressionProblem;

  constructor(position: Position, reason: string, problem: ExpressionProblem, extra: Record<string, unknown> = {}) {
    super(`line ${position.line}, column ${position.column}: ${reason}`, {
      details: { type: problem, line: position.line, column: position.column, message: reason, ...extra },
    });
    this.line = position.line;
    this.column = position.column;
    this.offset = position.offset;
    this.reason = reason;
    this.problem = problem;
  }
}

/** The text is not an expression: a lexical or grammatical error, or a bound exceeded. */
export class ExpressionSyntaxError extends ExpressionError {
  constructor(position: Position, reason: string) {
    super(position, reason, 'SYNTAX_ERROR');
  }
}

/** A well-formed call of a function that does not exist. */
export class UnknownFunctionError extends ExpressionError {
  readonly functionName: string;

  constructor(position: Position, name: string) {
    super(position, `unknown function '${name}'`, 'UNKNOWN_FUNCTION', { name });
    this.functionName = name;
  }
}

/** `@name` when no variable of that name is defined. */
export class MissingVariableError extends ExpressionError {
  readonly variableName: string;

  constructor(position: Position, name: string) {
    super(position, `no variable named '@${name}'`, 'MISSING_VARIABLE', { name });
    this.variableName = name;
  }
}

/** Quotes a piece of source for a message, cut short so a huge literal cannot flood it. */
export function quoteForMessage(text: string, charsMax = 40): string {
  const shown = text.length > charsMax ? `${text.slice(0, charsMax)}…` : text;
  return `'${shown.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}'`;
}
