// One node's share of a search: the partitions it was asked for, each answered from its
// ssr index. The answer is made of parts the node asked can merge exactly: totals, each
// stream's best hits, facet count trees, range counts and histogram buckets.

import type { Expr } from '../expression/ast.js';
import type { CompileOptions } from '../expression/compiled.js';
import { datetimeMs } from '../expression/datetime.js';
import { compile, matches } from '../expression/evaluate.js';
import { termsOf } from '../expression/analysis.js';
import { parseExpression } from '../expression/parser.js';
import type { Analyzer } from '../expression/patterns.js';
import { countRanges, emptyTree, type CountTree, type FacetNode, type RangeFacetRequest } from './facets.js';
import { addSortedTimes, addToHistogram, emptyHistogram, lowerBound, upperBound, type Frequency, type Histogram } from './histogram.js';
import { PathDictionary, type PartitionIndex, type ScoredDocuments } from './partition-index.js';
import { grown, type SmallIntegers } from './postings.js';
import type { SsrIndex } from './ssr-index.js';
import { TopHits } from './top-hits.js';
import { pathReader } from '../lib/json.js';
import { TimeSlice } from '../lib/time-slice.js';

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
   * With a domain: the contributor fields, each with the names of the id sets of
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

type PayloadTest = (payload: Record<string, unknown>) => boolean;

async function searchStream(
  index: SsrIndex,
  part: StreamSearchPart,
  request: LocalSearchRequest,
  histogram: Histogram | undefined,
  idSets: ReadonlyMap<string, ReadonlySet<string>>,
): Promise<StreamSearchResult> {
  const fromContributor = contributorFilter(part, idSets);
  // A domain none of whose contributors can appear in this stream: nothing to read.
  if (fromContributor === false) return new StreamTally(part, request, undefined).result();
  // Scores only order hits: a search that returns none (a facet, a histogram) scores nothing.
  const query = compiledQuery(part.base, part.analyzer);
  const scored = request.hitsMax > 0;
  const filter = documentFilter(part, fromContributor);
  const tally = new StreamTally(part, request, histogram, (levels) => index.dictionary(part.stream, levels));
  // With a tsField, that field decides which payloads fall in the range,
  // not the stored primary timestamp.
  const rangeTime = part.tsField === undefined ? undefined : timeReader(part.tsField);
  const slice = new TimeSlice();
  for (const partition of part.partitions) {
    if (slice.due()) await slice.pause();
    const partitionIndex = index.built(part.stream, partition) ?? (await index.partition(part.stream, partition));
    const plan = query.plan(partitionIndex, scored);
    const searching = searchPartition(partitionIndex, plan.candidates, bothTests(plan.accepts, onPayloads(partitionIndex, filter)), request.range, tally, rangeTime, slice);
    if (searching !== undefined) await searching;
  }
  return tally.result();
}

/** A test of a document of one partition's index, by its number. */
type DocumentTest = (document: number) => boolean;

function onPayloads(index: PartitionIndex, test: PayloadTest | undefined): DocumentTest | undefined {
  return test === undefined ? undefined : (document) => test(index.payload(document));
}

function bothTests(a: DocumentTest | undefined, b: DocumentTest | undefined): DocumentTest | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return (document) => a(document) && b(document);
}

/**
 * Candidates read between two looks at the clock. A partition's matches live in scratch
 * space that another search may reuse while this one waits, and a search can pause only
 * after this many: more matches than this are copied first.
 */
const CANDIDATES_PER_LOOK = 1_024;

/**
 * Tallies the documents of one partition that pass: the candidates (else every document,
 * in time order when a range is asked), within the range, accepted by the test. Gives the
 * event loop a turn whenever the slice is used up (TimeSlice); undefined when it had no
 * need to, so that a partition of few matches costs its caller no await.
 */
