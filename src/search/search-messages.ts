// The search's peer message (proto/peer.proto, "Reads between nodes"): a SearchRead asks a
// node for its share of a search, answered from its own partitions (search-peer.ts). Both the
// request and the answer travel as JSON documents, checked here against the shapes the search
// reads: a peer's JSON is untrusted even when signed.

import { z } from 'zod';
import { isPlainObject } from '../lib/json.js';
import { jsonObject } from '../lib/validation.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { str } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { FacetNode } from './facets.js';
import type { CountTreeJson, LocalSearchRequest, LocalSearchResult } from './local-search.js';

/** Levels of a facet count tree or range facet node (facets.ts counts at most 16 levels). */
const FACET_LEVELS_MAX = 64;
const strings = z.array(z.string());
const count = z.int().min(0);


// The lists of search/histogram.ts and expression/patterns.ts; the transforms below check
// them against the search's types.
const analyzer = z.enum(['standard', 'keyword']);
const frequency = z.enum(['YEAR', 'MONTH', 'DAY', 'HOUR', 'MINUTE', 'SECOND', 'MILLIS']);

const searchPartSchema = z
  .object({
    stream: z.string(),
    partitions: z.array(count),
    analyzer,
    base: z.string().optional(),
    drilldowns: z.array(z.object({ levels: strings, values: strings })),
    taxonomyFacets: z.array(z.object({ dimension: z.string(), levels: strings })),
    rangeFacets: z.array(
      z.object({
        type: z.literal('range'),
        field: z.string(),
        ranges: z.array(z.object({ label: z.string(), from: z.number(), fromInclusive: z.boolean(), to: z.number(), toInclusive: z.boolean() })),
      }),
    ),
    tsField: z.string().optional(),
    contributorFields: z.array(z.object({ path: z.string(), ids: strings })).optional(),
  })
  .transform((part) => ({ ...part, base: part.base, tsField: part.tsField }));

const timeRange = z.object({ start: z.number(), end: z.number() });

const searchRequestSchema = z
  .object({
    parts: z.array(searchPartSchema),
    range: timeRange.optional(),
    hitsMax: count,
    histogram: timeRange.extend({ frequency }).optional(),
    contributorIds: z.custom<Record<string, readonly string[]>>(isIdSets, { error: 'expected an object of string lists' }).optional(),
  })
  .transform((request): LocalSearchRequest => ({ ...request, range: request.range, histogram: request.histogram }));

/** Own fields only, so a set named `__proto__` is kept as the sender named it. */
function isIdSets(value: unknown): boolean {
  return isPlainObject(value) && Object.values(value).every((ids) => Array.isArray(ids) && ids.every((id) => typeof id === 'string'));
}

/** Checked by hand rather than with z.record, which drops a value named `__proto__`. */
function isCountTree(value: unknown, level = 0): value is CountTreeJson {
  if (!isPlainObject(value) || level > FACET_LEVELS_MAX) return false;
  const { count: total, children } = value;
  return Number.isSafeInteger(total) && (total as number) >= 0 && isPlainObject(children) && Object.values(children).every((child) => isCountTree(child, level + 1));
}

function isFacetNode(value: unknown, level = 0): value is FacetNode {
  if (!isPlainObject(value) || level > FACET_LEVELS_MAX) return false;
  const { name, value: nodeValue, count: total, children } = value;
  return (
    (name === undefined || typeof name === 'string') &&
    (nodeValue === undefined || typeof nodeValue === 'string') &&
    Number.isSafeInteger(total) &&
    (total as number) >= 0 &&
    Array.isArray(children) &&
    children.every((child) => isFacetNode(child, level + 1))
  );
}

const streamResultSchema = z.object({
  stream: z.string(),
  total: count,
  hits: z.array(z.object({ score: z.number(), writeId: z.string(), data: jsonObject('a hit') })),
  facets: z.array(z.object({ dimension: z.string(), tree: z.custom<CountTreeJson>((value) => isCountTree(value), { error: 'expected a count tree' }) })),
  ranges: z.array(z.custom<FacetNode>((value) => isFacetNode(value), { error: 'expected a facet node' })),
});

const searchResultSchema = z
  .object({
    streams: z.array(streamResultSchema),
    histogram: z.object({ start: z.string(), end: z.string(), frequency, buckets: z.array(count) }).optional(),
  })
  .transform((result): LocalSearchResult => ({ ...result, histogram: result.histogram }));

export const SEARCH_READ = definePeerKind<LocalSearchRequest, LocalSearchResult>({
  name: 'SearchRead',
  request: {
    toProto: (value) => ({ requestJson: writeDocument(value) }),
    fromProto: (object) => readDocument('requestJson', str(object, 'requestJson'), searchRequestSchema),
  },
  reply: {
    type: 'SearchReply',
    codec: {
      toProto: (value) => ({ resultJson: writeDocument(value) }),
      fromProto: (object) => readDocument('resultJson', str(object, 'resultJson'), searchResultSchema),
    },
  },
});
