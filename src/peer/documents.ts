// The JSON documents peer messages carry (proto/peer.proto, "Reads between nodes"): a
// search's request and answer, an output's log entries, a query's errors, monitoring
// details and stored payloads. Each is parsed here within the peer JSON bounds and checked
// against the shape its receiver reads, so no handler or caller casts a peer's JSON: a
// document that does not fit is a BadPeerMessageError naming the field and the problem.

import { z } from 'zod';
import { isPlainObject, parseJson, parseJsonWithin, stringifyJson } from '../json.js';
import { BadRequestError } from '../errors.js';
import { jsonObject, validate } from '../validation.js';
import type { LogEntry } from '../execution/output-channel.js';
import type { RunStatus } from '../execution/session-host.js';
import type { CountTreeJson, LocalSearchRequest, LocalSearchResult } from '../search/local-search.js';
import type { FacetNode } from '../search/facets.js';
import type { Value } from '../expression/index.js';
import { BadPeerMessageError } from './errors.js';
import { MESSAGE_BYTES_MAX } from './wire.js';
import { HISTORY_SAMPLES_MAX, type NodeHistory } from '../console/history.js';

/**
 * How deep a peer's JSON may nest: payloads are accepted up to the configured
 * limits.jsonDepthMax (at most 1,000), and a search answer or an output entry wraps one in a
 * few levels more.
 */
export const PEER_JSON_DEPTH_MAX = 1_100;
/** Characters of one JSON field: no more than the message that carries it. */
export const PEER_JSON_CHARS_MAX = MESSAGE_BYTES_MAX;
/** Levels of a facet count tree or range facet node (facets.ts counts at most 16 levels). */
const FACET_LEVELS_MAX = 64;

/** Parses the JSON text of `field` within the peer bounds; anything else is refused. */
export function parsePeerJson(field: string, text: string): unknown {
  if (text.length > PEER_JSON_CHARS_MAX) throw new BadPeerMessageError(`field ${field}: ${text.length} characters of JSON; the limit is ${PEER_JSON_CHARS_MAX}`);
  let parsed: { value: unknown } | undefined;
  try {
    parsed = parseJsonWithin(text, PEER_JSON_DEPTH_MAX);
  } catch (error) {
    throw new BadPeerMessageError(`field ${field}: not JSON (${(error as Error).message})`, { cause: error });
  }
  if (parsed === undefined) throw new BadPeerMessageError(`field ${field}: JSON nested deeper than ${PEER_JSON_DEPTH_MAX} levels`);
  return parsed.value;
}

/** Parses `field` and checks it against `schema`. */
export function readDocument<Schema extends z.ZodType>(field: string, text: string, schema: Schema): z.output<Schema> {
  const value = parsePeerJson(field, text);
  try {
    return validate(schema, value, field, { prefixPaths: true });
  } catch (error) {
    if (error instanceof BadRequestError) throw new BadPeerMessageError(`field ${error.message}`, { cause: error });
    throw error;
  }
}

export function writeDocument(value: unknown): string {
  return stringifyJson(value);
}

const strings = z.array(z.string());
const count = z.int().min(0);

// ---- Search (src/search/local-search.ts)

// The lists of search/histogram.ts and expression/patterns.ts, kept here so the peer layer
// imports no search code; the transforms below check them against the search's types.
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

export const searchRequestSchema = z
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

export const searchResultSchema = z
  .object({
    streams: z.array(streamResultSchema),
    histogram: z.object({ start: z.string(), end: z.string(), frequency, buckets: z.array(count) }).optional(),
  })
  .transform((result): LocalSearchResult => ({ ...result, histogram: result.histogram }));

// ---- Outputs (src/execution/output-channel.ts)

const outputMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('sos'), schema: jsonObject('a schema') }),
  z.object({ type: z.literal('increment'), items: z.array(z.object({ action: z.enum(['add', 'update', 'remove']), data: jsonObject('a row') })) }),
  z.object({ type: z.literal('eos') }),
]);

/** A message (with the retention after a `sos`), or the end of a query that stopped. */
export const logEntriesSchema = z.array(
  z
    .object({ message: outputMessageSchema.optional(), retention: z.enum(['table', 'rows', 'none']).optional(), end: z.literal('stopped').optional() })
    .refine((entry) => (entry.message === undefined) !== (entry.end === undefined), 'expected either a message or an end')
    .transform((entry): LogEntry => {
      if (entry.message === undefined) return { end: 'stopped' };
      return entry.retention === undefined ? { message: entry.message } : { message: entry.message, retention: entry.retention };
    }),
);

// ---- Execution statuses (src/execution/session-host.ts)

export const RUN_STATES = ['running', 'completed', 'failed', 'stopped'] as const satisfies ReadonlyArray<RunStatus['state']>;

/** A query's errors: objects with a `type`, shown to clients as the host reported them. */
export const runErrorsSchema = z.array(
  z.custom<RunStatus['errors'][number]>((value) => isPlainObject(value) && typeof value.type === 'string', { error: 'expected an error object with a type' }),
);

// ---- Monitoring and stored payloads

export const detailsSchema = jsonObject('monitoring details');

// ---- The console's history of a node (src/console/history.ts)

/** Reasons a node lists on GET /ready: a handful of sentences. */
const READY_REASONS_MAX = 16;
const READY_REASON_CHARS_MAX = 1_000;
const NODE_NAME_CHARS_MAX = 256;
const figures = z.array(z.number()).max(HISTORY_SAMPLES_MAX);
const gappedFigures = z.array(z.number().nullable()).max(HISTORY_SAMPLES_MAX);

export const nodeHistorySchema = z
  .object({
    node: z.string().min(1).max(NODE_NAME_CHARS_MAX),
    intervalMs: z.int().positive(),
    samples: z.object({
      atMs: figures,
      ingestPayloadsPerSecond: figures,
      latencyP50Ms: gappedFigures,
      latencyP99Ms: gappedFigures,
      transferBytesPerSecond: figures,
      diskUsedBytes: gappedFigures,
    }),
    ready: z.boolean(),
    reasons: z.array(z.string().max(READY_REASON_CHARS_MAX)).max(READY_REASONS_MAX),
  })
  .refine((history) => Object.values(history.samples).every((column) => column.length === history.samples.atMs.length), 'every column of samples must have one value per time') satisfies z.ZodType<NodeHistory>;
export const payloadSchema = jsonObject('a stored payload');

// ---- The last values per key of a partition (src/execution/latest-values.ts)

const latestSlotSchema = z.object({ timestamp: z.number().refine(Number.isSafeInteger, 'expected an integer timestamp'), writeId: z.string(), value: z.custom<Value>((value) => value !== undefined) });
export const latestEntriesSchema = z.array(z.object({ key: z.custom<Value>((value) => value !== undefined), slots: z.array(latestSlotSchema.nullable()) }));