function searchPartition(
  index: PartitionIndex,
  found: ScoredDocuments | undefined,
  test: DocumentTest | undefined,
  range: { start: number; end: number } | undefined,
  tally: StreamTally,
  rangeTime: ((payload: Record<string, unknown>) => number | undefined) | undefined,
  slice: TimeSlice,
): Promise<void> | undefined {
  if (range !== undefined && rangeTime !== undefined) {
    const inRange = (payload: Record<string, unknown>) => {
      const at = rangeTime(payload);
      return at !== undefined && at >= range.start && at <= range.end;
    };
    return searchPartition(index, found, bothTests(onPayloads(index, inRange), test), undefined, tally, undefined, slice);
  }
  if (found !== undefined) {
    // The matches live in scratch space another search may reuse while this one waits.
    const candidates = found.length > CANDIDATES_PER_LOOK ? copyOf(found) : found;
    if (range === undefined && test === undefined && tally.countsFacetsOnly) {
      // Every candidate counts, and only its facet paths are wanted: counted a run at a time.
      const runs = Math.ceil(candidates.length / CANDIDATES_PER_LOOK);
      const run = (number: number) => tally.addFacetRun(index, candidates.documents, number * CANDIDATES_PER_LOOK, Math.min(candidates.length, (number + 1) * CANDIDATES_PER_LOOK));
      return slice.forEach(0, runs, run, 1);
    }
    return slice.forEach(0, candidates.length, (at) => {
      const document = candidates.documents[at]!;
      if (range !== undefined) {
        const timestamp = index.timestamp(document);
        if (timestamp < range.start || timestamp > range.end) return;
      }
      if (test === undefined || test(document)) tally.add(index, document, candidates.scores[at]!);
    }, CANDIDATES_PER_LOOK);
  }
  if (range === undefined) {
    return slice.forEach(0, index.size, (document) => {
      if (test === undefined || test(document)) tally.add(index, document, 0);
    }, CANDIDATES_PER_LOOK);
  }
  const byTime = index.byTime();
  const from = lowerBound(byTime.times, range.start, 0, byTime.length);
  const to = upperBound(byTime.times, range.end, from, byTime.length);
  // Only counts by stored timestamp wanted: the sorted times answer without a document.
  if (test === undefined && tally.countsTimesOnly) {
    tally.addSortedTimes(byTime.times, from, to);
    return undefined;
  }
  return slice.forEach(from, to, (at) => {
    const document = byTime.documents[at]!;
    if (test === undefined || test(document)) tally.add(index, document, 0);
  }, CANDIDATES_PER_LOOK);
}

function copyOf(found: ScoredDocuments): ScoredDocuments {
  return { documents: found.documents.slice(0, found.length), scores: found.scores.slice(0, found.length), length: found.length };
}

/** What one stream's documents add up to on this node: total, best hits, facets, histogram. */
class StreamTally {
  private total = 0;
  private readonly hits: TopHits<Hit>;
  private readonly facetTrees: CountTree[];
  /** Per taxonomy facet, a payload's path: its levels' values up to the first missing one. */
  private readonly facetPaths: Array<(payload: Record<string, unknown>) => string[]>;
  /** Per facet, its counts by path code (doc values); merged into facetTrees at the end. */
  private facetCounters: FacetCounter[] | undefined;
  private facetIndex: PartitionIndex | undefined;
  private facetDictionaries: PathDictionary[] | undefined;
  private readonly rangeReaders: Array<(payload: Record<string, unknown>) => unknown>;
  private readonly rangeValues: unknown[][];
  private readonly timeOf: ((payload: Record<string, unknown>) => unknown) | undefined;
  private readonly histogramRange: { start: number; end: number } | undefined;

  constructor(
    private readonly part: StreamSearchPart,
    request: LocalSearchRequest,
    private readonly histogram: Histogram | undefined,
    private readonly dictionaryOf: (levels: readonly string[]) => PathDictionary = () => new PathDictionary(),
  ) {
    this.hits = new TopHits<Hit>(request.hitsMax);
    this.facetTrees = part.taxonomyFacets.map(() => emptyTree());
    this.facetPaths = part.taxonomyFacets.map((facet) => pathReaderOf(facet.levels.map(levelReader)));
    this.rangeReaders = part.rangeFacets.map((facet) => pathReader(facet.field));
    this.rangeValues = part.rangeFacets.map(() => []);
    this.timeOf = part.tsField === undefined ? undefined : pathReader(part.tsField);
    this.histogramRange = histogram === undefined ? undefined : request.histogram;
  }

  /** Whether only the total and a histogram of stored timestamps are wanted. */
  get countsTimesOnly(): boolean {
    return this.hits.limit === 0 && this.facetTrees.length === 0 && this.rangeReaders.length === 0 && this.timeOf === undefined;
  }

  /** Whether only the total and taxonomy facet counts are wanted. */
  get countsFacetsOnly(): boolean {
    return this.hits.limit === 0 && this.facetTrees.length > 0 && this.rangeReaders.length === 0 && this.histogram === undefined;
  }

