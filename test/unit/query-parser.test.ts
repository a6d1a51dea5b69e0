import { describe, expect, it } from 'vitest';
import { BadRequestError } from '../../src/lib/errors.js';
import {
  formatExpression,
  parseQuery,
  QuerySyntaxError,
  windowHopsMax,
  windowStartsMs,
  type Expr,
  type QueryAst,
  type SyntaxErrorObject,
} from '../../src/query/index.js';
import { LANGUAGE_EXAMPLES } from '../kit/query-examples.js';

/** A compact picture of a parsed query: one string per stage, expressions as text. */
function outline(ast: QueryAst): string[] {
  const source = ast.source.kind === 'physical' ? ast.source.uri : `logical ${ast.source.name}`;
  const lines = [`from ${ast.historical ? 'historical ' : ''}${source}`];
  const named = (items: readonly { expression: Expr; alias?: string }[]): string =>
    items.map((item) => formatExpression(item.expression) + (item.alias === undefined ? '' : ` as ${item.alias}`)).join(', ');
  for (const stage of ast.stages) {
    switch (stage.kind) {
      case 'where':
        lines.push(`where ${formatExpression(stage.condition)}`);
        break;
      case 'select':
        lines.push(`select ${named(stage.items)}`);
        break;
      case 'group': {
        const window = stage.window === undefined ? '' : ` window ${stage.window.size.ms}/${stage.window.hop?.ms ?? '-'}`;
        lines.push(`group ${named(stage.keys)}${window}`);
        break;
      }
      case 'window':
        lines.push(`window ${stage.window.size.ms}/${stage.window.hop?.ms ?? '-'}`);
        break;
      case 'order':
        lines.push(`order ${stage.keys.map((key) => `${formatExpression(key.expression)} ${key.direction}`).join(', ')}`);
        break;
      case 'take':
        lines.push(`take ${stage.count}`);
        break;
    }
  }
  if (ast.into !== undefined) lines.push(`into ${ast.into.kind === 'physical' ? ast.into.uri : `logical ${ast.into.name}`}`);
  return lines;
}

/** The SYNTAX_ERROR a text gives; fails the test when it parses. */
function syntaxError(text: string): SyntaxErrorObject {
  try {
    parseQuery(text);
  } catch (error) {
    expect(error).toBeInstanceOf(QuerySyntaxError);
    return (error as QuerySyntaxError).error;
  }
  throw new Error(`parsed: ${text}`);
}

describe('query parser - the examples of docs/query-language.md', () => {
  it('parses the live cpu query, a select followed by a where', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.cpuLive))).toEqual([
      'from /streams/demo/infrastructure/cpu',
      'select user, kernel',
      'where user > 90',
    ]);
  });

  it('parses a historical query with a variable', () => {
    const ast = parseQuery(LANGUAGE_EXAMPLES.cpuHistorical);
    expect(ast.historical).toBe(true);
    expect(outline(ast)).toEqual([
      'from historical /streams/demo/infrastructure/cpu',
      'where user > @limit',
      'select host, user',
    ]);
  });

  it('parses a group by on a contributor path with aggregates', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.happiness))).toEqual([
      'from /streams/demo/mobile/happiness',
      'group contributor.user.typeOfParticipant',
      'select typeOfParticipant, avg(happiness) as avgHappiness, count() as N',
    ]);
  });

  it('parses hopping windows on the last key', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.location))).toEqual([
      'from historical /streams/demo/mobile/location',
      'group contributor, timestamp window 60000/60000',
      'select contributor, timestamp, last(position.latitude) as lat, last(position.longitude) as long',
    ]);
    const ast = parseQuery(LANGUAGE_EXAMPLES.temperature);
    expect(outline(ast)[1]).toBe('group contributor, timestamp window 60000/1000');
    const group = ast.stages[0];
    expect(group?.kind === 'group' && group.window).toMatchObject({
      size: { count: 1, unit: 'minute', ms: 60_000 },
      hop: { count: 1, unit: 'second', ms: 1_000 },
      position: { line: 2, column: 33 },
    });
  });

  it('reads a quoted stream URI', () => {
    expect(parseQuery(LANGUAGE_EXAMPLES.temperature).source).toEqual({
      kind: 'physical',
      uri: '/streams/demo/iot_board/temperature',
      position: { offset: 5, line: 1, column: 6 },
    });
  });

  it('parses select, group by, select and order by in one pipeline', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.tweets))).toEqual([
      'from historical /streams/demo/twitter/tweets',
      'select tweet.user.followers_count as fol, tweet.lang as lang, tweet.source as app',
      'group app',
      'select app, count() as C, avg(fol) as F',
      'order F asc',
    ]);
  });

  it('parses order by and take on one line', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.happinessTake))).toEqual([
      'from historical /streams/demo/mobile/happiness',
      'select timestamp, happiness',
      'order timestamp asc',
      'take 10000',
    ]);
  });

  it('parses a window with no keys', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.cpuWindow))).toEqual([
      'from /streams/demo/infrastructure/cpu',
      'window 3600000/-',
      'select count()',
    ]);
  });

  it('parses the two queries of one session: into x, then from x', () => {
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.logInto))).toEqual([
      'from /streams/demo/infrastructure/log1',
      "where host == 'ABC'",
      'into logical x',
    ]);
    expect(outline(parseQuery(LANGUAGE_EXAMPLES.logFrom))).toEqual([
      'from logical x',
      "where contains(msg, 'error')",
      'select host, msg',
    ]);
  });
});

