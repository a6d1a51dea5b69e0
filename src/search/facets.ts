// Facet counts (spec, "_facet"): taxonomy facets count payloads down a stream's hierarchy
// of levels (topN values per level, `depth` levels, plus `include` paths); range facets
// count a numeric field in labelled ranges. Counting is exact and mergeable across nodes:
// nodes send full count trees and the node asked cuts topN after the merge. Pure.

import { z } from 'zod';
import { validate, withDefault } from '../lib/validation.js';
import type { Taxonomy } from '../streams/taxonomy.js';

export interface FacetNode {
  name?: string;
  value?: string;
  count: number;
  children: FacetNode[];
}

/** Counts per value, nested by level: mergeable. */
export interface CountTree {
  count: number;
  children: Map<string, CountTree>;
}

export interface TaxonomyFacetRequest {
  type: 'taxonomy';
  dimension: string;
  topN: number;
  depth: number;
  include: string[][];
}

export interface RangeSpec {
  label: string;
  from: number;
  fromInclusive: boolean;
  to: number;
  toInclusive: boolean;
}

export interface RangeFacetRequest {
  type: 'range';
  field: string;
  ranges: RangeSpec[];
}

export type FacetRequest = TaxonomyFacetRequest | RangeFacetRequest;

const FACETS_MAX = 64;
const TOP_N_MAX = 10_000;
const DEPTH_MAX = 16;
/**
 * Ranges of all range facets of one request (100,000 ranges held a node
 * for 10 s). Each costs its share of every matching payload's count.
 */
export const FACET_RANGES_MAX = 256;
/** `include` paths of one taxonomy facet. */
export const FACET_INCLUDES_MAX = 1_000;

const taxonomyFacetSchema = z.object({
  type: z.literal('taxonomy'),
  dimension: z.string().min(1).describe('A taxonomy node name of the searched streams.'),
  topN: withDefault(z.int().min(1).max(TOP_N_MAX), 5).describe('Values kept per level, highest count first.'),
  depth: withDefault(z.int().min(1).max(DEPTH_MAX), 3).describe('Levels counted.'),
  include: withDefault(z.array(z.object({ path: z.array(z.string()) })).max(FACET_INCLUDES_MAX, { error: (issue) => `${count(issue.input)} paths; the limit is ${FACET_INCLUDES_MAX}` }), [])
    .describe('Paths of values counted on top of the topN ones.')
    .transform((entries) => entries.map((entry) => entry.path)),
});

// The unit says what a range holds: ranges have numbers from and to.
const rangeBound = z.number({ error: (issue) => (issue.code === 'invalid_type' ? `expected a number (a range has numbers from and to), got ${issue.input === undefined ? 'nothing' : typeof issue.input}` : undefined) });

const rangeSpecSchema = z
  .object({
    label: z.string().nullish().describe('Default `<from>-<to>`.'),
    from: rangeBound,
    fromInclusive: withDefault(z.boolean(), true),
    to: rangeBound,
    toInclusive: withDefault(z.boolean(), true),
  })
  .transform((range): RangeSpec => ({ ...range, label: range.label ?? `${range.from}-${range.to}` }));

const rangeFacetSchema = z.object({
  type: z.literal('range'),
  field: z.string().min(1).describe('A numeric payload field (dotted path); no taxonomy needed.'),
  ranges: z.array(rangeSpecSchema).min(1).max(FACET_RANGES_MAX, { error: (issue) => `${count(issue.input)} ranges; the limit is ${FACET_RANGES_MAX}` }),
});

/** One facet request of POST /ssr/:tenant/_facet. */
export const facetRequestSchema = z.discriminatedUnion('type', [taxonomyFacetSchema, rangeFacetSchema]).meta({ id: 'FacetRequest' });

export const facetRequestsSchema = z
  .array(facetRequestSchema)
  .max(FACETS_MAX)
  .superRefine((facets, context) => {
    const ranges = facets.reduce((sum, facet) => sum + (facet.type === 'range' ? facet.ranges.length : 0), 0);
    if (ranges > FACET_RANGES_MAX) context.addIssue({ code: 'custom', message: `range facets of one request hold ${ranges} ranges; the limit is ${FACET_RANGES_MAX}` });
  });

/** The items of an array a limit refused (zod's issue carries the array). */
function count(input: unknown): number | string {
  return Array.isArray(input) ? input.length : 'too many';
}

export function parseFacetRequests(value: unknown): FacetRequest[] {
  return validate(facetRequestsSchema, value, 'facets', { prefixPaths: true });
}

export function emptyTree(): CountTree {
  return { count: 0, children: new Map() };
}

