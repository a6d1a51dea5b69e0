// Wildcard matching in time linear in the text: `like()` and wildcard terms run on every
// candidate value, so a pattern chosen by a client must not make one value cost more than a
// pass over it. The pattern is split at its stars into segments: the first must match at the
// start, the last at the end, and the ones between are found leftmost-first, each after the
// previous (leftmost is always as good as any later match, so no backtracking is needed). A
// segment may hold `?` (one code point), so it is found with the bit-parallel Shift-And scan,
// which handles `?` as a position every character matches: each text position is scanned by one
// segment at most, at a cost of one machine word per 32 pattern positions. Patterns are bounded
// (patterns.ts), so that is linear.

/** Glob elements: code units, or these two wildcards (patterns.ts builds them). */
export const STAR = -1;
export const ONE = -2;

export type GlobMatcher = (text: string) => boolean;

/** A matcher of whole (already lowercased) values for a glob of code units and wildcards. */
export function compileGlob(glob: readonly number[]): GlobMatcher {
  const elements = toCodePointElements(glob);
  const segments = splitAtStars(elements);
  const anchoredBothEnds = segments.length === 1;
  const middle = segments.slice(1, -1).filter((segment) => segment.length > 0).map(compileSegment);
  const first = segments[0]!;
  const last = segments[segments.length - 1]!;
  return (text) => {
    const codes = toCodePoints(text);
    if (anchoredBothEnds) return codes.length === first.length && matchesAt(first, codes, 0);
    if (codes.length < first.length + last.length || !matchesAt(first, codes, 0)) return false;
    let position = first.length;
    const lastStart = codes.length - last.length;
    for (const segment of middle) {
      const end = segment.find(codes, position, lastStart);
      if (end < 0) return false;
      position = end;
    }
    return position <= lastStart && matchesAt(last, codes, lastStart);
  };
}

interface Segment {
  length: number;
  /** The end (exclusive) of the leftmost occurrence starting at or after `from` and ending by `limit`; -1 if none. */
  find(codes: readonly number[], from: number, limit: number): number;
}

/** Merges surrogate pairs of literal code units into code points; wildcards stay. */
function toCodePointElements(glob: readonly number[]): number[] {
  const elements: number[] = [];
  for (let i = 0; i < glob.length; i++) {
    const unit = glob[i]!;
    const next = glob[i + 1];
    if (unit >= 0xd800 && unit <= 0xdbff && next !== undefined && next >= 0xdc00 && next <= 0xdfff) {
      elements.push((unit - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000);
      i++;
    } else {
      elements.push(unit);
    }
  }
  return elements;
}

function splitAtStars(elements: readonly number[]): number[][] {
  const segments: number[][] = [[]];
  for (const element of elements) {
    if (element === STAR) segments.push([]);
    else segments[segments.length - 1]!.push(element);
  }
  return segments;
}

function matchesAt(segment: readonly number[], codes: readonly number[], start: number): boolean {
  for (let i = 0; i < segment.length; i++) {
    const element = segment[i]!;
    if (element !== ONE && element !== codes[start + i]) return false;
  }
  return true;
}

/** Shift-And over `words` 32-bit words: bit j of the state says the segment's first j+1 elements end here. */
function compileSegment(segment: readonly number[]): Segment {
  const words = Math.ceil(segment.length / 32);
  const anyMask = new Uint32Array(words);
  const masks = new Map<number, Uint32Array>();
  segment.forEach((element, position) => {
    if (element === ONE) anyMask[position >>> 5]! |= 1 << (position & 31);
  });
  segment.forEach((element, position) => {
    if (element === ONE) return;
    let mask = masks.get(element);
    if (mask === undefined) masks.set(element, (mask = Uint32Array.from(anyMask)));
    mask[position >>> 5]! |= 1 << (position & 31);
  });
  const lastWord = words - 1;
  const lastBit = 1 << ((segment.length - 1) & 31);
  const state = new Uint32Array(words);
  return {
    length: segment.length,
    find(codes, from, limit) {
      state.fill(0);
      for (let at = from; at < limit; at++) {
        const mask = masks.get(codes[at]!) ?? anyMask;
        let carry = 1;
        for (let word = 0; word < words; word++) {
          const value = state[word]!;
          state[word] = ((value << 1) | carry) & mask[word]!;
          carry = value >>> 31;
        }
        if ((state[lastWord]! & lastBit) !== 0) return at + 1;
      }
      return -1;
    },
  };
}

function toCodePoints(text: string): number[] {
  const codes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        codes.push((unit - 0xd800) * 0x400 + (next - 0xdc00) + 0x10000);
        i++;
        continue;
      }
    }
    codes.push(unit);
  }
  return codes;
}
