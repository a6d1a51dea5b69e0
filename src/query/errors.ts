// The query errors of docs/query-language.md ("Errors"), exactly in the shape clients receive
// them (`{ type, …type-specific fields }`), and the thrown form of a syntax error.

import { BadRequestError } from '../lib/errors.js';
import type { Position } from '../expression/index.js';

export interface SyntaxErrorObject {
  readonly type: 'SYNTAX_ERROR';
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

export type QueryError =
  | SyntaxErrorObject
  | { readonly type: 'MISSING_VARIABLE'; readonly name: string; readonly expectedType: string }
  | { readonly type: 'INVALID_FIELD_REFERENCE'; readonly field: string }
  | { readonly type: 'INVALID_STREAM_REFERENCE'; readonly stream: string }
  | { readonly type: 'LOGICAL_STREAM_CONFLICT'; readonly stream: string }
  | { readonly type: 'INVALID_DOMAIN'; readonly domain: string }
  | { readonly type: 'UNKNOWN_FUNCTION'; readonly name: string }
  | { readonly type: 'TYPE_MISMATCH'; readonly expected: string; readonly actual: string; readonly expression: string }
  | { readonly type: 'UNNAMED_EXPRESSION'; readonly expression: string };

/**
 * An error with where it was found and a sentence for people. The error objects keep
 * exactly the fields the language fixes; logs and editors can use the rest.
 */
export interface QueryDiagnostic {
  readonly error: QueryError;
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

/** The query text is not a query: a 400 whose details are the SYNTAX_ERROR object. */
export class QuerySyntaxError extends BadRequestError {
  readonly error: SyntaxErrorObject;

  constructor(position: Pick<Position, 'line' | 'column'>, reason: string) {
    const error: SyntaxErrorObject = { type: 'SYNTAX_ERROR', line: position.line, column: position.column, message: reason };
    super(`line ${position.line}, column ${position.column}: ${reason}`, { details: { ...error } });
    this.error = error;
  }
}
