// The Execution endpoints' operations (spec, "Execution"), on any node: each change is a
// read-modify-write of the session document (retried when another write got there first), the
// transitions are session-model.ts's, and every answer is the queries response, whose states
// come from the node hosting the session.

import { randomUUID } from 'node:crypto';
import { BadRequestError, NotFoundError, VersionConflictError } from '../lib/errors.js';
import type { TenantService } from '../replicated-definitions/tenants.js';
import type { QueryAnalysis, QueryError } from '../query/index.js';
import { decoratedSchema } from './query-runner.js';
import { compileFunction, ScriptError, type SandboxLimits } from '../scripting/sandbox.js';
import type { Definitions } from '../storage/definition-store.js';
import type { RunStatus } from './session-host.js';
import { analysedSession, analyseSession, type SessionAnalysis } from './session-analysis.js';
import {
  emptySession,
  parseDomainBody,
  parseQueryEntry,
  parseSessionBody,
  parseVariable,
  type DocumentLimits,
  type SessionBody,
} from './session-document.js';
import {
  deleteQuery,
  putQuery,
  resetSession,
  sessionKey,
  sessionUri,
  setDomain,
  setVariable,
  startQuery,
  stopQuery,
  upstreamOf,
  type StoredQuery,
  type StoredSession,
} from './session-model.js';
import { functionSource } from './session-host.js';
import { tenantWorld } from './query-context.js';

/** 400 `{ errors: [...] }`: the query errors of docs/query-language.md. */
export class QueryErrorsError extends BadRequestError {
  constructor(readonly errors: readonly QueryError[]) {
    super(`the query has ${errors.length} error(s): ${errors.map((error) => error.type).join(', ')}`, { details: { errors } });
  }
}

export interface ExecutionDeps {
  readonly definitions: Definitions;
  readonly tenants: TenantService;
  /** Run statuses from the session's host, wherever it is; empty when it cannot be asked. */
  statuses(tenant: string, id: string): Promise<ReadonlyMap<string, RunStatus>>;
  /** Resolves once a changed session runs as stored, when this node hosts it (so a client may post at once). */
  settle(tenant: string, id: string): Promise<void>;
  /** `host:port` of this node's HTTP interface, for each output's `output` field. */
  readonly advertisedHttp: string;
  readonly limits: DocumentLimits;
  readonly sandboxLimits: SandboxLimits;
}

export interface OutputDocument {
  readonly type: 'OUTPUT_CHANNEL' | 'PHYSICAL_STREAM' | 'LOGICAL_STREAM';
  readonly id: string;
  readonly outputUri: string;
  readonly output: string;
  readonly outputType: 'BOUNDED' | 'UNBOUNDED';
  readonly isHistorical: boolean;
  readonly schema: Record<string, unknown>;
}

export type QueryStateDocument = {
  readonly dependencies: readonly { type: 'query' | 'variable'; id: string }[];
  readonly query: { readonly state: string; readonly outputs: readonly OutputDocument[] };
};
export type QueriesResponse = Array<({ id: string } & QueryStateDocument) | { id: string; errors: readonly unknown[] }>;

const WRITE_ATTEMPTS = 5;

export class ExecutionService {
  constructor(private readonly deps: ExecutionDeps) {}

  async create(tenant: string): Promise<{ session: string }> {
    this.deps.tenants.get(tenant);
    const id = randomUUID();
    await this.deps.definitions.put(sessionKey(tenant, id), resetSession(tenant, id, emptySession(), randomUUID));
    return { session: sessionUri(tenant, id) };
  }

  get(tenant: string, id: string): SessionBody {
    const session = this.session(tenant, id);
    return {
      domain: session.domain,
      variables: session.variables,
      functions: session.functions,
      queries: session.queries.map(({ id: queryId, body, query_type, label, variables }) => ({
        id: queryId,
        body,
        variables,
        ...(query_type === undefined ? {} : { query_type }),
        ...(label === undefined ? {} : { label }),
      })),
    };
  }

  /** Answers once the session's host has stopped it: its outputs end, and nothing it writes comes after. */
  async delete(tenant: string, id: string): Promise<void> {
    this.session(tenant, id);
    await this.deps.definitions.delete(sessionKey(tenant, id));
    await this.deps.settle(tenant, id);
  }