  /** add() of documents[from, to) when countsFacetsOnly: the facet counters read the run in one loop each. */
  addFacetRun(index: PartitionIndex, documents: Int32Array, from: number, to: number): void {
    this.total += to - from;
    for (const counter of this.facetCountersOf(index)) counter.countRun(documents, from, to);
  }

  add(index: PartitionIndex, document: number, score: number): void {
    this.total += 1;
    if (this.hits.limit > 0 && this.hits.mayAdmit(score)) {
      const writeId = index.writeId(document);
      if (this.hits.admits(score, writeId)) this.hits.offer({ score, writeId, data: index.payload(document) });
    }
    if (this.facetPaths.length > 0) this.countFacets(index, document);
    for (let facet = 0; facet < this.rangeReaders.length; facet++) this.rangeValues[facet]!.push(this.rangeReaders[facet]!(index.payload(document)));
    if (this.histogram !== undefined && this.histogramRange !== undefined) {
      const at = this.timeOf === undefined ? index.timestamp(document) : datetimeOf(this.timeOf(index.payload(document)));
      if (at !== undefined) addToHistogram(this.histogram, this.histogramRange.start, this.histogramRange.end, at);
    }
  }

  /**
   * Counts a document in each taxonomy facet by the code of its path (the index's doc
   * values): no payload read, no string per document.
   */
  private countFacets(index: PartitionIndex, document: number): void {
    for (const counter of this.facetCountersOf(index)) counter.count(document);
  }

  /** The facet counters, reading the path codes of `index`. */
  private facetCountersOf(index: PartitionIndex): FacetCounter[] {
    if (index !== this.facetIndex) {
      this.facetIndex = index;
      // One set of dictionaries for the whole search: every partition's codes mean the same paths.
      const dictionaries = (this.facetDictionaries ??= this.part.taxonomyFacets.map((facet) => this.dictionaryOf(facet.levels)));
      const counters = (this.facetCounters ??= dictionaries.map((dictionary) => new FacetCounter(dictionary)));
      this.part.taxonomyFacets.forEach((facet, position) => counters[position]!.readFrom(index.pathCodes(facet.levels, this.facetPaths[position]!, dictionaries[position]!)));
    }
    return this.facetCounters!;
  }

  /** The facet counts go into the trees, as values. */
  private countsDone(): void {
    this.facetCounters?.forEach((counter, facet) => counter.mergeInto(this.facetTrees[facet]!));
    this.facetCounters = undefined;
    this.facetIndex = undefined;
    this.facetDictionaries = undefined;
  }

  /** Counts the documents whose sorted stored timestamps are `times[from, to)`. */
  addSortedTimes(times: Float64Array, from: number, to: number): void {
    this.total += to - from;
    if (this.histogram !== undefined && this.histogramRange !== undefined) {
      addSortedTimes(this.histogram, this.histogramRange.start, this.histogramRange.end, times, from, to);
    }
  }

  result(): StreamSearchResult {
    this.countsDone();
    return {
      stream: this.part.stream,
      total: this.total,
      hits: this.hits.sorted(),
      facets: this.part.taxonomyFacets.map((facet, position) => ({ dimension: facet.dimension, tree: treeToJson(this.facetTrees[position]!) })),
      ranges: this.part.rangeFacets.map((facet, position) => countRanges(facet, this.rangeValues[position]!)),
    };
  }
}

/** Counts of path codes kept beyond the dictionary's size when a counter is made or grown. */
const COUNTS_SLACK = 64;

/**
 * One taxonomy facet's counts over one search, by the codes of its paths (the stream's path
 * dictionary, the same in every partition here): an increment a document, turned into
 * values once at the end.
 */
class FacetCounter {
  private counts: Int32Array;
  /** The codes counted, each once. */
  private readonly touched: number[] = [];
  /** The path codes of the partition being read. */
  private column: { readonly codes: SmallIntegers } = { codes: new Uint8Array(0) };

  constructor(private readonly dictionary: PathDictionary) {
    this.counts = new Int32Array(dictionary.paths.length + COUNTS_SLACK);
  }

  /** The partition whose documents are counted next. */
  readFrom(column: { readonly codes: SmallIntegers }): void {
    this.column = column;
  }

  count(document: number): void {
    const code = this.column.codes[document]!;
    // The dictionary grows as documents are added while the search waits.
    if (code >= this.counts.length) this.counts = grown(this.counts, this.dictionary.paths.length + COUNTS_SLACK, 0);
    if (this.counts[code]!++ === 0) this.touched.push(code);
  }

