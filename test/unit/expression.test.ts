import { describe, it, expect } from 'vitest';
import {
  compile,
  compileExpression,
  expressionCharsMax,
  expressionDepthMax,
  ExpressionError,
  ExpressionSyntaxError,
  lex,
  matches,
  MissingVariableError,
  parseExpression,
  parseExpressionTokens,
  referencesOf,
  termsOf,
  UnknownFunctionError,
  type CompileOptions,
  type Expr,
  type Value,
} from '../../src/expression/index.js';
import { BadRequestError } from '../../src/lib/errors.js';
import { parseDatetime as parseDatetimeForReference } from '../../src/lib/iso-time.js';
import { Prng } from '../sim/prng.js';

/** Fully parenthesized form of a tree, to check how text was grouped. */
function show(expr: Expr): string {
  switch (expr.kind) {
    case 'literal':
      return typeof expr.value === 'string' ? `'${expr.value}'` : String(expr.value);
    case 'field':
      return expr.path.join('.');
    case 'variable':
      return `@${expr.name}`;
    case 'call':
      return `${expr.name}(${expr.args.map(show).join(', ')})`;
    case 'unary':
      return `${expr.operator}(${show(expr.operand)})`;
    case 'binary':
      return `(${show(expr.left)} ${expr.operator} ${show(expr.right)})`;
    case 'logical':
      return `(${expr.operands.map(show).join(` ${expr.operator} `)})`;
  }
}

const grouping = (source: string): string => show(parseExpression(source));
const evaluate = (source: string, row: unknown = {}, options: CompileOptions = {}): Value => compileExpression(source, options)(row);

/** The error a source gives, as "line:column reason". */
function failure(source: string, options: CompileOptions = {}): string {
  try {
    compileExpression(source, options);
  } catch (error) {
    expect(error).toBeInstanceOf(ExpressionError);
    expect(error).toBeInstanceOf(BadRequestError);
    const { line, column, reason } = error as ExpressionError;
    expect((error as ExpressionError).message).toBe(`line ${line}, column ${column}: ${reason}`);
    expect((error as BadRequestError).status).toBe(400);
    return `${line}:${column} ${reason}`;
  }
  return 'no error';
}

describe('expression - literals and names', () => {
  it('reads numbers, including .48E1, as int or double', () => {
    const literal = (source: string): unknown => {
      const expr = parseExpression(source);
      return expr.kind === 'literal' ? [expr.value, expr.numericKind] : expr.kind;
    };
    expect(literal('3')).toEqual([3, 'int']);
    expect(literal('2.5')).toEqual([2.5, 'double']);
    expect(literal('.48E1')).toEqual([4.8, 'double']);
    expect(literal('1e3')).toEqual([1000, 'double']);
    expect(literal('1E-2')).toEqual([0.01, 'double']);
    expect(literal('3.0')).toEqual([3, 'double']);
    expect(literal('-7')).toEqual([-7, 'int']);
  });

  it('reads single-quoted and backtick strings with escapes', () => {
    expect(evaluate("'it\\'s'")).toBe("it's");
    expect(evaluate('`ABC`')).toBe('ABC');
    expect(evaluate("`a'b`")).toBe("a'b");
    expect(evaluate("'a\\\\b\\n\\t\\u00e9\\`'")).toBe('a\\b\n\té`');
    expect(evaluate("''")).toBe('');
  });

  it('reads true, false and null in any case', () => {
    expect(evaluate('true')).toBe(true);
    expect(evaluate('FALSE')).toBe(false);
    expect(evaluate('Null')).toBe(null);
  });

  it('reads dotted paths; after a dot any name is a field', () => {
    expect(parseExpression('position.latitude')).toMatchObject({ kind: 'field', path: ['position', 'latitude'] });
    expect(evaluate('a.null', { a: { null: 5 } })).toBe(5);
    expect(evaluate('a . b', { a: { b: 1 } })).toBe(1);
    expect(evaluate('größe_2', { größe_2: 'x' })).toBe('x');
    expect(evaluate('_x', { _x: 1 })).toBe(1);
  });

  it('reads `a-b` as a subtraction, so names never contain -', () => {
    expect(grouping('a-b')).toBe('(a - b)');
    expect(evaluate('a-b', { a: 5, b: 2 })).toBe(3);
  });

  it('resolves @variables once, at compile time', () => {
    let lookups = 0;
    const evaluator = compileExpression('user > @limit', { variable: (name) => (lookups++, name === 'limit' ? 90 : undefined) });
    expect([evaluator({ user: 95 }), evaluator({ user: 80 }), lookups]).toEqual([true, false, 1]);
  });

  it('keeps line and column on every node', () => {
    const expr = parseExpression("a &&\n  year(ts) == 'x'");
    expect(expr.kind === 'logical' && expr.operands[1]?.kind === 'binary' && expr.operands[1].left.position).toEqual({ offset: 7, line: 2, column: 3 });
  });
});

describe('expression - precedence', () => {
  it.each([
    ['1 + 2 * 3', '(1 + (2 * 3))'],
    ['1 * 2 + 3', '((1 * 2) + 3)'],
    ['a - b - c', '((a - b) - c)'],
    ['a / b * c % d', '(((a / b) * c) % d)'],
    ['(a + b) * c', '((a + b) * c)'],
    ['-a * b', '(-(a) * b)'],
    ['a + b < c * d', '((a + b) < (c * d))'],
    ['a < b == c', '((a < b) == c)'],
    ['!a == b', '!((a == b))'],
    ['!a && b', '(!(a) && b)'],
    ['!!a', '!(!(a))'],
    ['a || b && c', '(a || (b && c))'],
    ['a && b || c && d', '((a && b) || (c && d))'],
    ['a && b && c', '(a && b && c)'],
    ['(a && b) && c', '((a && b) && c)'],
    ['!(a || b) && c >= 2', '(!((a || b)) && (c >= 2))'],
    ['f(a, b + 1) != -2', '(f(a, (b + 1)) != -2)'],
  ])('%s groups as %s', (source, expected) => {
    expect(grouping(source)).toBe(expected);
  });

  it('!a == b is !(a == b), not (!a) == b', () => {
    expect(evaluate('!a == b', { a: 1, b: 2 })).toBe(true);
    expect(evaluate('!a == b', { a: 2, b: 2 })).toBe(false);
  });
});

