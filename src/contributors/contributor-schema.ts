// Contributor types and instances (spec, "Contributor type", "Contributor instance"): the rules
// a type's schema and an instance document must follow. Pure code: no I/O.

import { BadRequestError } from '../lib/errors.js';
import { z } from 'zod';
import { jsonTypeName, pathReader } from '../lib/json.js';
import { validate } from '../lib/validation.js';
import { streamSchemaSchema, typeDefinitionSchema } from '../streams/schema-document.js';
import { checkName } from '../lib/names.js';
import { compileValidator, type PayloadValidator } from '../streams/payload-validator.js';
import { contributorFields, fieldAt, parseSchema, type FieldType, type StreamSchema } from '../streams/schema.js';

/** What GET returns and PUT stores: the body as the client sent it (validated). */
export interface ContributorTypeDocument {
  schema: unknown;
}

/** A contributor type's schema, parsed once per version. */
export interface ContributorType {
  schema: StreamSchema;
  /** The top-level field of type `contributor` that holds the instance id. */
  idField: string;
  validate: PayloadValidator;
}

/** The spec names the id field `contributor`; existing clients name it `id`. */
export const ID_FIELD_NAMES: readonly string[] = ['contributor', 'id'];

/** Instance ids: UUIDs in the spec, names like `board-00001` for existing clients. */
export const CONTRIBUTOR_ID_CHARS_MAX = 128;
const CONTRIBUTOR_ID = /^[A-Za-z0-9_.-]+$/;

/** The body of PUT /contributors/:tenant/:type and of its GET. */
export const contributorTypeBodySchema = z
  .object({
    schema: z
      .union([streamSchemaSchema, typeDefinitionSchema])
      .describe("A record type definition { type: 'record', properties } (as the spec shows it) or a stream schema { version, topDef }. Exactly one field of type contributor, top level, named contributor or id."),
  })
  .meta({
    id: 'ContributorType',
    examples: [{ schema: { type: 'record', properties: { contributor: { type: 'contributor' }, region: { type: 'string' }, slots: { type: 'int' } } } }],
  });

/** An instance document: an object that follows its type's schema. */
export const contributorInstanceSchema = z
  .looseObject({})
  .meta({ id: 'ContributorInstance', description: "Follows its type's schema; its contributor (or id) field equals the :id of the path.", examples: [{ contributor: 'board-00001', region: 'north', slots: 4 }] });

/**
 * Parses a contributor type body `{ schema }`. The schema is a record type definition
 * (`{ type: 'record', properties }`, as the spec shows it) or a stream schema
 * (`{ version, topDef }`). It must hold exactly one field of type `contributor`, at the top
 * level, named `contributor` or `id`; otherwise a 400 names the problem.
 */
export function parseContributorType(body: unknown): ContributorType {
  const schema = parseTypeSchema(validate(contributorTypeBodySchema, body).schema);
  const paths = contributorFields(schema);
  if (paths.length === 0) {
    throw new BadRequestError(`schema: needs a field of type 'contributor' named ${ID_FIELD_NAMES.map((name) => `'${name}'`).join(' or ')}; it has none`);
  }
  if (paths.length > 1) {
    throw new BadRequestError(`schema: must hold exactly one field of type 'contributor'; it has ${paths.length}: ${paths.join(', ')}`);
  }
  const idField = paths[0]!;
  if (!ID_FIELD_NAMES.includes(idField)) {
    throw new BadRequestError(`schema.properties.${idField}: the field of type 'contributor' must be a top-level field named 'contributor' or 'id'`);
  }
  return { schema, idField, validate: compileValidator(schema) };
}

/** The record type definition, or a stream-style `{ version, topDef }`, as a StreamSchema. */
function parseTypeSchema(raw: Record<string, unknown>): StreamSchema {
  if (raw.topDef !== undefined) return parseSchema(raw, 'schema');
  try {
    // parseSchema names places from `<where>.topDef`; the record here is `schema` itself.
    return parseSchema({ version: '', topDef: raw }, 'schema');
  } catch (error) {
    if (error instanceof BadRequestError) throw new BadRequestError(error.message.replace(/^schema\.topDef/, 'schema'));
    throw error;
  }
}