  /** count() of each of documents[from, to). */
  countRun(documents: Int32Array, from: number, to: number): void {
    const codes = this.column.codes;
    let counts = this.counts;
    for (let at = from; at < to; at++) {
      const code = codes[documents[at]!]!;
      if (code >= counts.length) counts = this.counts = grown(counts, this.dictionary.paths.length + COUNTS_SLACK, 0);
      if (counts[code]!++ === 0) this.touched.push(code);
    }
  }

  /** Adds the counts to a tree of values: each path's count to every level on its way. */
  mergeInto(into: CountTree): void {
    const paths = this.dictionary.paths;
    for (const code of this.touched) {
      const count = this.counts[code]!;
      into.count += count;
      let node = into;
      for (const value of paths[code]!) {
        node = childOf(node, value);
        node.count += count;
      }
    }
  }
}

function childOf(tree: CountTree, value: string): CountTree {
  let child = tree.children.get(value);
  if (child === undefined) tree.children.set(value, (child = emptyTree()));
  return child;
}

/** A payload's path through the levels: their values up to the first missing one. */
function pathReaderOf(levels: ReadonlyArray<(payload: Record<string, unknown>) => string | undefined>): (payload: Record<string, unknown>) => string[] {
  return (payload) => {
    const path: string[] = [];
    for (const read of levels) {
      const value = read(payload);
      if (value === undefined) break;
      path.push(value);
    }
    return path;
  };
}

function both(a: PayloadTest | undefined, b: PayloadTest | undefined): PayloadTest | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return (payload) => a(payload) && b(payload);
}

/** The taxonomy drilldowns and the domain's contributor test; undefined when there are none. */
function documentFilter(part: StreamSearchPart, fromContributor: PayloadTest | undefined): PayloadTest | undefined {
  const drilldowns = part.drilldowns.map((drilldown) => ({ readers: drilldown.levels.map(levelReader), values: drilldown.values }));
  const drilledDown: PayloadTest | undefined =
    drilldowns.length === 0
      ? undefined
      : (payload) => drilldowns.every(({ readers, values }) => values.every((value, level) => readers[level]?.(payload) === value));
  return both(fromContributor, drilledDown);
}

/**
 * The domain's test of a payload: one of its contributor fields holds an allowed id.
 * undefined: no domain; false: no payload can pass.
 */
function contributorFilter(part: StreamSearchPart, idSets: ReadonlyMap<string, ReadonlySet<string>>): PayloadTest | undefined | false {
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
  /**
   * For one partition: the candidate documents (undefined: all) and the test each must
   * pass (undefined: none). Without `scored`, every score is 0.
   */
  plan(index: PartitionIndex, scored: boolean): { candidates: ScoredDocuments | undefined; accepts: DocumentTest | undefined };
}

/** Compiled queries kept, by analyzer and text: dashboards ask the same searches again and again. */
const COMPILED_QUERIES_MAX = 64;
/** Longer query texts are compiled for each search, not kept. */
const COMPILED_QUERY_TEXT_MAX = 4_096;
const compiledQueries = new Map<string, CompiledQuery>();

/**
 * The query `base` compiled (compileQuery), from the recently used ones when it is one of
 * them: a query has no state between searches, and its text and analyzer decide it.
 * Throws the 400 of a bad expression (nothing is kept then).
 */
export function compiledQuery(base: string | undefined, analyzer: Analyzer): CompiledQuery {
  if (base === undefined || base.length > COMPILED_QUERY_TEXT_MAX) return compileQuery(base, analyzer);
  const key = `${analyzer}\u0000${base}`;
  let query = compiledQueries.get(key);
  if (query === undefined) {
    query = compileQuery(base, analyzer);
    if (compiledQueries.size >= COMPILED_QUERIES_MAX) compiledQueries.delete(compiledQueries.keys().next().value!);
  } else {
    compiledQueries.delete(key);
  }
  // Most recently used last: the first key is the one to drop.
  compiledQueries.set(key, query);
  return query;
}

/**
 * The expression compiled once per stream, and the search terms that narrow candidates.
 * Where the index proves the field-less search() conjuncts (their terms were
 * expanded completely, with the analyzer the expression uses), only the other conjuncts
 * are evaluated per candidate, before it is scored; `&&` is true exactly when every
 * operand is. Without `scored`, every score is 0.
 */
