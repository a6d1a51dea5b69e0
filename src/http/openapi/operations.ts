// Every operation of the platform interface (docs/platform-interface.md), with the zod schemas
// of its body and answers: the OpenAPI document is generated from this list (document.ts). The
// request schemas are the ones the services check bodies with; a test checks that the routers
// serve exactly these routes.

import { z } from 'zod';
import { vendorSchema } from '../../admin/vendors.js';
import { addNodesBodySchema } from '../../cluster/membership-service.js';
import { repairBodySchema } from '../../repair/cluster-repair.js';
import { MONITORING_SERVICES } from '../../monitoring/monitoring.js';
import { NODE_COLUMNS, STREAM_COLUMNS, TRANSFER_COLUMNS } from '../../ops/cat-views.js';
import { contributorInstanceSchema, contributorTypeBodySchema } from '../../contributors/contributor-schema.js';
import { DEFAULT_DOMAIN_LIMITS, domainBodySchema } from '../../domains/domain-definition.js';
import { daemonBodySchema, daemonSettingsSchema } from '../../sessions/daemon-service.js';
import { queryEntrySchema, sessionBodySchema, sessionDomainBodySchema, variableSchema, type DocumentLimits } from '../../sessions/session-document.js';
import { discoverRequestSchema, facetSearchRequestSchema, histogramRequestSchema, searchRequestSchema } from '../../search/search-request.js';
import { ingestBodySchema, payloadSchema } from '../../streams/ingest-checks.js';
import { policySchema } from '../../streams/policy.js';
import { repositoryMappingSchema } from '../../streams/repository-mapping.js';
import { streamBodySchema } from '../../streams/schema-document.js';
import { tagsBodySchema } from '../../streams/tags.js';
import { taxonomyBodySchema } from '../../streams/taxonomy.js';
import {
  changeQueueFields,
  clusterChangeSchema,
  clusterDocumentSchema,
  collectionStreamsSchema,
  contributorsOfDomainSchema,
  daemonDetailsSchema,
  daemonisedSchema,
  discoverResultSchema,
  domainDocumentSchema,
  emptySchema,
  facetResultSchema,
  histogramResultSchema,
  ingestFailuresSchema,
  instancesSchema,
  monitoringSchema,
  nodeSchema,
  queriesResponseSchema,
  queryErrorsSchema,
  queryStateSchema,
  searchResultSchema,
  sessionCreatedSchema,
  ringViewSchema,
  clusterHistorySchema,
  catRowsSchema,
  healthSchema,
  readinessSchema,
  sessionDocumentSchema,
  streamsSchema,
  tenantSchema,
  transferActionSchema,
  repairStartedSchema,
  repairStatusSchema,
  repositoryMoveSchema,
  variableValueSchema,
} from './responses.js';

export type Method = 'get' | 'put' | 'post' | 'delete';

export interface Answer {
  description: string;
  /** JSON unless `mediaType` says otherwise; no schema: an empty body. */
  schema?: z.ZodType;
  mediaType?: string;
  /** The same answer in another media type, chosen by the request (the _cat tables' ?format=json). */
  alternative?: { mediaType: string; schema: z.ZodType };
}

export interface Operation {
  method: Method;
  /** An OpenAPI path template: `/streams/{tenant}/{collection}/{name}`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  body?: { schema: z.ZodType; required: boolean; description?: string };
  /** Status → answer; the error answers every operation shares are added by document.ts. */
  answers: Record<string, Answer>;
  /** Definitions with their own version: Service-Config-Version in and out (409 on a mismatch). */
  versioned?: boolean;
  query?: Array<{ name: string; description: string; schema: Record<string, unknown> }>;
}

const ok = (description: string, schema?: z.ZodType): Record<string, Answer> => ({ '200': schema === undefined ? { description } : { description, schema } });
const withQueryErrors = (answers: Record<string, Answer>): Record<string, Answer> => ({
  ...answers,
  '400': { description: 'A bad body, or query errors (`errors`, as docs/query-language.md gives them).', schema: queryErrorsSchema },
});

