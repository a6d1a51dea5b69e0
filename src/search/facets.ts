// Facet counts (spec, "_facet"): taxonomy facets count payloads down a stream's hierarchy
// of levels (topN values per level, `depth` levels, plus `include` paths); range facets
// count a numeric field in labelled ranges. Counting is exact and mergeable across nodes:
// nodes send full count trees and the node asked cuts topN after the merge. Pure.

import { BadRequestError } from '../errors.js';
import { isPlainObject } from '../json.js';
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
 * Ranges of all range facets of one request (issue 15, item 4: 100,000 ranges held a node
 * for 10 s). Each costs its share of every matching payload's count.
 */
export const FACET_RANGES_MAX = 256;
/** `include` paths of one taxonomy facet. */
export const FACET_INCLUDES_MAX = 1_000;

export function parseFacetRequests(value: unknown): FacetRequest[] {
  if (!Array.isArray(value) || value.length > FACETS_MAX) throw new BadRequestError(`facets must be an array of at most ${FACETS_MAX} requests`);
  const facets = value.map((facet, index) => parseFacetRequest(facet, `facets[${index}]`));
  const ranges = facets.reduce((sum, facet) => sum + (facet.type === 'range' ? facet.ranges.length : 0), 0);
  if (ranges > FACET_RANGES_MAX) throw new BadRequestError(`range facets of one request hold ${ranges} ranges; the limit is ${FACET_RANGES_MAX}`);
  return facets;
}

function parseFacetRequest(facet: unknown, where: string): FacetRequest {
  if (!isPlainObject(facet)) throw new BadRequestError(`${where} must be an object`);
  if (facet.type === 'range') {
    if (typeof facet.field !== 'string' || facet.field === '') throw new BadRequestError(`${where}.field must be a field name`);
    if (!Array.isArray(facet.ranges) || facet.ranges.length === 0) throw new BadRequestError(`${where}.ranges must be a non-empty array`);
    if (facet.ranges.length > FACET_RANGES_MAX) throw new BadRequestError(`${where}.ranges holds ${facet.ranges.length} ranges; the limit is ${FACET_RANGES_MAX}`);
    return { type: 'range', field: facet.field, ranges: facet.ranges.map((range, i) => parseRange(range, `${where}.ranges[${i}]`)) };
  }
  if (facet.type !== 'taxonomy') throw new BadRequestError(`${where}.type must be 'taxonomy' or 'range'`);
  if (typeof facet.dimension !== 'string' || facet.dimension === '') throw new BadRequestError(`${where}.dimension must name a taxonomy node`);
  const include = facet.include ?? [];
  if (!Array.isArray(include) || !include.every((entry) => isPlainObject(entry) && Array.isArray(entry.path) && entry.path.every((part) => typeof part === 'string'))) {
    throw new BadRequestError(`${where}.include must be [ { path: [string] } ]`);
  }
  if (include.length > FACET_INCLUDES_MAX) throw new BadRequestError(`${where}.include holds ${include.length} paths; the limit is ${FACET_INCLUDES_MAX}`);
  return {
    type: 'taxonomy',
    dimension: facet.dimension,
    topN: boundedInteger(facet.topN, 5, 1, TOP_N_MAX, `${where}.topN`),
    depth: boundedInteger(facet.depth, 3, 1, DEPTH_MAX, `${where}.depth`),
    include: include.map((entry) => (entry as { path: string[] }).path),
  };
}

function parseRange(range: unknown, where: string): RangeSpec {
  if (!isPlainObject(range) || typeof range.from !== 'number' || typeof range.to !== 'number') {
    throw new BadRequestError(`${where} must have numbers from and to`);
  }
  const fromInclusive = range.fromInclusive ?? true;
  const toInclusive = range.toInclusive ?? true;
  if (typeof fromInclusive !== 'boolean' || typeof toInclusive !== 'boolean') throw new BadRequestError(`${where}: fromInclusive/toInclusive must be booleans`);
  const label = range.label ?? `${range.from}-${range.to}`;
  if (typeof label !== 'string') throw new BadRequestError(`${where}.label must be a string`);
  return { label, from: range.from, fromInclusive, to: range.to, toInclusive };
}

function boundedInteger(value: unknown, fallback: number, min: number, max: number, where: string): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new BadRequestError(`${where} must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function emptyTree(): CountTree {
  return { count: 0, children: new Map() };
}

/** Counts one payload's path of level values (undefined ends the path). */
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
