// Search over stored streams, cluster-wide (spec, "Search"): the node asked plans
// one live owner per partition (itself when it owns one), runs its own share, asks the
// others with a SearchRead (search-peer.ts), and merges: totals and facet counts and histogram buckets
// are summed exactly; hits are merged and paged after the merge, most relevant first.
// A node that fails during a search has its partitions asked of another live owner.

import { BadRequestError, TributaryError } from '../lib/errors.js';
import { validate } from '../lib/validation.js';
import { parseStreamUri, streamKey, streamUri, type StreamId } from '../streams/stream-id.js';
import type { StreamDefinitions } from '../streams/stream-definitions.js';
import { parseSchema, primaryTimestampField, fieldAt, type StreamSchema } from '../streams/schema.js';
import type { Analyzer } from '../expression/patterns.js';
import { emptyTree, mergeTrees, renderTaxonomyFacet, taxonomyLevels, type CountTree, type FacetNode, type FacetRequest, type RangeFacetRequest, type TaxonomyFacetRequest } from './facets.js';
import { chooseFrequency, mergeHistograms, type Frequency, type Histogram } from './histogram.js';
import { compareHits, compiledQuery, treeFromJson, type Hit, type LocalSearchRequest, type LocalSearchResult, type StreamSearchPart } from './local-search.js';
import {
  discoverRequestSchema,
  facetSearchRequestSchema,
  histogramRequestSchema,
  searchRequestSchema,
  type FilterInput,
  type HistogramControls,
  type SearchQueryInput,
  type TimeRange,
} from './search-request.js';

export interface SearchPlacement {
  localName: string;
  /** Owners of a partition in the current table, in ring order. */
  owners(partition: number, replicas: number): readonly string[];
  available(node: string): boolean;
  runLocal(request: LocalSearchRequest): Promise<LocalSearchResult>;
  runRemote(node: string, request: LocalSearchRequest): Promise<LocalSearchResult>;
}

/**
 * What a domain lets a search see: payloads whose contributor field holds
 * a contributor of the domain; `_discover` also only the streams those published to.
 */
export interface DomainScope {
  /** The stream's contributor fields, each with the names of the id sets its value may be in. */
  fieldsOf(stream: StreamId, schema: StreamSchema): Array<{ path: string; ids: string[] }>;
  /** The ids of a set named by fieldsOf. */
  idSet(name: string): readonly string[];
  /** Keys ("tenant/collection/name") of the streams the domain's contributors published to. */
  streams: ReadonlySet<string>;
}

export interface SearchDomains {
  /** The scope of a search in `tenant` limited to the domain URI; 404 for an unknown domain. */
  scope(tenant: string, domain: string): DomainScope;
}

interface ResolvedStream {
  id: StreamId;
  key: string;
  replicas: number;
  ringSize: number;
  analyzer: Analyzer;
  schema: unknown;
  parsedSchema: StreamSchema;
  primaryTimestamp: string | undefined;
  hasField(path: string): boolean;
  taxonomy: ReturnType<StreamDefinitions['getTaxonomy']>['value'];
}

interface QueryParts {
  base: string | undefined;
  drilldowns: Array<{ dimension: string; values: string[] }>;
}

const ATTEMPTS_MAX = 3;

export class SearchService {
  constructor(
    private readonly definitions: StreamDefinitions,
    private readonly placement: SearchPlacement,
    private readonly domains?: SearchDomains,
  ) {}

  async search(tenant: string, body: unknown): Promise<{ total: number; values: Array<{ score: number; data: unknown }> }> {
    const request = validate(searchRequestSchema, body);
    const streams = this.resolveStreams(tenant, request.uris, false);
    const query = parseQuery(request.query);
    const { count, from } = request;
    const domain = this.domainScope(tenant, request.domain);
    const result = await this.run(streams, query, { range: request.range ?? undefined, hitsMax: from + count, facets: [], domain });
    const hits = result.streams.flatMap((stream) => stream.hits);
    hits.sort(compareHits);
    return { total: result.total, values: hits.slice(from, from + count).map((hit) => ({ score: hit.score, data: hit.data })) };
  }

  async facet(tenant: string, body: unknown): Promise<{ facets: FacetNode[] }> {
    const request = validate(facetSearchRequestSchema, body);
    const streams = this.resolveStreams(tenant, request.uris, false);
    const facets = request.facets;
    const domain = this.domainScope(tenant, request.domain);
    const result = await this.run(streams, parseQuery(request.query), { range: request.range ?? undefined, hitsMax: 0, facets, domain });
    const rangeFacets = facets.filter((facet) => facet.type === 'range');
    return { facets: facets.map((facet) => renderFacet(facet, result, rangeFacets.indexOf(facet as RangeFacetRequest))) };
  }

