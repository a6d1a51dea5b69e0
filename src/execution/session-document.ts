// The bodies of the Execution endpoints (spec, "Execution session", "Execution"): a session
// `{ domain?, variables?, functions?, queries }`, a query entry, a variable. Pure: each
// parser checks an untrusted body and returns the document, or throws a 400 naming the
// field that is wrong.

import { BadRequestError } from '../errors.js';
import { isPlainObject, jsonTypeName } from '../json.js';

export interface VariableDocument {
  readonly id: string;
  readonly value: unknown;
  readonly type: string;
}

export interface FunctionDocument {
  readonly id: string;
  readonly language: 'js';
  readonly body: string;
}

export interface QueryEntry {
  readonly id: string;
  readonly body: string;
  readonly query_type?: string;
  readonly label?: string;
  readonly variables: readonly VariableDocument[];
}

export interface SessionBody {
  readonly domain: string | null;
  readonly variables: readonly VariableDocument[];
  readonly functions: readonly FunctionDocument[];
  readonly queries: readonly QueryEntry[];
}

export interface DocumentLimits {
  /** Queries, variables and functions a session may hold, each. */
  readonly sessionQueriesMax: number;
}

/** The only query language; `query_type` may name it or be left out. */
export const QUERY_TYPE = 'valo-query-lang';
const ID_CHARS_MAX = 128;
const ID = /^[A-Za-z0-9_.:-]+$/;
// Query ids are free text (clients send "unnamed query", used URL-encoded in paths; issue 13
// item 3c): anything but control characters.
const QUERY_ID = /^[^\u0000-\u001f\u007f]+$/;
const QUERY_CHARS_MAX = 64 * 1024;
const FUNCTION_CHARS_MAX = 64 * 1024;
const VALUE_CHARS_MAX = 4096;
const LABEL_CHARS_MAX = 1024;

/** A PUT of a whole session; an absent or empty body is the empty session (issue 7 item 1). */
export function parseSessionBody(body: unknown, limits: DocumentLimits): SessionBody {
  if (body === undefined || body === null || (typeof body === 'string' && body === '')) return emptySession();
  if (!isPlainObject(body)) throw new BadRequestError(`a session must be an object { domain?, variables?, functions?, queries }, got ${jsonTypeName(body)}`);
  const variables = listOf(body.variables, 'variables', limits, parseVariable);
  const functions = listOf(body.functions, 'functions', limits, parseFunction);
  const queries = listOf(body.queries, 'queries', limits, parseQueryEntry);
  uniqueIds(variables, 'variables');
  uniqueIds(functions, 'functions');
  uniqueIds(queries, 'queries');
  return { domain: parseDomainField(body.domain, 'domain', true), variables, functions, queries };
}

export function emptySession(): SessionBody {
  return { domain: null, variables: [], functions: [], queries: [] };
}

export function parseQueryEntry(raw: unknown, path = 'body'): QueryEntry {
  if (!isPlainObject(raw)) throw new BadRequestError(`${path}: a query must be an object { id, body }, got ${jsonTypeName(raw)}`);
  const id = parseQueryId(raw.id, `${path}.id`);
  const body = parseText(raw.body, `${path}.body`, QUERY_CHARS_MAX);
  const queryType = raw.query_type ?? raw.queryType;
  if (queryType !== undefined && queryType !== null && queryType !== QUERY_TYPE) {
    throw new BadRequestError(`${path}.query_type: only '${QUERY_TYPE}' is supported, got ${JSON.stringify(queryType)}`);
  }
  const variables = raw.variables === undefined || raw.variables === null ? [] : listOf(raw.variables, `${path}.variables`, { sessionQueriesMax: 1000 }, parseVariable);
  uniqueIds(variables, `${path}.variables`);
  const entry: QueryEntry = { id, body, variables, ...(queryType === undefined || queryType === null ? {} : { query_type: QUERY_TYPE }) };
  if (raw.label === undefined || raw.label === null) return entry;
  return { ...entry, label: parseText(raw.label, `${path}.label`, LABEL_CHARS_MAX, true) };
}