describe('expression - operators', () => {
  const row = { i: 7, j: 2, d: 2.5, s: 'abc', t: 'abd', yes: true, no: false, nothing: null, nested: { n: 4 } };

  it.each([
    ['i + j', 9],
    ['i - j', 5],
    ['i * j', 14],
    ['i % j', 1],
    ['-i', -7],
    ['d * 2', 5],
    ["s + 'x'", 'abcx'],
    ["s + 1", null],
    ['i < j', false],
    ['i <= 7', true],
    ['i == 7', true],
    ['i != 7', false],
    ['i >= 8', false],
    ['i > j', true],
    ['s < t', true],
    ["s == 'abc'", true],
    ["s != 'ABC'", true],
    ['no < yes', true],
    ['yes == true', true],
    ["i == '7'", null],
    ['i < s', null],
    ['nested.n * 2', 8],
    ['nested == nested', null],
    ['yes && no', false],
    ['yes || no', true],
    ['!yes', false],
    ['!i', null],
    ['-s', null],
    ['i + missing', null],
    ['nothing == null', null],
    ['missing.deep.path', null],
  ])('%s is %j', (source, expected) => {
    expect(evaluate(source, row)).toEqual(expected);
  });

  it('keeps integer arithmetic integer: / truncates between integers', () => {
    expect(evaluate('7 / 2')).toBe(3);
    expect(evaluate('-7 / 2')).toBe(-3);
    expect(evaluate('7 / -2')).toBe(-3);
    expect(evaluate('7.0 / 2')).toBe(3.5);
    expect(evaluate('7 / 2.0')).toBe(3.5);
    expect(evaluate('toDouble(7) / 2')).toBe(3.5);
    expect(evaluate('(7 + 1) / 3')).toBe(2);
    expect(evaluate('-7 % 3')).toBe(-1);
    expect(evaluate('9007199254740991 / 10')).toBe(900719925474099);
  });

  it('divides fields by their schema kind, exactly when unknown', () => {
    const row7 = { n: 7, x: 7 };
    const kinds: CompileOptions = { numericKindOf: (path) => (path[0] === 'n' ? 'int' : path[0] === 'x' ? 'double' : undefined) };
    expect(evaluate('n / 2', row7, kinds)).toBe(3);
    expect(evaluate('x / 2', row7, kinds)).toBe(3.5);
    expect(evaluate('n / 2', row7)).toBe(3.5);
    expect(evaluate('count / 24', { count: 50 }, { numericKindOf: () => 'int' })).toBe(2);
  });

  it('gives null for division or remainder by zero', () => {
    expect(evaluate('1 / 0')).toBe(null);
    expect(evaluate('1.5 / 0')).toBe(null);
    expect(evaluate('1 % 0')).toBe(null);
  });

  it('compares datetime strings as instants, other strings by code units', () => {
    const row = { ts: '2024-01-01T01:00:00+01:00', other: '2024-01-01T00:00:00.000Z', word: 'b' };
    expect(evaluate("ts == '2024-01-01T00:00:00Z'", row)).toBe(true);
    expect(evaluate('ts == other', row)).toBe(true);
    expect(evaluate("ts < '2024-01-01T00:30:00Z'", row)).toBe(true);
    expect(evaluate("ts >= '2024-01-01T00:00:00.001Z'", row)).toBe(false);
    expect(evaluate("'2023-12-31T23:59:59Z' < ts", row)).toBe(true);
    expect(evaluate("ts > '2023-12-31'", row)).toBe(true);
    expect(evaluate("word > 'a'", row)).toBe(true);
    expect(evaluate("'Z' < 'a'", row)).toBe(true);
    // Only when both sides are datetimes: a datetime and another string compare as text.
    expect(evaluate("ts < 'x'", row)).toBe(true);
    expect(evaluate('ts == word', row)).toBe(false);
  });

  it('reads only own properties of rows', () => {
    expect(evaluate('constructor', {})).toBe(null);
    expect(evaluate('toString', { a: 1 })).toBe(null);
    expect(evaluate('a.length', { a: 'abc' })).toBe(null);
    expect(evaluate('a.b', { a: [1] })).toBe(null);
    expect(evaluate('__proto__', JSON.parse('{"__proto__": 5}'))).toBe(5);
    expect(failure('constructor(1)')).toBe("1:1 unknown function 'constructor'");
    expect(failure('toString(1)', { functions: {} })).toBe('no error');
    expect(failure('hasOwnProperty(1)', { functions: {} })).toBe("1:1 unknown function 'hasOwnProperty'");
  });
});

describe('expression - three-valued logic', () => {
  const values: Array<[string, boolean | null]> = [
    ['true', true],
    ['false', false],
    ['null', null],
  ];
  // docs/query-language.md, read literally and left to right: `false && x` is false, `true || x`
  // is true, otherwise a null operand makes the result null.
  const and = (a: boolean | null, b: boolean | null): boolean | null => (a === false ? false : a === null || b === null ? null : b);
  const or = (a: boolean | null, b: boolean | null): boolean | null => (a === true ? true : a === null || b === null ? null : b);

  for (const [left, a] of values) {
    for (const [right, b] of values) {
      it(`${left} && ${right} is ${String(and(a, b))}, ${left} || ${right} is ${String(or(a, b))}`, () => {
        const row = { a, b };
        expect(evaluate(`${left} && ${right}`)).toBe(and(a, b));
        expect(evaluate(`${left} || ${right}`)).toBe(or(a, b));
        // The same through fields, where nothing is folded at compile time.
        expect(evaluate('a && b', row)).toBe(and(a, b));
        expect(evaluate('a || b', row)).toBe(or(a, b));
      });
    }
    it(`!${left} is ${String(a === null ? null : !a)}`, () => {
      expect(evaluate(`!${left}`)).toBe(a === null ? null : !a);
      expect(evaluate('!a', { a })).toBe(a === null ? null : !a);
    });
  }

  it('spells out the cases that differ from SQL', () => {
    expect(evaluate('null && false')).toBe(null);
    expect(evaluate('null || true')).toBe(null);
    expect(evaluate('false && null')).toBe(false);
    expect(evaluate('true || null')).toBe(true);
  });

  it('treats non-boolean operands like null and stops at the first deciding operand', () => {
    expect(evaluate('1 && true')).toBe(null);
    expect(evaluate("false && 'x'")).toBe(false);
    expect(evaluate('a > 1 && b > 1 && c > 1', { a: 2, b: 0 })).toBe(false);
    expect(evaluate('a > 1 || b > 1 || c > 1', { a: 0, b: 2 })).toBe(true);
  });

  it('matches() keeps a row only for exactly true', () => {
    const where = compileExpression('a > 1');
    expect([matches(where, { a: 2 }), matches(where, { a: 0 }), matches(where, {}), matches(where, { a: 'x' })]).toEqual([true, false, false, false]);
  });
});

