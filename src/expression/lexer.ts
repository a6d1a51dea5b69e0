// Turns expression text into tokens. Shared by the search query's `base`, domains and the
// query language, which lexes its clauses around expressions and turns on `--` comments.
//
// Identifiers are a letter or '_' followed by letters, combining marks, digits and '_'
// (Unicode). '-' is not part of a name, so `a-b` is a subtraction: field names with other
// characters cannot be written bare (schemas allow them).

import type { Position } from './ast.js';
import { ExpressionSyntaxError, quoteForMessage } from './errors.js';

/** Longest accepted expression text, in UTF-16 code units (64 KiB of ASCII). */
export const expressionCharsMax = 65_536;

export type TokenKind = 'number' | 'string' | 'identifier' | 'variable' | 'symbol' | 'end';

export interface Token {
  readonly kind: TokenKind;
  /** The source text: a symbol itself, an identifier's name, a literal as written, '' at the end. */
  readonly text: string;
  /** A string's decoded content, a number's value or a variable's name (without '@'). */
  readonly value?: string | number | bigint;
  /** For numbers: 'int' when written without '.' or exponent. */
  readonly numericKind?: 'int' | 'double';
  readonly position: Position;
}

export interface LexOptions {
  /** `--` starts a comment to the end of the line (the query language); off for search. */
  readonly lineComments?: boolean;
  readonly charsMax?: number;
}

const TWO_CHAR_SYMBOLS = new Set(['==', '!=', '<=', '>=', '&&', '||']);
const ONE_CHAR_SYMBOLS = new Set(['(', ')', ',', '.', '<', '>', '!', '+', '-', '*', '/', '%']);
// Single characters that start a two-character operator, with the operator meant.
const HALF_OPERATORS: Record<string, string> = { '=': '==', '&': '&&', '|': '||' };

