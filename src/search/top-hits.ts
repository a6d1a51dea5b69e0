// The best `limit` hits of a search, kept in a bounded heap whose root is the worst hit
// kept: a match costs one comparison unless it beats that one, and only hits that enter
// the heap are built. Best means compareHits' order: most relevant first, equal scores in
// write order.

import { MinHeap } from '../lib/min-heap.js';

export interface RankedHit {
  score: number;
  writeId: string;
}

/** Most relevant first; equal scores in write order, so every page comes back the same. */
export function compareHits(a: RankedHit, b: RankedHit): number {
  return compareRank(a.score, a.writeId, b);
}

function compareRank(score: number, writeId: string, b: RankedHit): number {
  return b.score - score || (writeId < b.writeId ? -1 : writeId > b.writeId ? 1 : 0);
}

export class TopHits<T extends RankedHit> {
  /** The worst kept hit first: a hit that ranks after another comes before it. */
  private readonly heap = new MinHeap<T>((a, b) => compareHits(a, b) > 0);

  constructor(readonly limit: number) {}

  /**
   * Whether a hit of this score could be kept now (admits() decides on an equal score):
   * asked first, it saves looking up the writeId of most matches.
   */
  mayAdmit(score: number): boolean {
    return this.heap.size < this.limit || (this.heap.size > 0 && score >= this.heap.peek().score);
  }

  /** Whether a hit of this score and writeId would be kept now (it beats the worst kept). */
  admits(score: number, writeId: string): boolean {
    if (this.heap.size < this.limit) return true;
    return this.heap.size > 0 && compareRank(score, writeId, this.heap.peek()) < 0;
  }

  /** Keeps the hit if it is among the best `limit` so far. */
  offer(hit: T): void {
    if (this.limit === 0) return;
    if (this.heap.size < this.limit) this.heap.push(hit);
    else if (compareHits(hit, this.heap.peek()) < 0) this.heap.replaceTop(hit);
  }

  /** The kept hits, best first. */
  sorted(): T[] {
    return [...this.heap.values()].sort(compareHits);
  }
}
