// A session as it is stored (a definition under `session/<tenant>/<id>`, so every node holds
// it and it survives restarts) and the transitions of the spec's "Execution queries" table,
// as pure functions from a session to the next one. What a query should be doing is part
// of the stored session: `desired` (initialised, running or stopped) and `runToken`, which
// rises each time a running query must start again from scratch. The node hosting the
// session (session-host.ts) makes its runtime match; a node that takes over after a
// failure reads the same document and starts the same queries.

import type { FunctionDocument, QueryEntry, SessionBody, VariableDocument } from './session-document.js';

export type DesiredState = 'initialised' | 'running' | 'stopped';

export interface StoredQuery extends QueryEntry {
  /** The id of the query's output, stable while the query keeps its id. */
  readonly outputId: string;
  readonly desired: DesiredState;
  readonly runToken: number;
}

/**
 * A daemon's session marks its output query; with a contributor setting, every row of that
 * output gets `field` holding the contributor's id (spec, "Decoration rule").
 */
export interface Decoration {
  readonly queryId: string;
  readonly field?: string;
  readonly value?: string;
  /** The contributor type, which the output schema's field names. */
  readonly definition?: string;
}

export interface StoredSession {
  readonly tenant: string;
  readonly id: string;
  readonly domain: string | null;
  readonly variables: readonly VariableDocument[];
  readonly functions: readonly FunctionDocument[];
  readonly queries: readonly StoredQuery[];
  /** Set on a daemon's session only. */
  readonly decoration?: Decoration;
}

/** What each query reads from the others and from the session, as its check found. */
export interface QueryLinks {
  /** Queries whose logical stream this one reads. */
  readonly queries: readonly string[];
  /** Session variables it uses (its own variables hide session ones). */
  readonly variables: readonly string[];
  /** Whether it reads a physical stream, so the session's domain filters it. */
  readonly readsPhysical: boolean;
}

export type SessionLinks = ReadonlyMap<string, QueryLinks>;

export function sessionKey(tenant: string, id: string): string {
  return `session/${tenant}/${id}`;
}

export function sessionUri(tenant: string, id: string): string {
  return `/execution/${tenant}/sessions/${id}`;
}

/** PUT of a whole session: everything is replaced and nothing runs (spec: "reset"). */
export function resetSession(tenant: string, id: string, body: SessionBody, newId: () => string): StoredSession {
  const queries = body.queries.map((query) => ({ ...query, outputId: newId(), desired: 'initialised' as const, runToken: 0 }));
  return { tenant, id, domain: body.domain, variables: body.variables, functions: body.functions, queries };
}

/** Queries `id` reads from, directly or through others, not including itself. */
export function upstreamOf(links: SessionLinks, id: string): Set<string> {
  return closure(id, (query) => links.get(query)?.queries ?? []);
}

/** Queries that read what `id` writes, directly or through others, not including itself. */
export function downstreamOf(links: SessionLinks, id: string): Set<string> {
  return closure(id, (query) => [...links].filter(([, link]) => link.queries.includes(query)).map(([other]) => other));
}

function closure(start: string, next: (id: string) => readonly string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...next(start)];
  while (stack.length > 0) {
    const id = stack.pop() as string;
    if (id === start || seen.has(id)) continue;
    seen.add(id);
    stack.push(...next(id));
  }
  return seen;
}

/** `_start`: the query and every query upstream of it run; those already running keep running. */
export function startQuery(session: StoredSession, links: SessionLinks, id: string): StoredSession {
  const starting = upstreamOf(links, id).add(id);
  return mapQueries(session, (query) =>
    starting.has(query.id) && query.desired !== 'running' ? { ...query, desired: 'running', runToken: query.runToken + 1 } : query,
  );
}

/** `_stop`: the query and every running query downstream of it stop. */
export function stopQuery(session: StoredSession, links: SessionLinks, id: string): StoredSession {
  const stopping = downstreamOf(links, id).add(id);
  return mapQueries(session, (query) => (stopping.has(query.id) && query.desired === 'running' ? { ...query, desired: 'stopped' } : query));
}

/**
 * PUT of one query: a new id is added, initialised; an existing one is replaced and, if it
 * was running, restarted, and so is every running query downstream of it. `links` are those
 * of the session after the change.
 */
export function putQuery(session: StoredSession, links: SessionLinks, entry: QueryEntry, newId: () => string): StoredSession {
  const existing = session.queries.find((query) => query.id === entry.id);
  if (existing === undefined) {
    return { ...session, queries: [...session.queries, { ...entry, outputId: newId(), desired: 'initialised', runToken: 0 }] };
  }
  const replaced = mapQueries(session, (query) => (query.id === entry.id ? { ...query, ...entry } : query));
  return existing.desired === 'running' ? restart(replaced, links, [entry.id]) : restart(replaced, links, [...downstreamOf(links, entry.id)]);
}

/** DELETE of one query: it goes, and every running query downstream of it stops. */
export function deleteQuery(session: StoredSession, links: SessionLinks, id: string): StoredSession {
  const stopping = downstreamOf(links, id);
  const kept = session.queries.filter((query) => query.id !== id);
  return mapQueries({ ...session, queries: kept }, (query) =>
    stopping.has(query.id) && query.desired === 'running' ? { ...query, desired: 'stopped' } : query,
  );
}

/** PUT or DELETE of a session variable: running queries that use it restart, with their dependents. */
export function setVariable(session: StoredSession, links: SessionLinks, variable: VariableDocument | { id: string; deleted: true }): StoredSession {
  const others = session.variables.filter((existing) => existing.id !== variable.id);
  const variables = 'deleted' in variable ? others : [...others, variable];
  const users = [...links].filter(([, link]) => link.variables.includes(variable.id)).map(([id]) => id);
  return restart({ ...session, variables }, links, users);
}

/** PUT or DELETE of the domain: running queries that read physical streams restart, with their dependents. */
export function setDomain(session: StoredSession, links: SessionLinks, domain: string | null): StoredSession {
  const readers = [...links].filter(([, link]) => link.readsPhysical).map(([id]) => id);
  return restart({ ...session, domain }, links, readers);
}

/** Restarts the running ones among `ids` and every running query downstream of them. */
function restart(session: StoredSession, links: SessionLinks, ids: readonly string[]): StoredSession {
  const restarting = new Set<string>();
  for (const id of ids) {
    restarting.add(id);
    for (const downstream of downstreamOf(links, id)) restarting.add(downstream);
  }
  return mapQueries(session, (query) =>
    restarting.has(query.id) && query.desired === 'running' ? { ...query, runToken: query.runToken + 1 } : query,
  );
}

function mapQueries(session: StoredSession, change: (query: StoredQuery) => StoredQuery): StoredSession {
  return { ...session, queries: session.queries.map(change) };
}
