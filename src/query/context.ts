// What the checker knows about the world around one query: the tenant's streams, the
// logical streams other queries of the session write, the session's variables and
// functions, and the contributor types that contributor fields name. The runtime gathers
// these (from KV and the session) and passes them in; the checker does no I/O.

import { datetimeMs, type Value } from '../expression/index.js';
import { parseSchema, type ScalarKind, type StreamSchema } from '../streams/schema.js';
import { scalarType, UNKNOWN, type QueryOutputSchema, type RecordValueType, type ValueType } from './types.js';

/** A physical stream: its schema (parsed, or as its definition holds it) and its repository. */
export interface StreamInfo {
  readonly schema: StreamSchema | unknown;
  /** The repository mapping's name ('ssr', 'tsr'); absent for a stream that is not persisted. */
  readonly repository?: string;
}

/** A query of the session that writes a logical stream, as its own check described it. */
export interface LogicalStreamWriter {
  readonly queryId: string;
  readonly schema: QueryOutputSchema;
  readonly isHistorical: boolean;
}

/** A variable of the session or of the query (spec "Execution session"). */
export interface SessionVariable {
  readonly id: string;
  readonly value: unknown;
  readonly type: string;
}

export interface CheckContext {
  /** Streams by URI, `/streams/<tenant>/<collection>/<name>`. */
  readonly streams: ReadonlyMap<string, StreamInfo>;
  /** Writers of each logical stream, by name, excluding the query being checked. */
  readonly logicalStreams?: ReadonlyMap<string, readonly LogicalStreamWriter[]>;
  readonly variables?: readonly SessionVariable[];
  /** The query's own variables, which hide session variables of the same id. */
  readonly queryVariables?: readonly SessionVariable[];
  /** Ids of the session's functions. */
  readonly functions?: readonly string[];
  /**
   * Contributor type schemas by type name (a contributor field's `definition`): the record
   * `{ type: 'record', properties }` of `PUT /contributors/:tenant/:type`, or a parsed one.
   */
  readonly contributorTypes?: ReadonlyMap<string, unknown>;
  /**
   * A field every output row gets after the query computed it (a daemon's contributor
   * decoration, spec "Daemon"): a physical target checks rows with it.
   */
  readonly outputDecoration?: { readonly field: string; readonly definition?: string };
}

/** A schema as given (parsed or raw JSON), parsed; undefined when it is not a valid schema. */
export function streamRowType(schema: StreamSchema | unknown): RecordValueType | undefined {
  if (isParsedSchema(schema)) return schema.topDef;
  try {
    return parseSchema(schema).topDef;
  } catch {
    return undefined;
  }
}

/** A contributor type's record: parsed, `{ type: 'record', … }`, or `{ schema: { … } }`. */
export function contributorRowType(schema: unknown): RecordValueType | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  const candidate = schema as { kind?: unknown; schema?: unknown };
  if (candidate.kind === 'record') return schema as RecordValueType;
  const raw = candidate.schema ?? schema;
  return streamRowType({ version: '1', topDef: raw });
}

function isParsedSchema(schema: unknown): schema is StreamSchema {
  if (typeof schema !== 'object' || schema === null) return false;
  const topDef = (schema as { topDef?: unknown }).topDef;
  return typeof topDef === 'object' && topDef !== null && (topDef as { kind?: unknown }).kind === 'record';
}

// Type names a client may write for a variable, beyond the schema's own.
const TYPE_ALIASES: ReadonlyMap<string, ScalarKind> = new Map([
  ['integer', 'int'],
  ['number', 'double'],
  ['float', 'double'],
  ['bool', 'boolean'],
  ['text', 'string'],
]);
const VARIABLE_KINDS: ReadonlySet<string> = new Set(['string', 'int', 'long', 'short', 'byte', 'double', 'boolean', 'datetime']);

/** The static type a variable's `type` names; a type the language does not know is unknown. */
export function variableType(variable: SessionVariable): ValueType {
  const name = variable.type.toLowerCase();
  const kind = TYPE_ALIASES.get(name) ?? name;
  return VARIABLE_KINDS.has(kind) ? scalarType(kind as ScalarKind, false) : UNKNOWN;
}

/**
 * The value a variable stands for in an expression, read by its type: `{ value: '90',
 * type: 'int' }` is 90. Undefined when the value does not read as its type.
 */
export function variableValue(variable: SessionVariable): Value | undefined {
  const kind = variableType(variable).kind;
  const raw = variable.value;
  if (typeof raw === 'number' || typeof raw === 'boolean') return readPrimitive(raw, kind);
  if (typeof raw !== 'string') return raw === null ? null : undefined;
  switch (kind) {
    case 'int':
    case 'long':
    case 'short':
    case 'byte':
      return /^[+-]?\d+$/.test(raw.trim()) && Number.isSafeInteger(Number(raw)) ? Number(raw) : undefined;
    case 'double':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : undefined;
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'datetime':
      return datetimeMs(raw) === undefined ? undefined : raw;
    default:
      return raw;
  }
}

function readPrimitive(raw: number | boolean, kind: string): Value | undefined {
  if (typeof raw === 'boolean') return kind === 'boolean' || kind === 'unknown' ? raw : undefined;
  if (kind === 'double' || kind === 'unknown') return raw;
  return ['int', 'long', 'short', 'byte'].includes(kind) && Number.isSafeInteger(raw) ? raw : undefined;
}
