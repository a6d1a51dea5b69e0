// The answers of the platform interface as zod schemas, for the OpenAPI document only: the
// node builds its answers in the services, and test/integration/platform-docs.test.ts
// checks real answers against these. Strict objects where the answer's fields are fixed;
// open ones where the spec says more fields may come (nodes, tenants, monitoring details).

import { z } from 'zod';
import { FREQUENCIES } from '../../search/histogram.js';

const uri = (what: string) => z.string().describe(what);

export const errorSchema = z
  .looseObject({
    error: z.strictObject({
      type: z.string().describe('A stable code: BAD_REQUEST, NOT_FOUND, VERSION_CONFLICT, STATE_CONFLICT, FORBIDDEN, PAYLOAD_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, INTERNAL, …'),
      message: z.string().describe('What is wrong; for a bad body it starts with the JSON path of the problem.'),
    }),
  })
  .meta({
    id: 'Error',
    description:
      'Every error of the platform interface. Some add fields: currentVersion (409 on a version), errors (400 with query errors).',
    examples: [{ error: { type: 'BAD_REQUEST', message: "tags[1].lang: expected 'javascript', got 'python'" } }],
  });

export const queryErrorSchema = z
  .looseObject({ type: z.string().describe('MISSING_VARIABLE, INVALID_FIELD_REFERENCE, INVALID_STREAM_REFERENCE, RUNTIME_ERROR, …') })
  .meta({ id: 'QueryError', description: 'An error of a query (docs/query-language.md, "Errors"), with fields of its type (line, column, name, field, …).' });

export const queryErrorsSchema = errorSchema
  .extend({ errors: z.array(queryErrorSchema) })
  .meta({ id: 'QueryErrors', description: 'A session, query or daemon with query errors: refused whole.' });

export const ingestFailuresSchema = z
  .record(z.string(), z.strictObject({ msg: z.string() }))
  .meta({ id: 'IngestFailures', description: 'By the index (as a string) of each payload that failed; the others are durable.', examples: [{ '1': { msg: "cpu: expected double, got string 'high'" } }] });

export const instancesSchema = (what: string) => z.strictObject({ instances: z.array(z.string()).describe(what) });
export const streamsSchema = (what: string) => z.strictObject({ streams: z.array(z.string()).describe(what) });
/** The streams of a collection: the spec's `streams` and, the same list, Valo 2017's `instances`. */
export const collectionStreamsSchema = z.strictObject({
  streams: z.array(z.string()).describe('Stream names.'),
  instances: z.array(z.string()).describe('The same list, under the key Valo 2017 answered with.'),
});

const scoredValueSchema = z.strictObject({
  score: z.number().describe('BM25 relevance; 0 without search terms.'),
  data: z.record(z.string(), z.unknown()).describe('The stored payload.'),
});

export const searchResultSchema = z
  .strictObject({ total: z.int().describe('Payloads matched, over every stream.'), values: z.array(scoredValueSchema).describe('The page, most relevant first.') })
  .meta({ id: 'SearchResult' });

export interface FacetNodeShape {
  name?: string | undefined;
  value?: string | undefined;
  count: number;
  children: FacetNodeShape[];
}

export const facetNodeSchema: z.ZodType<FacetNodeShape> = z
  .strictObject({
    name: z.string().optional().describe('The dimension or field, on top-level nodes.'),
    value: z.string().optional().describe('A level value or range label, on nested nodes.'),
    count: z.int(),
    get children() {
      return z.array(facetNodeSchema);
    },
  })
  .meta({ id: 'FacetNode', description: 'Highest count first.' });

export const facetResultSchema = z.strictObject({ facets: z.array(facetNodeSchema) }).meta({ id: 'FacetResult' });

export const histogramSchema = z
  .strictObject({
    start: z.string().describe('ISO 8601, UTC.'),
    end: z.string(),
    frequency: z.enum(FREQUENCIES),
    buckets: z.array(z.int()).describe('Counts of stored payloads per UTC calendar bucket from start.'),
  })
  .meta({ id: 'Histogram' });

export const histogramResultSchema = z.strictObject({ histogram: histogramSchema }).meta({ id: 'HistogramResult' });

export const discoverResultSchema = z
  .strictObject({
    histogram: histogramSchema.nullable().describe('Over every matching stream; null without a range.'),
    streams: z.array(
      z.strictObject({
        name: uri('The stream URI.'),
        atLeastNMoreResults: z.int(),
        schema: z.record(z.string(), z.unknown()).describe("The stream's schema."),
        facets: z.array(facetNodeSchema).describe('One per taxonomy node of the stream.'),
        values: z.array(scoredValueSchema),
      }),
    ),
  })
  .meta({ id: 'DiscoverResult' });

