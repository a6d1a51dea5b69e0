// Daemons (spec, "Daemon (daemonised query)", "Daemons"): a session document and settings,
// stored under `daemon/<tenant>/<collection>/<id>`, that runs until it is deleted. A daemon
// runs as a session of its own (`session/<tenant>/daemon.<collection>.<id>`) whose output
// query and everything upstream of it are running: hosting, failover and outputs are the
// sessions'. The settings shape that output: a STREAM target sends it into a physical
// stream, and a contributor decorates every row with the contributor's id.

import { randomUUID } from 'node:crypto';
import { BadRequestError, NotFoundError } from '../lib/errors.js';
import { z } from 'zod';
import { validate } from '../lib/validation.js';
import { checkName } from '../lib/names.js';
import type { TenantService } from '../replicated-definitions/tenants.js';
import { parseQuery, type QueryError } from '../query/index.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definition-store.js';
import { parseStreamUri, streamUri } from '../streams/stream-id.js';
import { QueryErrorsError, type ExecutionService, type OutputDocument } from './execution-service.js';
import { analyseSession } from './session-analysis.js';
import { sessionBodySchema, type DocumentLimits, type SessionBody } from './session-document.js';
import { resetSession, sessionKey, sessionUri, startQuery, type Decoration, type StoredSession } from './session-model.js';
import { tenantWorld } from './query-context.js';

const CONTRIBUTOR_URI = /^\/contributors\/[^/]+\/([^/]+)\/instances\/([^/]+)$/;
const FIELD_NAME = /^[A-Za-z_][\w]*$/;

/** The `settings` of a daemon, and the body of `_daemonise`. */
export const daemonSettingsSchema = z
  .object({
    target: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('QUERY').describe('Output as the query says: an output channel, or the stream of its into clause.') }),
        z.object({ type: z.literal('STREAM').describe("Output into the stream `uri` (a different into clause is an error)."), uri: z.string().describe('A stream URI.') }),
      ])
      .describe('Where the output goes.'),
    contributor: z
      .string()
      .regex(CONTRIBUTOR_URI, 'expected /contributors/<tenant>/<type>/instances/<id>')
      .nullish()
      .describe('A contributor URI: every output row gets the field contributorFieldName holding its id.'),
    contributorFieldName: z.string().regex(FIELD_NAME, 'expected a field name').nullish().describe('Default `contributor`.'),
  })
  .meta({ id: 'DaemonSettings', examples: [{ target: { type: 'STREAM', uri: '/streams/demo/infra/hot' }, contributor: '/contributors/demo/board/instances/board-00001' }] });

export interface DaemonSettings {
  readonly contributor?: string;
  readonly contributorFieldName?: string;
  readonly target: { readonly type: 'QUERY' | 'STREAM'; readonly uri?: string };
}

/** The body of PUT /daemon/:tenant/:collection/:id and of its GET. */
export function daemonBodySchema(limits: DocumentLimits) {
  return z
    .object({ query: sessionBodySchema(limits).describe('A session document: checked clean, exactly one query whose output is not a logical stream.'), settings: daemonSettingsSchema })
    .meta({
      description: 'A daemon (spec, "Daemon"): GET answers the body as sent.',
      examples: [{ query: { queries: [{ id: 'hot', body: 'from /streams/demo/infra/cpu\nwhere cpu > 90\nselect host, cpu' }] }, settings: { target: { type: 'STREAM', uri: '/streams/demo/infra/hot' } } }],
    });
}

export interface DaemonDocument {
  readonly query: SessionBody;
  readonly settings: DaemonSettings;
}

export const DAEMONISED_COLLECTION = 'system';
const DAEMON_PREFIX = 'daemon/';

export class DaemonService {
  constructor(
    private readonly definitions: Definitions,
    private readonly tenants: TenantService,
    private readonly execution: ExecutionService,
    private readonly limits: DocumentLimits,
  ) {}

