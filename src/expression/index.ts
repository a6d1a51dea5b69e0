// The expression module (issue 4, item 2): one parser and one evaluator for the search
// query's `base`, domains and the query language.

export type * from './ast.js';
export { formatPath } from './ast.js';
export {
  ExpressionError,
  ExpressionSyntaxError,
  MissingVariableError,
  UnknownFunctionError,
  type ExpressionProblem,
} from './errors.js';
export { expressionCharsMax, lex, type LexOptions, type Token, type TokenKind } from './lexer.js';
export {
  describeToken,
  ExpressionParser,
  expressionDepthMax,
  parseExpression,
  parseExpressionTokens,
  type ParseOptions,
} from './parser.js';
export {
  compileTermPattern,
  defaultFuzzyEdits,
  editDistance,
  escapePattern,
  parseSearchPattern,
  PatternError,
  searchPatternTermsMax,
  similarityEdits,
  tokenize,
  tokensOfLowercase,
  type Analyzer,
  type TermPattern,
} from './patterns.js';
export {
  compareValues,
  compile,
  compileExpression,
  constantStringArgument,
  defaultFieldAccessor,
  matches,
  type CompiledNode,
  type CompileOptions,
  type Evaluator,
  type FieldAccessor,
  type FunctionContext,
  type FunctionDefinition,
  type Row,
} from './evaluate.js';
export { builtinFunctions } from './functions.js';
export { prefixPattern } from './search-functions.js';
export { datetimeMs } from './datetime.js';
export {
  referencesOf,
  termsOf,
  visit,
  type ExpressionReferences,
  type ExpressionTerms,
  type TextFunction,
  type TextTerm,
} from './analysis.js';
