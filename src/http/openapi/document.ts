// The OpenAPI 3.1 document of the platform interface, generated from the
// operations list and its zod schemas (the ones the services check bodies with), served at
// /openapi.json and rendered at /docs. Built once per node: bounds come from its config.

import { z } from 'zod';
import { accessRule } from '../../auth/access-rules.js';
import type { DocumentLimits } from '../../sessions/session-document.js';
import { platformOperations, type Answer, type Operation } from './operations.js';
import { clusterEventSchema, errorSchema } from './responses.js';

export const PLATFORM_OPENAPI_PATH = '/openapi.json';
export const PLATFORM_DOCS_PATH = '/docs';

type Json = Record<string, unknown>;

const DESCRIPTION = `
The HTTP interface of a Tributary node: streams and their payloads, search over stored
streams, contributors and domains, queries in execution sessions, daemons, the cluster and
its events, monitoring and vendors. Every node serves all of it; any node may be asked.
The reference with the rules behind each answer is \`docs/platform-interface.md\` in the
repository; the brain management interface has its own document at \`/api/v1/docs\`.

**Bodies** are JSON (\`Content-Type: application/json\`, or none): another type is 415, one
larger than \`limits.bodyBytesMax\` is 413, one that does not parse or does not match its
schema is 400, with a message that starts with the JSON path of the first problem.

**Errors** are \`{ "error": { "type", "message" } }\`, some with more fields (\`currentVersion\`,
\`errors\`). Two answers keep the spec's own shapes: a POST to a stream where some payloads
fail (500, by index) and query errors (400 with \`errors\`).

**Authentication.** A node with authentication on (\`auth: on\`, or \`auto\` beyond loopback)
needs \`Authorization: Bearer <token>\` on every operation that shows a lock here: the node's
admin secret or a service account's token, holding \`read\`, \`write\` or \`admin\` on the
tenant in the path (on \`system\` for the cluster and operators' routes). Without one: 401;
with too little: 403. Event streams also take \`?access_token=\`. On loopback the default is
off (the node says so in its log), and these operations answer without a token.

**Versions.** Definitions (streams and their parts, contributor types and instances,
domains, daemons, vendors, tenants) carry \`Service-Config-Version\` (and the same value as
\`Valo-Config-Version\`) on GET and PUT. Send either header on a PUT or DELETE to write only
over that version: a mismatch is 409 with \`currentVersion\`. Without it a write is
unconditional.

**Names** (tenant, collection, stream, …): 1–128 characters, no \`/\`, no \`..\`, no control
characters.
`.trim();

const TAGS: Array<{ name: string; description: string }> = [
  { name: 'Streams', description: 'Stream definitions, their taxonomy, tags, repository mapping and distribution policy, and payloads.' },
  { name: 'Search', description: 'Over streams persisted in the ssr repository.' },
  { name: 'Contributors', description: 'Sources of data: types (a schema) and instances.' },
  { name: 'Domains', description: 'Groups of contributors, given by filters.' },
  { name: 'Execution', description: 'Sessions of queries, variables and functions; output channels.' },
  { name: 'Daemons', description: 'Queries that run until deleted.' },
  { name: 'Cluster', description: 'Nodes, tenants, data transfers and the event channel.' },
  { name: 'Monitoring', description: 'Per tenant and service, for every node or one.' },
  { name: 'Admin', description: 'Approved vendors.' },
  { name: 'Node', description: "The node's own pages." },
  { name: 'Operations', description: 'Health, readiness, Prometheus metrics and the _cat tables, for operators and their tools.' },
];

const PARAMETER_DESCRIPTIONS: Record<string, string> = {
  tenant: 'A tenant name.',
  collection: 'A collection name.',
  name: 'A name (stream, domain, node or tenant).',
  asset: 'A file name.',
  type: 'A contributor type name.',
  id: 'An id: a session UUID, a contributor instance id, a daemon or vendor id.',
  queryId: 'A query id of the session.',
  variableId: 'A variable id of the session.',
  outputId: 'An output id (from the queries response).',
  service: 'A monitoring service.',
};