  list(tenant: string, collection: string): string[] {
    this.tenants.get(tenant);
    const prefix = `${definitionKey('daemon', tenant, checkName('collection', collection))}/`;
    return this.definitions.list(prefix).map((definition) => definition.key.slice(prefix.length));
  }

  get(tenant: string, collection: string, id: string): Definition<DaemonDocument> {
    this.tenants.get(tenant);
    const definition = this.definitions.get<DaemonDocument>(daemonKey(tenant, collection, id));
    if (definition === undefined) throw new NotFoundError(`no daemon /daemon/${tenant}/${collection}/${id}`);
    return definition;
  }

  /** Stores the daemon and (re)starts its session; its errors are refused as query errors. */
  async put(tenant: string, collection: string, id: string, body: unknown, expectedVersion?: string): Promise<Definition<DaemonDocument>> {
    this.tenants.get(tenant);
    const key = daemonKey(tenant, collection, id);
    const document = parseDaemon(body, this.limits);
    const session = this.session(tenant, daemonSessionId(collection, id), document);
    // GET answers the body as the client sent it (checked), like every definition.
    const sent = body as { query: unknown; settings: unknown };
    const stored = await this.definitions.put(key, { query: sent.query, settings: sent.settings } as unknown as DaemonDocument, expectedVersion);
    await this.definitions.put(sessionKey(tenant, session.id), session);
    await this.execution.settled(tenant, session.id);
    return stored;
  }

  async delete(tenant: string, collection: string, id: string, expectedVersion?: string): Promise<string> {
    this.get(tenant, collection, id);
    const version = await this.definitions.delete(daemonKey(tenant, collection, id), expectedVersion);
    await this.definitions.delete(sessionKey(tenant, daemonSessionId(collection, id)));
    // The answer comes once the daemon stopped on the node running it: a row posted after
    // it never reaches the daemon's output.
    await this.execution.settled(tenant, daemonSessionId(collection, id));
    return version!;
  }

  /** `{ session, output }`; 404 once the daemon, and so its output, is gone. */
  async details(tenant: string, collection: string, id: string): Promise<{ session: string; output: OutputDocument }> {
    this.get(tenant, collection, id);
    const sessionId = daemonSessionId(collection, id);
    const session = this.definitions.get<StoredSession>(sessionKey(tenant, sessionId))?.value;
    const queryId = session?.decoration?.queryId;
    const entry = (await this.execution.queries(tenant, sessionId)).find((each) => each.id === queryId);
    if (entry === undefined || !('query' in entry)) throw new NotFoundError(`the output of daemon /daemon/${tenant}/${collection}/${id} no longer exists`);
    return { session: sessionUri(tenant, sessionId), output: entry.query.outputs[0]! };
  }

  /** `_daemonise`: the query and what it reads become a daemon of the `system` collection. */
  async daemonise(tenant: string, sessionId: string, queryId: string, body: unknown): Promise<{ daemonUri: string }> {
    const session = this.execution.session(tenant, sessionId);
    if (!session.queries.some((query) => query.id === queryId)) throw new NotFoundError(`session ${sessionUri(tenant, sessionId)} has no query '${queryId}'`);
    const links = analyseSession(session, tenantWorld(this.definitions, tenant)).links;
    const upstream = startQuery(session, links, queryId).queries.filter((query) => query.desired === 'running' || query.id === queryId);
    const settings = validate(daemonSettingsSchema, body);
    const document = {
      query: {
        domain: session.domain,
        variables: session.variables,
        functions: session.functions,
        queries: upstream.map(({ id, body: text, variables, label }) => ({ id, body: text, variables, ...(label === undefined ? {} : { label }) })),
      },
      settings,
    };
    const id = randomUUID();
    await this.put(tenant, DAEMONISED_COLLECTION, id, document);
    return { daemonUri: `/daemon/${tenant}/${DAEMONISED_COLLECTION}/${id}` };
  }