  async histogram(tenant: string, body: unknown): Promise<{ histogram: Histogram }> {
    const request = validate(histogramRequestSchema, body);
    const { range, tsField } = request;
    // Streams lacking the time field are left out (spec, "_timeRangeHistogram").
    const streams = this.resolveStreams(tenant, request.uris, false).filter((stream) =>
      tsField === undefined ? stream.primaryTimestamp !== undefined : stream.hasField(tsField),
    );
    const frequency = histogramFrequency(request, range);
    const domain = this.domainScope(tenant, request.domain);
    const result = await this.run(streams, parseQuery(request.query), { range, hitsMax: 0, facets: [], histogram: { ...range, frequency }, tsField, domain });
    return { histogram: result.histogram ?? emptyHistogramOf(range, frequency) };
  }

  async discover(tenant: string, body: unknown): Promise<unknown> {
    const request = validate(discoverRequestSchema, body);
    const range = request.range ?? undefined;
    const domain = this.domainScope(tenant, request.domain);
    // With a domain, only the streams its contributors published to (spec, "_discover").
    const streams = this.resolveStreams(tenant, request.uris, true).filter((stream) => domain === undefined || domain.streams.has(stream.key));
    const resultsTopN = request.results?.topN ?? 10;
    const facetsTopN = request.facets?.topN ?? 5;
    const histogram = range === undefined ? undefined : { ...range, frequency: histogramFrequency(request.histogram ?? {}, range) };
    const facets: TaxonomyFacetRequest[] = [...new Set(streams.flatMap((stream) => stream.taxonomy.nodes.map((node) => node.name)))].map((dimension) => ({
      type: 'taxonomy', dimension, topN: facetsTopN, depth: 3, include: [],
    }));
    const result = await this.run(streams, parseQuery(request.query), { range, hitsMax: resultsTopN, facets, histogram, domain });
    return {
      histogram: result.histogram ?? null,
      streams: result.streams.map((stream) => {
        const resolved = streams.find((candidate) => candidate.key === stream.stream)!;
        // Each node sent its best topN: the merged list is cut to topN after the merge.
        const values = stream.hits.slice(0, resultsTopN);
        return {
          name: streamUri(resolved.id),
          atLeastNMoreResults: stream.total - values.length,
          schema: resolved.schema,
          facets: resolved.taxonomy.nodes.map((node) => renderTaxonomyFacet(stream.trees.get(node.name) ?? emptyTree(), facets.find((facet) => facet.dimension === node.name)!)),
          values: values.map((hit) => ({ score: hit.score, data: hit.data })),
        };
      }),
    };
  }

  /** Plans, fans out and merges one search over the streams. */
  private async run(
    streams: ResolvedStream[],
    query: QueryParts,
    options: { range: { start: number; end: number } | undefined; hitsMax: number; facets: FacetRequest[]; histogram?: LocalSearchRequest['histogram']; tsField?: string | undefined; domain: DomainScope | undefined },
  ): Promise<MergedResult> {
    // A bad expression is a 400 before any node is asked; the compiled query is kept for the local share.
    if (query.base !== undefined) compiledQuery(query.base, streams[0]?.analyzer ?? 'standard');
    const parts = streams.map((stream) => toPart(stream, query, options.facets, options.tsField));
    const request: Omit<LocalSearchRequest, 'parts'> = { range: options.range, hitsMax: options.hitsMax, histogram: options.histogram };
    if (options.domain !== undefined) applyDomain(options.domain, streams, parts, request);
    const results = await this.fanOut(streams, parts, request);
    return merge(results, streams);
  }

  private async fanOut(streams: ResolvedStream[], parts: StreamSearchPart[], request: Omit<LocalSearchRequest, 'parts'>): Promise<LocalSearchResult[]> {
    const failed = new Set<string>();
    const results: LocalSearchResult[] = [];
    let pending = parts;
    for (let attempt = 1; pending.length > 0; attempt += 1) {
      const plan = this.plan(streams, pending, failed);
      const retry: StreamSearchPart[] = [];
      await Promise.all(
        [...plan].map(async ([node, nodeParts]) => {
          const nodeRequest = { ...request, parts: nodeParts };
          try {
            results.push(node === this.placement.localName ? await this.placement.runLocal(nodeRequest) : await this.placement.runRemote(node, nodeRequest));
          } catch (error) {
            if (error instanceof TributaryError && error.status < 500) throw error;
            if (attempt >= ATTEMPTS_MAX) throw new TributaryError(503, 'SEARCH_INCOMPLETE', `search could not reach ${node}: ${(error as Error).message}`);
            failed.add(node);
            retry.push(...nodeParts);
          }
        }),
      );
      pending = retry;
    }
    return results;
  }