/**
 * Counts one payload's path of level values (undefined ends the path): the definition of a
 * taxonomy count. A search counts by path codes instead (local-search.ts, FacetCounter),
 * tested against this.
 */
export function countPath(tree: CountTree, values: ReadonlyArray<string | undefined>): void {
  tree.count += 1;
  let node = tree;
  for (const value of values) {
    if (value === undefined) return;
    let child = node.children.get(value);
    if (child === undefined) node.children.set(value, (child = emptyTree()));
    child.count += 1;
    node = child;
  }
}

export function mergeTrees(into: CountTree, other: CountTree): void {
  into.count += other.count;
  for (const [value, child] of other.children) {
    let mine = into.children.get(value);
    if (mine === undefined) into.children.set(value, (mine = emptyTree()));
    mergeTrees(mine, child);
  }
}

/** The answer's node for a dimension: topN children per level (highest count first), plus include paths. */
export function renderTaxonomyFacet(tree: CountTree, request: TaxonomyFacetRequest): FacetNode {
  const included = request.include.map((path) => path.slice(0, request.depth));
  return { name: request.dimension, count: tree.count, children: renderLevel(tree, request, included, 1) };
}

function renderLevel(tree: CountTree, request: TaxonomyFacetRequest, included: string[][], level: number): FacetNode[] {
  if (level > request.depth) return [];
  const ordered = [...tree.children].sort(([a, x], [b, y]) => y.count - x.count || (a < b ? -1 : a > b ? 1 : 0));
  const chosen = new Set(ordered.slice(0, request.topN).map(([value]) => value));
  for (const path of included) if (path[0] !== undefined && tree.children.has(path[0])) chosen.add(path[0]);
  return ordered
    .filter(([value]) => chosen.has(value))
    .map(([value, child]) => ({
      value,
      count: child.count,
      children: renderLevel(child, request, included.filter((path) => path[0] === value).map((path) => path.slice(1)), level + 1),
    }));
}

/** Range facet counts: one child per range, in the order asked. */
export function countRanges(request: RangeFacetRequest, values: Iterable<unknown>): FacetNode {
  const segments = rangeSegments(request.ranges);
  const perSegment = new Float64Array(segments.covering.length);
  for (const value of values) {
    if (typeof value !== 'number' || Number.isNaN(value)) continue;
    perSegment[segments.locate(value)]! += 1;
  }
  const counts = request.ranges.map(() => 0);
  let inAny = 0;
  segments.covering.forEach((ranges, segment) => {
    const count = perSegment[segment]!;
    if (count === 0 || ranges.length === 0) return;
    inAny += count;
    for (const range of ranges) counts[range]! += count;
  });
  return {
    name: request.field,
    // Payloads in at least one range (ranges may overlap).
    count: inAny,
    children: request.ranges.map((range, index) => ({ value: range.label, count: counts[index]!, children: [] })),
  };
}

/**
 * The number line cut at every range end into elementary segments (each end point a
 * segment of its own, and the open stretches between), each with the ranges covering it:
 * a value is counted by one binary search, whatever the number of ranges, and every value
 * of a segment lies in the same ranges. Segment 2i+1 is the point ends[i]; 2i the
 * stretch below it; the last, the stretch above every end.
 */
function rangeSegments(ranges: readonly RangeSpec[]): { covering: number[][]; locate(value: number): number } {
  const ends = [...new Set(ranges.flatMap((range) => [range.from, range.to]))].sort((a, b) => a - b);
  const inRange = (range: RangeSpec, value: number) =>
    (range.fromInclusive ? value >= range.from : value > range.from) && (range.toInclusive ? value <= range.to : value < range.to);
  const covering: number[][] = [];
  const cover = (probe: number | undefined) => ranges.flatMap((range, index) => (probe !== undefined && inRange(range, probe) ? [index] : []));
  for (let i = 0; i < ends.length; i++) {
    // Below the first end no range reaches; between two ends any inner value stands for all.
    covering.push(cover(i === 0 ? undefined : ends[i - 1]! / 2 + ends[i]! / 2));
    covering.push(cover(ends[i]!));
  }
  covering.push([]);
  const locate = (value: number): number => {
    let low = 0;
    let high = ends.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (ends[middle]! < value) low = middle + 1;
      else high = middle;
    }
    return low < ends.length && ends[low] === value ? 2 * low + 1 : 2 * low;
  };
  return { covering, locate };
}

/** The taxonomy node a facet request names, or 404-ish 400 when the stream has none such. */
export function taxonomyLevels(taxonomy: Taxonomy, dimension: string): string[] | undefined {
  return taxonomy.nodes.find((node) => node.name === dimension)?.expression;
}
