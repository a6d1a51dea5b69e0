// Checks every query of a session in its context. A query that reads a logical stream is
// checked after the queries that write it, so it sees their output schemas; a cycle of logical
// streams leaves the queries in it without writers, which the checker reports as
// INVALID_STREAM_REFERENCE. Pure: the world is passed in.

import {
  analyseQuery,
  parseQuery,
  type CheckContext,
  type LogicalStreamWriter,
  type QueryAnalysis,
  type QueryAst,
  type QueryError,
  type StreamInfo,
} from '../query/index.js';
import type { QueryLinks, SessionLinks, StoredSession } from './session-model.js';
import type { QueryEntry } from './session-document.js';

/** What a session's queries are checked against, gathered by the caller from definitions. */
export interface SessionWorld {
  readonly streams: ReadonlyMap<string, StreamInfo>;
  readonly contributorTypes: ReadonlyMap<string, unknown>;
  /** Whether the domain URI names a domain of the tenant. */
  domainExists(uri: string): boolean;
}

export interface SessionAnalysis {
  /** Each query's analysis by id; `errors` holds the session-level ones too (INVALID_DOMAIN). */
  readonly queries: ReadonlyMap<string, QueryAnalysis>;
  readonly links: SessionLinks;
}

type SessionParts = Pick<StoredSession, 'domain' | 'variables' | 'functions'> & {
  readonly queries: readonly QueryEntry[];
  /** A daemon's contributor decoration: its query's rows carry the field before any target checks them. */
  readonly decoration?: StoredSession['decoration'];
};

/** Analyses by stored session document, with the world each was made in. */
const analyses = new WeakMap<SessionParts, { readonly world: SessionWorld; readonly analysis: SessionAnalysis }>();

/**
 * analyseSession of a stored session document, made once per document and world: a
 * stored document is replaced, never changed in place, and tenantWorld gives the same
 * world object until one of its definitions changes. A session's start analysed the same
 * document up to three times.
 */
export function analysedSession(session: SessionParts, world: SessionWorld): SessionAnalysis {
  const known = analyses.get(session);
  if (known !== undefined && known.world === world) return known.analysis;
  const analysis = analyseSession(session, world);
  analyses.set(session, { world, analysis });
  return analysis;
}

export function analyseSession(session: SessionParts, world: SessionWorld): SessionAnalysis {
  const writers = logicalWriters(session.queries);
  const results = new Map<string, QueryAnalysis>();
  const visiting = new Set<string>();
  const byId = new Map(session.queries.map((query) => [query.id, query]));

  const visit = (query: QueryEntry): void => {
    if (results.has(query.id) || visiting.has(query.id)) return;
    visiting.add(query.id);
    const source = sourceName(query.body);
    for (const writerId of source === undefined ? [] : (writers.get(source) ?? [])) visit(byId.get(writerId)!);
    results.set(query.id, analyseOne(query, session, world, logicalContext(results, writers, query.id)));
    visiting.delete(query.id);
  };
  for (const query of session.queries) visit(query);

  const links = new Map<string, QueryLinks>();
  for (const query of session.queries) links.set(query.id, linksOf(query, results.get(query.id)!));
  const ordered = new Map(session.queries.map((query) => [query.id, results.get(query.id)!]));
  return { queries: ordered, links };
}

function analyseOne(query: QueryEntry, session: SessionParts, world: SessionWorld, logicalStreams: CheckContext['logicalStreams']): QueryAnalysis {
  const analysis = analyseQuery(query.body, {
    streams: world.streams,
    logicalStreams,
    variables: session.variables,
    queryVariables: query.variables,
    functions: session.functions.map((fn) => fn.id),
    contributorTypes: world.contributorTypes,
    ...decorationOf(query.id, session.decoration),
  });
  const domain = session.domain;
  if (domain === null || world.domainExists(domain) || analysis.ast?.source.kind !== 'physical') return analysis;
  const error: QueryError = { type: 'INVALID_DOMAIN', domain };
  return { ...analysis, errors: [...analysis.errors, error], diagnostics: [...analysis.diagnostics, { error, line: 1, column: 1, message: `no domain ${domain}` }] };
}

function decorationOf(queryId: string, decoration: SessionParts['decoration']): Pick<CheckContext, 'outputDecoration'> {
  if (decoration?.queryId !== queryId || decoration.field === undefined) return {};
  return { outputDecoration: { field: decoration.field, ...(decoration.definition === undefined ? {} : { definition: decoration.definition }) } };
}

/** For each logical stream, the queries writing it (by their `into`). */
function logicalWriters(queries: readonly QueryEntry[]): Map<string, string[]> {
  const writers = new Map<string, string[]>();
  for (const query of queries) {
    const into = parsed(query.body)?.into;
    if (into?.kind !== 'logical') continue;
    writers.set(into.name, [...(writers.get(into.name) ?? []), query.id]);
  }
  return writers;
}

/** The writers checked so far, as the checker wants them; the query itself is left out. */
function logicalContext(results: ReadonlyMap<string, QueryAnalysis>, writers: ReadonlyMap<string, string[]>, self: string): Map<string, LogicalStreamWriter[]> {
  const context = new Map<string, LogicalStreamWriter[]>();
  for (const [name, ids] of writers) {
    const known: LogicalStreamWriter[] = [];
    for (const id of ids) {
      const check = results.get(id)?.check;
      if (id === self || check === undefined) continue;
      known.push({ queryId: id, schema: check.output.schema, isHistorical: check.output.isHistorical });
    }
    context.set(name, known);
  }
  return context;
}

function linksOf(query: QueryEntry, analysis: QueryAnalysis): QueryLinks {
  const dependencies = analysis.check?.dependencies ?? [];
  const own = new Set(query.variables.map((variable) => variable.id));
  return {
    queries: dependencies.filter((dependency) => dependency.type === 'query').map((dependency) => dependency.id),
    variables: dependencies.filter((dependency) => dependency.type === 'variable' && !own.has(dependency.id)).map((dependency) => dependency.id),
    readsPhysical: analysis.ast?.source.kind === 'physical',
  };
}

function sourceName(body: string): string | undefined {
  const source = parsed(body)?.source;
  return source?.kind === 'logical' ? source.name : undefined;
}

function parsed(body: string): QueryAst | undefined {
  try {
    return parseQuery(body);
  } catch {
    return undefined;
  }
}