  /** One live owner per partition: this node when it owns it, else the first available owner. */
  private plan(streams: ResolvedStream[], parts: StreamSearchPart[], failed: Set<string>): Map<string, StreamSearchPart[]> {
    const byNode = new Map<string, Map<string, StreamSearchPart>>();
    for (const part of parts) {
      const stream = streams.find((candidate) => candidate.key === part.stream)!;
      // Consecutive partitions mostly go to the same node: its part is kept at hand.
      let lastNode: string | undefined;
      let lastPart: StreamSearchPart | undefined;
      for (const partition of part.partitions) {
        const node = this.ownerToAsk(partition, stream.replicas, failed);
        if (node === undefined) throw new TributaryError(503, 'NO_LIVE_OWNER', `partition ${partition} of ${streamUri(stream.id)} has no live owner`);
        if (node !== lastNode || lastPart === undefined) {
          const nodeParts = byNode.get(node) ?? new Map<string, StreamSearchPart>();
          byNode.set(node, nodeParts);
          lastPart = nodeParts.get(part.stream) ?? { ...part, partitions: [] };
          nodeParts.set(part.stream, lastPart);
          lastNode = node;
        }
        lastPart.partitions.push(partition);
      }
    }
    return new Map([...byNode].map(([node, nodeParts]) => [node, [...nodeParts.values()]]));
  }

  /** The owner of a partition to ask: this node when it owns it, else the first available one; none failed before. */
  private ownerToAsk(partition: number, replicas: number, failed: ReadonlySet<string>): string | undefined {
    let available: string | undefined;
    for (const owner of this.placement.owners(partition, replicas)) {
      if (failed.has(owner)) continue;
      if (owner === this.placement.localName) return owner;
      if (available === undefined && this.placement.available(owner)) available = owner;
    }
    return available;
  }

  /** The domain a request names (`domain`: a URI; omitted, null or '': no domain). */
  private domainScope(tenant: string, domain: string | undefined): DomainScope | undefined {
    if (domain === undefined) return undefined;
    if (this.domains === undefined) throw new BadRequestError('domains are not available on this node');
    return this.domains.scope(tenant, domain);
  }

  /** The ssr streams named by `uris` (all of the tenant's when omitted and allowed). */
  private resolveStreams(tenant: string, uris: readonly string[] | undefined, everyWhenOmitted: boolean): ResolvedStream[] {
    let ids: StreamId[];
    if (uris === undefined) {
      ids = this.definitions.collections(tenant).flatMap((collection) => this.definitions.streams(tenant, collection).map((name) => ({ tenant, collection, name })));
    } else {
      ids = uris.map((uri) => parseStreamUri(uri));
      for (const id of ids) if (id.tenant !== tenant) throw new BadRequestError(`${streamUri(id)} is not a stream of tenant '${tenant}'`);
    }
    const resolved: ResolvedStream[] = [];
    for (const id of ids) {
      const stream = this.resolveStream(id);
      if (stream !== undefined) resolved.push(stream);
      else if (!everyWhenOmitted || uris !== undefined) throw new BadRequestError(`${streamUri(id)} is not stored in the ssr repository`);
    }
    return resolved;
  }

  private resolveStream(id: StreamId): ResolvedStream | undefined {
    const definition = this.definitions.getStream(id);
    let mapping;
    try {
      mapping = this.definitions.getRepository(id).value;
    } catch {
      return undefined;
    }
    if (mapping.name !== 'ssr') return undefined;
    const schema = parseSchema(definition.value.schema);
    const policy = this.definitions.getPolicy(id).value;
    return {
      id,
      key: streamKey(id),
      replicas: policy.replicas,
      ringSize: policy.ring_size,
      analyzer: mapping.config.defaultStringAnalyzer === 'keyword' ? 'keyword' : 'standard',
      schema: definition.value.schema,
      parsedSchema: schema,
      primaryTimestamp: primaryTimestampField(schema),
      hasField: (path) => fieldAt(schema, path) !== undefined,
      taxonomy: this.definitions.getTaxonomy(id).value,
    };
  }
}

interface MergedStream {
  stream: string;
  total: number;
  hits: Hit[];
  trees: Map<string, CountTree>;
  ranges: FacetNode[][];
}

interface MergedResult {
  total: number;
  streams: MergedStream[];
  histogram: Histogram | undefined;
}

function merge(results: LocalSearchResult[], streams: ResolvedStream[]): MergedResult {
  const byStream = new Map<string, MergedStream>(streams.map((stream) => [stream.key, { stream: stream.key, total: 0, hits: [], trees: new Map(), ranges: [] }]));
  let histogram: Histogram | undefined;
  for (const result of results) {
    for (const part of result.streams) {
      const merged = byStream.get(part.stream)!;
      merged.total += part.total;
      merged.hits.push(...part.hits);
      for (const facet of part.facets) {
        const tree = merged.trees.get(facet.dimension) ?? emptyTree();
        mergeTrees(tree, treeFromJson(facet.tree));
        merged.trees.set(facet.dimension, tree);
      }
      merged.ranges.push(part.ranges);
    }
    if (result.histogram !== undefined) {
      if (histogram === undefined) histogram = structuredClone(result.histogram);
      else mergeHistograms(histogram, result.histogram);
    }
  }
  for (const merged of byStream.values()) merged.hits.sort(compareHits);
  const all = [...byStream.values()];
  return { total: all.reduce((sum, stream) => sum + stream.total, 0), streams: all, histogram };
}