describe('expression - functions', () => {
  const row = {
    ts: '2024-03-05T23:30:00-02:00',
    host: 'Web-01.example',
    msg: 'Disk ERROR on /dev/sda1: retrying',
    title: 'Quarterly report',
    tags: ['Alpha', 'beta'],
    user: { name: 'John Smith', email: 'john@example.com' },
    count: 3,
  };

  it('year, month, day (and hour, minute, second) in UTC', () => {
    expect(evaluate('year(ts)', row)).toBe(2024);
    expect(evaluate('month(ts)', row)).toBe(3);
    expect(evaluate('day(ts)', row)).toBe(6);
    expect(evaluate('hour(ts)', row)).toBe(1);
    expect(evaluate('minute(ts)', row)).toBe(30);
    expect(evaluate('second(ts)', row)).toBe(0);
    expect(evaluate('YEAR(ts) == 2024 && month(ts) == 3', row)).toBe(true);
    expect(evaluate('year(0)', row)).toBe(1970);
    expect(evaluate('year(host)', row)).toBe(null);
    expect(evaluate('year(missing)', row)).toBe(null);
    expect(evaluate("year('2024-02-30')", row)).toBe(null);
  });

  it('prefix: the value starts with p, case-insensitively', () => {
    expect(evaluate("prefix(host, 'web-')", row)).toBe(true);
    expect(evaluate("prefix(host, 'WEB-01.')", row)).toBe(true);
    expect(evaluate("prefix(host, 'eb')", row)).toBe(false);
    expect(evaluate("prefix(host, '')", row)).toBe(true);
    expect(evaluate("prefix(tags, 'BE')", row)).toBe(true);
    expect(evaluate("prefix(host, 'web*')", row)).toBe(false);
    expect(evaluate("prefix(missing, 'a')", row)).toBe(false);
    expect(evaluate("!prefix(missing, 'a')", row)).toBe(true);
    expect(evaluate("prefix(count, '3')", row)).toBe(false);
  });

  it('like: the whole value matches the pattern, case-insensitively', () => {
    expect(evaluate("like(host, 'web-??.*')", row)).toBe(true);
    expect(evaluate("like(host, '*EXAMPLE')", row)).toBe(true);
    expect(evaluate("like(host, 'web')", row)).toBe(false);
    expect(evaluate("like(host, '*-0*.ex*e')", row)).toBe(true);
    expect(evaluate("like(title, 'quartrly report~')", row)).toBe(true);
    expect(evaluate("like(title, 'quarterly report~1')", row)).toBe(true);
    expect(evaluate("like(tags, 'alph?')", row)).toBe(true);
    expect(evaluate("like(missing, '*')", row)).toBe(false);
    expect(evaluate("like(lower(host), 'web*')", row)).toBe(true);
  });

  it('search(pattern): every term matches a token of some string in the row', () => {
    expect(evaluate("search('error')", row)).toBe(true);
    expect(evaluate("search('Disk retry*')", row)).toBe(true);
    expect(evaluate("search('disk smith')", row)).toBe(true); // terms in different fields
    expect(evaluate("search('disk jones')", row)).toBe(false);
    expect(evaluate("search('err')", row)).toBe(false); // tokens, not substrings
    expect(evaluate("search('sd?1')", row)).toBe(true);
    expect(evaluate("search('s*1')", row)).toBe(true);
    expect(evaluate("search('*mpl*')", row)).toBe(true);
    expect(evaluate("search('quartrly~')", row)).toBe(true);
    expect(evaluate("search('reprot~0.8')", row)).toBe(false); // 6 letters at 0.8: 1 edit, a swap is 2
    expect(evaluate("search('reprt~0.8')", row)).toBe(true);
    expect(evaluate("search('beta')", row)).toBe(true);
    expect(evaluate("search('3')", row)).toBe(false); // numbers are not text
  });

  it('search(field, pattern): only that field', () => {
    expect(evaluate("search(msg, 'error')", row)).toBe(true);
    expect(evaluate("search(title, 'error')", row)).toBe(false);
    expect(evaluate("search(user, 'smith')", row)).toBe(true);
    expect(evaluate("search(user.name, 'jo*')", row)).toBe(true);
    expect(evaluate("search(user.email, 'example')", row)).toBe(true);
    expect(evaluate("search(missing, 'x')", row)).toBe(false);
    expect(evaluate("search(msg, 'disk') && !search(msg, 'success')", row)).toBe(true);
  });

  it('search with the keyword analyzer matches whole values', () => {
    const keyword: CompileOptions = { analyzer: 'keyword' };
    expect(evaluate("search(host, 'web-01.example')", row, keyword)).toBe(true);
    expect(evaluate("search(host, 'web')", row, keyword)).toBe(false);
    expect(evaluate("search('john smith')", row, keyword)).toBe(true);
    expect(evaluate("search('web-0?.*')", row, keyword)).toBe(true);
  });

  it('patterns may come from variables but not from fields', () => {
    expect(evaluate('search(msg, @q)', row, { variable: () => 'disk' })).toBe(true);
    expect(failure('like(host, title)')).toBe("1:12 like() expects a pattern as a constant string but found a field reference");
    expect(failure('search(3)')).toBe('1:8 search() expects a pattern as a constant string but found a constant number');
    expect(failure("search('  ')")).toBe("1:8 search() pattern '  ' has no terms");
    expect(failure("search(msg, 'x~5')")).toBe(
      "1:13 invalid pattern 'x~5' at character 3: expected a similarity between 0 and 1 after '~' but found '5'",
    );
  });

  it('scalar functions of the query language', () => {
    expect(evaluate("ifNull(missing, 'd')", row)).toBe('d');
    expect(evaluate("ifNull(count, 'd')", row)).toBe(3);
    expect(evaluate("contains(msg, 'ERROR')", row)).toBe(true);
    expect(evaluate("contains(msg, 'error')", row)).toBe(false);
    expect(evaluate("toInt('42.9')", row)).toBe(42);
    expect(evaluate("toDouble('2.5') * 2", row)).toBe(5);
    expect(evaluate("toDouble('x')", row)).toBe(null);
    expect(evaluate('toString(count) + toString(true)', row)).toBe('3true');
    expect(evaluate('toString(tags)', row)).toBe('["Alpha","beta"]');
    expect(evaluate('upper(host) == lower(host)', row)).toBe(false);
    expect(evaluate("length('a😀b') + length(tags)", row)).toBe(5);
    expect(evaluate('abs(-3) + round(2.5) + floor(-1.5) + ceil(1.2)', row)).toBe(6);
    expect(evaluate('round(7.6) / 2', row)).toBe(4);
    expect(evaluate('abs(missing)', row)).toBe(null);
    expect(evaluate('now()', row, { clock: () => 0 })).toBe('1970-01-01T00:00:00.000Z');
    expect(evaluate("ts < now()", row, { clock: () => Date.UTC(2025, 0, 1) })).toBe(true);
  });

  it('folds constant calls of pure functions only', () => {
    let calls = 0;
    const options: CompileOptions = {
      functions: {
        count: { minArgs: 0, maxArgs: 0, compile: () => (r) => (r as { n: number }).n },
        twice: { minArgs: 1, maxArgs: 1, constantFolding: true, compile: ([arg]) => (r) => (calls++, Number(arg?.evaluate(r)) * 2) },
      },
    };
    const evaluator = compileExpression('count() + twice(3) + twice(1 + 1)', options);
    expect([evaluator({ n: 1 }), evaluator({ n: 2 }), calls]).toEqual([11, 12, 2]);
    expect(evaluate("search('abc')", { s: 'abc' })).toBe(true);
    expect(evaluate("like('Abc', 'a*') && year('2024-01-01') == 2024")).toBe(true);
  });

  it('extra functions shadow built-ins and may depend on the row', () => {
    const options: CompileOptions = {
      functions: {
        double: { minArgs: 1, maxArgs: 1, compile: ([arg]) => (r) => Number(arg?.evaluate(r)) * 2 },
        year: { minArgs: 1, maxArgs: 1, compile: () => () => 1999 },
      },
    };
    expect(evaluate('double(count) + year(ts)', row, options)).toBe(2005);
  });
});