export const contributorsOfDomainSchema = z
  .strictObject({
    contributors: z.array(z.strictObject({ type: uri('A contributor type URI.'), items: z.array(z.strictObject({ id: z.string() })) })),
  })
  .meta({ id: 'DomainContributors' });

export const domainDocumentSchema = z
  .strictObject({
    contributorFilters: z.array(z.strictObject({ contributor: z.string(), query: z.string() })),
    userData: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'Domain', description: 'What PUT answered and GET returns.' });

export const sessionCreatedSchema = z.strictObject({ session: uri('The session URI /execution/<tenant>/sessions/<uuid>.') }).meta({ id: 'SessionCreated' });

const variableDocumentSchema = z.strictObject({ id: z.string(), value: z.union([z.string(), z.number(), z.boolean(), z.null()]), type: z.string() });

export const sessionDocumentSchema = z
  .strictObject({
    domain: z.string().nullable(),
    variables: z.array(variableDocumentSchema),
    functions: z.array(z.strictObject({ id: z.string(), language: z.literal('js'), body: z.string() })),
    queries: z.array(
      z.strictObject({
        id: z.string(),
        body: z.string(),
        query_type: z.string().optional(),
        label: z.string().optional(),
        variables: z.array(variableDocumentSchema),
      }),
    ),
  })
  .meta({ id: 'SessionDocument' });

export const outputSchema = z
  .strictObject({
    type: z.enum(['OUTPUT_CHANNEL', 'PHYSICAL_STREAM', 'LOGICAL_STREAM']),
    id: z.string(),
    outputUri: uri('/output/<tenant>/<id> (an SSE channel), the stream URI, or <session URI>/streams/<name>.'),
    output: z.string().describe('host:port of the node that answered, then outputUri.'),
    outputType: z.enum(['BOUNDED', 'UNBOUNDED']),
    isHistorical: z.boolean(),
    schema: z.record(z.string(), z.unknown()).describe('The output schema: version, config, topDef.'),
  })
  .meta({ id: 'Output' });

const dependenciesSchema = z.array(z.strictObject({ type: z.enum(['query', 'variable']), id: z.string() }));

export const queryStateSchema = z
  .strictObject({
    dependencies: dependenciesSchema,
    query: z.strictObject({ state: z.enum(['initialised', 'running', 'stopped', 'completed', 'failed']), outputs: z.array(outputSchema) }),
    errors: z.array(queryErrorSchema).optional().describe('A failed query: why (RUNTIME_ERROR).'),
  })
  .meta({ id: 'QueryState' });

export const queriesResponseSchema = z
  .array(
    z.union([
      z.strictObject({ id: z.string(), dependencies: dependenciesSchema, query: queryStateSchema.shape.query, errors: z.array(queryErrorSchema).optional() }),
      z.strictObject({ id: z.string(), errors: z.array(queryErrorSchema) }),
    ]),
  )
  .meta({ id: 'QueriesResponse', description: 'One entry per query of the session: its state, or its errors.' });

export const variableValueSchema = z.strictObject({ value: variableDocumentSchema.shape.value, type: z.string() }).meta({ id: 'VariableValue' });

export const daemonisedSchema = z.strictObject({ daemonUri: uri('/daemon/<tenant>/system/<uuid>.') }).meta({ id: 'Daemonised' });

export const daemonDetailsSchema = z.strictObject({ session: uri('The session the daemon runs as.'), output: outputSchema }).meta({ id: 'DaemonDetails' });

export const nodeSchema = z
  .looseObject({
    name: z.string(),
    zone: z.string(),
    publicKey: z.string().describe('Base64 of the ed25519 public key.'),
    address: z.string(),
    port: z.int().describe('The peer (gRPC) port: what POST /cluster/nodes takes.'),
    httpPort: z.int().describe('Where clients reach the node (an addition to the spec).'),
    version: z.looseObject({ number: z.string(), revision: z.string() }),
    state: z.enum(['Pending', 'Joining', 'Joined', 'Leaving', 'Left']),
    available: z.enum(['true', 'false']).describe("This node's failure detector; a Left node is 'false'."),
  })
  .meta({ id: 'Node' });

export const tenantSchema = z.looseObject({ name: z.string() }).meta({ id: 'Tenant' });

export const clusterDocumentSchema = z.strictObject({ nodes: z.array(nodeSchema), tenants: z.array(tenantSchema) }).meta({ id: 'Cluster' });

const changeKindSchema = z.enum(['join', 'leave']);

