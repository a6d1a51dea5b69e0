// Bare stream URIs (`from /streams/demo/infrastructure/cpu`) are not expressions: their
// names may hold characters the expression lexer refuses or splits (`5g-cells`, `a:b`),
// since stream names exclude only '/' and control characters (src/lib/names.ts). So before the
// shared lexer runs, each bare URI in a source position is found and masked by a string
// literal of the same length: positions of every later token stay exact, and the parser
// takes the masked string back as the URI it stands for.

/** Where the source text held a bare URI, by the offset at which it starts. */
export type MaskedUris = ReadonlyMap<number, string>;

const URI_PREFIX = '/streams/';
const WORD_CHARACTER = /[\p{L}\p{M}\p{N}_]/u;
const WHITESPACE = /\s/;

/**
 * The source with bare URIs masked, and the URIs by offset. A URI counts only right after
 * `from`, `from historical`, `into` or `into stream` (outside strings and comments), and
 * runs to the next whitespace: the grammar puts nothing else directly after one.
 */
export function maskStreamUris(source: string): { masked: string; uris: MaskedUris } {
  const uris = new Map<number, string>();
  const words: string[] = [];
  let masked = '';
  let copiedTo = 0;
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === "'" || c === '`') {
      i = stringEnd(source, i);
      words.length = 0;
    } else if (c === '-' && next === '-') {
      // A comment between `from` and the URI keeps the URI in a source position.
      while (i < source.length && source[i] !== '\n' && source[i] !== '\r') i++;
    } else if (WHITESPACE.test(c)) {
      i++;
    } else if (WORD_CHARACTER.test(c)) {
      const start = i;
      while (i < source.length && WORD_CHARACTER.test(source[i] as string)) i++;
      words.push(source.slice(start, i).toLowerCase());
    } else if (source.startsWith(URI_PREFIX, i) && inSourcePosition(words)) {
      const start = i;
      while (i < source.length && !WHITESPACE.test(source[i] as string)) i++;
      uris.set(start, source.slice(start, i));
      masked += source.slice(copiedTo, start) + mask(i - start);
      copiedTo = i;
      words.length = 0;
    } else {
      i++;
      words.length = 0;
    }
  }
  return { masked: masked + source.slice(copiedTo), uris };
}

function inSourcePosition(words: readonly string[]): boolean {
  const last = words[words.length - 1];
  const before = words[words.length - 2];
  if (last === 'from' || last === 'into') return true;
  return (last === 'historical' && before === 'from') || (last === 'stream' && before === 'into');
}

/** The offset after a string literal starting at `start`, or the end for an unterminated one. */
function stringEnd(source: string, start: number): number {
  const quote = source[start];
  let i = start + 1;
  while (i < source.length && source[i] !== quote) i += source[i] === '\\' ? 2 : 1;
  return Math.min(i + 1, source.length);
}

/** A backtick string as long as the URI; its content never reaches a message. */
function mask(length: number): string {
  return `\`${'_'.repeat(length - 2)}\``;
}