describe('expression - errors name line and column', () => {
  it.each([
    ['(user > 90', "1:11 expected ')' but found end of input"],
    ["year(ts) == 2024 && (host == 'a'", "1:33 expected ')' but found end of input"],
    ['user >', "1:7 expected an operand (a field, literal, function call or '(') but found end of input"],
    ['user > > 3', "1:8 expected an operand (a field, literal, function call or '(') but found '>'"],
    ['a = b', "1:3 expected '==' but found '='"],
    ['a & b', "1:3 expected '&&' but found '&'"],
    ['a | b', "1:3 expected '||' but found '|'"],
    ['a b', "1:3 expected an operator or end of input but found 'b'"],
    ["a 'x'", "1:3 expected an operator or end of input but found string 'x'"],
    ['year(ts', "1:8 expected ',' or ')' but found end of input"],
    ['year(ts,)', "1:9 expected an operand (a field, literal, function call or '(') but found ')'"],
    ['a == !b', "1:6 expected an operand but found '!' (put it in parentheses: '!' binds looser than comparisons)"],
    ["host == 'abc", "1:9 unterminated string: expected a closing ' but found end of input"],
    ["'a\\qb'", "1:3 expected an escape (\\\\, \\', \\`, \\\", \\n, \\r, \\t or \\uXXXX) but found '\\q'"],
    ['"abc"', "1:1 unexpected character '\"': strings are written in single quotes or backticks"],
    ['a # b', "1:3 unexpected character '#'"],
    ['1.2.3', "1:1 malformed number '1.2.3'"],
    ['3abc > 1', "1:1 malformed number '3abc'"],
    ['a.', "1:3 expected a field name after '.' but found end of input"],
    ['a.b(1)', "1:4 expected an operator but found '(' (function names have no '.')"],
    ['@ > 1', "1:2 expected a variable name after '@' but found ' '"],
    ['', "1:1 expected an operand (a field, literal, function call or '(') but found end of input"],
    ['a &&\n  b ||\n\n    * 2', "4:5 expected an operand (a field, literal, function call or '(') but found '*'"],
    ["'multi\nline' == x y", "2:12 expected an operator or end of input but found 'y'"],
    ['a\r\n  )', "2:3 expected an operator or end of input but found ')'"],
  ])('%j: %s', (source, expected) => {
    expect(failure(source)).toBe(expected);
  });

  it('a syntax error is an ExpressionSyntaxError with SYNTAX_ERROR details', () => {
    try {
      parseExpression('(a');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ExpressionSyntaxError);
      expect((error as BadRequestError).details).toEqual({ type: 'SYNTAX_ERROR', line: 1, column: 3, message: "expected ')' but found end of input" });
    }
  });

  it('an unknown function names itself and its place at compile time', () => {
    expect(failure('a > 1 && frobnicate(a)')).toBe("1:10 unknown function 'frobnicate'");
    try {
      compileExpression('\n  nope()');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(UnknownFunctionError);
      expect((error as BadRequestError).details).toMatchObject({ type: 'UNKNOWN_FUNCTION', name: 'nope', line: 2, column: 3 });
    }
  });

  it('a wrong number of arguments, a missing variable and now() without a clock', () => {
    expect(failure('year(a, b)')).toBe('1:1 year() takes 1 argument but got 2');
    expect(failure('search()')).toBe('1:1 search() takes 1 to 2 arguments but got 0');
    expect(failure('like(a)')).toBe('1:1 like() takes 2 arguments but got 1');
    expect(failure('x > @limit')).toBe("1:5 no variable named '@limit'");
    expect(() => compileExpression('@x')).toThrow(MissingVariableError);
    expect(failure('now()')).toBe('1:1 now() is not available here (no clock)');
  });
});