const STREAM = '/streams/{tenant}/{collection}/{name}';
const TYPE = '/contributors/{tenant}/{type}';
const INSTANCE = `${TYPE}/instances/{id}`;
const DOMAIN = '/domain/{tenant}/{collection}/{name}';
const SESSION = '/execution/{tenant}/sessions/{id}';
const DAEMON = '/daemon/{tenant}/{collection}/{id}';
const VENDOR = '/admin/{tenant}/vendors/{id}';

function streamOperations(): Operation[] {
  const tag = 'Streams';
  return [
    { method: 'get', path: '/streams/{tenant}', tag, summary: 'Collections of the tenant', answers: ok('Collection names.', instancesSchema('Collection names.')) },
    { method: 'get', path: '/streams/{tenant}/{collection}', tag, summary: 'Streams of a collection', answers: ok('Stream names, under both keys.', collectionStreamsSchema) },
    {
      method: 'put', path: STREAM, tag, versioned: true, summary: 'Define a stream',
      description: 'Creates or replaces the definition. A stream is not persisted until it has a repository mapping. The collection `system` is read-only (403).',
      body: { schema: streamBodySchema, required: true }, answers: ok('The definition as sent.', streamBodySchema),
    },
    { method: 'get', path: STREAM, tag, versioned: true, summary: 'A stream definition', answers: ok('The definition.', streamBodySchema) },
    {
      method: 'post', path: STREAM, tag, summary: 'Post payloads',
      description: 'Tags run first, then each payload is checked against the schema, placed in its partition and written to every owner (durable before the answer). At most `limits.ingestBatchPayloadsMax` payloads.',
      body: { schema: ingestBodySchema, required: true },
      answers: {
        '200': { description: 'Every payload is durable (an empty body).' },
        '500': { description: 'Some payloads failed, by index; the others are durable.', schema: ingestFailuresSchema },
        '507': { description: 'This node stores nothing now (its disk is below `storage.diskFreeMinBytes`, or a write failed and it waits for room): nothing of the batch was written; the message names the node and its data folder. Another node takes the batch.' },
      },
    },
    { method: 'put', path: `${STREAM}/taxonomy`, tag, versioned: true, summary: 'Set the taxonomy', body: { schema: taxonomyBodySchema, required: true }, answers: ok('The taxonomy.', taxonomyBodySchema) },
    { method: 'get', path: `${STREAM}/taxonomy`, tag, versioned: true, summary: 'The taxonomy', description: 'Never set: `{ taxonomy: { nodes: [] } }`, with no version.', answers: ok('The taxonomy.', taxonomyBodySchema) },
    { method: 'put', path: `${STREAM}/tags`, tag, versioned: true, summary: 'Set the tags', description: 'Every enabled tag must compile (400 naming it).', body: { schema: tagsBodySchema, required: true }, answers: ok('The tags.', tagsBodySchema) },
    { method: 'get', path: `${STREAM}/tags`, tag, versioned: true, summary: 'The tags', description: 'Never set: `{ tags: [] }`.', answers: ok('The tags.', tagsBodySchema) },
    {
      method: 'post', path: `${STREAM}/tags`, tag, summary: 'Try the tags on a payload', description: 'Runs the enabled tags; stores nothing.',
      body: { schema: payloadSchema, required: true }, answers: { ...ok('The payload with the tag fields.', payloadSchema), '500': { description: 'A tag failed (threw, timed out, returned something else than strings).' } },
    },
    { method: 'put', path: `${STREAM}/repository`, tag, versioned: true, summary: 'Persist the stream', body: { schema: repositoryMappingSchema, required: true }, answers: ok('The mapping.', repositoryMappingSchema) },
    { method: 'get', path: `${STREAM}/repository`, tag, versioned: true, summary: 'The repository mapping', description: 'Never set: 404 (the stream is not persisted).', answers: ok('The mapping.', repositoryMappingSchema) },
    {
      method: 'get',
      path: `${STREAM}/repository/move`,
      tag,
      summary: "The move of the stream's payloads to another repository",
      description: 'A change of repository while the stream holds payloads moves them in the background on every owner (docs/storage.md); this is its progress on each member. 404 when no change moved payloads.',
      answers: ok('The move.', repositoryMoveSchema),
    },
    {
      method: 'put', path: `${STREAM}/policy`, tag, versioned: true, summary: 'Set the distribution policy',
      description: '`ring_size` and `hash_payload.bytes` cannot change once the stream holds stored payloads (409).',
      body: { schema: policySchema, required: true }, answers: ok('The policy.', policySchema),
    },
    { method: 'get', path: `${STREAM}/policy`, tag, versioned: true, summary: 'The distribution policy', description: 'Never set: the defaults.', answers: ok('The policy.', policySchema) },
  ];
}

