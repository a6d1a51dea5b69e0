import { describe, it, expect } from 'vitest';
import {
  compileTermPattern,
  defaultFuzzyEdits,
  editDistance,
  escapePattern,
  parseSearchPattern,
  PatternError,
  searchPatternTermsMax,
  similarityEdits,
  tokenize,
  type TermPattern,
} from '../../src/expression/patterns.js';
import { BadRequestError } from '../../src/lib/errors.js';
import { Prng } from '../sim/prng.js';

/** A seeded PRNG (the simulation's), so a failing case replays from its seed. */
function prng(seed: number): () => number {
  const source = new Prng(seed);
  return () => source.next();
}

function matcher(pattern: string): (value: string) => boolean {
  const term = compileTermPattern(pattern);
  return (value) => term.matches(value.toLowerCase());
}

describe('expression patterns - tokenize', () => {
  it('standard: lowercases and splits on anything but Unicode letters, marks and digits', () => {
    expect(tokenize('Disk ERROR on /dev/sda1, code=42!', 'standard')).toEqual(['disk', 'error', 'on', 'dev', 'sda1', 'code', '42']);
    expect(tokenize('Grüße aus Köln — 東京 café', 'standard')).toEqual(['grüße', 'aus', 'köln', '東京', 'café']);
    expect(tokenize('snake_case and dotted.name', 'standard')).toEqual(['snake', 'case', 'and', 'dotted', 'name']);
    expect(tokenize('', 'standard')).toEqual([]);
    expect(tokenize('  -- ', 'standard')).toEqual([]);
  });

  it('standard: keeps combining marks inside a token', () => {
    expect(tokenize('cafe\u0301 ok', 'standard')).toEqual(['cafe\u0301', 'ok']);
  });

  it('keyword: the whole value lowercased as one token, none for the empty string', () => {
    expect(tokenize('Web-01 East', 'keyword')).toEqual(['web-01 east']);
    expect(tokenize('', 'keyword')).toEqual([]);
  });
});

