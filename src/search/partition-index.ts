// The full-text index of one (stream, partition) of the ssr (docs/platform-decisions.md,
// "Search"): the documents, own postings of their string values' terms (postings.ts) for
// candidates and BM25 scores, a term dictionary that expands wildcard, prefix and fuzzy terms
// (term-dictionary.ts), and the documents in timestamp order for time ranges and histograms.
// Documents are numbered in the order they are added; ingest appends to a built index, and a
// transfer replaces it (ssr-index.ts).
//
// Relevance is BM25 as MiniSearch computed it before this index replaced it:
// k 1.2, b 0.7, d 0.5, a document's length being its number of distinct terms, and a
// pattern's score being the sum over the terms it expanded to times how many of them the
// document holds. The average length is the exact mean, so every replica of a partition
// scores alike whatever order it received the documents in.

import type { Analyzer, TermPattern } from '../expression/patterns.js';
import { tokenize } from '../expression/patterns.js';
import { grown, Postings, storedSmall, type SmallIntegers } from './postings.js';
import { HASH_START, hashStep, lowerAscii, TermDictionary } from './term-dictionary.js';
import { defaultFieldAccessor } from '../expression/evaluate.js';

export interface SsrDocument {
  writeId: string;
  /** Epoch ms: the stream's primary timestamp, else the time of receipt. */
  timestamp: number;
  payload: Record<string, unknown>;
}

/** Documents (ascending ids) with their scores: `length` entries of each array are used. */
export interface ScoredDocuments {
  documents: Int32Array;
  scores: Float64Array;
  length: number;
}

export interface MatchOptions {
  /** A test each matched document must also pass (left out before it is scored); undefined: none. */
  readonly keep?: ((document: number) => boolean) | undefined;
  /** Whether documents are scored (BM25); false: every score is 0. Default true. */
  readonly scored?: boolean;
}

export interface TermMatches {
  /** Documents holding a match of every pattern that could be expanded; undefined: none could. */
  matched: ScoredDocuments | undefined;
  /**
   * True when every pattern was expanded to all of its terms, so `matched` holds exactly
   * the documents in which each pattern matches some term.
   */
  complete: boolean;
}

/** The documents in timestamp order (ties in document order). */
export interface TimeOrder {
  times: Float64Array;
  documents: Int32Array;
  length: number;
}

const BM25_K = 1.2;
const BM25_B = 0.7;
const BM25_D = 0.5;
/** Stops runaway walks through deeply nested payloads, as the evaluator's search() does. */
const STRING_DEPTH_MAX = 64;
const NON_ASCII = /[^\u0000-\u007f]/;

export class PartitionIndex {
  private readonly writeIds: string[] = [];
  private readonly payloads: Array<Record<string, unknown>> = [];
  private readonly byWriteId = new Set<string>();
  private timestamps = new Float64Array(1024);
  /** Distinct terms per document: its length for BM25. */
  private lengths: SmallIntegers = new Uint8Array(1024);
  private lengthTotal = 0;
  private readonly dictionary = new TermDictionary();
  private readonly postings = new Postings();
  private timeOrder: TimeOrder = { times: new Float64Array(0), documents: new Int32Array(0), length: 0 };
  /** Per term id while a document is added: its frequency in that document. */
  private frequencies = new Int32Array(1024);
  /** Values of a field or level per document (doc values), built on first use, kept as documents are added. */
  private readonly columns = new Map<string, DocColumn>();

  constructor(readonly analyzer: Analyzer) {}

  get size(): number {
    return this.writeIds.length;
  }

  /**
   * Bytes of the index structures (typed arrays, postings, terms), estimated for monitoring;
   * the payload objects it keeps for answers are not counted.
   */
  get indexBytes(): number {
    const arrays = this.timestamps.byteLength + this.lengths.byteLength + this.frequencies.byteLength + this.timeOrder.times.byteLength + this.timeOrder.documents.byteLength;
    return arrays + this.postings.bytes + this.dictionary.bytes + this.writeIds.length * 40;
  }

  /** Adds a document once (a record stored twice, by a replay or a transfer, is indexed once). */
  add(document: SsrDocument): void {
    if (this.byWriteId.has(document.writeId)) return;
    this.byWriteId.add(document.writeId);
    const id = this.writeIds.length;
    if (id === this.timestamps.length) {
      this.timestamps = grown(this.timestamps, id * 2, 0);
    }
    this.writeIds.push(document.writeId);
    this.payloads.push(document.payload);
    this.timestamps[id] = document.timestamp;
    const length = this.indexTerms(id, document.payload);
    this.lengths = storedSmall(this.lengths, id, length);
    this.lengthTotal += length;
    for (const column of this.columns.values()) column.append(document.payload);
  }