  /** PUT of a session: checked whole, then it replaces the old one; nothing runs. */
  async put(tenant: string, id: string, body: unknown): Promise<QueriesResponse> {
    this.session(tenant, id);
    const parsed = parseSessionBody(body, this.deps.limits);
    await this.checkFunctions(parsed);
    const world = this.world(tenant);
    const analysis = analyseSession(parsed, world);
    const errors = [...analysis.queries.values()].flatMap((result) => result.errors);
    // The domain is the session's: unknown is an error also when no query reads a stream.
    if (parsed.domain !== null && !world.domainExists(parsed.domain) && !errors.some((error) => error.type === 'INVALID_DOMAIN')) {
      errors.push({ type: 'INVALID_DOMAIN', domain: parsed.domain });
    }
    if (errors.length > 0) throw new QueryErrorsError(errors);
    const next = resetSession(tenant, id, parsed, randomUUID);
    await this.deps.definitions.put(sessionKey(tenant, id), next);
    await this.deps.settle(tenant, id);
    return this.response(next);
  }

  getDomain(tenant: string, id: string): { domain: string } {
    const domain = this.session(tenant, id).domain;
    if (domain === null) throw new NotFoundError(`session ${sessionUri(tenant, id)} has no domain`);
    return { domain };
  }

  putDomain(tenant: string, id: string, body: unknown): Promise<QueriesResponse> {
    const domain = parseDomainBody(body);
    if (!this.world(tenant).domainExists(domain)) throw new QueryErrorsError([{ type: 'INVALID_DOMAIN', domain }]);
    return this.change(tenant, id, (session, links) => setDomain(session, links, domain));
  }

  deleteDomain(tenant: string, id: string): Promise<QueriesResponse> {
    return this.change(tenant, id, (session, links) => setDomain(session, links, null));
  }

  getVariable(tenant: string, id: string, variableId: string): { value: unknown; type: string } {
    const variable = this.session(tenant, id).variables.find((each) => each.id === variableId);
    if (variable === undefined) throw new NotFoundError(`session ${sessionUri(tenant, id)} has no variable '${variableId}'`);
    return { value: variable.value, type: variable.type };
  }

  putVariable(tenant: string, id: string, body: unknown): Promise<QueriesResponse> {
    const variable = parseVariable(body);
    return this.change(tenant, id, (session, links) => {
      if (session.variables.length >= this.deps.limits.sessionQueriesMax && !session.variables.some((each) => each.id === variable.id)) {
        throw new BadRequestError(`a session holds at most ${this.deps.limits.sessionQueriesMax} variables`);
      }
      return setVariable(session, links, variable);
    });
  }

  deleteVariable(tenant: string, id: string, variableId: string): Promise<QueriesResponse> {
    return this.change(tenant, id, (session, links) => {
      if (!session.variables.some((each) => each.id === variableId)) throw new NotFoundError(`session ${sessionUri(tenant, id)} has no variable '${variableId}'`);
      return setVariable(session, links, { id: variableId, deleted: true });
    });
  }

  /** PUT of one query: checked in the session as it would be; a query with errors is refused. */
  putQuery(tenant: string, id: string, body: unknown): Promise<QueriesResponse> {
    const entry = parseQueryEntry(body);
    return this.change(tenant, id, (session) => {
      const others = session.queries.filter((query) => query.id !== entry.id);
      if (others.length >= this.deps.limits.sessionQueriesMax) throw new BadRequestError(`a session holds at most ${this.deps.limits.sessionQueriesMax} queries`);
      const analysis = analyseSession({ ...session, queries: [...others, entry] }, this.world(tenant));
      const errors = analysis.queries.get(entry.id)!.errors;
      if (errors.length > 0) throw new QueryErrorsError(errors);
      return putQuery(session, analysis.links, entry, randomUUID);
    });
  }

  async queries(tenant: string, id: string): Promise<QueriesResponse> {
    return this.response(this.session(tenant, id));
  }

  /** The state document of one query: its dependencies and output, checked but not run. */
  async query(tenant: string, id: string, queryId: string): Promise<QueryStateDocument | { errors: readonly unknown[] }> {
    const session = this.session(tenant, id);
    this.queryOf(session, queryId);
    const entry = (await this.response(session)).find((each) => each.id === queryId)!;
    const { id: _id, ...document } = entry;
    return document;
  }

  deleteQuery(tenant: string, id: string, queryId: string): Promise<QueriesResponse> {
    return this.change(tenant, id, (session, links) => {
      this.queryOf(session, queryId);
      return deleteQuery(session, links, queryId);
    });
  }

  start(tenant: string, id: string, queryId: string): Promise<QueriesResponse> {
    return this.change(tenant, id, (session, links, analysis) => {
      this.queryOf(session, queryId);
      const errors = [queryId, ...upstreamOf(links, queryId)].flatMap((each) => analysis.queries.get(each)?.errors ?? []);
      if (errors.length > 0) throw new QueryErrorsError(errors);
      return startQuery(session, links, queryId);
    });
  }

