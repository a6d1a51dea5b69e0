// The bodies of the Execution endpoints (spec, "Execution session", "Execution"): a session
// `{ domain?, variables?, functions?, queries }`, a query entry, a variable. Pure: each
// parser checks an untrusted body and returns the document, or throws a 400 naming the
// field that is wrong.

import { z } from 'zod';
import { jsonTypeName, stringifyJson } from '../lib/json.js';
import { uniqueField, validate } from '../lib/validation.js';

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
// Query ids are free text (clients send "unnamed query", used URL-encoded in paths):
// anything but control characters.
const QUERY_ID = /^[^\u0000-\u001f\u007f]+$/;
const QUERY_CHARS_MAX = 64 * 1024;
const FUNCTION_CHARS_MAX = 64 * 1024;
const VALUE_CHARS_MAX = 4096;
const LABEL_CHARS_MAX = 1024;
const QUERY_VARIABLES_MAX = 1000;

const ID_RULE = `an id of 1 to ${ID_CHARS_MAX} letters, digits, '_', '.', ':' or '-'`;
const idSchema = z.string({ error: (issue) => `expected ${ID_RULE}, got ${describe(issue.input)}` }).refine((id) => id.length > 0 && id.length <= ID_CHARS_MAX && ID.test(id), {
  error: (issue) => `expected ${ID_RULE}, got ${describe(issue.input)}`,
});

const QUERY_ID_RULE = `a query id of 1 to ${ID_CHARS_MAX} characters, not blank and without control characters`;
const queryIdSchema = z
  .string({ error: (issue) => `expected ${QUERY_ID_RULE}, got ${describe(issue.input)}` })
  .refine((id) => id.trim().length > 0 && id.length <= ID_CHARS_MAX && QUERY_ID.test(id), {
    error: (issue) => `expected ${QUERY_ID_RULE}, got ${describe(issue.input)}`,
  })
  .describe('Free text (e.g. "unnamed query"), URL-encoded where it is part of a path.');

/** A string that is not blank (unless `emptyAllowed`), at most `charsMax` characters. */
function text(charsMax: number, emptyAllowed = false) {
  const string = z.string().max(charsMax);
  return emptyAllowed ? string : string.refine((value) => value.trim() !== '', 'expected a non-empty string');
}

const variableValueSchema = z.union([z.null(), z.boolean(), z.number(), z.string().max(VALUE_CHARS_MAX)], {
  error: (issue) => `expected a string of at most ${VALUE_CHARS_MAX} characters, a number or a boolean, got ${describe(issue.input)}`,
});

/** The body of PUT …/variables, and a variable of a session or query. */
export const variableSchema = z
  .object({
    id: idSchema,
    value: variableValueSchema.describe('Referenced as @<id> in query text.'),
    type: text(64).describe('The variable type, e.g. int, string, datetime.'),
  })
  .meta({ id: 'Variable', examples: [{ id: 'threshold', value: 50, type: 'double' }] });

export const functionSchema = z
  .object({
    id: idSchema.refine((id) => /^[A-Za-z_$][\w$]*$/.test(id), { error: (issue) => `a function id must be an identifier, got ${describe(issue.input)}` }),
    language: z.literal('js'),
    body: text(FUNCTION_CHARS_MAX).describe('A function declaration, function expression, arrow function or plain statements (arguments in `arguments`).'),
  })
  .meta({ id: 'SessionFunction', examples: [{ id: 'double', language: 'js', body: 'function double(x) { return 2 * x }' }] });

/** Items of one kind with unique ids, at most `itemsMax`; omitted or null: none. */
function listOf<Item extends z.ZodType<{ id: string }>>(item: Item, itemsMax: number) {
  return z
    .array(item)
    .max(itemsMax)
    .superRefine(uniqueField('id', (id) => `the id '${id}' is used twice; ids must be unique`, { atArray: true }))
    .nullish()
    .transform((items) => items ?? []);
}

const queryTypeSchema = z.literal(QUERY_TYPE).nullish();