  /** The daemon's session: checked, its one output query with the settings applied, all running. */
  private session(tenant: string, sessionId: string, document: DaemonDocument): StoredSession {
    const world = tenantWorld(this.definitions, tenant);
    const analysis = analyseSession(document.query, world);
    const errors = [...analysis.queries.values()].flatMap((result) => result.errors);
    if (errors.length > 0) throw new QueryErrorsError(errors);
    const outputs = [...analysis.queries].filter(([, result]) => result.check!.output.target.kind !== 'logical').map(([id]) => id);
    if (outputs.length !== 1) {
      throw new BadRequestError(`a daemon's session must have exactly one query that generates output (not into a logical stream); it has ${outputs.length}`);
    }
    const outputQuery = outputs[0]!;
    const query = { ...document.query, queries: document.query.queries.map((entry) => (entry.id === outputQuery ? { ...entry, body: targeted(entry.body, document.settings) } : entry)) };
    // The decoration is part of the rows the target receives, so the target checks them with it.
    const decoration = decorationOf(outputQuery, document.settings);
    const retargeted = analyseSession({ ...query, ...decoration }, world);
    const retargetErrors: QueryError[] = retargeted.queries.get(outputQuery)!.errors as QueryError[];
    if (retargetErrors.length > 0) throw new QueryErrorsError(retargetErrors);
    let session: StoredSession = { ...resetSession(tenant, sessionId, query, randomUUID), ...decoration };
    session = startQuery(session, retargeted.links, outputQuery);
    return session;
  }
}

/** Sessions of daemons have ids of their own kind, so they never collide with UUIDs. */
export function daemonSessionId(collection: string, id: string): string {
  return `daemon.${collection}.${id}`;
}

function daemonKey(tenant: string, collection: string, id: string): string {
  return definitionKey('daemon', checkName('tenant', tenant), checkName('collection', collection), checkName('daemon id', id));
}

function parseDaemon(body: unknown, limits: DocumentLimits): DaemonDocument {
  const { query, settings } = validate(daemonBodySchema(limits), body, 'daemon');
  if (query.queries.length === 0) throw new BadRequestError('query.queries: a daemon needs at least one query');
  return { query, settings: parseSettings(settings) };
}

function parseSettings(raw: z.output<typeof daemonSettingsSchema>): DaemonSettings {
  const target = raw.target.type === 'STREAM' ? { type: raw.target.type, uri: streamUri(parseStreamUri(raw.target.uri)) } : { type: raw.target.type };
  if (raw.contributor === undefined || raw.contributor === null) return { target };
  return { target, contributor: raw.contributor, ...(typeof raw.contributorFieldName === 'string' ? { contributorFieldName: raw.contributorFieldName } : {}) };
}

function parseContributorUri(uri: string): { type: string; id: string } | undefined {
  const match = CONTRIBUTOR_URI.exec(uri);
  return match === null ? undefined : { type: match[1]!, id: match[2]! };
}

/** The output query's text with a STREAM target: `into <uri>` added, or refused when it writes elsewhere. */
function targeted(body: string, settings: DaemonSettings): string {
  const uri = settings.target.uri;
  if (settings.target.type !== 'STREAM' || uri === undefined) return body;
  const into = parseQuery(body).into;
  if (into === undefined) return `${body}\ninto ${uri}`;
  if (into.kind === 'physical' && into.uri === uri) return body;
  throw new BadRequestError(`settings.target.uri ${uri} conflicts with the query's into clause`, {
    details: { errors: [{ type: 'INVALID_STREAM_REFERENCE', stream: uri }] },
  });
}

function decorationOf(queryId: string, settings: DaemonSettings): { decoration: Decoration } {
  const contributor = settings.contributor === undefined ? undefined : parseContributorUri(settings.contributor);
  if (contributor === undefined) return { decoration: { queryId } };
  return { decoration: { queryId, field: settings.contributorFieldName ?? 'contributor', value: contributor.id, definition: contributor.type } };
}
