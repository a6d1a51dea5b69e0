// The query parser: a pure function from text to a QueryAst, or a QuerySyntaxError naming line
// and column. Clauses are parsed here; every expression is parsed by the shared expression
// parser over the same token list (parseExpressionTokens stops at the first token that cannot
// continue an expression, such as `select`).
//
//   query := 'from' ['historical'] source stage* [into]      (docs/query-language.md, "Grammar")
//
// Decisions beyond the grammar:
// - The clause words (from, where, select, group, window, order, take, into, as) are
//   reserved: an expression cannot start with one or name a field by one, so a missing
//   expression (`where select x`) is an error here rather than a field named `select`.
//   Contextual words (historical, by, of, every, asc, desc, stream) are not reserved.
// - `group by` and `window` must be followed directly by the `select` that aggregates
//   their groups: the language gives a grouping no meaning without one.
// - A hopping window may put a row into any number of windows: they are computed from
//   panes (src/pipeline/paned-windows.ts), so a row costs the
//   same whatever their number. Only a grouping over a table keeps a group per window, and
//   it refuses more than windowHopsMax windows per row when the query starts.

import {
  describeToken,
  ExpressionSyntaxError,
  lex,
  parseExpressionTokens,
  visit,
  type Expr,
  type Token,
} from '../expression/index.js';
import { BadRequestError } from '../lib/errors.js';
import { parseStreamUri } from '../streams/stream-id.js';
import type {
  Duration,
  GroupStage,
  NamedExpression,
  OrderKey,
  OrderStage,
  QueryAst,
  Stage,
  StreamRef,
  TimeUnit,
  WindowSpec,
} from './ast.js';
import { QuerySyntaxError } from './errors.js';
import { maskStreamUris, type MaskedUris } from './stream-uris.js';

/** Most windows a grouping over a table puts one row into (`1 hour every 1 second` is 3600). */
export const windowHopsMax = 3600;

/** Words that start or delimit a clause, never a field name. */
export const RESERVED_WORDS: ReadonlySet<string> = new Set([
  'from', 'where', 'select', 'group', 'window', 'order', 'take', 'into', 'as',
]);

const UNIT_MS: ReadonlyMap<string, [TimeUnit, number]> = new Map(
  ([
    ['millisecond', 1],
    ['second', 1_000],
    ['minute', 60_000],
    ['hour', 3_600_000],
    ['day', 86_400_000],
    ['week', 604_800_000],
  ] as const).flatMap(([unit, ms]): Array<[string, [TimeUnit, number]]> => [
    [unit, [unit, ms]],
    [`${unit}s`, [unit, ms]],
  ]),
);

/** Parses one query. Throws QuerySyntaxError (a 400 whose details are the SYNTAX_ERROR). */
export function parseQuery(text: string): QueryAst {
  const { masked, uris } = maskStreamUris(text);
  let tokens: Token[];
  try {
    tokens = lex(masked, { lineComments: true });
  } catch (error) {
    throw asQuerySyntaxError(error);
  }
  return new QueryParser(tokens, uris).query();
}

function asQuerySyntaxError(error: unknown): unknown {
  if (error instanceof ExpressionSyntaxError) return new QuerySyntaxError(error, error.reason);
  return error;
}