/** Error answers many operations share, as components.responses. */
const SHARED_ERRORS: Record<string, { status: string; description: string }> = {
  BadRequest: { status: '400', description: 'Bad input: a path name, a query parameter or the body (the message names the JSON path).' },
  Unauthorized: { status: '401', description: 'Authentication is on and no token, or an unknown or revoked one, was sent (`WWW-Authenticate: Bearer`).' },
  Forbidden: { status: '403', description: 'The token lacks the level this needs on the tenant, or (stream writes) the collection `system` is read-only.' },
  NotFound: { status: '404', description: 'The tenant, or what the path names, does not exist.' },
  Conflict: { status: '409', description: 'The version sent is not the current one (the body has currentVersion), or the change conflicts with the state.' },
  PayloadTooLarge: { status: '413', description: 'The body is larger than limits.bodyBytesMax.' },
  UnsupportedMediaType: { status: '415', description: 'The body is not JSON.' },
  Internal: { status: '500', description: "Not the client's fault: `INTERNAL`, no details (the node log has them)." },
};

export interface PlatformDocumentOptions {
  limits: DocumentLimits;
  version: string;
  /** Operations the node serves beyond the platform interface (its own pages). */
  extraOperations?: Operation[];
}

export function platformOpenApiDocument(options: PlatformDocumentOptions): Json {
  const components = new Components();
  const paths: Record<string, Record<string, Json>> = {};
  for (const operation of [...platformOperations(options.limits), ...(options.extraOperations ?? [])]) {
    paths[operation.path] ??= {};
    paths[operation.path]![operation.method] = renderOperation(operation, components);
  }
  components.add(clusterEventSchema);
  return {
    openapi: '3.1.0',
    info: { title: 'Tributary platform interface', version: options.version, description: DESCRIPTION },
    tags: TAGS,
    paths,
    components: {
      responses: sharedResponses(components),
      schemas: components.schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: "The node's admin secret, or a service account's token (/api/v1 accounts)." } },
    },
  };
}

function renderOperation(operation: Operation, components: Components): Json {
  const parameters: Json[] = [...operation.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    description: PARAMETER_DESCRIPTIONS[name!] ?? name,
    schema: { type: 'string' },
  }));
  for (const query of operation.query ?? []) parameters.push({ name: query.name, in: 'query', required: false, description: query.description, schema: query.schema });
  if (operation.versioned === true && operation.method !== 'get') {
    parameters.push({ name: 'Service-Config-Version', in: 'header', required: false, description: 'Write only over this version (409 otherwise).', schema: { type: 'string' } });
    parameters.push({ name: 'Valo-Config-Version', in: 'header', required: false, description: 'The same, as older clients name it.', schema: { type: 'string' } });
  }
  const rendered: Json = {
    tags: [operation.tag],
    // The route table the node applies (auth/access-rules.ts); {} : no token while auth is off.
    ...(guarded(operation) ? { security: [{ bearer: [] }, {}] } : {}),
    summary: operation.summary,
    operationId: operationId(operation),
    ...(operation.description === undefined ? {} : { description: operation.description }),
    ...(parameters.length === 0 ? {} : { parameters }),
    responses: renderAnswers(operation, components),
  };
  if (operation.body !== undefined) {
    const schema = components.schemaOf(operation.body.schema);
    const example = firstExample(operation.body.schema);
    rendered.requestBody = {
      required: operation.body.required,
      ...(operation.body.description === undefined ? {} : { description: operation.body.description }),
      content: { 'application/json': { schema, ...(example === undefined ? {} : { example }) } },
    };
  }
  return rendered;
}

