// One node's share of a search: the partitions it was asked for, each answered from its
// ssr index. The answer is made of parts the node asked can merge exactly: totals, each
// stream's best hits, facet count trees, range counts and histogram buckets.

import { datetimeMs } from './expression/datetime.js';
import { compile, matches, type Evaluator } from './expression/evaluate.js';
import { termsOf } from './expression/analysis.js';
import { parseExpression } from './expression/parser.js';
import type { Analyzer, TermPattern } from './expression/patterns.js';
import { countPath, countRanges, emptyTree, type CountTree, type FacetNode, type RangeFacetRequest } from './facets.js';
import { addToHistogram, emptyHistogram, type Frequency, type Histogram } from './histogram.js';
import type { SsrDocument } from './partition-index.js';
import type { SsrIndex } from './ssr-index.js';
import { pathReader } from '../json.js';

export interface StreamSearchPart {
  /** "tenant/collection/name" */
  stream: string;
  partitions: number[];
  analyzer: Analyzer;
  /** query.base; undefined: every document. */
  base: string | undefined;
  /** Taxonomy drilldowns: the payload's level values must start with `values`. */
  drilldowns: Array<{ levels: string[]; values: string[] }>;
  taxonomyFacets: Array<{ dimension: string; levels: string[] }>;
  rangeFacets: RangeFacetRequest[];
  /** The histogram's time field (dotted path); undefined: the stored primary timestamp. */
  tsField: string | undefined;
  /**
   * With a domain (issue 5): the contributor fields, each with the names of the id sets of
   * the request's `contributorIds` its value may be in. A payload passes when one of its
   * fields holds an allowed id; empty: no payload passes.
   */
  contributorFields?: Array<{ path: string; ids: string[] }>;
}

export interface LocalSearchRequest {
  parts: StreamSearchPart[];
  /** Inclusive, epoch ms, on the stored timestamp. */
  range: { start: number; end: number } | undefined;
  /** Best hits to return per stream (from + count of the page asked). */
  hitsMax: number;
  histogram: { start: number; end: number; frequency: Frequency } | undefined;
  /** With a domain: the allowed contributor ids, by the set names the parts use. */
  contributorIds?: Record<string, readonly string[]>;
}

export interface Hit {
  score: number;
  writeId: string;
  data: Record<string, unknown>;
}

/** A count tree as JSON: `children` keyed by value. */
export interface CountTreeJson {
  count: number;
  children: Record<string, CountTreeJson>;
}

export interface StreamSearchResult {
  stream: string;
  total: number;
  hits: Hit[];
  facets: Array<{ dimension: string; tree: CountTreeJson }>;
  ranges: FacetNode[];
}

export interface LocalSearchResult {
  streams: StreamSearchResult[];
  histogram: Histogram | undefined;
}

export async function searchLocally(index: SsrIndex, request: LocalSearchRequest): Promise<LocalSearchResult> {
  const histogram = request.histogram && emptyHistogram(request.histogram.start, request.histogram.end, request.histogram.frequency);
  const streams: StreamSearchResult[] = [];
  const idSets = new Map<string, Set<string>>();
  for (const [name, ids] of Object.entries(request.contributorIds ?? {})) idSets.set(name, new Set(ids));
  for (const part of request.parts) streams.push(await searchStream(index, part, request, histogram, idSets));
  return { streams, histogram };
}