/** Checks an instance id from a path; returns it, or throws a 400 naming the rule. */
export function checkContributorId(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > CONTRIBUTOR_ID_CHARS_MAX || !CONTRIBUTOR_ID.test(value) || /^\.+$/.test(value)) {
    throw new BadRequestError(
      `contributor id must be 1 to ${CONTRIBUTOR_ID_CHARS_MAX} letters, digits, '-', '_' or '.' (not only dots), got ${describe(value)}`,
    );
  }
  return value;
}

/** Whether a payload's contributor value can name an instance (ingest skips others). */
export function isContributorId(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= CONTRIBUTOR_ID_CHARS_MAX && CONTRIBUTOR_ID.test(value) && !/^\.+$/.test(value);
}

/**
 * Checks an instance document against its type: it must follow the schema, and its id
 * field must equal the id in the path. Returns the document unchanged.
 */
export function checkInstance(type: ContributorType, id: string, body: unknown): Record<string, unknown> {
  validate(contributorInstanceSchema, body, 'instance');
  // Kept as sent (key order too): the parsed copy was only for the check.
  const document = body as Record<string, unknown>;
  const problem = type.validate(document);
  if (problem !== undefined) throw new BadRequestError(`instance does not follow its type's schema: ${problem}`);
  const value = document[type.idField];
  if (value !== id) {
    throw new BadRequestError(`instance field '${type.idField}' (${describe(value)}) must equal the id '${id}' in the path`);
  }
  return document;
}

/** `/contributors/<tenant>/<type>`: how domains and search name a contributor type. */
export function contributorTypeUri(tenant: string, type: string): string {
  return `/contributors/${tenant}/${type}`;
}

/**
 * A domain filter's `contributor`: a type URI `/contributors/<tenant>/<type>`, or a bare
 * type name of the domain's tenant.
 */
export function parseContributorTypeUri(value: unknown, where: string): { tenant: string | undefined; type: string } {
  if (typeof value !== 'string' || value === '') throw new BadRequestError(`${where} must be a contributor type URI (/contributors/<tenant>/<type>)`);
  if (!value.startsWith('/')) return { tenant: undefined, type: checkNameAt('contributor type', value, where) };
  const parts = value.split('/');
  if (parts.length !== 4 || parts[1] !== 'contributors') {
    throw new BadRequestError(`${where}: '${value.slice(0, 200)}' is not a contributor type URI (/contributors/<tenant>/<type>)`);
  }
  return { tenant: checkNameAt('tenant', parts[2], where), type: checkNameAt('contributor type', parts[3], where) };
}

function checkNameAt(kind: string, value: unknown, where: string): string {
  try {
    return checkName(kind, value);
  } catch (error) {
    if (error instanceof BadRequestError) throw new BadRequestError(`${where}: ${error.message}`);
    throw error;
  }
}

/**
 * Which contributor type a stream's contributor field refers to: its `definition` names the
 * type (in the stream's tenant, or `uri.tenant` when given); with only `uri`, the tenant
 * is `uri.tenant` and the collection names the type; with neither, any type (undefined).
 */
export function fieldTarget(streamTenant: string, field: Extract<FieldType, { kind: 'contributor' }>): { tenant: string; type: string } | undefined {
  if (field.definition !== undefined) return { tenant: field.uri?.tenant ?? streamTenant, type: field.definition };
  if (field.uri !== undefined) return { tenant: field.uri.tenant, type: field.uri.collection };
  return undefined;
}

/** A contributor field of a stream schema and the type it refers to (undefined: any). */
export interface ContributorFieldTarget {
  /** Dotted path of the field. */
  path: string;
  target: { tenant: string; type: string } | undefined;
}

/** Every contributor field of a stream's schema (records only, as contributorFields), with its type. */
export function contributorFieldTargets(streamTenant: string, schema: StreamSchema): ContributorFieldTarget[] {
  return contributorFields(schema).map((path) => {
    const field = fieldAt(schema, path);
    if (field?.kind !== 'contributor') throw new Error(`schema: contributor field ${path} not found again`);
    return { path, target: fieldTarget(streamTenant, field) };
  });
}


function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 64 ? `${value.slice(0, 64)}…` : value.replace(/[\u0000-\u001f\u007f]/g, '?')}'`;
  return value === undefined ? 'missing' : jsonTypeName(value);
}