function searchOperations(): Operation[] {
  const tag = 'Search';
  const search = (path: string, summary: string, description: string, schema: z.ZodType, result: z.ZodType): Operation => ({
    method: 'post', path: `/ssr/{tenant}/${path}`, tag, summary, description, body: { schema, required: true }, answers: { ...ok('The result.', result), '503': { description: 'A partition has no live owner: no partial answers.' } },
  });
  return [
    search('_search', 'Search', 'Hits over every owner of the streams, merged, most relevant first, then paged.', searchRequestSchema, searchResultSchema),
    search('_facet', 'Facet counts', 'Taxonomy facets (topN values per level) and range facets, counted exactly over the cluster.', facetSearchRequestSchema, facetResultSchema),
    search('_timeRangeHistogram', 'Time-range histogram', 'Counts of stored payloads per UTC calendar bucket.', histogramRequestSchema, histogramResultSchema),
    search('_discover', 'Discover', 'Per stream: the best results, facets of every taxonomy node, and one histogram over all.', discoverRequestSchema, discoverResultSchema),
  ];
}

function contributorOperations(): Operation[] {
  const tag = 'Contributors';
  return [
    { method: 'get', path: '/contributors/{tenant}', tag, summary: 'Contributor types of the tenant', answers: ok('Type names, sorted.', instancesSchema('Type names.')) },
    { method: 'put', path: TYPE, tag, versioned: true, summary: 'Define a contributor type', body: { schema: contributorTypeBodySchema, required: true }, answers: ok('The body as sent.', contributorTypeBodySchema) },
    { method: 'get', path: TYPE, tag, versioned: true, summary: 'A contributor type', answers: ok('The type.', contributorTypeBodySchema) },
    { method: 'delete', path: TYPE, tag, versioned: true, summary: 'Delete a contributor type', description: '409 while it has instances.', answers: ok('Deleted.', emptySchema) },
    { method: 'get', path: `${TYPE}/instances`, tag, summary: 'Instances of a type', answers: ok('Instance ids, sorted.', instancesSchema('Instance ids.')) },
    {
      method: 'put', path: INSTANCE, tag, versioned: true, summary: 'Register a contributor instance',
      description: "Ids are 1–128 of A-Za-z0-9-_. (not only dots). The document follows the type's schema.",
      body: { schema: contributorInstanceSchema, required: true }, answers: ok('The document.', contributorInstanceSchema),
    },
    { method: 'get', path: INSTANCE, tag, versioned: true, summary: 'A contributor instance', answers: ok('The document.', contributorInstanceSchema) },
    { method: 'delete', path: INSTANCE, tag, versioned: true, summary: 'Delete a contributor instance', answers: ok('Deleted.', emptySchema) },
    { method: 'get', path: `${INSTANCE}/streams`, tag, summary: 'Streams the contributor published to', answers: ok('Stream URIs, sorted.', streamsSchema('Stream URIs.')) },
  ];
}

function domainOperations(): Operation[] {
  const tag = 'Domains';
  return [
    { method: 'get', path: '/domain/{tenant}', tag, summary: 'Collections that hold a domain', answers: ok('Collection names.', instancesSchema('Collection names.')) },
    { method: 'get', path: '/domain/{tenant}/{collection}', tag, summary: 'Domains of a collection', answers: ok('Domain names.', instancesSchema('Domain names.')) },
    { method: 'put', path: DOMAIN, tag, versioned: true, summary: 'Define a domain', body: { schema: domainBodySchema(DEFAULT_DOMAIN_LIMITS), required: true }, answers: ok('The definition.', domainDocumentSchema) },
    { method: 'get', path: DOMAIN, tag, versioned: true, summary: 'A domain', answers: ok('The definition, as PUT answered it.', domainDocumentSchema) },
    { method: 'delete', path: DOMAIN, tag, versioned: true, summary: 'Delete a domain', answers: ok('Deleted.', emptySchema) },
    { method: 'get', path: `${DOMAIN}/contributors`, tag, summary: "The domain's contributors", answers: ok('Per filtered type, the matching instances.', contributorsOfDomainSchema) },
    { method: 'get', path: `${DOMAIN}/streams`, tag, summary: "Streams the domain's contributors published to", answers: ok('Stream URIs, sorted.', streamsSchema('Stream URIs.')) },
  ];
}

