// The postings of one partition index: for each term, the documents holding it (ascending
// ids) with the term's frequency in each. Two parts, both typed arrays so that a million
// documents cost a few bytes per posting and no object each:
// - a compacted part: one array of documents and one of frequencies for every term, term t
//   at [offsets[t], offsets[t + 1]);
// - a pending part for postings added since (ingest appends documents to built indexes):
//   each term's pending postings are chained through `pendingNext`, so reading a term
//   never scans another term's. Pending postings are folded into the compacted part when
//   they are as many as the compacted ones (at least PENDING_POSTINGS_MIN), so each posting
//   is copied a bounded number of times on average.

/** Pending postings below which no compaction happens (then reading chains costs little). */
export const PENDING_POSTINGS_MIN = 65_536;
/** Frequencies saturate here; BM25's term-frequency part barely moves beyond a few dozen. */
export const TERM_FREQUENCY_MAX = 0xffff;

const NONE = -1;

export class Postings {
  private offsets = new Int32Array(1);
  private documents = new Int32Array(0);
  private frequencies = new Uint16Array(0);
  /** Terms the compacted part covers (offsets has one more entry). */
  private compactedTerms = 0;

  private pendingDocuments = new Int32Array(1024);
  private pendingFrequencies = new Uint16Array(1024);
  private pendingNext = new Int32Array(1024);
  private pendingLength = 0;

  /** Per term: its first and last pending posting (NONE without), and its document count. */
  private firstPending = new Int32Array(256).fill(NONE);
  private lastPending = new Int32Array(256).fill(NONE);
  private counts = new Int32Array(256);
  private termCount = 0;

  /** Postings held, compacted and pending. */
  get size(): number {
    return this.documents.length + this.pendingLength;
  }

  /** Bytes of the typed arrays held (monitoring). */
  get bytes(): number {
    const arrays = [this.offsets, this.documents, this.frequencies, this.pendingDocuments, this.pendingFrequencies, this.pendingNext, this.firstPending, this.lastPending, this.counts];
    return arrays.reduce((sum, array) => sum + array.byteLength, 0);
  }

  /** Documents holding the term. */
  documentFrequency(term: number): number {
    return term < this.termCount ? this.counts[term]! : 0;
  }

  /**
   * Records that `document` holds `term` `frequency` times. Documents must be added in
   * ascending order, each term at most once per document.
   */
  add(term: number, document: number, frequency: number): void {
    if (term >= this.termCount) this.addTerms(term + 1);
    const at = this.pendingLength;
    if (at === this.pendingDocuments.length) this.growPending();
    this.pendingDocuments[at] = document;
    this.pendingFrequencies[at] = Math.min(frequency, TERM_FREQUENCY_MAX);
    this.pendingNext[at] = NONE;
    const last = this.lastPending[term]!;
    if (last === NONE) this.firstPending[term] = at;
    else this.pendingNext[last] = at;
    this.lastPending[term] = at;
    this.counts[term]! += 1;
    this.pendingLength = at + 1;
    if (this.pendingLength >= Math.max(PENDING_POSTINGS_MIN, this.documents.length)) this.compact();
  }

  /** Calls `visit` for each document holding the term, in ascending document order. */
  read(term: number, visit: (document: number, frequency: number) => void): void {
    if (term >= this.termCount) return;
    if (term < this.compactedTerms) {
      const documents = this.documents;
      const frequencies = this.frequencies;
      for (let at = this.offsets[term]!, end = this.offsets[term + 1]!; at < end; at++) visit(documents[at]!, frequencies[at]!);
    }
    for (let at = this.firstPending[term]!; at !== NONE; at = this.pendingNext[at]!) visit(this.pendingDocuments[at]!, this.pendingFrequencies[at]!);
  }

  /** Folds the pending postings into the compacted part. */
  compact(): void {
    if (this.pendingLength === 0 && this.compactedTerms === this.termCount) return;
    const total = this.documents.length + this.pendingLength;
    const offsets = new Int32Array(this.termCount + 1);
    const documents = new Int32Array(total);
    const frequencies = new Uint16Array(total);
    let out = 0;
    for (let term = 0; term < this.termCount; term++) {
      offsets[term] = out;
      if (term < this.compactedTerms) {
        const start = this.offsets[term]!;
        const end = this.offsets[term + 1]!;
        documents.set(this.documents.subarray(start, end), out);
        frequencies.set(this.frequencies.subarray(start, end), out);
        out += end - start;
      }
      for (let at = this.firstPending[term]!; at !== NONE; at = this.pendingNext[at]!) {
        documents[out] = this.pendingDocuments[at]!;
        frequencies[out] = this.pendingFrequencies[at]!;
        out += 1;
      }
      this.firstPending[term] = NONE;
      this.lastPending[term] = NONE;
    }
    offsets[this.termCount] = out;
    if (out !== total) throw new Error(`postings compaction wrote ${out} of ${total} postings`);
    this.offsets = offsets;
    this.documents = documents;
    this.frequencies = frequencies;
    this.compactedTerms = this.termCount;
    this.pendingLength = 0;
    // A small pending area again: a built index that receives few appends stays small.
    if (this.pendingDocuments.length > 1024) this.shrinkPending();
  }

  private addTerms(count: number): void {
    if (count > this.firstPending.length) {
      const capacity = Math.max(count, this.firstPending.length * 2);
      this.firstPending = grown(this.firstPending, capacity, NONE);
      this.lastPending = grown(this.lastPending, capacity, NONE);
      this.counts = grown(this.counts, capacity, 0);
    }
    this.termCount = count;
  }

  private growPending(): void {
    const capacity = this.pendingDocuments.length * 2;
    this.pendingDocuments = grown(this.pendingDocuments, capacity, 0);
    this.pendingFrequencies = grown(this.pendingFrequencies, capacity, 0);
    this.pendingNext = grown(this.pendingNext, capacity, NONE);
  }

  private shrinkPending(): void {
    this.pendingDocuments = new Int32Array(1024);
    this.pendingFrequencies = new Uint16Array(1024);
    this.pendingNext = new Int32Array(1024);
  }
}

/** Non-negative integers per document, in the narrowest array that holds them all. */
export type SmallIntegers = Uint8Array | Uint16Array | Int32Array;

/**
 * `array` with `value` stored at `at`, grown to hold `at` and widened to hold `value`
 * (Uint8 → Uint16 → Int32): a search reads these at random, so the fewer cache lines the
 * whole array takes, the fewer misses.
 */
export function storedSmall(array: SmallIntegers, at: number, value: number): SmallIntegers {
  if (value > 0xffff && !(array instanceof Int32Array)) array = Int32Array.from(array);
  else if (value > 0xff && array instanceof Uint8Array) array = Uint16Array.from(array);
  if (at >= array.length) array = grown(array, Math.max(at + 1, array.length * 2), 0);
  array[at] = value;
  return array;
}

/** A copy of `array` with room for `capacity` entries, the new ones set to `fill`. */
export function grown<T extends Int32Array | Uint16Array | Uint8Array | Float64Array>(array: T, capacity: number, fill: number): T {
  const copy = new (array.constructor as new (length: number) => T)(capacity);
  copy.set(array);
  if (fill !== 0) copy.fill(fill, array.length);
  return copy;
}