async function searchStream(
  index: SsrIndex,
  part: StreamSearchPart,
  request: LocalSearchRequest,
  histogram: Histogram | undefined,
  idSets: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<StreamSearchResult> {
  const fromContributor = contributorFilter(part, idSets);
  // A domain none of whose contributors can appear in this stream: nothing to read.
  if (fromContributor === false) {
    return {
      stream: part.stream,
      total: 0,
      hits: [],
      facets: part.taxonomyFacets.map((facet) => ({ dimension: facet.dimension, tree: treeToJson(emptyTree()) })),
      ranges: part.rangeFacets.map((facet) => countRanges(facet, [])),
    };
  }
  const query = compileQuery(part);
  const facetTrees = part.taxonomyFacets.map(() => emptyTree());
  const facetLevels = part.taxonomyFacets.map((facet) => facet.levels.map(levelReader));
  const rangeValues: unknown[][] = part.rangeFacets.map(() => []);
  const drilldowns = part.drilldowns.map((drilldown) => ({ readers: drilldown.levels.map(levelReader), values: drilldown.values }));
  const timeOf = part.tsField === undefined ? undefined : pathReader(part.tsField);
  const rangeReaders = part.rangeFacets.map((facet) => pathReader(facet.field));
  const hits: Hit[] = [];
  let total = 0;
  for (const partition of part.partitions) {
    const partitionIndex = await index.partition(part.stream, partition);
    for (const [document, score] of query.candidates(partitionIndex)) {
      if (request.range && (document.timestamp < request.range.start || document.timestamp > request.range.end)) continue;
      if (fromContributor !== undefined && !fromContributor(document.payload)) continue;
      if (!query.accepts(document.payload)) continue;
      if (!drilldowns.every(({ readers, values }) => values.every((value, level) => readers[level]?.(document.payload) === value))) continue;
      total += 1;
      if (request.hitsMax > 0) hits.push({ score, writeId: document.writeId, data: document.payload });
      facetLevels.forEach((readers, facet) => countPath(facetTrees[facet]!, readers.map((read) => read(document.payload))));
      rangeReaders.forEach((read, position) => rangeValues[position]!.push(read(document.payload)));
      if (histogram && request.histogram) {
        const at = timeOf === undefined ? document.timestamp : datetimeOf(timeOf(document.payload));
        if (at !== undefined) addToHistogram(histogram, request.histogram.start, request.histogram.end, at);
      }
    }
  }
  hits.sort(compareHits);
  return {
    stream: part.stream,
    total,
    hits: hits.slice(0, request.hitsMax),
    facets: part.taxonomyFacets.map((facet, position) => ({ dimension: facet.dimension, tree: treeToJson(facetTrees[position]!) })),
    ranges: part.rangeFacets.map((facet, position) => countRanges(facet, rangeValues[position]!)),
  };
}

/**
 * The domain's test of a payload: one of its contributor fields holds an allowed id.
 * undefined: no domain; false: no payload can pass.
 */
function contributorFilter(part: StreamSearchPart, idSets: ReadonlyMap<string, ReadonlySet<string>>): ((payload: Record<string, unknown>) => boolean) | undefined | false {
  if (part.contributorFields === undefined) return undefined;
  const fields = part.contributorFields
    .map((field) => ({
      read: pathReader(field.path),
      sets: field.ids.flatMap((name) => {
        const ids = idSets.get(name);
        return ids === undefined || ids.size === 0 ? [] : [ids];
      }),
    }))
    .filter((field) => field.sets.length > 0);
  if (fields.length === 0) return false;
  return (payload) =>
    fields.some(({ read, sets }) => {
      const value = read(payload);
      return typeof value === 'string' && sets.some((ids) => ids.has(value));
    });
}

interface CompiledQuery {
  accepts(payload: Record<string, unknown>): boolean;
  candidates(index: { all(): readonly SsrDocument[]; candidates(patterns: readonly TermPattern[]): Map<number, number> | undefined; document(id: number): SsrDocument }): Iterable<[SsrDocument, number]>;
}

/** The expression compiled once per stream, and the search terms that narrow candidates. */
function compileQuery(part: StreamSearchPart): CompiledQuery {
  if (part.base === undefined || part.base.trim() === '') {
    return { accepts: () => true, candidates: (index) => index.all().map((document) => [document, 0] as [SsrDocument, number]) };
  }
  const options = { analyzer: part.analyzer };
  const expression = parseExpression(part.base);
  const evaluator: Evaluator = compile(expression, options);
  const required = termsOf(expression, options).required.filter((term) => term.function === 'search');
  const patterns = required.flatMap((term) => term.terms);
  return {
    accepts: (payload) => matches(evaluator, payload),
    candidates: (index) => {
      const found = patterns.length === 0 ? undefined : index.candidates(patterns);
      if (found === undefined) return index.all().map((document) => [document, 0] as [SsrDocument, number]);
      return [...found].map(([id, score]) => [index.document(id), score] as [SsrDocument, number]);
    },
  };
}

/** Most relevant first; equal scores in write order, so every page comes back the same. */
export function compareHits(a: { score: number; writeId: string }, b: { score: number; writeId: string }): number {
  return b.score - a.score || (a.writeId < b.writeId ? -1 : a.writeId > b.writeId ? 1 : 0);
}

const DATE_PART = /^(year|month|day)\(\s*([^()\s]+)\s*\)$/;

/** A taxonomy level's value for a payload: a field's value, or a part of a datetime field. */
export function levelReader(level: string): (payload: Record<string, unknown>) => string | undefined {
  const datePart = DATE_PART.exec(level.trim());
  if (datePart === null) {
    const read = pathReader(level.trim());
    return (payload) => {
      const value = read(payload);
      return value === undefined || value === null || typeof value === 'object' ? undefined : String(value);
    };
  }
  const read = pathReader(datePart[2]!);
  const part = datePart[1];
  return (payload) => {
    const ms = datetimeOf(read(payload));
    if (ms === undefined) return undefined;
    const date = new Date(ms);
    if (part === 'year') return String(date.getUTCFullYear());
    return String(part === 'month' ? date.getUTCMonth() + 1 : date.getUTCDate()).padStart(2, '0');
  };
}


function datetimeOf(value: unknown): number | undefined {
  return typeof value === 'string' ? (datetimeMs(value) ?? undefined) : undefined;
}

export function treeToJson(tree: CountTree): CountTreeJson {
  const children: Record<string, CountTreeJson> = {};
  for (const [value, child] of tree.children) children[value] = treeToJson(child);
  return { count: tree.count, children };
}

export function treeFromJson(json: CountTreeJson): CountTree {
  return { count: json.count, children: new Map(Object.entries(json.children).map(([value, child]) => [value, treeFromJson(child)])) };
}