function executionOperations(limits: DocumentLimits): Operation[] {
  const tag = 'Execution';
  const queries = ok('The queries response.', queriesResponseSchema);
  return [
    { method: 'post', path: '/execution/{tenant}/sessions', tag, summary: 'Create a session', answers: ok('The new, empty session.', sessionCreatedSchema) },
    { method: 'get', path: SESSION, tag, summary: 'A session document', answers: ok('The session.', sessionDocumentSchema) },
    {
      method: 'put', path: SESSION, tag, summary: 'Replace a session',
      description: 'Checked whole; nothing runs afterwards and every output gets a new id. No body: the empty session.',
      body: { schema: sessionBodySchema(limits), required: false }, answers: withQueryErrors(queries),
    },
    { method: 'delete', path: SESSION, tag, summary: 'Delete a session', answers: ok('Deleted.', emptySchema) },
    { method: 'put', path: `${SESSION}/domain`, tag, summary: 'Set the session domain', description: 'Running queries restart.', body: { schema: sessionDomainBodySchema, required: true }, answers: withQueryErrors(queries) },
    { method: 'get', path: `${SESSION}/domain`, tag, summary: 'The session domain', description: '404 when none is set.', answers: ok('The domain.', sessionDomainBodySchema) },
    { method: 'delete', path: `${SESSION}/domain`, tag, summary: 'Remove the session domain', answers: queries },
    { method: 'put', path: `${SESSION}/variables`, tag, summary: 'Add or update a variable', body: { schema: variableSchema, required: true }, answers: withQueryErrors(queries) },
    { method: 'get', path: `${SESSION}/variables/{variableId}`, tag, summary: 'A variable', answers: ok('Its value and type.', variableValueSchema) },
    { method: 'delete', path: `${SESSION}/variables/{variableId}`, tag, summary: 'Delete a variable', answers: queries },
    {
      method: 'put', path: `${SESSION}/queries`, tag, summary: 'Add or update a query',
      description: 'A query with errors is refused (400 with `errors`). Replacing a query keeps its output id.',
      body: { schema: queryEntrySchema, required: true }, answers: withQueryErrors(queries),
    },
    { method: 'get', path: `${SESSION}/queries`, tag, summary: 'The queries response', answers: queries },
    { method: 'get', path: `${SESSION}/queries/{queryId}`, tag, summary: 'A query state document', description: 'Does not run the query.', answers: ok('The query state.', queryStateSchema) },
    { method: 'delete', path: `${SESSION}/queries/{queryId}`, tag, summary: 'Delete a query', description: 'Downstream queries stop.', answers: queries },
    { method: 'put', path: `${SESSION}/queries/{queryId}/_start`, tag, summary: 'Start a query', description: 'Upstream queries start too.', answers: withQueryErrors(queries) },
    { method: 'put', path: `${SESSION}/queries/{queryId}/_stop`, tag, summary: 'Stop a query', description: 'Downstream queries stop too.', answers: queries },
    {
      method: 'put', path: `${SESSION}/queries/{queryId}/_daemonise`, tag: 'Daemons', summary: 'Make a query a daemon',
      description: 'The query, the queries upstream of it, the variables, functions and domain become a daemon of the `system` collection.',
      body: { schema: daemonSettingsSchema, required: true }, answers: withQueryErrors(ok('The daemon.', daemonisedSchema)),
    },
    {
      method: 'get', path: '/output/{tenant}/{outputId}', tag, summary: 'Read an output channel (SSE)',
      description: 'Server-sent events, one JSON message per `data:` line: `sos`, then `add`/`update`/`remove` changes, and `eos` when a bounded query ends. A client that connects late first gets the current state. Read it with `curl -N`.',
      answers: { '200': { description: 'The event stream.', mediaType: 'text/event-stream', schema: z.string() }, '503': { description: 'Too many SSE clients on this node.' } },
    },
  ];
}