  /**
   * A numeric field's value per document (NaN where it holds no number), as Elasticsearch's
   * doc values: a filter on it reads an array, not each payload. undefined when a document
   * holds an integer beyond 2^53 there (a double would not compare exactly).
   */
  numbers(path: readonly string[]): Float64Array | undefined {
    // Read as the expression reads a field (own fields, no array indices).
    const column = this.column(columnKey(path, 'n'), () => new NumberColumn(defaultFieldAccessor(path)));
    return (column as NumberColumn).values;
  }

  /**
   * A taxonomy facet's path per document (its levels' values, up to the first missing one)
   * as a code into `dictionary`, for counting facets. The dictionary is the stream's for
   * those levels (ssr-index.ts), so codes are the same in every partition of a node and a
   * search counts them all in one array.
   */
  pathCodes(levels: readonly string[], read: (payload: Record<string, unknown>) => string[], dictionary: PathDictionary): { readonly codes: SmallIntegers } {
    const key = columnKey(levels, 'p');
    const column = this.column(key, () => new PathColumn(read, dictionary)) as PathColumn;
    // Built with a dictionary the node has since let go of (ssr-index.ts): built again.
    if (column.dictionary === dictionary) return column;
    this.columns.delete(key);
    return this.pathCodes(levels, read, dictionary);
  }

  private column(key: string, make: () => DocColumn): DocColumn {
    let column = this.columns.get(key);
    if (column === undefined) {
      if (this.columns.size >= DOC_COLUMNS_MAX) this.columns.delete(this.columns.keys().next().value!);
      column = make();
      for (const payload of this.payloads) column.append(payload);
      this.columns.set(key, column);
    }
    return column;
  }

  /** Makes the postings compact after a bulk load; reads work either way. */
  compact(): void {
    this.postings.compact();
  }

  writeId(document: number): string {
    return this.writeIds[document]!;
  }

  payload(document: number): Record<string, unknown> {
    return this.payloads[document]!;
  }

  timestamp(document: number): number {
    return this.timestamps[document]!;
  }

  /**
   * Documents in which every pattern (each a term of a search) matches some term, scored.
   * The arrays are scratch space shared by every index: valid until the next match().
   * `keep` (a test the documents must also pass) leaves out the documents it refuses before
   * they are scored; without `scored`, every score is 0 (a search that returns no hits).
   */
  match(patterns: readonly TermPattern[], { keep, scored: scoring = true }: MatchOptions = {}): TermMatches {
    let matched: ScoredDocuments | undefined;
    let complete = true;
    for (const pattern of patterns) {
      const expansion = this.dictionary.expand(pattern);
      // A pattern cut short cannot narrow the candidates: the documents of its other terms
      // would be lost. It is left to the evaluator.
      if (!expansion.complete) {
        complete = false;
        continue;
      }
      // The test once, with the first pattern read: the intersection keeps only what passed it.
      const scored = this.score(expansion.ids, scratchOtherThan(matched), matched === undefined ? keep : undefined, scoring);
      matched = matched === undefined ? scored : intersect(matched, scored, scratchOtherThan(matched, scored));
      if (matched.length === 0) break;
    }
    return { matched, complete };
  }

  /** The documents in timestamp order, brought up to date with documents added since. */
  byTime(): TimeOrder {
    const sorted = this.timeOrder;
    const size = this.writeIds.length;
    if (sorted.length === size) return sorted;
    const times = this.timestamps;
    const added = new Int32Array(size - sorted.length);
    for (let i = 0; i < added.length; i++) added[i] = sorted.length + i;
    added.sort((a, b) => times[a]! - times[b]! || a - b);
    this.timeOrder = mergeByTime(sorted, added, times);
    return this.timeOrder;
  }

  /** Interns the document's terms and adds its postings; returns its distinct terms. */
  private indexTerms(document: number, payload: Record<string, unknown>): number {
    const touched: number[] = [];
    const count = (term: number): void => {
      if (term >= this.frequencies.length) this.frequencies = grown(this.frequencies, Math.max(term + 1, this.frequencies.length * 2), 0);
      if (this.frequencies[term]!++ === 0) touched.push(term);
    };
    forEachString(payload, (text) => this.forEachTerm(text, count), 0);
    for (const term of touched) {
      this.postings.add(term, document, this.frequencies[term]!);
      this.frequencies[term] = 0;
    }
    return touched.length;
  }

