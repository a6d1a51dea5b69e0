// The static types of query expressions and rows. They extend the stream schema's types
// (src/streams/schema.ts) with `unknown` (a session function's result, a field behind a
// contributor of no known type) and `null` (the literal), so that a stream's schema is a
// row type as it is and an output schema is written in the same vocabulary.

import type { NumericKind } from '../expression/index.js';
import type { ScalarKind } from '../streams/schema.js';

interface TypeBase {
  readonly optional: boolean;
  readonly annotations: readonly string[];
}

export interface RecordValueType extends TypeBase {
  readonly kind: 'record';
  readonly properties: ReadonlyArray<readonly [string, ValueType]>;
}

export type ValueType =
  | (TypeBase & { readonly kind: ScalarKind | 'unknown' | 'null' })
  | (TypeBase & {
      readonly kind: 'contributor';
      readonly uri?: { readonly tenant: string; readonly collection: string };
      readonly definition?: string;
    })
  | RecordValueType
  | (TypeBase & { readonly kind: 'array'; readonly element: ValueType | undefined });

export type TypeKind = ValueType['kind'];

/** An output schema (spec "Execution session", Output.schema): a record plus its keys. */
export interface QueryOutputSchema {
  readonly version: string;
  readonly config: { readonly key: readonly string[] };
  readonly topDef: RecordValueType;
}

/** Output schemas carry a fixed version: the schema itself says what changed. */
export const OUTPUT_SCHEMA_VERSION = '1.0';

export const UNKNOWN: ValueType = scalarType('unknown');

/** A computed value's type: optional unless said otherwise, as most operations can give null. */
export function scalarType(kind: ScalarKind | 'unknown' | 'null', optional = true): ValueType {
  return { kind, optional, annotations: [] };
}

export function recordType(properties: ReadonlyArray<readonly [string, ValueType]>, optional = false): RecordValueType {
  return { kind: 'record', optional, annotations: [], properties };
}

const INTEGER_KINDS: ReadonlySet<TypeKind> = new Set(['int', 'long', 'short', 'byte']);
/** Kinds whose values are JSON strings that compare and join as text. */
const TEXT_KINDS: ReadonlySet<TypeKind> = new Set(['string', 'ip', 'uuid', 'email', 'uri', 'date', 'time', 'duration']);

/** unknown and null fit anywhere: the checker only rejects what is certainly wrong. */
export function isOpen(type: ValueType): boolean {
  return type.kind === 'unknown' || type.kind === 'null';
}

export function isInteger(type: ValueType): boolean {
  return INTEGER_KINDS.has(type.kind);
}

export function isNumeric(type: ValueType): boolean {
  return isInteger(type) || type.kind === 'double';
}

/** Text-like values: strings and the string-encoded kinds, and contributor ids. */
export function isText(type: ValueType): boolean {
  return TEXT_KINDS.has(type.kind) || type.kind === 'contributor';
}

export function isStructured(type: ValueType): boolean {
  return type.kind === 'record' || type.kind === 'array';
}

/**
 * Whether `==`, `<`, … can give an answer (the evaluator gives null for values of
 * different kinds). Datetimes are ISO strings, so they compare with text as instants.
 */
export function comparable(a: ValueType, b: ValueType): boolean {
  if (isOpen(a) || isOpen(b)) return true;
  if (isStructured(a) || isStructured(b)) return false;
  if (isNumeric(a) || isNumeric(b)) return isNumeric(a) && isNumeric(b);
  const textual = (t: ValueType): boolean => isText(t) || t.kind === 'datetime';
  if (textual(a) || textual(b)) return textual(a) && textual(b);
  return a.kind === b.kind;
}

/** The numeric kind the expression compiler uses to decide whether `/` truncates. */
export function numericKindOfType(type: ValueType): NumericKind {
  if (isInteger(type)) return 'int';
  return type.kind === 'double' ? 'double' : 'unknown';
}

/** The name a message or an error field gives a type: its schema type name. */
export function typeName(type: ValueType): string {
  return type.kind;
}

export function withOptional(type: ValueType, optional: boolean): ValueType {
  return type.optional === optional ? type : { ...type, optional };
}

