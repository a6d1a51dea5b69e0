// The request bodies of the Search section (spec, "Search" and "Search query object"), as
// zod schemas: _search, _facet, _timeRangeHistogram and _discover. Null means "not set"
// wherever a field is optional, as JSON clients send it.

import { z } from 'zod';
import { withDefault } from '../lib/validation.js';
import { facetRequestsSchema } from './facets.js';
import { BUCKETS_MAX, FREQUENCIES } from './histogram.js';

export const COUNT_MAX = 10_000;
export const FROM_MAX = 100_000;
export const URIS_MAX = 1_000;

interface TaxonomyFilterInput {
  type: 'taxonomy';
  dimension: string;
  drilldown: string[];
}
interface GroupFilterInput {
  type: 'group';
  clause: 'and';
  filters: FilterInput[];
}
export type FilterInput = TaxonomyFilterInput | GroupFilterInput;

const taxonomyFilterSchema = z.object({
  type: z.literal('taxonomy'),
  dimension: z.string().describe('A taxonomy node name.'),
  drilldown: z.array(z.string()).describe('Values down the hierarchy, from the top level.'),
});

export const filterSchema: z.ZodType<FilterInput> = z
  .discriminatedUnion('type', [
    taxonomyFilterSchema,
    z.object({
      type: z.literal('group'),
      clause: z.literal('and'),
      get filters() {
        return z.array(filterSchema);
      },
    }),
  ])
  .meta({ id: 'SearchFilter', description: 'A taxonomy filter, or a group of filters that must all hold.' });

export const searchQuerySchema = z
  .object({
    base: z
      .string()
      .nullish()
      .transform((base) => (base === null || base === '' ? undefined : base))
      .describe("An expression: field paths, == != < <= > >=, && || !, 'strings', numbers, year/month/day(field), prefix(field, p), like(field, pattern), search(pattern), search(field, pattern). Omitted, null or '': every payload."),
    filters: z.array(filterSchema).optional(),
    useLatestIndexGeneration: z.boolean().nullish().describe('Accepted; there is only the latest generation.'),
  })
  .meta({ id: 'SearchQuery', examples: [{ base: "search('rain') && temperature > 20", filters: [{ type: 'taxonomy', dimension: 'place', drilldown: ['FR'] }] }] });

const timestampSchema = z
  .union([z.string(), z.number()])
  .transform((value, context) => {
    const ms = typeof value === 'string' ? Date.parse(value) : value;
    if (!Number.isFinite(ms)) context.addIssue({ code: 'custom', message: 'must be an ISO 8601 timestamp' });
    return ms;
  })
  .describe('An ISO 8601 timestamp (or epoch milliseconds).');

export const timeRangeSchema = z
  .object({ start: timestampSchema, end: timestampSchema })
  .refine((range) => range.end >= range.start, { path: ['end'], message: 'is before range.start' })
  .meta({ id: 'TimeRange', description: 'Both ends inclusive; filters the stored (primary) timestamp.' });

const domainSchema = z
  .string()
  .nullish()
  .transform((domain) => (domain === null || domain === '' ? undefined : domain))
  .describe("A domain URI /domain/<tenant>/<collection>/<name>: only payloads of the domain's contributors. Omitted, null or '': no domain.");

const urisSchema = z.array(z.string()).min(1).max(URIS_MAX).describe('Stream URIs /streams/<tenant>/<collection>/<name> of ssr streams of the tenant.');

const common = {
  uris: urisSchema,
  query: searchQuerySchema.nullish(),
  domain: domainSchema,
  range: timeRangeSchema.nullish(),
};

const bucketsSchema = z.int().min(1).max(BUCKETS_MAX);
const histogramControls = {
  frequency: z.enum(FREQUENCIES).optional().describe('Used as given; may yield very many buckets (at most 100,000).'),
  maxNumberOfBuckets: bucketsSchema.nullish().describe('The frequency whose bucket count is closest is used.'),
  maxBucketCount: bucketsSchema.nullish().describe('The same as maxNumberOfBuckets (the spec names both).'),
};

export const searchRequestSchema = z
  .object({
    ...common,
    count: withDefault(z.int().min(0).max(COUNT_MAX), 10).describe('Page size.'),
    from: withDefault(z.int().min(0).max(FROM_MAX), 0).describe('Offset of the page; 0 is the first.'),
  })
  .meta({ id: 'SearchRequest', examples: [{ uris: ['/streams/demo/weather/observations'], query: { base: "search('rain')" }, count: 20, from: 0 }] });

export const facetSearchRequestSchema = z
  .object({ ...common, facets: withDefault(facetRequestsSchema, []) })
  .meta({
    id: 'FacetSearchRequest',
    examples: [{ uris: ['/streams/demo/weather/observations'], facets: [{ type: 'taxonomy', dimension: 'place', topN: 5, depth: 2 }] }],
  });

export const histogramRequestSchema = z
  .object({
    ...common,
    range: timeRangeSchema,
    tsField: z.string().optional().describe('The field the buckets count by; default the primary timestamp. Streams without it are left out.'),
    ...histogramControls,
  })
  .meta({
    id: 'HistogramRequest',
    examples: [{ uris: ['/streams/demo/weather/observations'], range: { start: '2024-01-01T00:00:00Z', end: '2024-12-31T23:59:59Z' }, frequency: 'MONTH' }],
  });

export const discoverRequestSchema = z
  .object({
    ...common,
    uris: urisSchema.optional().describe("Stream URIs; omitted: every ssr stream of the tenant (the domain's, with a domain)."),
    histogram: z.object(histogramControls).nullish(),
    facets: z.object({ topN: withDefault(z.int().min(1).max(COUNT_MAX), 5) }).nullish().describe('Facet values per taxonomy node.'),
    results: z.object({ topN: withDefault(z.int().min(0).max(COUNT_MAX), 10) }).nullish().describe('Results per stream.'),
  })
  .meta({ id: 'DiscoverRequest', examples: [{ query: { base: "search('rain')" }, results: { topN: 5 } }] });

export type SearchQueryInput = z.output<typeof searchQuerySchema>;
export type TimeRange = z.output<typeof timeRangeSchema>;
export type HistogramControls = { frequency?: (typeof FREQUENCIES)[number] | undefined; maxNumberOfBuckets?: number | null | undefined; maxBucketCount?: number | null | undefined };