  /**
   * Calls `visit` with the id of each term of `text`, as `tokenize` splits it. ASCII text
   * with the standard analyzer (runs of ASCII letters and digits, lowercased) is split here,
   * hashing as it goes, without making a string per token.
   */
  private forEachTerm(text: string, visit: (term: number) => void): void {
    if (this.analyzer !== 'standard' || NON_ASCII.test(text)) {
      for (const token of tokenize(text, this.analyzer)) visit(this.dictionary.intern(token));
      return;
    }
    let start = -1;
    let hash = HASH_START;
    for (let at = 0; at <= text.length; at++) {
      const code = at < text.length ? lowerAscii(text.charCodeAt(at)) : 0;
      if ((code >= 97 && code <= 122) || (code >= 48 && code <= 57)) {
        if (start < 0) {
          start = at;
          hash = HASH_START;
        }
        hash = hashStep(hash, code);
      } else if (start >= 0) {
        visit(this.dictionary.internAscii(text, start, at, hash));
        start = -1;
      }
    }
  }

  /**
   * The documents holding any of the terms that `keep` passes, each scored (unless not
   * `scoring`: 0) as the sum over the terms times their number.
   */
  private score(terms: readonly number[], into: ScoredDocuments, keep: ((document: number) => boolean) | undefined, scoring: boolean): ScoredDocuments {
    const count = this.writeIds.length;
    const averageLength = this.lengthTotal / count;
    const lengths = this.lengths;
    const [only] = terms;
    if (terms.length === 1 && only !== undefined) {
      const frequency = this.postings.documentFrequency(only);
      const { documents, scores } = reserve(into, frequency);
      const idf = inverseDocumentFrequency(count, frequency);
      let at = 0;
      this.postings.read(only, (document, termFrequency) => {
        if (keep !== undefined && !keep(document)) return;
        documents[at] = document;
        scores[at] = scoring ? bm25(idf, termFrequency, lengths[document]!, averageLength) : 0;
        at += 1;
      });
      into.length = at;
      return into;
    }
    // Several terms (an expanded wildcard or fuzzy term): dense sums, then one pass in order
    // that also clears them for the next use.
    const { sums, held } = denseScratch(count);
    let matched = 0;
    for (const term of terms) {
      const idf = inverseDocumentFrequency(count, this.postings.documentFrequency(term));
      this.postings.read(term, (document, termFrequency) => {
        if (held[document]!++ === 0) matched += 1;
        if (scoring) sums[document]! += bm25(idf, termFrequency, lengths[document]!, averageLength);
      });
    }
    const { documents, scores } = reserve(into, matched);
    let at = 0;
    for (let document = 0, seen = 0; seen < matched; document++) {
      if (held[document] === 0) continue;
      seen += 1;
      if (keep === undefined || keep(document)) {
        documents[at] = document;
        scores[at] = scoring ? sums[document]! * held[document]! : 0;
        at += 1;
      }
      held[document] = 0;
      sums[document] = 0;
    }
    into.length = at;
    return into;
  }
}

/**
 * The key of a doc value column: its kind and the list of strings naming it. Memoised per
 * array (the callers' field paths and taxonomy levels are never changed once made), as a
 * search asks each of its partitions for the column of the same array.
 */
function columnKey(names: readonly string[], kind: 'n' | 'p'): string {
  const memo = kind === 'n' ? numberColumnKeys : pathColumnKeys;
  let key = memo.get(names);
  if (key === undefined) memo.set(names, (key = kind + pathKey(names)));
  return key;
}

const numberColumnKeys = new WeakMap<readonly string[], string>();
const pathColumnKeys = new WeakMap<readonly string[], string>();

/** Doc value columns one index keeps; the oldest goes first. */
const DOC_COLUMNS_MAX = 8;

interface DocColumn {
  append(payload: Record<string, unknown>): void;
}

class NumberColumn implements DocColumn {
  private array = new Float64Array(1024);
  private length = 0;
  private exact = true;

  constructor(private readonly read: (payload: Record<string, unknown>) => unknown) {}

  get values(): Float64Array | undefined {
    return this.exact ? this.array : undefined;
  }

  append(payload: Record<string, unknown>): void {
    const value = this.read(payload);
    if (typeof value === 'bigint') this.exact = false;
    if (this.length === this.array.length) this.array = grown(this.array, this.length * 2, Number.NaN);
    this.array[this.length++] = typeof value === 'number' ? value : Number.NaN;
  }
}

/** Text that names a list of strings and no other (each is prefixed by its length). */
export function pathKey(values: readonly string[]): string {
  let key = '';
  for (const value of values) key += `${value.length}:${value}`;
  return key;
}