describe('query parser - lexical freedom', () => {
  it('takes keywords in any case, comments and free whitespace', () => {
    const text = `FROM   Historical\t/streams/demo/infrastructure/cpu -- the cpu stream
      WHERE user > 90 -- busy
      SeLeCt host AS h,
             user
      ORDER BY user DESC, h ASC
      TAKE 5`;
    expect(outline(parseQuery(text))).toEqual([
      'from historical /streams/demo/infrastructure/cpu',
      'where user > 90',
      'select host as h, user',
      'order user desc, h asc',
      'take 5',
    ]);
  });

  it('keeps the case of names and aliases', () => {
    const ast = parseQuery('from Logs select Host as HOST');
    expect(ast.source).toMatchObject({ kind: 'logical', name: 'Logs' });
    expect(ast.stages[0]).toMatchObject({ kind: 'select', items: [{ alias: 'HOST' }] });
  });

  it('reads bare URIs whose names the expression lexer would refuse', () => {
    for (const uri of ['/streams/t-1/c:2/5g-cells', '/streams/demo/a"b/x=y', "/streams/t/c/it's"]) {
      const ast = parseQuery(`from ${uri} where a > 1 into ${uri}`);
      expect(ast.source).toMatchObject({ kind: 'physical', uri });
      expect(ast.into).toMatchObject({ kind: 'physical', uri, position: { column: 24 + uri.length } });
    }
  });

  it('keeps positions after a bare URI exact', () => {
    const ast = parseQuery('from /streams/a/b/c\n  where x > 1');
    expect(ast.stages[0]?.position).toEqual({ offset: 22, line: 2, column: 3 });
  });

  it('reads URIs in backticks and after a comment', () => {
    expect(parseQuery('from -- a comment\n`/streams/a/b/c`').source).toMatchObject({ uri: '/streams/a/b/c' });
    expect(parseQuery('from historical -- c\n /streams/a/b/c').historical).toBe(true);
  });

  it('does not mistake text in strings or comments for a URI', () => {
    const ast = parseQuery("from x where msg == 'from /streams/a/b/c' -- into /streams/d/e/f");
    expect(outline(ast)).toEqual(['from logical x', "where msg == 'from /streams/a/b/c'"]);
  });

  it('treats historical and stream as names when no source follows them', () => {
    expect(parseQuery('from historical').source).toMatchObject({ kind: 'logical', name: 'historical' });
    expect(parseQuery('from historical').historical).toBe(false);
    expect(parseQuery('from historical historical').historical).toBe(true);
    expect(parseQuery('from a into stream').into).toMatchObject({ kind: 'logical', name: 'stream' });
    expect(parseQuery('from a into stream b').into).toMatchObject({ kind: 'logical', name: 'b' });
    expect(parseQuery('from a into stream /streams/t/c/n').into).toMatchObject({ kind: 'physical', uri: '/streams/t/c/n' });
    expect(parseQuery("from a into '/streams/t/c/n'").into).toMatchObject({ kind: 'physical', uri: '/streams/t/c/n' });
  });

  it('reads every time unit, singular and plural', () => {
    const sizes = ['1 millisecond', '2 milliseconds', '1 second', '3 seconds', '1 minute', '2 minutes', '1 hour', '2 hours', '1 day', '2 days', '1 week', '2 weeks'].map(
      (size) => {
        const stage = parseQuery(`from x window of ${size} select count()`).stages[0];
        return stage?.kind === 'window' ? stage.window.size.ms : undefined;
      },
    );
    expect(sizes).toEqual([1, 2, 1_000, 3_000, 60_000, 120_000, 3_600_000, 7_200_000, 86_400_000, 172_800_000, 604_800_000, 1_209_600_000]);
  });

  it('parses a query with nothing but a source, and repeated clauses', () => {
    expect(outline(parseQuery('from x'))).toEqual(['from logical x']);
    expect(outline(parseQuery('from x where a where b select a select a take 1 take 2'))).toHaveLength(7);
  });

  it('parses the expression forms of docs/query-language.md inside clauses', () => {
    const ast = parseQuery("from x where !a == b && (c || d) && e % 2 != .48E1 select ifNull(y, 'd') as z");
    expect(outline(ast)[1]).toBe('where !a == b && (c || d) && e % 2 != 4.8');
  });
});

