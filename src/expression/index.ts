// The expression module: one parser and one evaluator for the search query's `base`, domains
// and the query language.

export type * from './ast.js';
export {
  ExpressionError,
  ExpressionSyntaxError,
  MissingVariableError,
  UnknownFunctionError,
} from './errors.js';
export { expressionCharsMax, lex, type Token } from './lexer.js';
export {
  describeToken,
  expressionDepthMax,
  parseExpression,
  parseExpressionTokens,
} from './parser.js';
export {
  parseSearchPattern,
  tokenize,
  type Analyzer,
  type TermPattern,
} from './patterns.js';
export {
  compareValues,
  compile,
  compileExpression,
  defaultFieldAccessor,
  matches,
  type CompiledNode,
  type CompileOptions,
  type Evaluator,
  type FieldAccessor,
  type FunctionDefinition,
} from './evaluate.js';
export { builtinFunctions } from './functions.js';
export { datetimeMs } from './datetime.js';
export {
  referencesOf,
  termsOf,
  visit,
} from './analysis.js';