/**
 * A field's type by dotted path, through records and on through a contributor field into
 * the record of the contributor type it names (`contributor.user.name`). Undefined when
 * the path leads nowhere; unknown past a contributor field that names no type, whose
 * instances may hold anything. The runtime uses it for `numericKindOf` when compiling.
 */
export function resolveFieldType(
  row: RecordValueType,
  path: readonly string[],
  contributorRow: (definition: string) => RecordValueType | undefined,
): ValueType | undefined {
  let current: ValueType = row;
  for (const segment of path) {
    if (current.kind === 'unknown') return UNKNOWN;
    if (current.kind === 'contributor') {
      if (current.definition === undefined) return UNKNOWN;
      const contributor = contributorRow(current.definition);
      if (contributor === undefined) return undefined;
      current = contributor;
    }
    if (current.kind !== 'record') return undefined;
    const next: ValueType | undefined = propertyOf(current, segment);
    if (next === undefined) return undefined;
    current = next;
  }
  return current;
}

/** The property of a record by name. */
export function propertyOf(record: RecordValueType, name: string): ValueType | undefined {
  return record.properties.find(([fieldName]) => fieldName === name)?.[1];
}

/**
 * The dotted path of a row type's primary timestamp, by the rule of schema.ts
 * (docs/query-language.md, "Grouping and windows"): the first field annotated
 * urn:itrs:default-timestamp, else the first datetime field, depth-first.
 */
export function primaryTimestampPath(record: RecordValueType): string[] | undefined {
  let firstDatetime: string[] | undefined;
  const walk = (current: RecordValueType, prefix: readonly string[]): string[] | undefined => {
    for (const [name, type] of current.properties) {
      const path = [...prefix, name];
      if (type.annotations.includes('urn:itrs:default-timestamp')) return path;
      if (firstDatetime === undefined && type.kind === 'datetime') firstDatetime = path;
      const inner = type.kind === 'record' ? walk(type, path) : undefined;
      if (inner !== undefined) return inner;
    }
    return undefined;
  };
  return walk(record, []) ?? firstDatetime;
}

/** A type as a stream definition writes it: `{ type, optional?, annotations?, properties? … }`. */
export function typeToJson(type: ValueType): Record<string, unknown> {
  // The null literal has no type of its own in a schema; its field may hold anything.
  const json: Record<string, unknown> = { type: type.kind === 'null' ? 'unknown' : type.kind };
  if (type.optional) json.optional = true;
  if (type.annotations.length > 0) json.annotations = [...type.annotations];
  if (type.kind === 'record') {
    json.properties = Object.fromEntries(type.properties.map(([name, inner]) => [name, typeToJson(inner)]));
  } else if (type.kind === 'contributor') {
    if (type.uri !== undefined) json.uri = { ...type.uri };
    if (type.definition !== undefined) json.definition = type.definition;
  } else if (type.kind === 'array' && type.element !== undefined) {
    json.items = typeToJson(type.element);
  }
  return json;
}

/** An output schema as JSON, the form served in `sos` messages and query state documents. */
export function outputSchemaToJson(schema: QueryOutputSchema): Record<string, unknown> {
  return { version: schema.version, config: { key: [...schema.config.key] }, topDef: typeToJson(schema.topDef) };
}

/** Whether two output schemas describe the same rows (LOGICAL_STREAM_CONFLICT); versions aside. */
export function sameOutputSchema(a: QueryOutputSchema, b: QueryOutputSchema): boolean {
  // Field order is presentation: `select a, b` and `select b, a` write the same rows.
  const shape = (schema: QueryOutputSchema): string => {
    const { config, topDef } = outputSchemaToJson(schema);
    return canonicalJson({ config, topDef });
  };
  return shape(a) === shape(b);
}

/** JSON with object keys sorted, so that equal values give equal text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([key, inner]) => `${JSON.stringify(key)}:${canonicalJson(inner)}`).join(',')}}`;
}

/**
 * Whether a physical stream's field of type `target` accepts values of type `source`
 * (`into /streams/…`). Ingest validates every row again; this rejects only certain misfits.
 */
export function assignable(target: ValueType, source: ValueType): boolean {
  if (isOpen(source) || target.kind === 'unknown' || target.kind === source.kind) return true;
  if (isInteger(source)) return isNumeric(target);
  if (isText(source) || source.kind === 'datetime') return isText(target) || target.kind === 'datetime';
  return false;
}
