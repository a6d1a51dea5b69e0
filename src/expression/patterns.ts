// Text patterns of the search functions (spec "Search query object"): `?` one character,
// `*` any run (anywhere in a term, any number of times), `term~` and `term~<similarity>`.
//
// MiniSearch has no mid-term wildcard and treats `*`/`?` as separators
// (its tokenizer splits on them), so matching lives here: the evaluator checks rows with it and the
// index scans its term dictionary with `TermPattern.matches`. Both sides must tokenize
// with `tokenize` below, or a pattern can match in one and not the other.
//
// Decisions (docs/platform-decisions.md, "Search"):
// - Matching is case-insensitive: patterns and text are lowercased (String#toLowerCase,
//   locale-independent). No accent folding or stemming.
// - `?` matches one Unicode code point, `*` any run of them, including none.
// - `term~` allows Elasticsearch's AUTO edit distance: 0 edits for terms of 1–2
//   characters, 1 for 3–5, 2 for longer. `term~s` with 0 ≤ s ≤ 1 allows
//   floor((1 - s) × length) edits (length of the term in code points), so `~1` is exact
//   and `hello~0.8` allows 1, but never more than 2 (fuzzyEditsMax: Lucene turns a
//   similarity into edits the same way and caps them at 2). A value above 1 (Lucene's
//   edit-distance form) is a 400.
// - A wildcard or fuzzy term longer than expandingTermCharsMax is a 400 naming the limit.
// - Edits are Levenshtein (insert, delete, substitute); a fuzzy term has no wildcards.
// - A backslash makes the next character literal in whole-value patterns (like, keyword
//   fields): `like(f, 'a\\*')` matches "a*". In tokenized search patterns every
//   character other than letters, digits, `*`, `?` and `~` separates terms.

import { BadRequestError } from '../lib/errors.js';
import { compileGlob, ONE, STAR } from './glob.js';

export type Analyzer = 'standard' | 'keyword';

/** Most terms in one search pattern: each costs a scan of the row's tokens. */
export const searchPatternTermsMax = 256;
/**
 * Most edits a fuzzy term allows, whatever its similarity says: Lucene's maximum (its
 * Levenshtein automata stop at 2), and what keeps a fuzzy term's cost independent of its
 * length (`search('qqqq…~0')` asked for 2,000 edits).
 */
export const fuzzyEditsMax = 2;
/** Longest wildcard or fuzzy term (code units): each is matched against every term of a dictionary. */
export const expandingTermCharsMax = 1_024;

export interface TermPattern {
  /** The term as written in the pattern. */
  readonly source: string;
  readonly kind: 'exact' | 'wildcard' | 'fuzzy';
  /** The lowercased term for display: escapes removed, `*`/`?` kept, no `~` suffix. */
  readonly text: string;
  /** Most Levenshtein edits a fuzzy term allows; 0 for the other kinds. */
  readonly maxEdits: number;
  /** Characters every match starts with, for a range scan of a sorted term dictionary. */
  readonly literalPrefix: string;
  /** A run of characters every match contains ('' if none is known): a cheap reject. */
  readonly requiredFragment: string;
  /** Whether one lowercased term (a token, or a whole lowercased value) matches. */
  matches(term: string): boolean;
}

/** A malformed pattern; `index` is the offset in the pattern text. */
export class PatternError extends BadRequestError {
  readonly index: number;
  readonly reason: string;

  constructor(index: number, reason: string) {
    super(`invalid pattern at character ${index + 1}: ${reason}`);
    this.index = index;
    this.reason = reason;
  }
}

const TOKEN = /[\p{L}\p{M}\p{N}]+/gu;

/**
 * The terms a text is indexed and searched as. 'standard': lowercased runs of Unicode
 * letters, combining marks and digits (everything else separates). 'keyword': the whole
 * value lowercased, as one term (none for '').
 */
export function tokenize(text: string, analyzer: Analyzer): string[] {
  return tokensOfLowercase(text.toLowerCase(), analyzer);
}

/** `tokenize` for text that is lowercased already. */
export function tokensOfLowercase(lower: string, analyzer: Analyzer): string[] {
  if (analyzer === 'keyword') return lower.length === 0 ? [] : [lower];
  return lower.match(TOKEN) ?? [];
}

/** Text that a whole-value pattern matches literally: `\`, `*`, `?` and `~` escaped. */
export function escapePattern(text: string): string {
  return text.replace(/[\\*?~]/g, '\\$&');
}

/** Edits `term~` allows for a term of `length` code points (Elasticsearch's AUTO). */
export function defaultFuzzyEdits(length: number): number {
  if (length <= 2) return 0;
  return length <= 5 ? 1 : 2;
}