function daemonOperations(limits: DocumentLimits): Operation[] {
  const tag = 'Daemons';
  const daemon = daemonBodySchema(limits);
  return [
    { method: 'get', path: '/daemon/{tenant}/{collection}', tag, summary: 'Daemons of a collection', answers: ok('Daemon ids.', instancesSchema('Daemon ids.')) },
    { method: 'put', path: DAEMON, tag, versioned: true, summary: 'Define a daemon', description: 'Stored, then run until deleted.', body: { schema: daemon, required: true }, answers: withQueryErrors(ok('The body as sent.', daemon)) },
    { method: 'get', path: DAEMON, tag, versioned: true, summary: 'A daemon', answers: ok('The body as sent.', daemon) },
    { method: 'get', path: `${DAEMON}/details`, tag, summary: 'Where a daemon runs and writes', answers: ok('Its session and output.', daemonDetailsSchema) },
    { method: 'delete', path: DAEMON, tag, versioned: true, summary: 'Delete a daemon', answers: ok('Deleted.', emptySchema) },
  ];
}

function clusterOperations(): Operation[] {
  const tag = 'Cluster';
  const cluster = ok('The cluster: nodes and tenants.', clusterDocumentSchema);
  const changed = ok('The cluster, and what became of each change asked for.', clusterChangeSchema);
  return [
    { method: 'get', path: '/cluster', tag, summary: 'Nodes and tenants', answers: cluster },
    { method: 'get', path: '/cluster/nodes', tag, summary: 'The nodes', answers: ok('Every node.', z.strictObject({ nodes: z.array(nodeSchema) })) },
    { method: 'get', path: '/cluster/localNode', tag, summary: 'The node that answers', answers: ok('This node.', z.strictObject({ node: nodeSchema })) },
    { method: 'get', path: '/cluster/nodes/{name}', tag, summary: 'A node', answers: ok('The node.', z.strictObject({ node: nodeSchema })) },
    {
      method: 'post', path: '/cluster/nodes', tag, summary: 'Add nodes',
      description: 'Each node must be started with `--join-token` (or bare `--join` on loopback), be Pending, and answer at the address with a reply signed by the key that names that address and port; otherwise 400, the same answer after the peer deadline whatever failed. One change runs at a time: each node is one join; the first starts at once when no change is in flight, the others wait in the cluster\'s queue and start one after the other (`changes` says which). Watch `GET /cluster/transfers` and `/output/cluster`. With an admin secret configured it needs that secret.',
      body: { schema: addNodesBodySchema, required: true },
      answers: changed,
    },
    { method: 'delete', path: '/cluster/nodes/{name}', tag, summary: 'Remove a node', description: 'Leaving, then Left once its data moved. While another change runs the removal waits in the queue behind it (`changes` says so).', answers: changed },
    {
      method: 'get', path: '/cluster/join-token', tag, summary: 'A join token',
      description: "Names the keys of the cluster's members: a node started with `--join-token` takes an Admit only from one of them. With an admin secret configured it needs that secret.",
      answers: ok('The token.', z.strictObject({ joinToken: z.string().describe('tribjoin1.<keys>.<checksum>') })),
    },
    { method: 'get', path: '/cluster/transfers', tag, summary: 'Data transfers', answers: ok('Running transfers and recent ones, the change in flight and the queue behind it.', z.strictObject({ actions: z.array(transferActionSchema), ...changeQueueFields })) },
    {
      method: 'post', path: '/cluster/repair', tag, summary: 'Compare and repair replicas',
      description: "Anti-entropy on demand: every Joined or Leaving member compares the partitions it holds with the other owners' copies (key digests per segment) and copies what either side lacks. 202 with the run's id; follow it with GET /cluster/repair/{id} on the same node. Runs also appear in GET /cluster/transfers. Every node also sweeps on its own every cluster.repairIntervalMs.",
      body: { schema: repairBodySchema, required: false },
      answers: { '202': { description: 'Started on every reachable member.', schema: repairStartedSchema } },
    },
    { method: 'get', path: '/cluster/repair/{id}', tag, summary: 'A repair run', description: 'The sum of every member\'s progress; a member that could not be reached names its error.', answers: ok('The run.', repairStatusSchema) },
    { method: 'get', path: '/cluster/tenants', tag, summary: 'Tenants', answers: ok('Every tenant.', z.strictObject({ tenants: z.array(tenantSchema) })) },
    { method: 'get', path: '/cluster/tenants/{name}', tag, versioned: true, summary: 'A tenant', answers: ok('The tenant.', tenantSchema) },
    { method: 'put', path: '/cluster/tenants/{name}', tag, versioned: true, summary: 'Add a tenant', description: 'An existing tenant: 200 and nothing changes. Any body is ignored.', answers: ok('Added.', emptySchema) },
    {
      method: 'get', path: '/output/cluster', tag, summary: 'Cluster events (SSE)',
      description: 'Server-sent events, one JSON object per `data:` line (schema ClusterEvent): CLUSTER_STATE on connect (and to every client whenever another connects), NODE_STATE_UPDATED, TENANT_ADDED.',
      answers: { '200': { description: 'The event stream.', mediaType: 'text/event-stream', schema: z.string() }, '503': { description: 'Too many SSE clients on this node.' } },
    },
  ];
}

