// The best `limit` hits of a search, kept in a bounded heap whose root is the worst hit
// kept: a match costs one comparison unless it beats that one, and only hits that enter
// the heap are built. Best means compareHits' order: most relevant first, equal scores in
// write order.

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
  /** A binary heap, the worst kept hit at the root. */
  private readonly heap: T[] = [];

  constructor(readonly limit: number) {}

  /** Whether a hit of this score and writeId would be kept now (it beats the worst kept). */
  admits(score: number, writeId: string): boolean {
    if (this.heap.length < this.limit) return true;
    const worst = this.heap[0];
    return worst !== undefined && compareRank(score, writeId, worst) < 0;
  }

  /** Keeps the hit if it is among the best `limit` so far. */
  offer(hit: T): void {
    if (this.limit === 0) return;
    if (this.heap.length < this.limit) {
      this.heap.push(hit);
      this.siftUp(this.heap.length - 1);
      return;
    }
    if (compareHits(hit, this.heap[0]!) >= 0) return;
    this.heap[0] = hit;
    this.siftDown(0);
  }

  /** The kept hits, best first. */
  sorted(): T[] {
    return [...this.heap].sort(compareHits);
  }

  /** The heap orders by "worse first": a is above b when a ranks after b. */
  private above(a: T, b: T): boolean {
    return compareHits(a, b) > 0;
  }

  private siftUp(at: number): void {
    const heap = this.heap;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!this.above(heap[at]!, heap[parent]!)) return;
      [heap[at], heap[parent]] = [heap[parent]!, heap[at]!];
      at = parent;
    }
  }

  private siftDown(at: number): void {
    const heap = this.heap;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let top = at;
      if (left < heap.length && this.above(heap[left]!, heap[top]!)) top = left;
      if (right < heap.length && this.above(heap[right]!, heap[top]!)) top = right;
      if (top === at) return;
      [heap[at], heap[top]] = [heap[top]!, heap[at]!];
      at = top;
    }
  }
}