class QueryParser {
  private index = 0;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly uris: MaskedUris,
  ) {}

  query(): QueryAst {
    this.expectKeyword('from');
    const historical = this.historicalKeyword();
    const source = this.streamRef('a stream URI or the name of a logical stream');
    const stages: Stage[] = [];
    for (;;) {
      const stage = this.stage();
      if (stage === undefined) break;
      stages.push(stage);
    }
    const into = this.atKeyword('into') ? this.into() : undefined;
    const end = this.peek();
    if (end.kind !== 'end') {
      const expected = into === undefined ? 'a clause (where, select, group by, window, order by, take, into) or ' : '';
      throw this.unexpected(end, `${expected}end of input`);
    }
    return into === undefined ? { historical, source, stages } : { historical, source, stages, into };
  }

  /** `historical` is a keyword only when a source follows it; else it names a logical stream. */
  private historicalKeyword(): boolean {
    if (!this.atKeyword('historical') || !this.startsStreamRef(this.peek(1))) return false;
    this.advance();
    return true;
  }

  private stage(): Stage | undefined {
    const token = this.peek();
    const position = token.position;
    if (this.atKeyword('where')) {
      this.advance();
      return { kind: 'where', condition: this.expression(), position };
    }
    if (this.atKeyword('select')) {
      this.advance();
      return { kind: 'select', items: this.namedList(), position };
    }
    if (this.atKeyword('group')) return this.requireSelect(this.group());
    if (this.atKeyword('window')) return this.requireSelect({ kind: 'window', window: this.window(), position });
    if (this.atKeyword('order')) return this.order();
    if (this.atKeyword('take')) {
      this.advance();
      return { kind: 'take', count: this.integer('a row count', 0), position };
    }
    return undefined;
  }

  private group(): GroupStage {
    const position = this.peek().position;
    this.advance();
    this.expectKeyword('by');
    const keys = this.namedList();
    if (!this.atKeyword('window')) return { kind: 'group', keys, position };
    return { kind: 'group', keys, window: this.window(), position };
  }

  private requireSelect<T extends Stage>(stage: T): T {
    if (!this.atKeyword('select')) {
      const what = stage.kind === 'group' ? 'group by' : 'window';
      throw this.unexpected(this.peek(), `'select' after ${what} (it says what each group gives)`);
    }
    return stage;
  }

  private window(): WindowSpec {
    const position = this.peek().position;
    this.advance();
    this.expectKeyword('of');
    const size = this.duration();
    if (!this.atKeyword('every')) return { size, position };
    this.advance();
    const hop = this.duration();
    return { size, hop, position };
  }

  private duration(): Duration {
    const count = this.integer('a positive whole number', 1);
    const token = this.peek();
    const unit = token.kind === 'identifier' ? UNIT_MS.get(token.text.toLowerCase()) : undefined;
    if (unit === undefined) {
      throw this.unexpected(token, 'a time unit (millisecond, second, minute, hour, day or week)');
    }
    this.advance();
    const ms = count * unit[1];
    if (!Number.isSafeInteger(ms)) throw new QuerySyntaxError(token.position, 'the window is too long');
    return { count, unit: unit[0], ms };
  }

  private order(): OrderStage {
    const position = this.advance().position;
    this.expectKeyword('by');
    const keys: OrderKey[] = [];
    do {
      const expression = this.expression();
      let direction: 'asc' | 'desc' = 'asc';
      if (this.atKeyword('asc') || this.atKeyword('desc')) direction = this.advance().text.toLowerCase() as 'asc' | 'desc';
      keys.push({ expression, direction });
    } while (this.acceptSymbol(','));
    return { kind: 'order', keys, position };
  }

  private into(): StreamRef {
    this.advance();
    // `into stream` is the optional keyword only when a target follows it.
    if (this.atKeyword('stream') && this.startsStreamRef(this.peek(1))) this.advance();
    return this.streamRef('a stream URI or the name of a logical stream');
  }

  /** `expr [as name]` items separated by commas. */
  private namedList(): NamedExpression[] {
    const items: NamedExpression[] = [];
    do {
      const position = this.peek().position;
      const expression = this.expression();
      if (!this.atKeyword('as')) {
        items.push({ expression, position });
        continue;
      }
      this.advance();
      const alias = this.peek();
      if (alias.kind !== 'identifier' || RESERVED_WORDS.has(alias.text.toLowerCase())) {
        throw this.unexpected(alias, "a name after 'as'");
      }
      this.advance();
      items.push({ expression, alias: alias.text, position });
    } while (this.acceptSymbol(','));
    return items;
  }

  private expression(): Expr {
    const first = this.peek();
    if (first.kind === 'end' || this.isReserved(first) || this.uris.has(first.position.offset)) {
      throw this.unexpected(first, 'an expression');
    }
    let parsed: { expression: Expr; next: number };
    try {
      parsed = parseExpressionTokens(this.tokens, this.index);
    } catch (error) {
      throw asQuerySyntaxError(error);
    }
    rejectReservedFields(parsed.expression);
    this.index = parsed.next;
    return parsed.expression;
  }

  private streamRef(what: string): StreamRef {
    const token = this.peek();
    if (!this.startsStreamRef(token)) throw this.unexpected(token, what);
    this.advance();
    const position = token.position;
    if (token.kind === 'identifier') return { kind: 'logical', name: token.text, position };
    const uri = this.uris.get(position.offset) ?? String(token.value);
    try {
      parseStreamUri(uri);
    } catch (error) {
      if (error instanceof BadRequestError) throw new QuerySyntaxError(position, error.message);
      throw error;
    }
    return { kind: 'physical', uri, position };
  }

  private startsStreamRef(token: Token): boolean {
    if (token.kind === 'identifier') return !this.isReserved(token);
    if (token.kind !== 'string') return false;
    return this.uris.has(token.position.offset) || String(token.value).startsWith('/');
  }

  private integer(what: string, min: number): number {
    const token = this.peek();
    const value = token.value;
    if (token.kind !== 'number' || token.numericKind !== 'int' || typeof value !== 'number') {
      throw this.unexpected(token, what);
    }
    if (!Number.isSafeInteger(value) || value < min) throw this.unexpected(token, what);
    this.advance();
    return value;
  }

  private isReserved(token: Token): boolean {
    return token.kind === 'identifier' && RESERVED_WORDS.has(token.text.toLowerCase());
  }

  private atKeyword(word: string): boolean {
    const token = this.peek();
    return token.kind === 'identifier' && token.text.toLowerCase() === word;
  }

  private expectKeyword(word: string): void {
    if (!this.atKeyword(word)) throw this.unexpected(this.peek(), `'${word}'`);
    this.advance();
  }

  private acceptSymbol(symbol: string): boolean {
    const token = this.peek();
    if (token.kind !== 'symbol' || token.text !== symbol) return false;
    this.advance();
    return true;
  }

  private peek(ahead = 0): Token {
    // The token list ends with an 'end' token, which every read past the end returns.
    return this.tokens[this.index + ahead] ?? (this.tokens[this.tokens.length - 1] as Token);
  }

  private advance(): Token {
    const token = this.peek();
    if (token.kind !== 'end') this.index++;
    return token;
  }

  private unexpected(token: Token, expected: string): QuerySyntaxError {
    return new QuerySyntaxError(token.position, `expected ${expected} but found ${this.describe(token)}`);
  }

  private describe(token: Token): string {
    const uri = this.uris.get(token.position.offset);
    if (uri !== undefined && token.kind === 'string') return `stream URI '${uri}'`;
    if (this.isReserved(token)) return `keyword '${token.text}'`;
    return describeToken(token);
  }
}

/** A field named by a reserved word means a clause's expression was left out (`where and select`). */
function rejectReservedFields(expression: Expr): void {
  visit(expression, (node) => {
    const first = node.kind === 'field' ? node.path[0] : undefined;
    if (first !== undefined && RESERVED_WORDS.has(first.toLowerCase())) {
      throw new QuerySyntaxError(node.position, `expected an expression but found keyword '${first}'`);
    }
  });
}