function compileQuery(base: string | undefined, analyzer: Analyzer): CompiledQuery {
  if (base === undefined || base.trim() === '') return { plan: () => ({ candidates: undefined, accepts: undefined }) };
  const options = { analyzer };
  const expression = parseExpression(base);
  const whole = compile(expression, options);
  const accepts: PayloadTest = (payload) => matches(whole, payload);
  const required = termsOf(expression, options).required.filter((term) => term.function === 'search');
  const patterns = required.flatMap((term) => term.terms);
  if (patterns.length === 0) return { plan: (index) => ({ candidates: undefined, accepts: onPayloads(index, accepts) }) };
  const residual = residualTest(expression, options);
  return {
    plan: (index, scored) => {
      // An index built with another analyzer than the mapping's now: its terms prove nothing.
      if (index.analyzer !== analyzer) return { candidates: undefined, accepts: onPayloads(index, accepts) };
      // The other conjuncts are tested while the postings are read, before a document is
      // scored: each is implied by the whole expression, so this leaves out nothing it accepts.
      const { matched, complete } = index.match(patterns, { keep: residual?.(index), scored });
      return { candidates: matched, accepts: complete && matched !== undefined ? undefined : onPayloads(index, accepts) };
    },
  };
}

/**
 * The top-level conjuncts other than field-less search() calls, as one test of a partition's
 * documents; undefined: none. Comparisons of a numeric field with a number read the field's
 * doc values (partition-index.ts), not each payload; a field that is no number there
 * compares false, as in the expression (evaluate.ts, comparatorAgainst).
 */
function residualTest(expression: Expr, options: CompileOptions): ((index: PartitionIndex) => DocumentTest) | undefined {
  const left = topLevelConjuncts(expression).filter((conjunct) => !isFieldlessSearch(conjunct, options));
  if (left.length === 0) return undefined;
  const evaluators = left.map((conjunct) => compile(conjunct, options));
  const onPayload: PayloadTest = (payload) => {
    for (const evaluator of evaluators) if (!matches(evaluator, payload)) return false;
    return true;
  };
  const comparisons = left.map(numberComparison);
  if (comparisons.some((comparison) => comparison === undefined)) return (index) => onPayloads(index, onPayload)!;
  return (index) => {
    const tests: DocumentTest[] = [];
    for (const comparison of comparisons as NumberComparison[]) {
      const values = index.numbers(comparison.path);
      // A field holding an integer beyond 2^53 somewhere: compared on the payloads, exactly.
      if (values === undefined) return onPayloads(index, onPayload)!;
      tests.push(numberTest(values, comparison));
    }
    return tests.length === 1 ? tests[0]! : (document) => tests.every((test) => test(document));
  };
}

interface NumberComparison {
  readonly path: readonly string[];
  readonly operator: '<' | '<=' | '>' | '>=' | '==';
  readonly constant: number;
}

const MIRRORED = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '==': '==' } as const;

/** `field op number` (or `number op field`) with op one of < <= > >= ==, as a comparison; else undefined. */
function numberComparison(conjunct: Expr): NumberComparison | undefined {
  if (conjunct.kind !== 'binary' || !(conjunct.operator in MIRRORED)) return undefined;
  const operator = conjunct.operator as keyof typeof MIRRORED;
  const [field, constant, op] = conjunct.left.kind === 'field' ? [conjunct.left, conjunct.right, operator] : [conjunct.right, conjunct.left, MIRRORED[operator]];
  if (field.kind !== 'field' || constant.kind !== 'literal' || typeof constant.value !== 'number' || field.path.length === 0) return undefined;
  return { path: field.path, operator: op, constant: constant.value };
}

function numberTest(values: Float64Array, { operator, constant }: NumberComparison): DocumentTest {
  switch (operator) {
    case '<':
      return (document) => values[document]! < constant;
    case '<=':
      return (document) => values[document]! <= constant;
    case '>':
      return (document) => values[document]! > constant;
    case '>=':
      return (document) => values[document]! >= constant;
    default:
      return (document) => values[document]! === constant;
  }
}

function topLevelConjuncts(expression: Expr): Expr[] {
  if (expression.kind !== 'logical' || expression.operator !== '&&') return [expression];
  return expression.operands.flatMap(topLevelConjuncts);
}

function isFieldlessSearch(conjunct: Expr, options: CompileOptions): boolean {
  if (conjunct.kind !== 'call') return false;
  const [term] = termsOf(conjunct, options).required;
  return term !== undefined && term.function === 'search' && term.field === undefined;
}

export { compareHits } from './top-hits.js';

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


function timeReader(path: string): (payload: Record<string, unknown>) => number | undefined {
  const read = pathReader(path);
  return (payload) => datetimeOf(read(payload));
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