describe('expression - bounds', () => {
  it(`accepts ${expressionCharsMax} characters and rejects more`, () => {
    const longest = `a${' '.repeat(expressionCharsMax - 1)}`;
    expect(parseExpression(longest)).toMatchObject({ kind: 'field' });
    expect(failure(`${longest} `)).toBe(`1:${expressionCharsMax + 1} expression is ${expressionCharsMax + 1} characters long; at most ${expressionCharsMax} are accepted`);
  });

  it(`accepts nesting ${expressionDepthMax} deep and rejects deeper`, () => {
    const parens = (n: number): string => `${'('.repeat(n)}a${')'.repeat(n)}`;
    expect(parseExpression(parens(expressionDepthMax))).toMatchObject({ kind: 'field' });
    expect(failure(parens(expressionDepthMax + 1))).toBe(`1:${expressionDepthMax + 1} expression is nested deeper than ${expressionDepthMax} levels`);
    expect(evaluate(`${'!'.repeat(expressionDepthMax - 1)}true`)).toBe(false);
    expect(failure(`${'!'.repeat(expressionDepthMax)}true`)).toMatch(/nested deeper than 256 levels$/);
    expect(failure(`${'-'.repeat(expressionDepthMax + 5)}a`)).toMatch(/nested deeper than 256 levels$/);
    // A left-deep chain is as deep as it is long, and is bounded the same way.
    expect(failure(Array.from({ length: expressionDepthMax + 1 }, () => 'a').join(' + '))).toMatch(/nested deeper than 256 levels$/);
    expect(failure(`f(${'g('.repeat(300)}1${')'.repeat(301)}`)).toMatch(/nested deeper than 256 levels$/);
  });

  it('keeps long && and || chains one level deep', () => {
    const terms = Array.from({ length: 3000 }, (_, i) => `host == 'h${i}'`).join(' || ');
    const evaluator = compileExpression(terms);
    expect([evaluator({ host: 'h2999' }), evaluator({ host: 'x' })]).toEqual([true, false]);
  });

  it('lexes a 64 KiB expression on one line in linear time', () => {
    const source = Array.from({ length: 4000 }, (_, i) => `a${i} == 'x'`).join(' || ').slice(0, expressionCharsMax - 100);
    const started = performance.now();
    lex(`${source.slice(0, source.lastIndexOf(' ||'))}`);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('expression - reuse by the query language', () => {
  it('parses an expression from a token stream and stops where it cannot continue', () => {
    const tokens = lex('where user > @limit select host, user -- the rest\n', { lineComments: true });
    const { expression, next } = parseExpressionTokens(tokens, 1);
    expect(show(expression)).toBe('(user > @limit)');
    expect(tokens[next]?.text).toBe('select');
    expect(tokens.map((t) => t.kind).slice(-1)).toEqual(['end']);
  });

  it('`--` is a comment only when asked for', () => {
    expect(evaluate('3 --2')).toBe(5);
    expect(show(parseExpression('a -- comment\n + 1', { lineComments: true }))).toBe('(a + 1)');
  });

  it('resolveField overrides how paths are read', () => {
    const evaluator = compile(parseExpression('contributor.user.name == \'ann\''), {
      resolveField: (path) => (path[0] === 'contributor' ? () => 'ann' : undefined),
    });
    expect(evaluator({})).toBe(true);
  });

  it('referencesOf lists fields, variables and functions', () => {
    expect(referencesOf(parseExpression("a.b > @x && year(ts) == @y || like(a.b, 'q') && c"))).toEqual({
      fields: ['a.b', 'ts', 'c'],
      variables: ['x', 'y'],
      functions: ['year', 'like'],
    });
  });
});

describe('expression - terms for the index', () => {
  const summary = (source: string, options: CompileOptions = {}): unknown => {
    const terms = termsOf(parseExpression(source), options);
    const name = (t: (typeof terms.all)[number]): string => `${t.function}(${t.field ?? '*'}, ${t.pattern})`;
    return { all: terms.all.map(name), required: terms.required.map(name), pure: terms.pureConjunction };
  };

  it('a conjunction of text terms is pure: the index answer is exact', () => {
    expect(summary("search('disk err*') && like(host, 'web*') && prefix(a.b, 'x')")).toEqual({
      all: ['search(*, disk err*)', 'like(host, web*)', 'prefix(a.b, x)'],
      required: ['search(*, disk err*)', 'like(host, web*)', 'prefix(a.b, x)'],
      pure: true,
    });
    expect(summary("search(msg, 'x')")).toMatchObject({ required: ['search(msg, x)'], pure: true });
    expect(summary("(search(msg, 'x') && like(h, 'y')) && search('z')")).toMatchObject({ pure: true });
  });

  it('other conjuncts leave the terms required but the expression impure', () => {
    expect(summary("search('disk') && user > 90")).toEqual({ all: ['search(*, disk)'], required: ['search(*, disk)'], pure: false });
  });

  it('terms under || or ! are not required', () => {
    expect(summary("search('a') || search('b')")).toEqual({ all: ['search(*, a)', 'search(*, b)'], required: [], pure: false });
    expect(summary("!search('a') && x")).toEqual({ all: ['search(*, a)'], required: [], pure: false });
    expect(summary("(search('a') || x) && like(h, 'q')")).toEqual({ all: ['search(*, a)', 'like(h, q)'], required: ['like(h, q)'], pure: false });
  });

  it('only calls on fields with known patterns are terms', () => {
    expect(summary("like(lower(h), 'q') && search(msg, @q) && search(msg, @none)", { variable: (n) => (n === 'q' ? 'v' : undefined) })).toEqual({
      all: ['search(msg, v)'],
      required: ['search(msg, v)'],
      pure: false,
    });
    expect(summary("like(h, 'q')", { functions: { like: { minArgs: 2, maxArgs: 2, compile: () => () => true } } })).toMatchObject({ all: [] });
  });

  it('carries the compiled patterns', () => {
    const [search] = termsOf(parseExpression("search('foo ba? qux~ z*')")).all;
    expect(search?.terms.map((t) => t.kind)).toEqual(['exact', 'wildcard', 'fuzzy', 'wildcard']);
    const [prefix] = termsOf(parseExpression("prefix(h, 'A*b')")).all;
    expect(prefix?.terms[0]?.matches('a*bc')).toBe(true);
    expect(prefix?.terms[0]?.matches('axbc')).toBe(false);
    expect(prefix?.terms[0]?.literalPrefix).toBe('a*b');
  });
});

// ---------------------------------------------------------------------------------------
// Randomized agreement: random trees are printed with as few parentheses as the spec's
// precedence allows, parsed back (which must give the same tree), compiled, and evaluated
// on random rows; a naive interpreter written from docs/query-language.md must agree.
// Replay a failure with its seed: EXPRESSION_SEED=<seed> npx vitest run test/unit/search-expression.test.ts
// ---------------------------------------------------------------------------------------

/** A seeded PRNG (the simulation's), so a failing case replays from its seed. */
function prng(seed: number): () => number {
  const source = new Prng(seed);
  return () => source.next();
}

interface PatternTerm {
  glob: string; // with * and ?; letters only otherwise
  similarity?: string; // fuzzy when defined ('' for the default)
}

const at = { offset: 0, line: 1, column: 1 };
const STRINGS = ['abc', 'Abd', '', 'web-01', 'Disk error', 'Ünïcode ok', '2024-01-01T00:00:00Z', '2024-01-01T01:00:00+01:00', '2023-06-30', 'x y z', 'errors'];
const WORDS = ['abc', 'disk', 'error', 'errors', 'web', 'ok', 'x', 'ünïcode', 'eror', 'dsk'];
const VARIABLES: Record<string, Value> = { v1: 3, v2: 'abc', v3: null, v4: true, v5: 2.5 };
const KINDS: CompileOptions['numericKindOf'] = (path) => (path[0] === 'i' ? 'int' : path[0] === 'd' ? 'double' : undefined);

class Generator {
  constructor(private readonly random: () => number) {}

  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)] as T;
  }

  value(): null | boolean | number | string {
    switch (this.int(0, 5)) {
      case 0:
        return this.int(-3, 5);
      case 1:
        return this.pick([0.5, -1.25, 2.75, 10.5]);
      case 2:
      case 3:
        return this.pick(STRINGS);
      case 4:
        return this.random() < 0.5;
      default:
        return null;
    }
  }

  row(): Record<string, unknown> {
    const row: Record<string, unknown> = {
      i: this.random() < 0.8 ? this.int(-4, 9) : this.value(),
      d: this.random() < 0.8 ? this.pick([0.5, -2.5, 3.25, 7.75, 0]) : this.value(),
      s: this.random() < 0.8 ? this.pick(STRINGS) : this.random() < 0.5 ? [this.pick(STRINGS), this.pick(STRINGS)] : this.value(),
      t: this.pick(STRINGS.filter((s) => s.startsWith('20'))),
      b: this.random() < 0.8 ? this.random() < 0.5 : this.value(),
      n: this.random() < 0.8 ? { x: this.value(), note: this.pick(STRINGS) } : this.value(),
    };
    if (this.random() < 0.3) delete row[this.pick(['i', 'd', 's', 'b', 'n'])];
    return row;
  }

  literal(): Expr {
    const value = this.value();
    if (typeof value !== 'number') return { kind: 'literal', value, position: at };
    return { kind: 'literal', value, numericKind: Number.isInteger(value) ? 'int' : 'double', position: at };
  }

  leaf(): Expr {
    switch (this.int(0, 4)) {
      case 0:
      case 1:
        return this.literal();
      case 2:
      case 3:
        return { kind: 'field', path: this.pick([['i'], ['d'], ['s'], ['t'], ['b'], ['n', 'x'], ['missing']]), position: at };
      default:
        return { kind: 'variable', name: this.pick(Object.keys(VARIABLES)), position: at };
    }
  }

  expr(depth: number): Expr {
    if (depth <= 0 || this.random() < 0.2) return this.leaf();
    const sub = (): Expr => this.expr(depth - 1);
    switch (this.int(0, 9)) {
      case 0: {
        const operand = sub();
        // `-3` parses as the literal -3, so a minus over a number literal is not generated.
        const minus = !(operand.kind === 'literal' && typeof operand.value === 'number') && this.random() < 0.4;
        return { kind: 'unary', operator: minus ? '-' : '!', operand, position: at };
      }
      case 1:
      case 2:
      case 3:
      case 4: {
        const operator = this.pick(['*', '/', '%', '+', '-', '<', '<=', '==', '!=', '>=', '>'] as const);
        return { kind: 'binary', operator, left: sub(), right: sub(), position: at };
      }
      case 5:
      case 6: {
        const operands = Array.from({ length: this.int(2, 4) }, sub);
        return { kind: 'logical', operator: this.pick(['&&', '||'] as const), operands, position: at };
      }
      default:
        return this.call(sub);
    }
  }

  call(sub: () => Expr): Expr {
    const string = (value: string): Expr => ({ kind: 'literal', value, position: at });
    const s: Expr = { kind: 'field', path: [this.pick(['s', 'n'])], position: at };
    const make = (name: string, args: Expr[]): Expr => ({ kind: 'call', name, args, position: at });
    switch (this.int(0, 11)) {
      case 0:
        return make('ifNull', [sub(), sub()]);
      case 1:
        return make('abs', [sub()]);
      case 2:
        return make('length', [sub()]);
      case 3:
        return make('year', [this.random() < 0.7 ? { kind: 'field', path: ['t'], position: at } : sub()]);
      case 4:
        return make('lower', [sub()]);
      case 5:
        return make('contains', [sub(), sub()]);
      case 6:
        return make('toInt', [sub()]);
      case 7:
        return make('like', [s, string(printTerms([this.patternTerm(true)]))]);
      case 8:
        return make('prefix', [s, string(this.pick(['', 'a', 'WEB', 'dis', '20', 'x y']))]);
      case 9:
        return make('search', [s, string(printTerms(this.patternTerms()))]);
      case 10:
        return make('search', [string(printTerms(this.patternTerms()))]);
      default:
        return make('round', [sub()]);
    }
  }

  patternTerms(): PatternTerm[] {
    return Array.from({ length: this.int(1, 2) }, () => this.patternTerm(false));
  }

  patternTerm(wholeValue: boolean): PatternTerm {
    const word = wholeValue ? this.pick([...WORDS, ...STRINGS.filter((s) => s !== '')]).toLowerCase() : this.pick(WORDS);
    if (this.random() < 0.3) return { glob: word, similarity: this.pick(['', '0.5', '0.8', '1', '0']) };
    const chars = [...word];
    for (let k = this.int(0, 2); k > 0; k--) {
      const index = this.int(0, chars.length);
      chars.splice(index, this.random() < 0.5 ? 1 : 0, this.pick(['*', '?']));
    }
    return { glob: chars.join('') };
  }
}

function printTerms(terms: readonly PatternTerm[]): string {
  return terms.map((t) => (t.similarity === undefined ? t.glob : `${t.glob}~${t.similarity}`)).join(' ');
}

const PRECEDENCE = { '||': 1, '&&': 2, '!': 3, '<': 4, '<=': 4, '==': 4, '!=': 4, '>=': 4, '>': 4, '+': 5, '-': 5, '*': 6, '/': 6, '%': 6 };

function precedence(e: Expr): number {
  if (e.kind === 'logical' || e.kind === 'binary') return PRECEDENCE[e.operator];
  if (e.kind === 'unary') return e.operator === '!' ? 3 : 7;
  if (e.kind === 'literal' && typeof e.value === 'number' && (e.value < 0 || Object.is(e.value, -0))) return 7;
  return 8;
}

/** Source text with as few parentheses as the precedence rules allow. */
function print(e: Expr): string {
  const wrap = (child: Expr, needed: boolean): string => (needed ? `(${print(child)})` : print(child));
  switch (e.kind) {
    case 'literal':
      if (typeof e.value === 'string') return `'${e.value.replace(/[\\']/g, '\\$&')}'`;
      if (typeof e.value === 'number' && e.numericKind === 'double' && Number.isInteger(e.value)) return e.value.toFixed(1);
      return String(e.value);
    case 'field':
      return e.path.join('.');
    case 'variable':
      return `@${e.name}`;
    case 'call':
      return `${e.name}(${e.args.map(print).join(', ')})`;
    case 'unary':
      return `${e.operator}${wrap(e.operand, precedence(e.operand) < precedence(e))}`;
    case 'binary': {
      const p = precedence(e);
      return `${wrap(e.left, precedence(e.left) < p)} ${e.operator} ${wrap(e.right, precedence(e.right) <= p)}`;
    }
    case 'logical':
      return e.operands.map((o) => wrap(o, precedence(o) <= precedence(e))).join(` ${e.operator} `);
  }
}

function withoutPositions(e: unknown): unknown {
  return JSON.parse(JSON.stringify(e, (key, value: unknown) => (key === 'position' ? undefined : value)));
}

// --- the naive reference interpreter ---------------------------------------------------

function referenceKind(e: Expr): 'int' | 'double' | 'unknown' {
  const combine = (a: string, b: string): 'int' | 'double' | 'unknown' => (a === 'int' && b === 'int' ? 'int' : a === 'double' || b === 'double' ? 'double' : 'unknown');
  switch (e.kind) {
    case 'literal':
      return e.numericKind ?? 'unknown';
    case 'field':
      return e.path[0] === 'i' ? 'int' : e.path[0] === 'd' ? 'double' : 'unknown';
    case 'unary':
      return e.operator === '-' ? referenceKind(e.operand) : 'unknown';
    case 'binary':
      return ['+', '-', '*', '/', '%'].includes(e.operator) ? combine(referenceKind(e.left), referenceKind(e.right)) : 'unknown';
    case 'call':
      if (['length', 'year', 'toInt', 'round'].includes(e.name)) return 'int';
      if (e.name === 'abs') return referenceKind(e.args[0] as Expr);
      if (e.name === 'ifNull') return combine(referenceKind(e.args[0] as Expr), referenceKind(e.args[1] as Expr));
      return 'unknown';
    default:
      return 'unknown';
  }
}

function isoMs(v: string): number | undefined {
  // The declared semantics: whatever the ingest path's parser accepts is a datetime.
  return parseDatetimeForReference(v);
}

function reference(e: Expr, row: unknown): Value {
  switch (e.kind) {
    case 'literal':
      return e.value;
    case 'variable':
      return VARIABLES[e.name] as Value;
    case 'field': {
      let v: unknown = row;
      for (const key of e.path) v = v !== null && typeof v === 'object' && !Array.isArray(v) && Object.hasOwn(v, key) ? (v as Record<string, unknown>)[key] : null;
      return (v ?? null) as Value;
    }
    case 'unary': {
      const v = reference(e.operand, row);
      if (e.operator === '!') return typeof v === 'boolean' ? !v : null;
      return typeof v === 'number' ? -v : null;
    }
    case 'logical': {
      // Left to right, two at a time, exactly as the spec words it.
      let result = reference(e.operands[0] as Expr, row);
      for (const operand of e.operands.slice(1)) {
        const boolOrNull = (v: Value): boolean | null => (typeof v === 'boolean' ? v : null);
        const left = boolOrNull(result);
        if (e.operator === '&&') result = left === false ? false : left === null ? null : boolOrNull(reference(operand, row));
        else result = left === true ? true : left === null ? null : boolOrNull(reference(operand, row));
      }
      return typeof result === 'boolean' ? result : null;
    }
    case 'binary':
      return referenceBinary(e, reference(e.left, row), reference(e.right, row));
    case 'call':
      return referenceCall(e, row);
  }
}

function referenceBinary(e: Expr & { kind: 'binary' }, a: Value, b: Value): Value {
  if (a === null || b === null) return null;
  const numbers = typeof a === 'number' && typeof b === 'number';
  switch (e.operator) {
    case '+':
      return numbers || (typeof a === 'string' && typeof b === 'string') ? (a as never) + (b as never) : null;
    case '-':
      return numbers ? (a as number) - (b as number) : null;
    case '*':
      return numbers ? (a as number) * (b as number) : null;
    case '%':
      return numbers && b !== 0 ? (a as number) % (b as number) : null;
    case '/':
      if (!numbers || b === 0) return null;
      return referenceKind(e) === 'int' ? Math.trunc((a as number) / (b as number)) : (a as number) / (b as number);
    default: {
      let order: number | null = null;
      if (numbers) order = Math.sign((a as number) - (b as number));
      else if (typeof a === 'boolean' && typeof b === 'boolean') order = Number(a) - Number(b);
      else if (typeof a === 'string' && typeof b === 'string') {
        const [x, y] = [isoMs(a), isoMs(b)];
        order = x !== undefined && y !== undefined ? Math.sign(x - y) : a === b ? 0 : a < b ? -1 : 1;
      }
      if (order === null) return null;
      return { '<': order < 0, '<=': order <= 0, '==': order === 0, '!=': order !== 0, '>=': order >= 0, '>': order > 0 }[e.operator];
    }
  }
}

function referenceCall(e: Expr & { kind: 'call' }, row: unknown): Value {
  const args = e.args.map((arg) => (arg.kind === 'literal' && typeof arg.value === 'string' ? arg.value : reference(arg, row)));
  const [a, b] = args;
  switch (e.name) {
    case 'ifNull':
      return a === null ? (b as Value) : (a as Value);
    case 'abs':
      return typeof a === 'number' ? Math.abs(a) : null;
    case 'length':
      return typeof a === 'string' ? [...a].length : Array.isArray(a) ? a.length : null;
    case 'year': {
      const ms = typeof a === 'string' ? isoMs(a) : typeof a === 'number' ? a : undefined;
      return ms === undefined ? null : new Date(ms).getUTCFullYear();
    }
    case 'lower':
      return typeof a === 'string' ? a.toLowerCase() : null;
    case 'contains':
      return typeof a === 'string' && typeof b === 'string' ? a.includes(b) : null;
    case 'toInt': {
      const n = typeof a === 'number' ? a : typeof a === 'string' && a.trim() !== '' ? Number(a) : Number.NaN;
      return Number.isFinite(n) ? Math.trunc(n) : null;
    }
    case 'round':
      return typeof a === 'number' ? Math.round(a) : null;
    case 'like': {
      const [term] = parseReferenceTerms(b as string, true);
      return strings(a, false).some((s) => termMatches(term as PatternTerm, s.toLowerCase()));
    }
    case 'prefix':
      return strings(a, false).some((s) => s.toLowerCase().startsWith((b as string).toLowerCase()));
    case 'search': {
      const [subject, pattern] = args.length === 1 ? [row, a] : [a, b];
      const tokens = strings(subject, true).flatMap((s) => s.toLowerCase().split(/[^\p{L}\p{M}\p{N}]+/u).filter((t) => t !== ''));
      return parseReferenceTerms(pattern as string, false).every((term) => tokens.some((token) => termMatches(term, token)));
    }
    default:
      throw new Error(`no reference for ${e.name}`);
  }
}

/** Strings of a value: itself, array items, and (deep) everything inside when `deep`. */
function strings(value: unknown, deep: boolean): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap((item) => (deep ? strings(item, true) : typeof item === 'string' ? [item] : []));
  if (deep && value !== null && typeof value === 'object') return Object.values(value).flatMap((item) => strings(item, true));
  return [];
}