/** What POST /cluster/nodes and DELETE /cluster/nodes/{name} did with each command. */
export const changeOutcomeSchema = z
  .strictObject({
    kind: changeKindSchema,
    node: z.string(),
    status: z.enum(['started', 'queued']).describe('started: it is the change in flight; queued: it waits behind it and starts in turn.'),
    position: z.int().min(1).optional().describe('When queued: its place in the queue, 1 = next.'),
    id: z.string().optional().describe('When queued: its queue entry, q<epoch>.<n>.'),
  })
  .meta({ id: 'ChangeOutcome' });

export const clusterChangeSchema = clusterDocumentSchema.extend({ changes: z.array(changeOutcomeSchema) }).meta({ id: 'ClusterChange' });

const queuedChangeSchema = z.strictObject({ id: z.string(), kind: changeKindSchema, node: z.string() });

/** The change in flight and the commands queued behind it, beside the transfer rows. */
export const changeQueueFields = {
  change: queuedChangeSchema.nullable().describe('The membership change in flight, if any.'),
  queue: z.array(queuedChangeSchema).describe('Membership changes waiting behind it, in the order they start.'),
};

const moveNodeSchema = z.strictObject({
  node: z.string(),
  phase: z.enum(['copying', 'copied', 'deleting', 'done']).describe('copying: reads use the old repository here; copied: both are whole, reads use the new one; deleting: the old copy goes; done.'),
  percentComplete: z.int().min(0).max(100),
  copied: z.int().describe('Payloads copied here.'),
  total: z.int().describe('Payloads this node held in the old repository when the move began here.'),
});

export const repositoryMoveSchema = z
  .strictObject({
    move: z.strictObject({
      id: z.string(),
      from: z.enum(['ssr', 'tsr']),
      to: z.enum(['ssr', 'tsr']),
      complete: z.boolean().describe('Every available member is done.'),
      percentComplete: z.int().min(0).max(100),
      nodes: z.array(moveNodeSchema),
    }),
  })
  .meta({ id: 'RepositoryMove' });

export const transferActionSchema = z
  .strictObject({
    type: z.literal('repo_data_transfer'),
    repo: z
      .enum(['KV', 'ssr', 'tsr', 'ssr,tsr'])
      .describe("A repair run (POST /cluster/repair) is one row of repo 'ssr,tsr' per node, to 'other owners'. A move of a stream's payloads to another repository is one row per node, from and to it, repo the new repository, info.kind 'repository-move'."),
    from: z.string(),
    to: z.string(),
    complete: z.boolean(),
    percentComplete: z.int().min(0).max(100),
    info: z.looseObject({
      id: z.string(),
      bytes: z.int(),
      payloads: z.int(),
      partitions: z.int(),
      stalled: z.string().nullable().optional().describe('Why a running transfer has made no progress for cluster.transferStallMs: an end unavailable, or nothing arriving.'),
    }),
  })
  .meta({ id: 'TransferAction' });

const repairStatusFields = {
  id: z.string(),
  stream: z.string().optional().describe('tenant/collection/name when the run was limited to one stream.'),
};

export const repairStartedSchema = z
  .strictObject({ repair: z.strictObject({ ...repairStatusFields, nodes: z.array(z.string()).describe('The members the run was started on.') }) })
  .meta({ id: 'RepairStarted' });

export const repairStatusSchema = z
  .strictObject({
    repair: z.strictObject({
      ...repairStatusFields,
      complete: z.boolean(),
      partitionsTotal: z.int(),
      partitionsDone: z.int(),
      partitionsCompared: z.int(),
      recordsSent: z.int(),
      recordsReceived: z.int(),
      failures: z.int(),
      percentComplete: z.int().min(0).max(100),
      nodes: z.array(z.strictObject({ node: z.string(), complete: z.boolean(), percentComplete: z.int().min(0).max(100), error: z.string().optional() })),
    }),
  })
  .meta({ id: 'RepairStatus' });

export const monitoringSchema = z
  .strictObject({ nodes: z.array(z.strictObject({ node: z.string(), details: z.record(z.string(), z.unknown()) })) })
  .meta({ id: 'Monitoring' });

export const clusterEventSchema = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('CLUSTER_STATE'), state: clusterDocumentSchema }),
    z.strictObject({ type: z.literal('NODE_STATE_UPDATED'), node: z.string(), state: nodeSchema.shape.state }),
    z.strictObject({ type: z.literal('TENANT_ADDED'), tenant: tenantSchema }),
  ])
  .meta({ id: 'ClusterEvent', description: 'One `data:` line of /output/cluster.' });

export const emptySchema = z.strictObject({}).meta({ id: 'Empty' });

