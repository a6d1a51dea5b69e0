// The query language's pure front end: parse, check, and what the runtime
// needs to run a checked query. Nothing here does I/O or reads a clock.

import type { QueryAst } from './ast.js';
import { checkQuery, type QueryCheck } from './checker.js';
import type { CheckContext } from './context.js';
import { QuerySyntaxError, type QueryDiagnostic, type QueryError } from './errors.js';
import { parseQuery } from './parser.js';

export type * from './ast.js';
export { checkQuery, type PlanStep, type QueryCheck } from './checker.js';
export {
  streamRowType,
  variableValue,
  type CheckContext,
  type LogicalStreamWriter,
  type SessionVariable,
  type StreamInfo,
} from './context.js';
export { QuerySyntaxError, type QueryDiagnostic, type QueryError, type SyntaxErrorObject } from './errors.js';
export { formatExpression } from './format.js';
export { AGGREGATE_SIGNATURES, BUILTIN_SIGNATURES } from './functions.js';
export { parseQuery, windowHopsMax } from './parser.js';
export {
  numericKindOfType,
  outputSchemaToJson,
  primaryTimestampPath,
  resolveFieldType,
  typeToJson,
  type RecordValueType,
} from './types.js';
export { windowStartsMs } from './windows.js';

/** A query text parsed and checked; a syntax error leaves no tree and is the only error. */
export interface QueryAnalysis {
  readonly errors: readonly QueryError[];
  readonly diagnostics: readonly QueryDiagnostic[];
  readonly ast?: QueryAst;
  readonly check?: QueryCheck;
}

/** Parses and checks one query body, turning a syntax error into the error list. */
export function analyseQuery(text: string, context: CheckContext): QueryAnalysis {
  let ast: QueryAst;
  try {
    ast = parseQuery(text);
  } catch (error) {
    if (!(error instanceof QuerySyntaxError)) throw error;
    const { line, column, message } = error.error;
    return { errors: [error.error], diagnostics: [{ error: error.error, line, column, message }] };
  }
  const check = checkQuery(ast, context);
  return { errors: check.errors, diagnostics: check.diagnostics, ast, check };
}