/** Patterns the generator builds: terms separated by spaces, each glob or glob~similarity. */
function parseReferenceTerms(pattern: string, whole: boolean): PatternTerm[] {
  const parts = whole ? [pattern] : pattern.split(' ');
  return parts.map((part) => {
    const fuzzy = /^(.*)~([0-9.]*)$/u.exec(part);
    return fuzzy === null ? { glob: part.toLowerCase() } : { glob: (fuzzy[1] as string).toLowerCase(), similarity: fuzzy[2] as string };
  });
}

function termMatches(term: PatternTerm, token: string): boolean {
  if (term.similarity === undefined) return naiveGlob([...term.glob], [...token]);
  const length = [...term.glob].length;
  // A similarity's edits are capped at 2, Lucene's maximum.
  const edits = term.similarity === '' ? (length <= 2 ? 0 : length <= 5 ? 1 : 2) : Math.min(2, Math.floor((1 - Number(term.similarity)) * length + 1e-9));
  return levenshtein([...term.glob], [...token]) <= edits;
}

function naiveGlob(pattern: string[], text: string[]): boolean {
  if (pattern.length === 0) return text.length === 0;
  const [p, ...rest] = pattern;
  if (p === '*') return naiveGlob(rest, text) || (text.length > 0 && naiveGlob(pattern, text.slice(1)));
  return text.length > 0 && (p === '?' || p === text[0]) && naiveGlob(rest, text.slice(1));
}

