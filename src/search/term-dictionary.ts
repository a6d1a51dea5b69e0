// The terms of one partition index, each with a dense id (its postings' row). Exact terms
// are found in an open-addressing hash table of ids, which can also be probed with a run
// of ASCII characters in a document's text, lowercased on the fly: indexing then makes no
// string for a token it has seen before. Wildcard and fuzzy terms are expanded from the
// terms in sorted order, a prefix being one binary search and a contiguous run. The sorted
// order is kept lazily: terms added since the last expansion are sorted among themselves
// and merged in.

import type { TermPattern } from '../expression/patterns.js';
import { grown } from './postings.js';

/** Bounds the terms one wildcard or fuzzy term may expand to. */
export const EXPANDED_TERMS_MAX = 10_000;

export interface Expansion {
  /** Ids of the matching terms, in sorted term order. */
  ids: number[];
  /** False when more than EXPANDED_TERMS_MAX terms match: `ids` is then not all of them. */
  complete: boolean;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const EMPTY = -1;

/** FNV-1a of one more UTF-16 code unit. */
export function hashStep(hash: number, code: number): number {
  return Math.imul(hash ^ code, FNV_PRIME);
}

export const HASH_START = FNV_OFFSET;

/** ASCII upper case to lower case; every other code unit as it is. */
export function lowerAscii(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

export class TermDictionary {
  /** Term ids by hash, EMPTY where free; at most half full. */
  private slots = new Int32Array(1024).fill(EMPTY);
  private hashes = new Int32Array(512);
  private readonly terms: string[] = [];
  /** Term ids sorted by term; covers the first `sortedCount` ids. */
  private sorted: number[] = [];
  private sortedCount = 0;

  get size(): number {
    return this.terms.length;
  }

  /** Bytes held, estimated: the tables, and each term's UTF-16 text with its string header (monitoring). */
  get bytes(): number {
    let text = 0;
    for (const term of this.terms) text += 16 + term.length * 2;
    return this.slots.byteLength + this.hashes.byteLength + this.sorted.length * 8 + text;
  }

  id(term: string): number | undefined {
    const slot = this.find(hashOf(term), term, 0, term.length, false);
    const id = this.slots[slot]!;
    return id === EMPTY ? undefined : id;
  }

  /** The term's id, added when new. */
  intern(term: string): number {
    const hash = hashOf(term);
    const slot = this.find(hash, term, 0, term.length, false);
    const id = this.slots[slot]!;
    return id === EMPTY ? this.insert(slot, hash, term) : id;
  }

  /**
   * The id of `text[start, end)` lowercased, added when new; the text there must be ASCII
   * and `hash` its hashStep chain from HASH_START over the lowercased code units.
   */
  internAscii(text: string, start: number, end: number, hash: number): number {
    const slot = this.find(hash, text, start, end, true);
    const id = this.slots[slot]!;
    return id === EMPTY ? this.insert(slot, hash, text.slice(start, end).toLowerCase()) : id;
  }

  term(id: number): string {
    return this.terms[id]!;
  }

  /** The terms a pattern matches. */
  expand(pattern: TermPattern): Expansion {
    if (pattern.kind === 'exact') {
      const id = this.id(pattern.text);
      return { ids: id === undefined ? [] : [id], complete: true };
    }
    const sorted = this.sortedIds();
    const prefix = pattern.literalPrefix;
    const ids: number[] = [];
    for (let at = prefix === '' ? 0 : this.lowerBound(prefix); at < sorted.length; at++) {
      const id = sorted[at]!;
      const term = this.terms[id]!;
      if (!term.startsWith(prefix)) break;
      if (!pattern.matches(term)) continue;
      if (ids.length === EXPANDED_TERMS_MAX) return { ids, complete: false };
      ids.push(id);
    }
    return { ids, complete: true };
  }

  /** The slot holding the term `text[start, end)` (lowercased if asked), or the free slot where it would go. */
  private find(hash: number, text: string, start: number, end: number, lowercase: boolean): number {
    const mask = this.slots.length - 1;
    const length = end - start;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]!;
      if (id === EMPTY) return slot;
      if (this.hashes[id] !== hash) continue;
      const term = this.terms[id]!;
      if (term.length !== length) continue;
      let at = 0;
      if (lowercase) while (at < length && term.charCodeAt(at) === lowerAscii(text.charCodeAt(start + at))) at++;
      else while (at < length && term.charCodeAt(at) === text.charCodeAt(start + at)) at++;
      if (at === length) return slot;
    }
  }

  private insert(slot: number, hash: number, term: string): number {
    const id = this.terms.length;
    this.terms.push(term);
    if (id === this.hashes.length) this.hashes = grown(this.hashes, id * 2, 0);
    this.hashes[id] = hash;
    this.slots[slot] = id;
    if (this.terms.length * 2 > this.slots.length) this.rehash();
    return id;
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(EMPTY);
    const mask = slots.length - 1;
    for (let id = 0; id < this.terms.length; id++) {
      let slot = this.hashes[id]! & mask;
      while (slots[slot] !== EMPTY) slot = (slot + 1) & mask;
      slots[slot] = id;
    }
    this.slots = slots;
  }

  private sortedIds(): number[] {
    if (this.sortedCount === this.terms.length) return this.sorted;
    const terms = this.terms;
    const byTerm = (a: number, b: number) => (terms[a]! < terms[b]! ? -1 : 1);
    const added: number[] = [];
    for (let id = this.sortedCount; id < terms.length; id++) added.push(id);
    added.sort(byTerm);
    const merged = new Array<number>(this.sorted.length + added.length);
    let i = 0;
    let j = 0;
    for (let out = 0; out < merged.length; out++) {
      const takeOld = j >= added.length || (i < this.sorted.length && byTerm(this.sorted[i]!, added[j]!) < 0);
      merged[out] = takeOld ? this.sorted[i++]! : added[j++]!;
    }
    this.sorted = merged;
    this.sortedCount = terms.length;
    return merged;
  }

  /** The first position in sorted order whose term is not below `text`. */
  private lowerBound(text: string): number {
    let low = 0;
    let high = this.sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.terms[this.sorted[middle]!]! < text) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

function hashOf(term: string): number {
  let hash = HASH_START;
  for (let at = 0; at < term.length; at++) hash = hashStep(hash, term.charCodeAt(at));
  return hash;
}