function renderAnswers(operation: Operation, components: Components): Json {
  const shared = ['BadRequest', 'NotFound', 'Internal'];
  if (operation.body !== undefined) shared.push('PayloadTooLarge', 'UnsupportedMediaType');
  if (operation.method !== 'get') shared.push('Conflict');
  if (guarded(operation)) shared.push('Unauthorized', 'Forbidden');
  else if (operation.method !== 'get' && operation.path.startsWith('/streams/')) shared.push('Forbidden');
  const responses: Json = {};
  for (const name of shared) responses[SHARED_ERRORS[name]!.status] = { $ref: `#/components/responses/${name}` };
  for (const [status, answer] of Object.entries(operation.answers)) {
    // An answer of the operation's own (ingest's 500, query errors' 400) replaces the shared one.
    responses[status] = renderAnswer(answer.schema === undefined && status !== '200' ? { ...answer, schema: errorSchema } : answer, components);
    if (operation.versioned === true && status === '200') {
      (responses[status] as Json).headers = {
        'Service-Config-Version': { description: 'The version of the definition (absent for parts never set).', schema: { type: 'string' } },
        'Valo-Config-Version': { description: 'The same value.', schema: { type: 'string' } },
      };
    }
  }
  // In status order, as readers look for them.
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}

function sharedResponses(components: Components): Json {
  const error = components.schemaOf(errorSchema);
  return Object.fromEntries(Object.entries(SHARED_ERRORS).map(([name, { description }]) => [name, { description, content: { 'application/json': { schema: error } } }]));
}

/** Whether the operation needs a token when authentication is on. */
function guarded(operation: Operation): boolean {
  return accessRule(operation.method.toUpperCase(), operation.path).kind !== 'public';
}

function renderAnswer(answer: Answer, components: Components): Json {
  if (answer.schema === undefined) return { description: answer.description };
  const content: Json = { [answer.mediaType ?? 'application/json']: { schema: components.schemaOf(answer.schema) } };
  if (answer.alternative !== undefined) content[answer.alternative.mediaType] = { schema: components.schemaOf(answer.alternative.schema) };
  return { description: answer.description, content };
}

function operationId(operation: Operation): string {
  const words = operation.path
    .split('/')
    .filter((part) => part !== '')
    .map((part) => part.replace(/[{}_]/g, ''))
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1));
  return `${operation.method}${words.join('')}`;
}

function firstExample(schema: z.ZodType): unknown {
  const examples = z.globalRegistry.get(schema)?.examples;
  return Array.isArray(examples) ? examples[0] : undefined;
}

/**
 * components.schemas, filled as operations are rendered: a zod schema with an id becomes a
 * component and a `$ref`; one without is inlined, and the id'd schemas inside it become
 * components too.
 */
class Components {
  readonly schemas: Record<string, Json> = {};

  schemaOf(schema: z.ZodType): Json {
    const converted = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' }) as Json;
    const { $defs, $schema: _dialect, ...rest } = converted;
    for (const [id, definition] of Object.entries(($defs ?? {}) as Record<string, Json>)) {
      // Names zod makes up (__schema0) differ from one conversion to the next: give the schema an id.
      if (id.startsWith('__')) throw new Error(`a schema reached twice has no id (${id}: ${JSON.stringify(definition).slice(0, 200)}); give it one with .meta({ id })`);
      this.schemas[id] = rewriteRefs(definition) as Json;
    }
    return rewriteRefs(rest) as Json;
  }

  add(schema: z.ZodType): void {
    this.schemaOf(schema);
  }
}

/** `#/$defs/X` → `#/components/schemas/X`, everywhere in a converted schema. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (typeof value !== 'object' || value === null) return value;
  const result: Json = {};
  for (const [key, child] of Object.entries(value)) {
    result[key] = key === '$ref' && typeof child === 'string' ? child.replace(/^#\/\$defs\//, '#/components/schemas/') : rewriteRefs(child);
  }
  return result;
}
