// search, like and prefix (spec "Search query object"). The evaluator answers them
// exactly, row by row; the index answers the same questions from its term dictionary to
// narrow the candidates first (see analysis.ts), so both use patterns.ts.
//
// - search(pattern): every term of the pattern matches a token of some string in the row
//   (nested records and arrays included). search(field, pattern): of that field's value.
// - like(field, pattern): the whole value matches the pattern, case-insensitively.
// - prefix(field, p): the value starts with p, case-insensitively, like the other two: a
//   user typing a prefix into a search box expects 'jo' to find "John". `==` stays exact.
// - They are predicates: a missing, null or non-string field does not match (false, not
//   null), so `!like(host, 'web*')` keeps rows without a host, as an index's complement
//   would. An array of strings matches when any item does.
// - Patterns must be constant strings (a literal or a variable), compiled once here.

import type { CallExpr } from './ast.js';
import { constantStringArgument, type CompiledNode, type Evaluator, type FunctionDefinition } from './compiled.js';
import { ExpressionSyntaxError, quoteForMessage } from './errors.js';
import {
  compileTermPattern,
  escapePattern,
  parseSearchPattern,
  PatternError,
  tokensOfLowercase,
  type Analyzer,
  type TermPattern,
} from './patterns.js';

/** Stops runaway walks through deeply nested rows; rows from the validator are far shallower. */
const searchDepthMax = 64;

/** Compiles a pattern, turning a PatternError into a 400 at the pattern argument. */
export function compileSearchArgument<T>(call: CallExpr, index: number, pattern: string, build: (pattern: string) => T): T {
  try {
    return build(pattern);
  } catch (error) {
    if (!(error instanceof PatternError)) throw error;
    const position = (call.args[index] ?? call).position;
    throw new ExpressionSyntaxError(position, `invalid pattern ${quoteForMessage(pattern)} at character ${error.index + 1}: ${error.reason}`);
  }
}

const search: FunctionDefinition = {
  minArgs: 1,
  maxArgs: 2,
  // No constant folding: search(pattern) reads the whole row with a constant argument.
  compile: (args, call, context) => {
    const patternIndex = args.length - 1;
    const pattern = constantStringArgument(args, call, patternIndex, 'a pattern');
    const terms = compileSearchArgument(call, patternIndex, pattern, (p) => parseSearchPattern(p, context.analyzer));
    if (terms.length === 0) {
      throw new ExpressionSyntaxError((call.args[patternIndex] ?? call).position, `search() pattern ${quoteForMessage(pattern)} has no terms`);
    }
    const read: Evaluator = args.length === 2 ? (args[0] as CompiledNode).evaluate : (row) => row as never;
    return searchEvaluator(read, terms, context.analyzer);
  },
};

const like: FunctionDefinition = {
  minArgs: 2,
  maxArgs: 2,
  constantFolding: true,
  compile: (args, call) => {
    const pattern = constantStringArgument(args, call, 1, 'a pattern');
    const term = compileSearchArgument(call, 1, pattern, compileTermPattern);
    return wholeValueEvaluator((args[0] as CompiledNode).evaluate, term);
  },
};

const prefix: FunctionDefinition = {
  minArgs: 2,
  maxArgs: 2,
  constantFolding: true,
  compile: (args, call) => {
    const start = constantStringArgument(args, call, 1, 'a prefix');
    return wholeValueEvaluator((args[0] as CompiledNode).evaluate, prefixPattern(start));
  },
};

/** prefix(field, p) as the whole-value pattern `p*`, so the index can treat it like `like`. */
export function prefixPattern(start: string): TermPattern {
  return compileTermPattern(`${escapePattern(start)}*`);
}

export const searchFunctions: Readonly<Record<string, FunctionDefinition>> = { search, like, prefix };

function wholeValueEvaluator(read: Evaluator, term: TermPattern): Evaluator {
  return (row) => {
    const value = read(row);
    if (typeof value === 'string') return term.matches(value.toLowerCase());
    if (!Array.isArray(value)) return false;
    return value.some((item) => typeof item === 'string' && term.matches(item.toLowerCase()));
  };
}

function searchEvaluator(read: Evaluator, terms: readonly TermPattern[], analyzer: Analyzer): Evaluator {
  const [only] = terms;
  if (terms.length === 1 && only !== undefined) {
    const test = (text: string): boolean => textHasTerm(text.toLowerCase(), only, analyzer, undefined);
    return (row) => someString(read(row), test);
  }
  return (row) => {
    // Terms still to be found; each may match in a different string of the row.
    const pending = terms.slice();
    return someString(read(row), (text) => {
      const lower = text.toLowerCase();
      let tokens: string[] | undefined;
      for (let i = pending.length - 1; i >= 0; i--) {
        const term = pending[i] as TermPattern;
        if (term.requiredFragment !== '' && !lower.includes(term.requiredFragment)) continue;
        tokens ??= tokensOfLowercase(lower, analyzer);
        if (textHasTerm(lower, term, analyzer, tokens)) pending.splice(i, 1);
      }
      return pending.length === 0;
    });
  };
}

/** Whether a token of lowercased text matches; the required fragment rejects most texts first. */
function textHasTerm(lower: string, term: TermPattern, analyzer: Analyzer, tokens: string[] | undefined): boolean {
  if (term.requiredFragment !== '' && !lower.includes(term.requiredFragment)) return false;
  for (const token of tokens ?? tokensOfLowercase(lower, analyzer)) if (term.matches(token)) return true;
  return false;
}

/**
 * Whether `test` holds for some string in a value: the value itself, or any string in its
 * arrays and records, depth-first. Recursion stops at searchDepthMax levels.
 */
function someString(value: unknown, test: (text: string) => boolean, depth = 0): boolean {
  if (typeof value === 'string') return test(value);
  if (typeof value !== 'object' || value === null || depth >= searchDepthMax) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (someString(item, test, depth + 1)) return true;
    return false;
  }
  for (const key in value) {
    if (Object.hasOwn(value, key) && someString((value as Record<string, unknown>)[key], test, depth + 1)) return true;
  }
  return false;
}