export function parseVariable(raw: unknown, path = 'body'): VariableDocument {
  if (!isPlainObject(raw)) throw new BadRequestError(`${path}: a variable must be an object { id, value, type }, got ${jsonTypeName(raw)}`);
  const id = parseId(raw.id, `${path}.id`);
  const type = parseText(raw.type, `${path}.type`, 64);
  const value = raw.value;
  const valueOk = value === null || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && value.length <= VALUE_CHARS_MAX);
  if (!valueOk) throw new BadRequestError(`${path}.value: expected a string of at most ${VALUE_CHARS_MAX} characters, a number or a boolean, got ${jsonTypeName(value)}`);
  return { id, value, type };
}

export function parseFunction(raw: unknown, path = 'body'): FunctionDocument {
  if (!isPlainObject(raw)) throw new BadRequestError(`${path}: a function must be an object { id, language, body }, got ${jsonTypeName(raw)}`);
  const id = parseId(raw.id, `${path}.id`);
  if (!/^[A-Za-z_$][\w$]*$/.test(id)) throw new BadRequestError(`${path}.id: a function id must be an identifier, got '${id}'`);
  if (raw.language !== 'js') throw new BadRequestError(`${path}.language: only 'js' is supported, got ${JSON.stringify(raw.language)}`);
  return { id, language: 'js', body: parseText(raw.body, `${path}.body`, FUNCTION_CHARS_MAX) };
}

/** `{ domain: string }` of PUT …/domain. */
export function parseDomainBody(raw: unknown): string {
  if (!isPlainObject(raw)) throw new BadRequestError(`body must be { domain: string }, got ${jsonTypeName(raw)}`);
  return parseDomainField(raw.domain, 'domain', false) as string;
}

function parseDomainField(raw: unknown, path: string, optional: boolean): string | null {
  if (optional && (raw === undefined || raw === null || raw === '')) return null;
  if (typeof raw !== 'string' || !raw.startsWith('/domain/')) {
    throw new BadRequestError(`${path}: expected a domain URI /domain/<tenant>/<collection>/<name>, got ${JSON.stringify(raw)?.slice(0, 80)}`);
  }
  return raw;
}

function listOf<T>(raw: unknown, path: string, limits: DocumentLimits, parse: (item: unknown, path: string) => T): T[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw new BadRequestError(`${path}: expected an array, got ${jsonTypeName(raw)}`);
  if (raw.length > limits.sessionQueriesMax) throw new BadRequestError(`${path}: at most ${limits.sessionQueriesMax} are allowed, got ${raw.length}`);
  return raw.map((item, index) => parse(item, `${path}[${index}]`));
}

function uniqueIds(items: readonly { id: string }[], path: string): void {
  const seen = new Set<string>();
  for (const item of items) {
    if (seen.has(item.id)) throw new BadRequestError(`${path}: the id '${item.id}' is used twice; ids must be unique`);
    seen.add(item.id);
  }
}

function parseId(raw: unknown, path: string): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > ID_CHARS_MAX || !ID.test(raw)) {
    throw new BadRequestError(`${path}: expected an id of 1 to ${ID_CHARS_MAX} letters, digits, '_', '.', ':' or '-', got ${JSON.stringify(raw)?.slice(0, 80)}`);
  }
  return raw;
}

function parseQueryId(raw: unknown, path: string): string {
  if (typeof raw !== 'string' || raw.trim().length === 0 || raw.length > ID_CHARS_MAX || !QUERY_ID.test(raw)) {
    throw new BadRequestError(`${path}: expected a query id of 1 to ${ID_CHARS_MAX} characters, not blank and without control characters, got ${JSON.stringify(raw)?.slice(0, 80)}`);
  }
  return raw;
}

function parseText(raw: unknown, path: string, charsMax: number, emptyAllowed = false): string {
  if (typeof raw !== 'string' || (!emptyAllowed && raw.trim() === '')) throw new BadRequestError(`${path}: expected a non-empty string, got ${jsonTypeName(raw)}`);
  if (raw.length > charsMax) throw new BadRequestError(`${path}: at most ${charsMax} characters are allowed, got ${raw.length}`);
  return raw;
}