function monitoringOperations(): Operation[] {
  const tag = 'Monitoring';
  return [
    { method: 'get', path: '/monitoring/{tenant}', tag, summary: 'Monitoring services', answers: ok('Service names.', instancesSchema(`Services: ${MONITORING_SERVICES.join(', ')}.`)) },
    {
      method: 'get', path: '/monitoring/{tenant}/{service}', tag, summary: 'One monitoring service',
      description: 'Every node, or one with `node`. Filtered by tenant; `system` sees everything.',
      query: [
        { name: 'node', description: '`local` (the node asked) or a node name.', schema: { type: 'string' } },
        { name: 'uri', description: 'A session URI (execution) or stream URI (streams): only that one.', schema: { type: 'string' } },
      ],
      answers: ok('Details per node.', monitoringSchema),
    },
  ];
}

function adminOperations(): Operation[] {
  const tag = 'Admin';
  return [
    { method: 'get', path: '/admin/{tenant}/vendors', tag, summary: 'Approved vendors', answers: ok('Vendor ids.', instancesSchema('Vendor ids.')) },
    { method: 'put', path: VENDOR, tag, versioned: true, summary: 'Approve a vendor', body: { schema: vendorSchema, required: true }, answers: ok('The vendor as sent.', vendorSchema) },
    { method: 'get', path: VENDOR, tag, versioned: true, summary: 'A vendor', answers: ok('The vendor.', vendorSchema) },
    { method: 'delete', path: VENDOR, tag, versioned: true, summary: 'Remove a vendor', answers: ok('Removed.', emptySchema) },
  ];
}

function nodePageOperations(): Operation[] {
  const tag = 'Node';
  const html = (description: string): Record<string, Answer> => ({ '200': { description, mediaType: 'text/html', schema: z.string() } });
  return [
    {
      method: 'get', path: '/', tag, summary: 'What this node is, and its pages',
      description: 'JSON (name, state, version, links) unless the client prefers HTML (a browser): then a page of links.',
      answers: {
        '200': {
          description: 'The node and its pages.',
          schema: z.strictObject({
            name: z.string(), state: nodeSchema.shape.state, version: z.looseObject({ number: z.string(), revision: z.string() }), tagline: z.string(),
            links: z.record(z.string(), z.string()).describe('console, docs, openapi, brainApiDocs, cluster, events.'),
          }),
        },
      },
    },
    { method: 'get', path: '/openapi.json', tag, summary: 'This document', answers: ok('OpenAPI 3.1.', z.looseObject({ openapi: z.literal('3.1.0') })) },
    { method: 'get', path: '/docs', tag, summary: 'This document as a page (Swagger UI, served by the node)', answers: html('The page.') },
    { method: 'get', path: '/docs/{asset}', tag, summary: "A file of the docs page", answers: { '200': { description: 'swagger-ui-bundle.js, swagger-ui.css, initialiser.js, favicon-32x32.png.', mediaType: '*/*', schema: z.string() } } },
    {
      method: 'get', path: '/console', tag, summary: 'The live console',
      description: "Nodes (followed over /output/cluster), charts of every node's figures over the last 15 minutes with its readiness, transfers with their progress, the ring, streams with their stored payloads, a search box and a live query whose rows arrive over SSE. Served by the node; no other origin.",
      answers: html('The page.'),
    },
    { method: 'get', path: '/console/{asset}', tag, summary: 'A file of the console', answers: { '200': { description: 'console.js, console.css, uPlot.iife.min.js, uPlot.min.css (from the uplot package).', mediaType: '*/*', schema: z.string() } } },
    { method: 'get', path: '/console/data/ring', tag, summary: 'The ring, as the console draws it', answers: ok('Partitions and their owners, per partitioning in use.', ringViewSchema) },
    {
      method: 'get', path: '/console/data/history', tag, summary: "Every node's figures over the last 15 minutes, as the console charts them",
      description: 'Each node samples its own figures every 5 s (rates from its counters, latency quantiles from its request duration histogram, as /metrics shows them); the node asked gathers every member\'s over the peer channel, with its readiness now.',
      answers: ok('Per node: its samples and readiness, or why it has none.', clusterHistorySchema),
    },
  ];
}