/** `rangePosition`: the facet's place among the request's range facets (their order in each part). */
function renderFacet(facet: FacetRequest, result: MergedResult, rangePosition: number): FacetNode {
  if (facet.type === 'taxonomy') {
    const tree = emptyTree();
    for (const stream of result.streams) {
      const part = stream.trees.get(facet.dimension);
      if (part !== undefined) mergeTrees(tree, part);
    }
    return renderTaxonomyFacet(tree, facet);
  }
  const children = facet.ranges.map((range) => ({ value: range.label, count: 0, children: [] as FacetNode[] }));
  let count = 0;
  for (const stream of result.streams) {
    for (const ranges of stream.ranges) {
      const node = ranges[rangePosition];
      if (node === undefined) continue;
      count += node.count;
      node.children.forEach((child, position) => (children[position]!.count += child.count));
    }
  }
  return { name: facet.field, count, children };
}

function toPart(stream: ResolvedStream, query: QueryParts, facets: FacetRequest[], tsField: string | undefined): StreamSearchPart {
  const rangeFacets = facets.filter((facet): facet is RangeFacetRequest => facet.type === 'range');
  return {
    stream: stream.key,
    partitions: Array.from({ length: stream.ringSize }, (_, partition) => partition),
    analyzer: stream.analyzer,
    base: query.base,
    drilldowns: query.drilldowns.map((drilldown) => ({ levels: taxonomyLevels(stream.taxonomy, drilldown.dimension) ?? [IMPOSSIBLE_LEVEL], values: drilldown.values })),
    taxonomyFacets: facets
      .filter((facet): facet is TaxonomyFacetRequest => facet.type === 'taxonomy')
      .flatMap((facet) => {
        const levels = taxonomyLevels(stream.taxonomy, facet.dimension);
        return levels === undefined ? [] : [{ dimension: facet.dimension, levels: levels.slice(0, facet.depth) }];
      }),
    rangeFacets,
    tsField,
  };
}

/**
 * Limits every part to payloads of the domain's contributors: each part names its
 * contributor fields and their id sets; the request carries each set used, once.
 */
function applyDomain(domain: DomainScope, streams: ResolvedStream[], parts: StreamSearchPart[], request: Omit<LocalSearchRequest, 'parts'>): void {
  // No prototype: set names come from type names, which may be '__proto__'.
  const contributorIds: Record<string, readonly string[]> = Object.create(null) as Record<string, readonly string[]>;
  parts.forEach((part, position) => {
    const stream = streams[position]!;
    part.contributorFields = domain.fieldsOf(stream.id, stream.parsedSchema);
    for (const field of part.contributorFields) for (const name of field.ids) contributorIds[name] ??= domain.idSet(name);
  });
  request.contributorIds = contributorIds;
}

/** A drilldown on a dimension the stream does not have: no payload of it has that path. */
const IMPOSSIBLE_LEVEL = '\u0000no such level';

function parseQuery(query: SearchQueryInput | null | undefined): QueryParts {
  if (query === undefined || query === null) return { base: undefined, drilldowns: [] };
  const drilldowns: QueryParts['drilldowns'] = [];
  const visit = (filters: readonly FilterInput[]): void => {
    for (const filter of filters) {
      if (filter.type === 'group') visit(filter.filters);
      else drilldowns.push({ dimension: filter.dimension, values: filter.drilldown });
    }
  };
  visit(query.filters ?? []);
  return { base: query.base, drilldowns };
}

/** A 400 at the node asked, before any partition is read: syntax, functions, patterns and their limits. */
function histogramFrequency(options: HistogramControls, range: TimeRange): Frequency {
  if (options.frequency !== undefined) return options.frequency;
  // The spec's requests name the count maxNumberOfBuckets, its prose maxBucketCount: both work.
  const buckets = options.maxNumberOfBuckets ?? options.maxBucketCount;
  if (buckets === undefined || buckets === null) return chooseFrequency(range.start, range.end);
  return chooseFrequency(range.start, range.end, buckets);
}

function emptyHistogramOf(range: { start: number; end: number }, frequency: Frequency): Histogram {
  return { start: new Date(range.start).toISOString(), end: new Date(range.end).toISOString(), frequency, buckets: [] };
}
