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

export function parseFacetRequests(value: unknown): FacetRequest[] {
  if (!Array.isArray(value) || value.length > FACETS_MAX) throw new BadRequestError(`facets must be an array of at most ${FACETS_MAX} requests`);
  return value.map((facet, index) => parseFacetRequest(facet, `facets[${index}]`));
}

function parseFacetRequest(facet: unknown, where: string): FacetRequest {
  if (!isPlainObject(facet)) throw new BadRequestError(`${where} must be an object`);
  if (facet.type === 'range') {
    if (typeof facet.field !== 'string' || facet.field === '') throw new BadRequestError(`${where}.field must be a field name`);
    if (!Array.isArray(facet.ranges) || facet.ranges.length === 0) throw new BadRequestError(`${where}.ranges must be a non-empty array`);
    return { type: 'range', field: facet.field, ranges: facet.ranges.map((range, i) => parseRange(range, `${where}.ranges[${i}]`)) };
  }
  if (facet.type !== 'taxonomy') throw new BadRequestError(`${where}.type must be 'taxonomy' or 'range'`);
  if (typeof facet.dimension !== 'string' || facet.dimension === '') throw new BadRequestError(`${where}.dimension must name a taxonomy node`);
  const include = facet.include ?? [];
  if (!Array.isArray(include) || !include.every((entry) => isPlainObject(entry) && Array.isArray(entry.path) && entry.path.every((part) => typeof part === 'string'))) {
    throw new BadRequestError(`${where}.include must be [ { path: [string] } ]`);
  }
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
  const counts = request.ranges.map(() => 0);
  let inAny = 0;
  for (const value of values) {
    if (typeof value !== 'number') continue;
    let matched = false;
    request.ranges.forEach((range, index) => {
      const aboveFrom = range.fromInclusive ? value >= range.from : value > range.from;
      const belowTo = range.toInclusive ? value <= range.to : value < range.to;
      if (aboveFrom && belowTo) {
        counts[index]! += 1;
        matched = true;
      }
    });
    if (matched) inAny += 1;
  }
  return {
    name: request.field,
    // Payloads in at least one range (ranges may overlap).
    count: inAny,
    children: request.ranges.map((range, index) => ({ value: range.label, count: counts[index]!, children: [] })),
  };
}

/** The taxonomy node a facet request names, or 404-ish 400 when the stream has none such. */
export function taxonomyLevels(taxonomy: Taxonomy, dimension: string): string[] | undefined {
  return taxonomy.nodes.find((node) => node.name === dimension)?.expression;
}
