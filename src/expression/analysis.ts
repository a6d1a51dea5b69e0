// What the search index needs to know about an expression before evaluating it: which
// text terms it must satisfy, so it can narrow the candidate documents from its term
// dictionary and evaluate the whole expression on those only.

import { formatPath, type CallExpr, type Expr, type Position } from './ast.js';
import type { CompileOptions } from './compiled.js';
import { ExpressionSyntaxError, quoteForMessage } from './errors.js';
import { compileTermPattern, parseSearchPattern, type TermPattern } from './patterns.js';
import { compileSearchArgument, prefixPattern } from './search-functions.js';

export type TextFunction = 'search' | 'like' | 'prefix';

/** A call of search, like or prefix on a field (or on every field), with a constant pattern. */
export interface TextTerm {
  readonly function: TextFunction;
  /** The dotted field path; undefined for search(pattern), which looks at every string field. */
  readonly field: string | undefined;
  readonly pattern: string;
  /**
   * For search: the pattern's terms, all of which must match a token (with the analyzer
   * given). For like and prefix: one whole-value pattern (prefix p as `p*`).
   */
  readonly terms: readonly TermPattern[];
  readonly position: Position;
}

export interface ExpressionTerms {
  /** Every text term in the expression, in source order, wherever it occurs. */
  readonly all: readonly TextTerm[];
  /**
   * Terms every accepted row satisfies: those that are operands of the top-level `&&`
   * chain (or the whole expression). Each row the expression accepts matches all of
   * them, so an index may intersect their candidates before evaluating.
   */
  readonly required: readonly TextTerm[];
  /**
   * True when the expression is nothing but its required terms joined by `&&`: the
   * intersection is then the exact answer, with nothing left to evaluate.
   */
  readonly pureConjunction: boolean;
}

/**
 * The text terms of a tree. Uses the options compile uses (variables, analyzer, extra
 * functions, which may shadow the built-in names) and throws the same errors for bad patterns.
 */
export function termsOf(expr: Expr, options: CompileOptions = {}): ExpressionTerms {
  const termsByCall = new Map<Expr, TextTerm>();
  visit(expr, (node) => {
    const term = node.kind === 'call' ? textTerm(node, options) : undefined;
    if (term !== undefined) termsByCall.set(node, term);
  });
  checkExpandingTerms([...termsByCall.values()]);
  const conjuncts = topLevelConjuncts(expr);
  const required = conjuncts.flatMap((conjunct) => termsByCall.get(conjunct) ?? []);
  const pureConjunction = required.length > 0 && required.length === conjuncts.length;
  return { all: [...termsByCall.values()], required, pureConjunction };
}

/**
 * Most wildcard and fuzzy terms one expression may hold: each is expanded over the whole term
 * dictionary of every partition searched, so 256 of them (`*x*`) held a node for seconds.
 * Elasticsearch bounds the same with max_clause_count.
 */
export const expandingTermsMax = 16;

function checkExpandingTerms(terms: readonly TextTerm[]): void {
  let count = 0;
  for (const term of terms) {
    count += term.terms.filter((pattern) => pattern.kind !== 'exact').length;
    if (count > expandingTermsMax) {
      throw new ExpressionSyntaxError(term.position, `more than ${expandingTermsMax} wildcard or fuzzy terms in one expression (the limit)`);
    }
  }
}

function topLevelConjuncts(expr: Expr): Expr[] {
  if (expr.kind !== 'logical' || expr.operator !== '&&') return [expr];
  return expr.operands.flatMap(topLevelConjuncts);
}

function textTerm(call: CallExpr, options: CompileOptions): TextTerm | undefined {
  const name = call.name.toLowerCase();
  if (options.functions !== undefined && Object.hasOwn(options.functions, call.name)) return undefined;
  if (name !== 'search' && name !== 'like' && name !== 'prefix') return undefined;
  // A wrong number of arguments is compile's error to report; here it is just no term.
  const count = call.args.length;
  if (count > 2 || (count === 1 && name !== 'search') || count === 0) return undefined;
  const patternIndex = count - 1;
  const subject = count === 1 ? undefined : call.args[0];
  if (subject !== undefined && subject.kind !== 'field') return undefined;
  const patternArg = call.args[patternIndex] as Expr;
  const pattern = constantText(patternArg, options);
  if (pattern === undefined) return undefined;
  const field = subject === undefined ? undefined : formatPath(subject.path);
  const terms = compileSearchArgument(call, patternIndex, pattern, (p): TermPattern[] => {
    if (name === 'like') return [compileTermPattern(p)];
    if (name === 'prefix') return [prefixPattern(p)];
    return parseSearchPattern(p, options.analyzer ?? 'standard');
  });
  if (name === 'search' && terms.length === 0) {
    throw new ExpressionSyntaxError(patternArg.position, `search() pattern ${quoteForMessage(pattern)} has no terms`);
  }
  return { function: name, field, pattern, terms, position: call.position };
}

/** A string literal, or a variable holding a string; anything else is not known up front. */
function constantText(expr: Expr, options: CompileOptions): string | undefined {
  if (expr.kind === 'literal') return typeof expr.value === 'string' ? expr.value : undefined;
  if (expr.kind !== 'variable') return undefined;
  const value = options.variable?.(expr.name);
  return typeof value === 'string' ? value : undefined;
}

export interface ExpressionReferences {
  /** Dotted field paths, each once, in source order. */
  readonly fields: readonly string[];
  /** Variable names (without '@'). */
  readonly variables: readonly string[];
  /** Function names as written. */
  readonly functions: readonly string[];
}

/** What an expression refers to, e.g. to restart queries when a variable they use changes. */
export function referencesOf(expr: Expr): ExpressionReferences {
  const fields = new Set<string>();
  const variables = new Set<string>();
  const functions = new Set<string>();
  visit(expr, (node) => {
    if (node.kind === 'field') fields.add(formatPath(node.path));
    else if (node.kind === 'variable') variables.add(node.name);
    else if (node.kind === 'call') functions.add(node.name);
  });
  return { fields: [...fields], variables: [...variables], functions: [...functions] };
}

/** Visits every node, parents before children, left to right. Trees are at most 256 deep. */
export function visit(expr: Expr, visitor: (node: Expr) => void): void {
  visitor(expr);
  switch (expr.kind) {
    case 'unary':
      visit(expr.operand, visitor);
      break;
    case 'binary':
      visit(expr.left, visitor);
      visit(expr.right, visitor);
      break;
    case 'logical':
      for (const operand of expr.operands) visit(operand, visitor);
      break;
    case 'call':
      for (const arg of expr.args) visit(arg, visitor);
      break;
    default:
      break;
  }
}