describe('expression patterns - exact and wildcards', () => {
  it('exact terms match the whole term, case-insensitively', () => {
    const match = matcher('Error');
    expect(match('error')).toBe(true);
    expect(match('ERROR')).toBe(true);
    expect(match('errors')).toBe(false);
    expect(compileTermPattern('Error').kind).toBe('exact');
  });

  it('? matches exactly one character', () => {
    const match = matcher('te?t');
    expect(match('test')).toBe(true);
    expect(match('text')).toBe(true);
    expect(match('tet')).toBe(false);
    expect(match('teest')).toBe(false);
    expect(matcher('??')('ab')).toBe(true);
    expect(matcher('??')('abc')).toBe(false);
  });

  it('? matches one code point, also outside the Basic Multilingual Plane', () => {
    expect(matcher('a?b')('a😀b')).toBe(true);
    expect(matcher('a??b')('a😀b')).toBe(false);
    expect(matcher('a*?')('a😀')).toBe(true);
  });

  it('* as a prefix, a suffix, mid-term and several times', () => {
    expect(matcher('err*')('errors')).toBe(true);
    expect(matcher('err*')('err')).toBe(true);
    expect(matcher('err*')('terr')).toBe(false);
    expect(matcher('*ors')('errors')).toBe(true);
    expect(matcher('*ors')('errorsx')).toBe(false);
    expect(matcher('e*s')('errors')).toBe(true);
    expect(matcher('e*s')('error')).toBe(false);
    expect(matcher('*rro*')('errors')).toBe(true);
    expect(matcher('*rro*')('eros')).toBe(false);
    expect(matcher('e*r*r*s')('errors')).toBe(true);
    expect(matcher('e*r?o*s')('errors')).toBe(true);
    expect(matcher('e*x*s')('errors')).toBe(false);
    expect(matcher('*')('')).toBe(true);
    expect(matcher('**a**')('banana')).toBe(true);
  });

  it('a backslash makes *, ? and ~ literal in whole-value patterns', () => {
    expect(matcher('a\\*')('a*')).toBe(true);
    expect(matcher('a\\*')('ab')).toBe(false);
    expect(matcher('a\\?')('a?')).toBe(true);
    expect(matcher('50\\~')('50~')).toBe(true);
    expect(compileTermPattern('a\\*').kind).toBe('exact');
    const escaped = escapePattern('a*b?c~\\');
    expect(matcher(escaped)('a*b?c~\\')).toBe(true);
    expect(matcher(escaped)('axbxc~\\')).toBe(false);
  });

  it('a ~ followed by something other than a number is literal', () => {
    expect(matcher('~/docs*')('~/docs/x')).toBe(true);
    expect(compileTermPattern('a~b').kind).toBe('exact');
  });

  it('gives a literal prefix and a required fragment for the index', () => {
    const term = compileTermPattern('abc*de?fgh*');
    expect(term.kind).toBe('wildcard');
    expect(term.literalPrefix).toBe('abc');
    expect(term.requiredFragment).toBe('abc');
    expect(compileTermPattern('*x*defg').requiredFragment).toBe('defg');
    expect(compileTermPattern('Exact').literalPrefix).toBe('exact');
    expect(compileTermPattern('*').requiredFragment).toBe('');
  });

  it('stays fast on patterns that make backtracking matchers explode', () => {
    const pattern = `${'*a'.repeat(30)}*b`;
    const text = 'a'.repeat(2000);
    const started = performance.now();
    expect(matcher(pattern)(text)).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('agrees with a naive recursive matcher on random patterns (seeded)', () => {
    const random = prng(20240501);
    const pick = (chars: string, length: number): string =>
      Array.from({ length }, () => chars[Math.floor(random() * chars.length)] ?? '').join('');
    for (let i = 0; i < 3000; i++) {
      const pattern = pick('ab*?', 1 + Math.floor(random() * 6));
      const text = pick('abc', Math.floor(random() * 7));
      expect(matcher(pattern)(text), `pattern ${pattern} text ${text}`).toBe(naiveGlob(pattern, text));
    }
  });
});

function naiveGlob(pattern: string, text: string): boolean {
  if (pattern === '') return text === '';
  const [p, ...rest] = pattern;
  const tail = rest.join('');
  if (p === '*') return naiveGlob(tail, text) || (text !== '' && naiveGlob(pattern, text.slice(1)));
  if (text === '') return false;
  return (p === '?' || p === text[0]) && naiveGlob(tail, text.slice(1));
}

describe('expression patterns - fuzzy', () => {
  it('term~ allows 0 edits up to 2 characters, 1 up to 5, 2 beyond', () => {
    expect([1, 2, 3, 5, 6, 20].map(defaultFuzzyEdits)).toEqual([0, 0, 1, 1, 2, 2]);
    expect(matcher('ab~')('ab')).toBe(true);
    expect(matcher('ab~')('ac')).toBe(false);
    expect(matcher('cat~')('cut')).toBe(true);
    expect(matcher('cat~')('cup')).toBe(false);
    expect(matcher('errors~')('erorr')).toBe(true);
  });

  it('term~ matches insertions, deletions and substitutions within the bound', () => {
    const match = matcher('error~'); // 5 letters: 1 edit
    expect(compileTermPattern('error~').maxEdits).toBe(1);
    expect(match('error')).toBe(true);
    expect(match('eror')).toBe(true);
    expect(match('errors')).toBe(true);
    expect(match('errar')).toBe(true);
    expect(match('erar')).toBe(false);
    const longer = matcher('exception~'); // 9 letters: 2 edits
    expect(longer('excepton')).toBe(true);
    expect(longer('exceptoin')).toBe(true);
    expect(longer('xceptoin')).toBe(false);
  });

  it('term~similarity allows floor((1 - similarity) * length) edits', () => {
    expect(similarityEdits(0.8, 5)).toBe(1); // (1 - 0.8) * 5 is 0.9999999999999998 in floating point
    expect(similarityEdits(0.8, 4)).toBe(0);
    expect(similarityEdits(0.5, 10)).toBe(5);
    expect(similarityEdits(1, 7)).toBe(0);
    expect(similarityEdits(0, 3)).toBe(3);
    expect(compileTermPattern('hello~0.8').maxEdits).toBe(1);
    expect(matcher('hello~0.8')('hallo')).toBe(true);
    expect(matcher('hello~0.8')('hallu')).toBe(false);
    expect(matcher('hello~1')('hallo')).toBe(false);
    expect(matcher('hello~1')('hello')).toBe(true);
    expect(matcher('hello~.6')('hallu')).toBe(true);
  });

  it('caps the edits of any similarity at 2, as Lucene does: a long term~0 costs no more than term~', () => {
    expect(compileTermPattern('hello~0').maxEdits).toBe(2);
    expect(matcher('hello~0')('h')).toBe(false);
    expect(matcher('hello~0')('hel')).toBe(true);
    const long = 'q'.repeat(1_000);
    const started = performance.now();
    const fuzzy = matcher(`${long}~0`);
    for (let i = 0; i < 200; i++) fuzzy(`${'q'.repeat(998)}${'x'.repeat(3)}`);
    expect(performance.now() - started).toBeLessThan(500);
    expect(fuzzy(`${'q'.repeat(998)}xx`)).toBe(true);
  });

  it('refuses a wildcard or fuzzy term longer than the limit, naming it', () => {
    expect(() => compileTermPattern(`${'a'.repeat(1_100)}*`)).toThrow(/longer than 1024 characters/);
    expect(() => compileTermPattern(`${'a'.repeat(1_100)}~`)).toThrow(/longer than 1024 characters/);
    expect(compileTermPattern('a'.repeat(5_000)).kind).toBe('exact');
  });

  it('matches wildcards in time linear in the value, whatever the stars', () => {
    const pattern = compileTermPattern(`${'*a'.repeat(40)}*b`);
    const value = 'a'.repeat(60_000);
    const started = performance.now();
    expect(pattern.matches(value)).toBe(false);
    expect(pattern.matches(`${value}b`)).toBe(true);
    expect(compileTermPattern('*a?c*x?z*').matches('zzabcqqxyz')).toBe(true);
    expect(compileTermPattern('a*?*').matches('a')).toBe(false);
    expect(compileTermPattern('😀?*').matches('😀😀')).toBe(true);
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('rejects similarities outside 0..1, fuzzy wildcards and a bare ~', () => {
    const reason = (pattern: string): string => {
      try {
        compileTermPattern(pattern);
      } catch (error) {
        expect(error).toBeInstanceOf(PatternError);
        expect(error).toBeInstanceOf(BadRequestError);
        return (error as PatternError).reason;
      }
      return 'no error';
    };
    expect(reason('hello~2')).toBe("expected a similarity between 0 and 1 after '~' but found '2'");
    expect(reason('hello~1.5')).toBe("expected a similarity between 0 and 1 after '~' but found '1.5'");
    expect(reason('hello~0.5.1')).toBe("expected a similarity between 0 and 1 after '~' but found '0.5.1'");
    expect(reason('he*o~')).toBe('a fuzzy term (~) cannot contain the wildcards * or ?');
    expect(reason('~')).toBe("expected a term before '~'");
  });

  it('counts edits in code points', () => {
    expect(editDistance('a😀b', 'ab')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(matcher('a😀bc~')('abc')).toBe(true);
  });

  it('the bounded distance agrees with a full Levenshtein table (seeded)', () => {
    const random = prng(7);
    const word = (): string => Array.from({ length: Math.floor(random() * 8) }, () => 'abcd'[Math.floor(random() * 4)]).join('');
    for (let i = 0; i < 2000; i++) {
      const [a, b] = [word(), word()];
      expect(editDistance(a, b), `${a} / ${b}`).toBe(fullLevenshtein(a, b));
    }
  });
});

function fullLevenshtein(a: string, b: string): number {
  const table = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = table[i] as number[];
      const above = table[i - 1] as number[];
      row[j] = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return (table[a.length] as number[])[b.length] as number;
}

describe('expression patterns - search patterns', () => {
  const describeTerms = (terms: TermPattern[]): string[] => terms.map((t) => `${t.kind}:${t.text}${t.kind === 'fuzzy' ? `/${t.maxEdits}` : ''}`);

  it('standard: splits like tokenize but keeps *, ? and ~ inside terms', () => {
    expect(describeTerms(parseSearchPattern('Disk err*', 'standard'))).toEqual(['exact:disk', 'wildcard:err*']);
    expect(describeTerms(parseSearchPattern('foo-ba?, "quick"', 'standard'))).toEqual(['exact:foo', 'wildcard:ba?', 'exact:quick']);
    expect(describeTerms(parseSearchPattern('hello~0.8 wrld~', 'standard'))).toEqual(['fuzzy:hello/1', 'fuzzy:wrld/1']);
    expect(describeTerms(parseSearchPattern('a*b*c', 'standard'))).toEqual(['wildcard:a*b*c']);
    expect(parseSearchPattern('  ,.; ', 'standard')).toEqual([]);
  });

  it('standard: keeps the term as written in source', () => {
    expect(parseSearchPattern('x Hello~0.8', 'standard').map((t) => t.source)).toEqual(['x', 'Hello~0.8']);
  });

  it('keyword: the whole pattern is one term', () => {
    expect(describeTerms(parseSearchPattern('Web-0?', 'keyword'))).toEqual(['wildcard:web-0?']);
  });

  it('rejects a bad similarity with its place in the pattern', () => {
    try {
      parseSearchPattern('ok hello~3', 'standard');
      expect.unreachable();
    } catch (error) {
      expect((error as PatternError).index).toBe(9);
    }
  });

  it(`accepts at most ${searchPatternTermsMax} terms`, () => {
    expect(parseSearchPattern('a '.repeat(searchPatternTermsMax), 'standard')).toHaveLength(searchPatternTermsMax);
    expect(() => parseSearchPattern('a '.repeat(searchPatternTermsMax + 1), 'standard')).toThrow(`more than ${searchPatternTermsMax} terms`);
  });
});