/** The body of PUT …/queries, and a query of a session. */
export const queryEntrySchema = z
  .object({
    id: queryIdSchema,
    body: text(QUERY_CHARS_MAX).describe('The query text.'),
    query_type: queryTypeSchema.describe(`Only ${QUERY_TYPE}; omitted: the same.`),
    queryType: queryTypeSchema.describe('The same as query_type.'),
    label: text(LABEL_CHARS_MAX, true).nullish(),
    variables: listOf(variableSchema, QUERY_VARIABLES_MAX).describe('Variables local to the query.'),
  })
  .transform(({ id, body, query_type: queryType, queryType: alias, label, variables }): QueryEntry => {
    const named = (queryType ?? alias) !== undefined && (queryType ?? alias) !== null;
    const entry: QueryEntry = { id, body, variables, ...(named ? { query_type: QUERY_TYPE } : {}) };
    return label === undefined || label === null ? entry : { ...entry, label };
  })
  .meta({ id: 'QueryEntry', examples: [{ id: 'hot', body: 'from /streams/demo/infra/cpu\nwhere cpu > 50\nselect host, cpu' }] });

const sessionBodySchemas = new Map<number, ReturnType<typeof makeSessionBodySchema>>();

/** The body of PUT /execution/:tenant/sessions/:id (limits from the config); one schema per limit. */
export function sessionBodySchema(limits: DocumentLimits): ReturnType<typeof makeSessionBodySchema> {
  let schema = sessionBodySchemas.get(limits.sessionQueriesMax);
  if (schema === undefined) {
    schema = makeSessionBodySchema(limits);
    sessionBodySchemas.set(limits.sessionQueriesMax, schema);
  }
  return schema;
}

function makeSessionBodySchema(limits: DocumentLimits) {
  return z
    .object({
      domain: z
        .string()
        .nullish()
        .refine((domain) => domain === undefined || domain === null || domain === '' || domain.startsWith('/domain/'), {
          error: (issue) => `expected a domain URI /domain/<tenant>/<collection>/<name>, got ${describe(issue.input)}`,
        })
        .transform((domain) => (domain === undefined || domain === '' ? null : domain))
        .describe('A domain URI that filters every query input; omitted, null or "": unfiltered.'),
      variables: listOf(variableSchema, limits.sessionQueriesMax),
      functions: listOf(functionSchema, limits.sessionQueriesMax),
      queries: listOf(queryEntrySchema, limits.sessionQueriesMax),
    })
    .meta({
      id: 'Session',
      description: 'A whole session: it replaces the one stored, and nothing runs afterwards. No body at all: the empty session.',
      examples: [{ variables: [{ id: 'threshold', value: 50, type: 'double' }], queries: [{ id: 'hot', body: 'from /streams/demo/infra/cpu\nwhere cpu > @threshold\nselect host, cpu' }] }],
    });
}

/** The body of PUT …/domain. */
export const sessionDomainBodySchema = z
  .object({
    domain: z.string().refine((domain) => domain.startsWith('/domain/'), {
      error: (issue) => `expected a domain URI /domain/<tenant>/<collection>/<name>, got ${describe(issue.input)}`,
    }),
  })
  .meta({ id: 'SessionDomain', examples: [{ domain: '/domain/demo/ops/north' }] });

/** A PUT of a whole session; an absent or empty body is the empty session. */
export function parseSessionBody(body: unknown, limits: DocumentLimits): SessionBody {
  if (body === undefined || body === null || (typeof body === 'string' && body === '')) return emptySession();
  return validate(sessionBodySchema(limits), body, 'session');
}

export function emptySession(): SessionBody {
  return { domain: null, variables: [], functions: [], queries: [] };
}

export function parseQueryEntry(raw: unknown, path = 'body'): QueryEntry {
  return validate(queryEntrySchema, raw, path);
}

export function parseVariable(raw: unknown, path = 'body'): VariableDocument {
  return validate(variableSchema, raw, path);
}

/** `{ domain: string }` of PUT …/domain. */
export function parseDomainBody(raw: unknown): string {
  return validate(sessionDomainBodySchema, raw).domain;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  return stringifyJson(value)?.slice(0, 80) ?? jsonTypeName(value);
}