  stop(tenant: string, id: string, queryId: string): Promise<QueriesResponse> {
    return this.change(tenant, id, (session, links) => {
      this.queryOf(session, queryId);
      return stopQuery(session, links, queryId);
    });
  }

  /** Resolves once the session runs as stored here, when this node hosts it. */
  settled(tenant: string, id: string): Promise<void> {
    return this.deps.settle(tenant, id);
  }

  /** The stored session; 404 for an unknown tenant or session. */
  session(tenant: string, id: string): StoredSession {
    this.deps.tenants.get(tenant);
    const session = this.deps.definitions.get<StoredSession>(sessionKey(tenant, id))?.value;
    if (session === undefined) throw new NotFoundError(`no session ${sessionUri(tenant, id)}`);
    return session;
  }

  private queryOf(session: StoredSession, queryId: string): StoredQuery {
    const query = session.queries.find((each) => each.id === queryId);
    if (query === undefined) throw new NotFoundError(`session ${sessionUri(session.tenant, session.id)} has no query '${queryId}'`);
    return query;
  }

  /** Applies a transition to the current document, retrying when a concurrent write won. */
  private async change(
    tenant: string,
    id: string,
    transition: (session: StoredSession, links: SessionAnalysis['links'], analysis: SessionAnalysis) => StoredSession,
  ): Promise<QueriesResponse> {
    for (let attempt = 1; ; attempt += 1) {
      this.session(tenant, id);
      const current = this.deps.definitions.get<StoredSession>(sessionKey(tenant, id))!;
      const analysis = analysedSession(current.value, this.world(tenant));
      const next = transition(current.value, analysis.links, analysis);
      try {
        await this.deps.definitions.put(sessionKey(tenant, id), next, current.version);
        await this.deps.settle(tenant, id);
        return await this.response(next);
      } catch (error) {
        if (!(error instanceof VersionConflictError) || attempt === WRITE_ATTEMPTS) throw error;
      }
    }
  }

  private async response(session: StoredSession): Promise<QueriesResponse> {
    const analysis = analysedSession(session, this.world(session.tenant));
    const statuses = await this.deps.statuses(session.tenant, session.id);
    return session.queries.map((query) => {
      const result = analysis.queries.get(query.id)!;
      const status = statuses.get(query.id);
      const current = status !== undefined && status.runToken === query.runToken && query.desired === 'running' ? status : undefined;
      const errors = current?.state === 'failed' ? current.errors : result.errors;
      if (errors.length > 0 || result.check === undefined) return { id: query.id, errors };
      return {
        id: query.id,
        dependencies: result.check.dependencies.map(({ type, id }) => ({ type, id })),
        query: { state: current?.state ?? query.desired, outputs: [this.output(session, query, result)] },
      };
    });
  }

  private output(session: StoredSession, query: StoredQuery, result: QueryAnalysis): OutputDocument {
    const output = result.check!.output;
    const target = output.target;
    const [type, outputUri] =
      target.kind === 'channel'
        ? (['OUTPUT_CHANNEL', `/output/${session.tenant}/${query.outputId}`] as const)
        : target.kind === 'physical'
          ? (['PHYSICAL_STREAM', target.uri] as const)
          : (['LOGICAL_STREAM', `${sessionUri(session.tenant, session.id)}/streams/${target.name}`] as const);
    return {
      type,
      id: query.outputId,
      outputUri,
      output: `${this.deps.advertisedHttp}${outputUri}`,
      outputType: output.outputType,
      isHistorical: output.isHistorical,
      schema: decoratedSchema(result.check!, session.decoration?.queryId === query.id && session.decoration.field !== undefined ? { field: session.decoration.field, ...(session.decoration.definition === undefined ? {} : { definition: session.decoration.definition }) } : undefined),
    };
  }

  /** Each function must compile in the sandbox before a session holding it is stored. */
  private async checkFunctions(body: SessionBody): Promise<void> {
    for (const fn of body.functions) {
      try {
        (await compileFunction(functionSource(fn.id, fn.body), fn.id, `session function '${fn.id}'`, this.deps.sandboxLimits)).dispose();
      } catch (error) {
        if (error instanceof ScriptError) throw new BadRequestError(error.message);
        throw error;
      }
    }
  }

  private world(tenant: string) {
    return tenantWorld(this.deps.definitions, tenant);
  }
}