describe('query parser - syntax errors with line and column', () => {
  it('is a 400 whose details are the SYNTAX_ERROR object', () => {
    let caught: unknown;
    try {
      parseQuery('select a');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(BadRequestError);
    expect((caught as BadRequestError).details).toEqual({
      type: 'SYNTAX_ERROR',
      line: 1,
      column: 1,
      message: "expected 'from' but found keyword 'select'",
    });
    expect((caught as Error).message).toBe("line 1, column 1: expected 'from' but found keyword 'select'");
  });

  it('names the place of a missing source, expression or alias', () => {
    expect(syntaxError('from')).toEqual({
      type: 'SYNTAX_ERROR',
      line: 1,
      column: 5,
      message: 'expected a stream URI or the name of a logical stream but found end of input',
    });
    expect(syntaxError('from x\nwhere')).toMatchObject({ line: 2, column: 6, message: 'expected an expression but found end of input' });
    expect(syntaxError('from x where select a')).toMatchObject({ column: 14, message: "expected an expression but found keyword 'select'" });
    expect(syntaxError('from x select a as')).toMatchObject({ column: 19, message: "expected a name after 'as' but found end of input" });
    expect(syntaxError('from x select a as where')).toMatchObject({ column: 20 });
    expect(syntaxError('from x where a > 1 &&\n  select')).toMatchObject({ line: 2, column: 3 });
  });

  it('reports errors inside expressions at their own place', () => {
    expect(syntaxError('from x\n  where (a > 1')).toMatchObject({ line: 2, column: 15, message: "expected ')' but found end of input" });
    expect(syntaxError("from x\n\n  where a == 'open")).toMatchObject({ line: 3, column: 14 });
    expect(syntaxError('from x where a = 1')).toMatchObject({ column: 16, message: "expected '==' but found '='" });
    expect(syntaxError('from x where a == !b')).toMatchObject({ column: 19 });
  });

  it('requires a select after group by or window', () => {
    expect(syntaxError('from x group by a')).toMatchObject({
      column: 18,
      message: "expected 'select' after group by (it says what each group gives) but found end of input",
    });
    expect(syntaxError('from x window of 1 hour where a')).toMatchObject({ column: 25 });
    expect(syntaxError('from x group a select a')).toMatchObject({ column: 14, message: "expected 'by' but found 'a'" });
  });

  it('checks windows: whole positive counts, known units, bounded hops', () => {
    expect(syntaxError('from x window of 0 minutes select count()')).toMatchObject({ column: 18 });
    expect(syntaxError('from x window of 1.5 minutes select count()')).toMatchObject({ column: 18 });
    expect(syntaxError('from x window of 1 fortnight select count()')).toMatchObject({
      column: 20,
      message: "expected a time unit (millisecond, second, minute, hour, day or week) but found 'fortnight'",
    });
    // Windows are computed from panes: any number of them per row parses.
    expect(() => parseQuery('from x window of 1 hour every 1 millisecond select count()')).not.toThrow();
    expect(() => parseQuery('from x group by k, ts window of 24 hour every 10 seconds select k, ts, count()')).not.toThrow();
    expect(windowHopsMax).toBe(3600);
  });

  it('checks take and stream URIs', () => {
    expect(syntaxError('from x take -1')).toMatchObject({ column: 13 });
    expect(syntaxError('from x take 2.5')).toMatchObject({ column: 13, message: 'expected a row count but found number 2.5' });
    expect(syntaxError('from /streams/a/b')).toMatchObject({ column: 6 });
    expect(syntaxError("from '/streams/a/b/c/d'")).toMatchObject({ column: 6 });
    expect(syntaxError("from 'x'")).toMatchObject({ column: 6, message: "expected a stream URI or the name of a logical stream but found string 'x'" });
  });

  it('refuses anything after the end of the query', () => {
    expect(syntaxError('from x select a b')).toMatchObject({
      column: 17,
      message: "expected a clause (where, select, group by, window, order by, take, into) or end of input but found 'b'",
    });
    expect(syntaxError('from x into y where a')).toMatchObject({ column: 15, message: "expected end of input but found keyword 'where'" });
    expect(syntaxError('from x into')).toMatchObject({ column: 12 });
  });

  it('reports lexical errors anywhere with their place', () => {
    expect(syntaxError('from x\nwhere a > 3abc')).toMatchObject({ line: 2, column: 11, message: "malformed number '3abc'" });
    expect(syntaxError('from x where a # b')).toMatchObject({ column: 16 });
  });
});

describe('query parser - windows', () => {
  it('gives the starts of the windows an event falls into, oldest first', () => {
    const stage = parseQuery('from x window of 1 minute every 20 seconds select count()').stages[0];
    if (stage?.kind !== 'window') throw new Error('expected a window');
    expect(windowStartsMs(125_000, stage.window)).toEqual([80_000, 100_000, 120_000]);
    expect(windowStartsMs(120_000, stage.window)).toEqual([80_000, 100_000, 120_000]);
    const tumbling = parseQuery('from x window of 1 minute select count()').stages[0];
    if (tumbling?.kind !== 'window') throw new Error('expected a window');
    expect(windowStartsMs(125_000, tumbling.window)).toEqual([120_000]);
    expect(windowStartsMs(-1, tumbling.window)).toEqual([-60_000]);
    const sampling = parseQuery('from x window of 1 second every 1 minute select count()').stages[0];
    if (sampling?.kind !== 'window') throw new Error('expected a window');
    expect(windowStartsMs(61_500, sampling.window)).toEqual([]);
    expect(windowStartsMs(60_500, sampling.window)).toEqual([60_000]);
  });
});

describe('query parser - expressions as text', () => {
  it('formats expressions so that they parse back to the same grouping', () => {
    const texts = [
      'a - (b - c)',
      '(a - b) - c',
      '!(a && b) || c',
      '!a == b',
      "-(a + 2) * 3.0 / count() % 2 != ifNull(x, 'it\\'s')",
      '(a || b) && c',
      'a < b == (c < d)',
    ];
    const shape = (text: string): string => {
      const stage = parseQuery(`from x where ${text}`).stages[0];
      if (stage?.kind !== 'where') throw new Error('expected a where');
      return formatExpression(stage.condition);
    };
    for (const text of texts) expect(shape(shape(text))).toBe(shape(text));
    expect(texts.map(shape)).toEqual([
      'a - (b - c)',
      'a - b - c',
      '!(a && b) || c',
      '!a == b',
      "-(a + 2) * 3.0 / count() % 2 != ifNull(x, 'it\\'s')",
      '(a || b) && c',
      'a < b == (c < d)',
    ]);
  });
});