const IDENTIFIER = /[\p{L}_][\p{L}\p{M}\p{N}_]*/uy;
const IDENTIFIER_PART = /[\p{L}\p{M}\p{N}_.]/uy;
const NUMBER = /(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const WHITESPACE = /[^\S\r\n]+/y;
const ESCAPES: Record<string, string> = { '\\': '\\', "'": "'", '`': '`', '"': '"', n: '\n', r: '\r', t: '\t' };

/** All tokens of `source`, ending with one 'end' token. Throws ExpressionSyntaxError. */
export function lex(source: string, options: LexOptions = {}): Token[] {
  const charsMax = options.charsMax ?? expressionCharsMax;
  const lexer = new Lexer(source, options.lineComments ?? false);
  if (source.length > charsMax) {
    throw new ExpressionSyntaxError(
      lexer.positionAt(charsMax),
      `expression is ${source.length} characters long; at most ${charsMax} are accepted`,
    );
  }
  const tokens: Token[] = [];
  for (;;) {
    const token = lexer.next();
    tokens.push(token);
    if (token.kind === 'end') return tokens;
  }
}

class Lexer {
  private offset = 0;
  private line = 1;
  private lineStart = 0;

  constructor(
    private readonly source: string,
    private readonly lineComments: boolean,
  ) {}

  /**
   * The position of an offset at or after the current one. It scans only the text in
   * between, so positions cost nothing for tokens (which hold no line breaks) and a
   * string's length for strings: lexing stays linear on a 64 KiB one-line expression.
   */
  positionAt(offset: number): Position {
    let line = this.line;
    let lineStart = this.lineStart;
    for (let i = this.offset; i < offset; i++) {
      const c = this.source[i];
      if (c === '\n' || (c === '\r' && this.source[i + 1] !== '\n')) {
        line++;
        lineStart = i + 1;
      }
    }
    return { offset, line, column: offset - lineStart + 1 };
  }

  next(): Token {
    this.skipTrivia();
    const position = this.positionAt(this.offset);
    const c = this.source[this.offset];
    if (c === undefined) return { kind: 'end', text: '', position };
    if (c === "'" || c === '`') return this.readString(c, position);
    if (c === '@') return this.readVariable(position);
    if (isDigit(c) || (c === '.' && isDigit(this.source[this.offset + 1]))) return this.readNumber(position);
    const name = this.match(IDENTIFIER);
    if (name !== undefined) return { kind: 'identifier', text: name, position };
    return this.readSymbol(c, position);
  }

  private skipTrivia(): void {
    for (;;) {
      this.match(WHITESPACE);
      const c = this.source[this.offset];
      if (c === '\n' || c === '\r') {
        this.offset += c === '\r' && this.source[this.offset + 1] === '\n' ? 2 : 1;
        this.line++;
        this.lineStart = this.offset;
      } else if (this.lineComments && c === '-' && this.source[this.offset + 1] === '-') {
        while (this.offset < this.source.length && !'\r\n'.includes(this.source[this.offset] ?? '')) this.offset++;
      } else {
        return;
      }
    }
  }

  /** Consumes and returns the text a sticky pattern matches here, if it does. */
  private match(pattern: RegExp): string | undefined {
    pattern.lastIndex = this.offset;
    const found = pattern.exec(this.source);
    if (found === null) return undefined;
    this.offset += found[0].length;
    return found[0];
  }

  private readNumber(position: Position): Token {
    const text = this.match(NUMBER) ?? '';
    if (this.match(IDENTIFIER_PART) !== undefined) {
      // `1e`, `1.2.3` or `3abc`: one malformed word rather than a number and a surprise.
      while (this.match(IDENTIFIER_PART) !== undefined);
      const word = this.source.slice(position.offset, this.offset);
      throw new ExpressionSyntaxError(position, `malformed number ${quoteForMessage(word)}`);
    }
    const integral = !/[.eE]/.test(text);
    // An integer literal beyond 2^53 is kept exactly, as payload longs are.
    const value = integral && !Number.isSafeInteger(Number(text)) ? BigInt(text) : Number(text);
    return { kind: 'number', text, value, numericKind: integral ? 'int' : 'double', position };
  }

  private readVariable(position: Position): Token {
    this.offset++;
    const name = this.match(IDENTIFIER);
    if (name === undefined) {
      throw new ExpressionSyntaxError(this.positionAt(this.offset), `expected a variable name after '@' but found ${this.describeHere()}`);
    }
    return { kind: 'variable', text: `@${name}`, value: name, position };
  }

  private readString(quote: string, position: Position): Token {
    let value = '';
    let i = this.offset + 1;
    for (;;) {
      const c = this.source[i];
      if (c === undefined) {
        throw new ExpressionSyntaxError(position, `unterminated string: expected a closing ${quote} but found end of input`);
      }
      if (c === quote) break;
      if (c === '\\') {
        const [decoded, length] = this.readEscape(i);
        value += decoded;
        i += length;
      } else {
        value += c;
        i++;
      }
    }
    const text = this.source.slice(this.offset, i + 1);
    // Line breaks inside a string still count for the positions of later tokens.
    this.advanceTo(i + 1);
    return { kind: 'string', text, value, position };
  }

  /** The character an escape at `at` (a backslash) stands for, and the escape's length. */
  private readEscape(at: number): [string, number] {
    const c = this.source[at + 1];
    const simple = c === undefined ? undefined : ESCAPES[c];
    if (simple !== undefined) return [simple, 2];
    if (c === 'u') {
      const hex = this.source.slice(at + 2, at + 6);
      if (/^[0-9a-fA-F]{4}$/.test(hex)) return [String.fromCharCode(parseInt(hex, 16)), 6];
    }
    const found = c === undefined ? 'end of input' : quoteForMessage(`\\${c}`);
    throw new ExpressionSyntaxError(
      this.positionAt(at),
      `expected an escape (\\\\, \\', \\\`, \\", \\n, \\r, \\t or \\uXXXX) but found ${found}`,
    );
  }

  private advanceTo(end: number): void {
    const position = this.positionAt(end);
    this.offset = end;
    this.line = position.line;
    this.lineStart = end - position.column + 1;
  }

  private readSymbol(c: string, position: Position): Token {
    const two = this.source.slice(this.offset, this.offset + 2);
    if (TWO_CHAR_SYMBOLS.has(two)) {
      this.offset += 2;
      return { kind: 'symbol', text: two, position };
    }
    if (ONE_CHAR_SYMBOLS.has(c)) {
      this.offset += 1;
      return { kind: 'symbol', text: c, position };
    }
    const meant = HALF_OPERATORS[c];
    if (meant !== undefined) throw new ExpressionSyntaxError(position, `expected '${meant}' but found '${c}'`);
    if (c === '"') {
      throw new ExpressionSyntaxError(position, `unexpected character '"': strings are written in single quotes or backticks`);
    }
    throw new ExpressionSyntaxError(position, `unexpected character ${quoteForMessage(String.fromCodePoint(this.source.codePointAt(this.offset) ?? 0))}`);
  }

  private describeHere(): string {
    const c = this.source[this.offset];
    return c === undefined ? 'end of input' : quoteForMessage(c);
  }
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}