/** Health, readiness, metrics and the _cat tables: for operators and their tools. */
function operatorOperations(): Operation[] {
  const tag = 'Operations';
  const text = (description: string): Record<string, Answer> => ({ '200': { description, mediaType: 'text/plain', schema: z.string() } });
  const catQuery: Operation['query'] = [
    { name: 'v', description: 'With a header line.', schema: { type: 'boolean' } },
    { name: 'h', description: 'The columns to show, comma-separated (all by default).', schema: { type: 'string' } },
    { name: 's', description: 'Sort by these columns, comma-separated, each `name` or `name:desc`.', schema: { type: 'string' } },
    { name: 'help', description: 'The columns and what they mean, instead of the rows.', schema: { type: 'boolean' } },
    { name: 'format', description: '`text` (aligned columns, the default) or `json` (the rows as objects, numbers as numbers).', schema: { type: 'string', enum: ['text', 'json'] } },
  ];
  const cat = (table: string, summary: string, columns: ReadonlyArray<{ name: string; description: string }>, id: string): Operation => ({
    method: 'get', path: `/_cat/${table}`, tag, summary, query: catQuery,
    description: 'Aligned text in the manner of Elasticsearch\'s _cat; an unknown parameter or column is 400.',
    answers: { '200': { description: 'The table.', mediaType: 'text/plain', schema: z.string(), alternative: { mediaType: 'application/json', schema: catRowsSchema(id, columns) } } },
  });
  return [
    { method: 'get', path: '/health', tag, summary: 'Liveness', description: '200 while the process runs, with the free bytes of the data folder and whether the node takes writes.', answers: ok('Up.', healthSchema) },
    {
      method: 'get', path: '/ready', tag, summary: 'Readiness',
      description: '200 exactly when the node serves client requests; else 503 with every reason it refuses them (not a member yet, its cluster table not confirmed since a restart, storage closed or not taking writes: its disk below the floor or a write failed, stopping). Route traffic on this.',
      answers: { ...ok('Ready.', readinessSchema), '503': { description: 'Not ready, with the reasons.', schema: readinessSchema } },
    },
    { method: 'get', path: '/metrics', tag, summary: 'Prometheus metrics of this node', answers: text('The Prometheus text format.') },
    { method: 'get', path: '/_cat', tag, summary: 'The _cat tables', answers: text('Their paths, one a line.') },
    cat('nodes', 'Nodes: state, availability, ownership, records, bytes', NODE_COLUMNS, 'CatNodes'),
    cat('transfers', 'Data transfers: progress, rate, ETA, stall reason', TRANSFER_COLUMNS, 'CatTransfers'),
    cat('streams', 'Persisted streams: placement and stored payloads', STREAM_COLUMNS, 'CatStreams'),
  ];
}

/** The operations of the platform interface, bodies bounded by the node's limits. */
export function platformOperations(limits: DocumentLimits): Operation[] {
  return [
    ...streamOperations(),
    ...searchOperations(),
    ...contributorOperations(),
    ...domainOperations(),
    ...executionOperations(limits),
    ...daemonOperations(limits),
    ...clusterOperations(),
    ...monitoringOperations(),
    ...adminOperations(),
    ...nodePageOperations(),
    ...operatorOperations(),
  ];
}
