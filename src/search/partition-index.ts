// The full-text index of one (stream, partition) of the ssr (DESIGN.md, "ssr"): the
// documents, a MiniSearch index of their string values for candidates and BM25 scores,
// and a term dictionary to expand wildcard and fuzzy terms (MiniSearch has no mid-term
// wildcard, DEPENDENCIES.md). Candidates are a superset; the compiled expression decides.

import MiniSearch from 'minisearch';
import SearchableMap from 'minisearch/SearchableMap';
import type { Analyzer, TermPattern } from './expression/patterns.js';
import { tokenize } from './expression/patterns.js';

export interface SsrDocument {
  writeId: string;
  partition: number;
  /** Epoch ms: the stream's primary timestamp, else the time of receipt. */
  timestamp: number;
  payload: Record<string, unknown>;
}

interface IndexedText {
  id: number;
  text: string;
}

/** Separates string values in the indexed text: never part of a token. */
const VALUE_SEPARATOR = '\u0000';
/** Bounds the terms one wildcard or fuzzy term may expand to. */
export const EXPANDED_TERMS_MAX = 10_000;

export class PartitionIndex {
  private readonly documents: SsrDocument[] = [];
  private readonly byWriteId = new Set<string>();
  private readonly text: MiniSearch<IndexedText>;
  private readonly vocabulary = new SearchableMap<true>();

  constructor(private readonly analyzer: Analyzer) {
    const split = (text: string) => text.split(VALUE_SEPARATOR).flatMap((value) => tokenize(value, analyzer));
    this.text = new MiniSearch<IndexedText>({
      fields: ['text'],
      tokenize: split,
      processTerm: (term) => term,
      searchOptions: { tokenize: (query) => [query], processTerm: (term) => term, prefix: false, fuzzy: false },
    });
  }

  get size(): number {
    return this.documents.length;
  }

  /** Adds a document once (a record stored twice, by a replay or a transfer, is indexed once). */
  add(document: SsrDocument): void {
    if (this.byWriteId.has(document.writeId)) return;
    this.byWriteId.add(document.writeId);
    const id = this.documents.length;
    this.documents.push(document);
    const text = stringValues(document.payload).join(VALUE_SEPARATOR);
    this.text.add({ id, text });
    for (const value of text.split(VALUE_SEPARATOR)) for (const term of tokenize(value, this.analyzer)) this.vocabulary.set(term, true);
  }

  all(): readonly SsrDocument[] {
    return this.documents;
  }

  /**
   * Documents that may satisfy every pattern (each pattern a term of a search), with
   * their summed BM25 scores; a superset of the exact answer.
   */
  candidates(patterns: readonly TermPattern[]): Map<number, number> | undefined {
    let result: Map<number, number> | undefined;
    for (const pattern of patterns) {
      const terms = this.expand(pattern);
      const hits = new Map<number, number>();
      if (terms.length > 0) {
        for (const hit of this.text.search({ queries: terms, combineWith: 'OR' })) hits.set(hit.id as number, hit.score);
      }
      result = result === undefined ? hits : intersect(result, hits);
      if (result.size === 0) break;
    }
    return result;
  }

  document(id: number): SsrDocument {
    return this.documents[id]!;
  }

  /** The dictionary terms a pattern matches. */
  private expand(pattern: TermPattern): string[] {
    if (pattern.kind === 'exact') return this.vocabulary.has(pattern.text) ? [pattern.text] : [];
    const terms: string[] = [];
    const scope = pattern.literalPrefix === '' ? this.vocabulary : this.vocabulary.atPrefix(pattern.literalPrefix);
    for (const term of scope.keys()) {
      if (!pattern.matches(term)) continue;
      terms.push(term);
      if (terms.length >= EXPANDED_TERMS_MAX) break;
    }
    return terms;
  }
}

function intersect(a: Map<number, number>, b: Map<number, number>): Map<number, number> {
  const out = new Map<number, number>();
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const [id, score] of small) {
    const other = large.get(id);
    if (other !== undefined) out.set(id, score + other);
  }
  return out;
}

/** Every string in a payload, nested records and arrays included. */
export function stringValues(value: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 64) return out;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) stringValues(item, out, depth + 1);
  else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) stringValues(item, out, depth + 1);
  return out;
}