/** The distinct paths of a taxonomy facet, each with its code (its place among them): they only grow. */
export class PathDictionary {
  readonly paths: Array<readonly string[]> = [];
  private readonly byKey = new Map<string, number>();

  codeOf(path: readonly string[]): number {
    const key = pathKey(path);
    let code = this.byKey.get(key);
    if (code === undefined) {
      code = this.paths.push(path) - 1;
      this.byKey.set(key, code);
    }
    return code;
  }
}

class PathColumn implements DocColumn {
  codes: SmallIntegers = new Uint8Array(1024);
  private length = 0;

  constructor(
    private readonly read: (payload: Record<string, unknown>) => string[],
    readonly dictionary: PathDictionary,
  ) {}

  append(payload: Record<string, unknown>): void {
    this.codes = storedSmall(this.codes, this.length++, this.dictionary.codeOf(this.read(payload)));
  }
}

// Scratch space for match(): a search asks one partition at a time and reads its matches
// before it next awaits, so one set serves every index without allocating per partition.
const SCRATCH: ScoredDocuments[] = [0, 1, 2].map(() => ({ documents: new Int32Array(1024), scores: new Float64Array(1024), length: 0 }));
let denseSums = new Float64Array(1024);
let denseHeld = new Int32Array(1024);

function scratchOtherThan(...inUse: Array<ScoredDocuments | undefined>): ScoredDocuments {
  const free = SCRATCH.find((buffer) => !inUse.includes(buffer));
  if (free === undefined) throw new Error('match() scratch: every buffer is in use');
  return free;
}

/** Room for `count` entries (the contents are not kept). */
function reserve(buffer: ScoredDocuments, count: number): ScoredDocuments {
  if (buffer.documents.length < count) {
    const capacity = Math.max(count, buffer.documents.length * 2);
    buffer.documents = new Int32Array(capacity);
    buffer.scores = new Float64Array(capacity);
  }
  buffer.length = 0;
  return buffer;
}

/** Zeroed per-document sums and term counts for `count` documents. */
function denseScratch(count: number): { sums: Float64Array; held: Int32Array } {
  if (denseSums.length < count) {
    denseSums = new Float64Array(Math.max(count, denseSums.length * 2));
    denseHeld = new Int32Array(denseSums.length);
  }
  return { sums: denseSums, held: denseHeld };
}

function inverseDocumentFrequency(documents: number, holding: number): number {
  return Math.log(1 + (documents - holding + 0.5) / (holding + 0.5));
}

function bm25(idf: number, termFrequency: number, length: number, averageLength: number): number {
  return idf * (BM25_D + (termFrequency * (BM25_K + 1)) / (termFrequency + BM25_K * (1 - BM25_B + (BM25_B * length) / averageLength)));
}

/** The documents in both, their scores summed. */
function intersect(a: ScoredDocuments, b: ScoredDocuments, into: ScoredDocuments): ScoredDocuments {
  const { documents, scores } = reserve(into, Math.min(a.length, b.length));
  let i = 0;
  let j = 0;
  let out = 0;
  while (i < a.length && j < b.length) {
    const x = a.documents[i]!;
    const y = b.documents[j]!;
    if (x < y) i++;
    else if (y < x) j++;
    else {
      documents[out] = x;
      scores[out] = a.scores[i++]! + b.scores[j++]!;
      out += 1;
    }
  }
  into.length = out;
  return into;
}

function mergeByTime(sorted: TimeOrder, added: Int32Array, times: Float64Array): TimeOrder {
  const length = sorted.length + added.length;
  const merged: TimeOrder = { times: new Float64Array(length), documents: new Int32Array(length), length };
  let i = 0;
  let j = 0;
  for (let out = 0; out < length; out++) {
    // Old documents have lower ids: on equal times they come first.
    const takeOld = j >= added.length || (i < sorted.length && sorted.times[i]! <= times[added[j]!]!);
    const document = takeOld ? sorted.documents[i++]! : added[j++]!;
    merged.documents[out] = document;
    merged.times[out] = times[document]!;
  }
  return merged;
}

/**
 * Calls `visit` for every string in a payload, nested records and arrays included: the
 * strings search(pattern) looks at (search-functions.ts), down to the same depth.
 */
export function forEachString(value: unknown, visit: (text: string) => void, depth: number): void {
  if (typeof value === 'string') {
    visit(value);
    return;
  }
  if (typeof value !== 'object' || value === null || depth >= STRING_DEPTH_MAX) return;
  if (Array.isArray(value)) {
    for (const item of value) forEachString(item, visit, depth + 1);
    return;
  }
  for (const key in value) if (Object.hasOwn(value, key)) forEachString((value as Record<string, unknown>)[key], visit, depth + 1);
}