/** Edits `term~similarity` allows: floor((1 - similarity) × length). */
export function similarityEdits(similarity: number, length: number): number {
  // The epsilon keeps (1 - 0.8) × 5 = 0.9999999999999998 from flooring to 0.
  return Math.floor((1 - similarity) * length + 1e-9);
}

/**
 * A pattern for a whole value (like, and search on a keyword-analyzed field): the entire
 * text is one term; a backslash makes the next character literal.
 */
export function compileTermPattern(pattern: string): TermPattern {
  const lower = pattern.toLowerCase();
  const fuzzy = FUZZY_SUFFIX.exec(lower);
  if (fuzzy !== null && !isEscaped(lower, fuzzy.index)) {
    return fuzzyTerm(pattern, parseGlob(lower.slice(0, fuzzy.index), true), fuzzy[1] ?? '', 0, fuzzy.index);
  }
  return globTerm(pattern, parseGlob(lower, true));
}

/**
 * The terms of a search pattern; a row matches when every term matches (each in any
 * field). 'standard' splits like `tokenize` but keeps `*`, `?` and `~<similarity>`
 * inside terms; 'keyword' takes the whole pattern as one term.
 */
export function parseSearchPattern(pattern: string, analyzer: Analyzer): TermPattern[] {
  if (analyzer === 'keyword') return pattern.length === 0 ? [] : [compileTermPattern(pattern)];
  const lower = pattern.toLowerCase();
  // Offsets are found in the lowercased text; a few characters change length when
  // lowercased ('İ'), and then the source of a term is shown lowercased.
  const original = lower.length === pattern.length ? pattern : lower;
  const terms: TermPattern[] = [];
  const termPart = /[\p{L}\p{M}\p{N}*?]+/uy;
  for (let i = 0; i < lower.length; ) {
    termPart.lastIndex = i;
    const found = termPart.exec(lower);
    if (found === null) {
      i += (lower.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
      continue;
    }
    const start = i;
    i += found[0].length;
    let similarityText: string | undefined;
    if (lower[i] === '~') {
      const number = /[0-9.]*/y;
      number.lastIndex = i + 1;
      similarityText = number.exec(lower)?.[0] ?? '';
      i += 1 + similarityText.length;
    }
    if (terms.length === searchPatternTermsMax) throw new PatternError(start, `more than ${searchPatternTermsMax} terms`);
    const source = original.slice(start, i);
    const glob = parseGlob(found[0], false);
    const tildeIndex = i - (similarityText?.length ?? 0) - 1;
    const term = similarityText === undefined ? globTerm(source, glob) : fuzzyTerm(source, glob, similarityText, start, tildeIndex);
    terms.push(term);
  }
  return terms;
}

const FUZZY_SUFFIX = /~([0-9.]*)$/;
/** A term as code units (literal characters) and STAR/ONE wildcards. */
type Glob = number[];

function isEscaped(text: string, index: number): boolean {
  let backslashes = 0;
  for (let i = index - 1; i >= 0 && text[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 1;
}

function parseGlob(text: string, escapes: boolean): Glob {
  const glob: Glob = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (escapes && text[i] === '\\' && i + 1 < text.length) {
      glob.push(text.charCodeAt(++i));
    } else if (text[i] === '*') {
      // `**` means the same as `*`; collapsing keeps the matcher's backtracking short.
      if (glob[glob.length - 1] !== STAR) glob.push(STAR);
    } else {
      glob.push(text[i] === '?' ? ONE : c);
    }
  }
  return glob;
}

function fuzzyTerm(source: string, glob: Glob, similarityText: string, bodyIndex: number, tildeIndex: number): TermPattern {
  if (glob.length === 0) throw new PatternError(tildeIndex, "expected a term before '~'");
  checkExpandingLength(glob, bodyIndex);
  if (glob.some((e) => e < 0)) throw new PatternError(bodyIndex, 'a fuzzy term (~) cannot contain the wildcards * or ?');
  const text = fromCodes(glob);
  const codes = toCodePoints(text);
  let maxEdits = defaultFuzzyEdits(codes.length);
  if (similarityText !== '') {
    const similarity = /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(similarityText) ? Number(similarityText) : Number.NaN;
    if (!(similarity >= 0 && similarity <= 1)) {
      throw new PatternError(tildeIndex + 1, `expected a similarity between 0 and 1 after '~' but found '${similarityText}'`);
    }
    maxEdits = Math.min(fuzzyEditsMax, similarityEdits(similarity, codes.length));
  }
  const matches = (term: string): boolean => withinEdits(codes, toCodePoints(term), maxEdits);
  return { source, kind: 'fuzzy', text, maxEdits, literalPrefix: '', requiredFragment: '', matches };
}

function globTerm(source: string, glob: Glob): TermPattern {
  const literal = (from: number, to: number): string => fromCodes(glob.slice(from, to));
  const wildcards = glob.filter((e) => e < 0).length;
  const firstWildcard = glob.findIndex((e) => e < 0);
  const text = glob.map((e) => (e === STAR ? '*' : e === ONE ? '?' : String.fromCharCode(e))).join('');
  const fields = { source, text, maxEdits: 0, requiredFragment: longestLiteralRun(glob) };
  if (wildcards === 0) return { ...fields, kind: 'exact', literalPrefix: text, matches: (term) => term === text };
  checkExpandingLength(glob, 0);
  const literalPrefix = literal(0, firstWildcard);
  const last = glob.length - 1;
  let matches: (term: string) => boolean;
  if (wildcards === 1 && glob[last] === STAR) {
    matches = (term) => term.startsWith(literalPrefix);
  } else if (wildcards === 1 && glob[0] === STAR) {
    const suffix = literal(1, glob.length);
    matches = (term) => term.endsWith(suffix);
  } else if (wildcards === 2 && glob[0] === STAR && glob[last] === STAR) {
    const middle = literal(1, last);
    matches = (term) => term.includes(middle);
  } else {
    matches = compileGlob(glob);
  }
  return { ...fields, kind: 'wildcard', literalPrefix, matches };
}

function longestLiteralRun(glob: Glob): string {
  let best: number[] = [];
  let run: number[] = [];
  for (const e of [...glob, STAR]) {
    if (e >= 0) {
      run.push(e);
    } else {
      if (run.length > best.length) best = run;
      run = [];
    }
  }
  return fromCodes(best);
}

/** Code units to a string, in slices: spreading a 64 KiB array into one call can overflow. */
function fromCodes(codes: readonly number[]): string {
  let text = '';
  for (let i = 0; i < codes.length; i += 4096) text += String.fromCharCode(...codes.slice(i, i + 4096));
  return text;
}

function checkExpandingLength(glob: Glob, index: number): void {
  if (glob.length > expandingTermCharsMax) {
    throw new PatternError(index, `a wildcard or fuzzy term is longer than ${expandingTermCharsMax} characters (the limit of one such term)`);
  }
}

function charWidth(text: string, index: number): number {
  const c = text.charCodeAt(index);
  return c >= 0xd800 && c <= 0xdbff && index + 1 < text.length ? 2 : 1;
}

function toCodePoints(text: string): number[] {
  const codes: number[] = [];
  for (let i = 0; i < text.length; i += charWidth(text, i)) codes.push(text.codePointAt(i) ?? 0);
  return codes;
}

/**
 * Whether the Levenshtein distance of a and b is at most maxEdits. Only the band of cells
 * within maxEdits of the diagonal can hold such a distance, so only it is computed (cells
 * outside count as over the bound): O(length × maxEdits), abandoned as soon as a whole
 * row exceeds the bound.
 */
export function withinEdits(a: readonly number[], b: readonly number[], maxEdits: number): boolean {
  if (Math.abs(a.length - b.length) > maxEdits) return false;
  const over = maxEdits + 1;
  let previous = new Array<number>(b.length + 1);
  let current = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) previous[j] = j <= maxEdits ? j : over;
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - maxEdits);
    const to = Math.min(b.length, i + maxEdits);
    current[0] = i <= maxEdits ? i : over;
    if (from > 1) current[from - 1] = over;
    let rowMin = current[0] as number;
    for (let j = from; j <= to; j++) {
      const substitute = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      const above = j <= i - 1 + maxEdits ? (previous[j] as number) + 1 : over;
      const cost = Math.min(substitute, above, (current[j - 1] as number) + 1, over);
      current[j] = cost;
      if (cost < rowMin) rowMin = cost;
    }
    if (to < b.length) current[to + 1] = over;
    if (rowMin > maxEdits) return false;
    [previous, current] = [current, previous];
  }
  return (previous[b.length] as number) <= maxEdits;
}

/** Levenshtein distance of two strings in code points (for tests and diagnostics). */
export function editDistance(a: string, b: string): number {
  const x = toCodePoints(a);
  const y = toCodePoints(b);
  for (let bound = Math.abs(x.length - y.length); ; bound++) if (withinEdits(x, y, bound)) return bound;
}