export const ringViewSchema = z
  .strictObject({
    epoch: z.int().describe('The membership epoch.'),
    change: z.strictObject({ kind: z.string(), node: z.string() }).nullable().describe('The membership change in flight (join or leave of node).'),
    rings: z.array(
      z.strictObject({
        ringSize: z.int(),
        replicas: z.int(),
        partitions: z.array(
          z.strictObject({
            partition: z.int(),
            owners: z.array(z.string()).describe('Current owners, the one reads prefer first.'),
            next: z.array(z.string()).describe('Owners once the change in flight completes.'),
          }),
        ).describe('At most 4,096 are listed.'),
        holdings: z.record(z.string(), z.strictObject({ first: z.int(), held: z.int() })).describe('Per node: partitions it owns first, and partitions it holds.'),
      }),
    ).describe('One per distinct ring_size and replicas of the persisted streams (the default policy when there are none).'),
  })
  .meta({ id: 'RingView' });

const figures = (description: string) => z.array(z.number()).describe(description);
const gappedFigures = (description: string) => z.array(z.number().nullable()).describe(description);

export const clusterHistorySchema = z
  .strictObject({
    intervalMs: z.int().describe('Milliseconds between two samples of a node.'),
    windowMs: z.int().describe('How far back the samples go.'),
    nodes: z.array(
      z.union([
        z.strictObject({
          node: z.string(),
          intervalMs: z.int(),
          samples: z
            .strictObject({
              atMs: figures('When each sample was taken (ms since the epoch, by that node\'s clock), oldest first.'),
              ingestPayloadsPerSecond: figures('Payloads accepted by ingest on the node, per second.'),
              latencyP50Ms: gappedFigures('Median HTTP request duration (ms) of the requests that ended in the interval, SSE excluded; null without requests.'),
              latencyP99Ms: gappedFigures('99th percentile of the same.'),
              transferBytesPerSecond: figures('Bytes of transfer chunks the node sent and received, per second.'),
              diskUsedBytes: gappedFigures("Bytes used on the data folder's filesystem (size minus free); null before the first reading."),
            })
            .describe('One column per figure, one value per sample: at most 180 (15 minutes of 5-second samples).'),
          ready: z.boolean().describe('What GET /ready of the node says now.'),
          reasons: z.array(z.string()).describe('Why it is not ready (the reasons of GET /ready), empty when it is.'),
        }),
        z.strictObject({ node: z.string(), error: z.string().describe('Why the node has no figures here: unavailable, did not answer within 2 s, or beyond the first 64 nodes.') }),
      ]),
    ).describe('Every member that has not left, by name.'),
  })
  .meta({ id: 'ClusterHistory' });

const versionSchema = z.strictObject({ number: z.string(), revision: z.string() }).meta({ id: 'SoftwareVersion' });

const diskSchema = z
  .strictObject({
    freeBytes: z.int().nullable().describe("Bytes the node may still write on its data folder's filesystem (null before the first reading)."),
    totalBytes: z.int().nullable().describe('Size of that filesystem.'),
    floorBytes: z.int().describe('storage.diskFreeMinBytes: below it, ingest is refused with 507.'),
    writable: z.boolean().describe('Whether the node takes writes now.'),
    reason: z.string().nullable().describe('Why it does not: the disk below the floor, or a failed write until the database is reopened.'),
    sinceMs: z.int().nullable().describe('Since when it does not (epoch ms).'),
  })
  .meta({ id: 'DiskState' });

export const healthSchema = z
  .strictObject({ status: z.literal('up'), node: z.string(), version: versionSchema, uptimeSeconds: z.int(), disk: diskSchema })
  .meta({ id: 'Health' });

export const readinessSchema = z
  .strictObject({
    ready: z.boolean(),
    node: z.string(),
    state: z.string().describe("The node's state (Pending, Joining, Joined, Leaving, Left), or unknown."),
    storage: z.enum(['open', 'closed']),
    stopping: z.boolean(),
    reasons: z.array(z.string()).describe('Why the node refuses client requests (503 NODE_NOT_SERVING); empty when it is ready.'),
    refusing: z.array(z.string()).describe('The names of those reasons, in the same order: stopping, storage, cluster, …'),
  })
  .meta({ id: 'Readiness' });

/** The rows of a _cat table with ?format=json: the columns chosen with ?h (all by default). */
export function catRowsSchema(id: string, columns: ReadonlyArray<{ name: string; description: string }>) {
  const cell = z.union([z.string(), z.number(), z.boolean(), z.null()]);
  return z.array(z.strictObject(Object.fromEntries(columns.map((column) => [column.name, cell.optional().describe(column.description)])))).meta({ id });
}
