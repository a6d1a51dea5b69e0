// The stream schema type system: parses the `schema` of a stream definition body into a
// typed tree and answers the questions other modules ask of it (a field's type, the primary
// timestamp, the contributor fields). Pure code: no I/O, no clock.

import { isPlainObject, jsonTypeName, quoteForMessage } from '../lib/json.js';
import { BadRequestError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';

export type ScalarKind =
  | 'string'
  | 'double'
  | 'int'
  | 'datetime'
  | 'ip'
  | 'boolean'
  | 'byte'
  | 'short'
  | 'long'
  | 'date'
  | 'time'
  | 'duration'
  | 'uuid'
  | 'email'
  | 'uri'
  | 'geoPoint';

export type FieldType =
  | { kind: ScalarKind; optional: boolean; annotations: string[] }
  | {
      kind: 'contributor';
      optional: boolean;
      annotations: string[];
      uri?: { tenant: string; collection: string };
      definition?: string;
    }
  | { kind: 'record'; optional: boolean; annotations: string[]; properties: Array<[string, FieldType]> }
  | { kind: 'array'; optional: boolean; annotations: string[]; element: FieldType | undefined };

export interface StreamSchema {
  version: string;
  topDef: Extract<FieldType, { kind: 'record' }>;
}

export const DEFAULT_TIMESTAMP_ANNOTATION = 'urn:itrs:default-timestamp';

type RecordType = Extract<FieldType, { kind: 'record' }>;
type ArrayType = Extract<FieldType, { kind: 'array' }>;
type ContributorType = Extract<FieldType, { kind: 'contributor' }>;
type RawObject = Record<string, unknown>;

const SCALAR_KINDS: ReadonlySet<string> = new Set<ScalarKind>([
  'string', 'double', 'int', 'datetime', 'ip', 'boolean', 'byte', 'short',
  'long', 'date', 'time', 'duration', 'uuid', 'email', 'uri', 'geoPoint',
]);

// Limits on what one schema may hold, so that parsing, validation (which recurses once per
// nesting level) and the stored definition stay bounded whatever a client sends.
const fieldNameCharsMax = 128;
const schemaDepthMax = 32;
const schemaFieldCountMax = 4096;
const annotationsPerFieldMax = 64;
const annotationCharsMax = 256;
const versionCharsMax = 256;
// How much of a client's text an error message repeats.

// C0 and C1 control characters: invisible in messages and logs, and never meant in a name.
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** Mutable state of one parse: the field count is bounded over the whole schema. */
interface ParseContext {
  fieldCount: number;
}

/**
 * Validates a schema object (the value of the body's `schema` field). Throws BadRequestError
 * whose message starts with the dotted JSON path of the first problem, e.g.
 * "schema.topDef.properties.position.properties.lat.type: unknown type 'dbl'".
 * `where` is the path prefix (default 'schema').
 */
export function parseSchema(value: unknown, where = 'schema'): StreamSchema {
  if (!isPlainObject(value)) throw problem(where, `expected object, got ${jsonTypeName(value)}`);
  const version = parseVersion(value.version, `${where}.version`);
  const topPath = `${where}.topDef`;
  const rawTop = value.topDef;
  if (rawTop === undefined || rawTop === null) throw problem(topPath, 'missing root type definition');
  // Say "must be a record" before anything inside a non-record root could be complained about.
  if (isPlainObject(rawTop) && typeof rawTop.type === 'string' && rawTop.type !== 'record') {
    throw problem(`${topPath}.type`, `root type must be 'record', got ${quoteForMessage(rawTop.type)}`);
  }
  const topDef = parseTypeDef(rawTop, topPath, { fieldCount: 0 }, 0);
  if (topDef.kind !== 'record') throw problem(`${topPath}.type`, `root type must be 'record'`);
  return { version, topDef };
}

/** The type at a dotted field path ("position.latitude"), descending through records only. */
export function fieldAt(schema: StreamSchema, path: string): FieldType | undefined {
  let record: RecordType | undefined = schema.topDef;
  let found: FieldType | undefined;
  for (const name of path.split('.')) {
    if (record === undefined) return undefined;
    found = record.properties.find(([fieldName]) => fieldName === name)?.[1];
    if (found === undefined) return undefined;
    record = found.kind === 'record' ? found : undefined;
  }
  return found;
}

/**
 * Dotted path of the primary timestamp field: the first field (depth-first, in property
 * order) annotated DEFAULT_TIMESTAMP_ANNOTATION, else the first datetime field depth-first;
 * undefined if none.
 */
export function primaryTimestampField(schema: StreamSchema): string | undefined {
  let firstDatetime: string | undefined;
  for (const [path, type] of fieldsDepthFirst(schema.topDef, '')) {
    if (type.annotations.includes(DEFAULT_TIMESTAMP_ANNOTATION)) return path;
    if (firstDatetime === undefined && type.kind === 'datetime') firstDatetime = path;
  }
  return firstDatetime;
}

/** Dotted paths of every field of kind 'contributor' (depth-first, records only, not inside arrays). */
export function contributorFields(schema: StreamSchema): string[] {
  const paths: string[] = [];
  for (const [path, type] of fieldsDepthFirst(schema.topDef, '')) {
    if (type.kind === 'contributor') paths.push(path);
  }
  return paths;
}

/** Every field reachable through records, pre-order, in property order, with its dotted path. */
function* fieldsDepthFirst(record: RecordType, prefix: string): Generator<[string, FieldType]> {
  for (const [name, type] of record.properties) {
    const path = prefix === '' ? name : `${prefix}.${name}`;
    yield [path, type];
    if (type.kind === 'record') yield* fieldsDepthFirst(type, path);
  }
}

function parseVersion(raw: unknown, path: string): string {
  if (raw === undefined || raw === null) throw problem(path, 'missing schema version');
  if (typeof raw !== 'string') throw problem(path, `expected string, got ${jsonTypeName(raw)}`);
  if (raw.length > versionCharsMax) throw problem(path, `longer than ${versionCharsMax} characters`);
  return raw;
}

function parseTypeDef(raw: unknown, path: string, context: ParseContext, depth: number): FieldType {
  if (!isPlainObject(raw)) throw problem(path, `expected type definition object, got ${jsonTypeName(raw)}`);
  if (depth > schemaDepthMax) throw problem(path, `types nested deeper than ${schemaDepthMax} levels`);
  const type = raw.type;
  if (type === undefined || type === null) throw problem(`${path}.type`, 'missing type');
  if (typeof type !== 'string') throw problem(`${path}.type`, `expected string, got ${jsonTypeName(type)}`);
  if (!SCALAR_KINDS.has(type) && !['record', 'contributor', 'sequence', 'array'].includes(type)) {
    throw problem(`${path}.type`, `unknown type ${quoteForMessage(type)}`);
  }
  const optional = parseOptional(raw.optional, `${path}.optional`);
  const annotations = parseAnnotations(raw.annotations, `${path}.annotations`);
  switch (type) {
    case 'record': {
      const properties = parseProperties(raw.properties, `${path}.properties`, context, depth);
      return { kind: 'record', optional, annotations, properties };
    }
    case 'contributor':
      return { ...parseContributor(raw, path), optional, annotations };
    case 'sequence':
    case 'array':
      return { kind: 'array', optional, annotations, element: parseElement(raw, type, path, context, depth) };
    default:
      // Only scalar kinds are left after the check above.
      return { kind: type as ScalarKind, optional, annotations };
  }
}

function parseProperties(raw: unknown, path: string, context: ParseContext, depth: number): Array<[string, FieldType]> {
  if (raw === undefined || raw === null) throw problem(path, 'missing properties of record');
  if (!isPlainObject(raw)) throw problem(path, `expected object, got ${jsonTypeName(raw)}`);
  const properties: Array<[string, FieldType]> = [];
  // Object.entries keeps insertion order, except that integer-like names come first (JS rule).
  for (const [name, definition] of Object.entries(raw)) {
    checkFieldName(name, path);
    context.fieldCount += 1;
    if (context.fieldCount > schemaFieldCountMax) {
      throw problem(path, `schema has more than ${schemaFieldCountMax} fields`);
    }
    properties.push([name, parseTypeDef(definition, `${path}.${name}`, context, depth + 1)]);
  }
  return properties;
}

function checkFieldName(name: string, path: string): void {
  const invalid = (why: string): BadRequestError => problem(path, `invalid field name ${quoteForMessage(name)}: ${why}`);
  if (name.length === 0) throw invalid('must not be empty');
  if (name.length > fieldNameCharsMax) throw invalid(`longer than ${fieldNameCharsMax} characters`);
  // A '.' would make dotted field paths (taxonomies, tsField, error messages) ambiguous.
  if (name.includes('.')) throw invalid("must not contain '.'");
  if (CONTROL_CHARACTERS.test(name)) throw invalid('must not contain control characters');
}

/**
 * Whether a field may be missing or null. Existing Valo clients rely on fields being
 * optional unless they say `optional: false`, which Valo's documentation
 * writes as the string "false": both spellings are read. null means "not set".
 */
function parseOptional(raw: unknown, path: string): boolean {
  if (raw === undefined || raw === null) return true;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw problem(path, `expected true or false, got ${typeof raw === 'string' ? quoteForMessage(raw) : jsonTypeName(raw)}`);
}

function parseAnnotations(raw: unknown, path: string): string[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw problem(path, `expected array of strings, got ${jsonTypeName(raw)}`);
  if (raw.length > annotationsPerFieldMax) throw problem(path, `more than ${annotationsPerFieldMax} annotations`);
  return raw.map((annotation: unknown, index) => {
    const where = `${path}[${index}]`;
    if (typeof annotation !== 'string') throw problem(where, `expected string, got ${jsonTypeName(annotation)}`);
    if (annotation.length > annotationCharsMax) throw problem(where, `longer than ${annotationCharsMax} characters`);
    return annotation;
  });
}

function parseContributor(raw: RawObject, path: string): Omit<ContributorType, 'optional' | 'annotations'> {
  const contributor: Omit<ContributorType, 'optional' | 'annotations'> = { kind: 'contributor' };
  if (raw.uri !== undefined && raw.uri !== null) {
    const uriPath = `${path}.uri`;
    if (!isPlainObject(raw.uri)) throw problem(uriPath, `expected object, got ${jsonTypeName(raw.uri)}`);
    contributor.uri = {
      tenant: parseName('tenant', raw.uri.tenant, `${uriPath}.tenant`),
      collection: parseName('collection', raw.uri.collection, `${uriPath}.collection`),
    };
  }
  if (raw.definition !== undefined && raw.definition !== null) {
    contributor.definition = parseName('contributor type', raw.definition, `${path}.definition`);
  }
  return contributor;
}

/** The names a contributor type refers to follow the platform's name rules (see names.ts). */
function parseName(kind: string, raw: unknown, path: string): string {
  try {
    return checkName(kind, raw);
  } catch (error) {
    if (error instanceof BadRequestError) throw problem(path, error.message);
    throw error;
  }
}

function parseElement(
  raw: RawObject,
  type: 'sequence' | 'array',
  path: string,
  context: ParseContext,
  depth: number,
): ArrayType['element'] {
  const hasUnderlying = raw.underlying !== undefined && raw.underlying !== null;
  const hasItems = raw.items !== undefined && raw.items !== null;
  if (hasUnderlying && hasItems) throw problem(path, "give either 'underlying' or 'items', not both");
  if (type === 'sequence' && !hasUnderlying) throw problem(`${path}.underlying`, 'missing element type of sequence');
  // A bare { type: 'array' } holds elements of any JSON type.
  if (hasUnderlying) return parseTypeDef(raw.underlying, `${path}.underlying`, context, depth + 1);
  if (hasItems) return parseTypeDef(raw.items, `${path}.items`, context, depth + 1);
  return undefined;
}

function problem(path: string, message: string): BadRequestError {
  return new BadRequestError(`${path}: ${message}`);
}