/** The textbook full table, no early exit. */
function levenshtein(a: string[], b: string[]): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length] as number;
}

function same(a: Value, b: Value): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || (Number.isNaN(a) && Number.isNaN(b));
  return JSON.stringify(a) === JSON.stringify(b);
}

describe('expression - randomized agreement with a reference interpreter', () => {
  const seeds = process.env.EXPRESSION_SEED !== undefined ? [Number(process.env.EXPRESSION_SEED)] : Array.from({ length: 1500 }, (_, i) => i + 1);

  it(`parses, compiles and evaluates ${seeds.length} random trees like the reference`, () => {
    for (const seed of seeds) {
      const generator = new Generator(prng(seed));
      const tree = generator.expr(generator.int(1, 5));
      const source = print(tree);
      const context = `seed ${seed}: ${source}`;
      const parsed = parseExpression(source);
      expect(withoutPositions(parsed), context).toEqual(withoutPositions(tree));
      const evaluator = compile(parsed, { variable: (name) => VARIABLES[name], numericKindOf: KINDS });
      for (let r = 0; r < 12; r++) {
        const row = generator.row();
        const expected = reference(tree, row);
        const actual = evaluator(row);
        if (!same(actual, expected)) {
          expect.fail(`${context}\nrow ${JSON.stringify(row)}\nexpected ${JSON.stringify(expected)} but got ${JSON.stringify(actual)}`);
        }
      }
    }
  });
});
