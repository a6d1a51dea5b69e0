// Checks ingested payloads against a stream schema. This runs for every payload on the
// ingest path, so a schema is compiled once into a tree of closures: each record checks a
// fixed array of fields and each leaf is a ready-made function; nothing looks a type up by
// name per payload, and nothing allocates unless a payload is invalid.

import { isIP } from 'node:net';
import { isCalendarDate, parseDatetime } from '../lib/iso-time.js';
import { isPlainObject, jsonTypeName, quoteForMessage } from '../lib/json.js';
import type { FieldType, ScalarKind, StreamSchema } from './schema.js';

/**
 * undefined when the payload is valid, otherwise one clear message naming the dotted path,
 * e.g. "field 'position.latitude': expected double, got string" or
 * "field 'host': missing required field".
 */
export type PayloadValidator = (payload: unknown) => string | undefined;

/** A problem found in a value; `path` is relative to that value ('' for the value itself). */
interface Failure {
  path: string;
  problem: string;
}

/** Checks a value that is neither undefined nor null (containers handle those). */
type Check = (value: unknown) => Failure | undefined;

type RecordFields = Extract<FieldType, { kind: 'record' }>['properties'];

interface CompiledField {
  name: string;
  optional: boolean;
  kind: FieldType['kind'];
  /** The name is also a property of Object.prototype ('constructor', '__proto__', …). */
  inherited: boolean;
  check: Check;
}

const contributorCharsMax = 128;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;
const emailCharsMax = 254;

/** Compiles once per schema version into a closure tree; the result is safe to share. */
export function compileValidator(schema: StreamSchema): PayloadValidator {
  const checkFields = compileFields(schema.topDef.properties);
  return (payload) => {
    if (!isPlainObject(payload)) return `payload: expected object, got ${jsonTypeName(payload)}`;
    const failure = checkFields(payload);
    return failure === undefined ? undefined : `field '${failure.path}': ${failure.problem}`;
  };
}

function compileFields(properties: RecordFields): (object: Record<string, unknown>) => Failure | undefined {
  const fields: CompiledField[] = properties.map(([name, type]) => ({
    name,
    optional: type.optional,
    kind: type.kind,
    inherited: name in Object.prototype,
    check: compileType(type),
  }));
  return (object) => {
    for (let index = 0; index < fields.length; index++) {
      const field = fields[index]!;
      // Without the own-property test a missing 'constructor' field would read Object itself.
      const value = field.inherited && !Object.hasOwn(object, field.name) ? undefined : object[field.name];
      if (value === undefined || value === null) {
        if (field.optional) continue;
        const problem = value === undefined ? 'missing required field' : `expected ${field.kind}, got null`;
        return { path: field.name, problem };
      }
      const failure = field.check(value);
      if (failure !== undefined) return { path: joinPath(field.name, failure.path), problem: failure.problem };
    }
    return undefined;
  };
}

function compileType(type: FieldType): Check {
  switch (type.kind) {
    case 'record': {
      const checkFields = compileFields(type.properties);
      return (value) => (isPlainObject(value) ? checkFields(value) : mismatch('record', value));
    }
    case 'array':
      return compileArray(type.element);
    case 'contributor':
      return checkContributor;
    default:
      return SCALAR_CHECKS[type.kind];
  }
}

function compileArray(element: FieldType | undefined): Check {
  // A bare { type: 'array' } accepts elements of any JSON type.
  if (element === undefined) return (value) => (Array.isArray(value) ? undefined : mismatch('array', value));
  const check = compileType(element);
  const { optional, kind } = element;
  return (value) => {
    if (!Array.isArray(value)) return mismatch('array', value);
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      if (item === undefined || item === null) {
        if (optional) continue;
        return { path: `[${index}]`, problem: `expected ${kind}, got null` };
      }
      const failure = check(item);
      if (failure !== undefined) return { path: joinPath(`[${index}]`, failure.path), problem: failure.problem };
    }
    return undefined;
  };
}

/** Builds paths only on failure: 'a' + 'b' is 'a.b', 'tags' + '[2]' is 'tags[2]'. */
function joinPath(head: string, tail: string): string {
  if (tail === '') return head;
  return tail.startsWith('[') ? head + tail : `${head}.${tail}`;
}

const SCALAR_CHECKS: Record<ScalarKind, Check> = {
  string: (value) => (typeof value === 'string' ? undefined : mismatch('string', value)),
  boolean: (value) => (typeof value === 'boolean' ? undefined : mismatch('boolean', value)),
  double: (value) => {
    // A number too long for a double's exact integers was read as BigInt (json.ts): still a number.
    if (typeof value === 'bigint') return undefined;
    if (typeof value !== 'number') return mismatch('double', value);
    return Number.isFinite(value) ? undefined : invalid('double (finite number)', String(value));
  },
  int: integerCheck('int', -(2 ** 31), 2 ** 31 - 1),
  long: longCheck(),
  short: integerCheck('short', -(2 ** 15), 2 ** 15 - 1),
  byte: integerCheck('byte', -(2 ** 7), 2 ** 7 - 1),
  datetime: stringCheck('datetime', 'ISO 8601, e.g. 2024-01-31T12:00:00Z', (text) => parseDatetime(text) !== undefined),
  date: stringCheck('date', 'YYYY-MM-DD', isDate),
  time: stringCheck('time', 'HH:MM[:SS[.fff]]', isTime),
  duration: stringCheck('duration', 'ISO 8601, e.g. P1DT2H', isDuration),
  uuid: stringCheck('uuid', '8-4-4-4-12 hex digits', (text) => UUID_PATTERN.test(text)),
  email: stringCheck('email', 'local@domain.tld', isEmail),
  uri: stringCheck('uri', 'absolute URI with a scheme', isUri),
  ip: stringCheck('ip', 'IPv4 or IPv6 address', (text) => isIP(text) !== 0),
  geoPoint: checkGeoPoint,
};

function integerCheck(kind: ScalarKind, min: number, max: number): Check {
  const expected = `${kind} (integer from ${min} to ${max})`;
  return (value) => {
    if (typeof value === 'bigint') return invalid(expected, String(value));
    if (typeof value !== 'number') return mismatch(kind, value);
    return Number.isInteger(value) && value >= min && value <= max ? undefined : invalid(expected, String(value));
  };
}

/** Longs are 64-bit: beyond 2^53 they arrive as BigInt and are kept exactly. */
function longCheck(): Check {
  const expected = `long (integer from ${LONG_MIN} to ${LONG_MAX})`;
  return (value) => {
    if (typeof value === 'bigint') return value >= LONG_MIN && value <= LONG_MAX ? undefined : invalid(expected, String(value));
    if (typeof value !== 'number') return mismatch('long', value);
    return Number.isSafeInteger(value) ? undefined : invalid(expected, String(value));
  };
}

function stringCheck(kind: ScalarKind, format: string, isValid: (text: string) => boolean): Check {
  const expected = `${kind} (${format})`;
  return (value) => {
    if (typeof value !== 'string') return mismatch(kind, value);
    return isValid(value) ? undefined : invalid(expected, quoteForMessage(value));
  };
}

function checkContributor(value: unknown): Failure | undefined {
  if (typeof value !== 'string') return mismatch('contributor', value);
  if (value.length > 0 && value.length <= contributorCharsMax) return undefined;
  const found = value.length === 0 ? "''" : `string of ${value.length} characters`;
  return invalid(`contributor (non-empty string of at most ${contributorCharsMax} characters)`, found);
}

const GEO_POINT_EXPECTED = "geoPoint ({lat, lon} or 'lat,lon' with lat in -90..90, lon in -180..180)";
const GEO_POINT_PATTERN = /^\s*([+-]?\d+(?:\.\d+)?)\s*,\s*([+-]?\d+(?:\.\d+)?)\s*$/;

function checkGeoPoint(value: unknown): Failure | undefined {
  if (typeof value === 'string') {
    const match = GEO_POINT_PATTERN.exec(value);
    const valid = match !== null && isLatLon(Number(match[1]), Number(match[2]));
    return valid ? undefined : invalid(GEO_POINT_EXPECTED, quoteForMessage(value));
  }
  if (!isPlainObject(value)) return mismatch('geoPoint', value);
  const lat = value.lat ?? value.latitude;
  const lon = value.lon ?? value.longitude;
  if (typeof lat !== 'number') return invalid(GEO_POINT_EXPECTED, 'object without numeric lat');
  if (typeof lon !== 'number') return invalid(GEO_POINT_EXPECTED, 'object without numeric lon');
  return isLatLon(lat, lon) ? undefined : invalid(GEO_POINT_EXPECTED, `lat ${lat}, lon ${lon}`);
}

function isLatLon(lat: number, lon: number): boolean {
  return Number.isFinite(lat) && Number.isFinite(lon) && Math.abs(lat) <= 90 && Math.abs(lon) <= 180;
}

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME_PATTERN = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?$/;
// Every component may carry a fraction; isDuration allows it on the last one only (ISO 8601).
const DURATION_PATTERN = new RegExp(
  '^P(?!$)(?:(\\d+(?:[.,]\\d+)?)Y)?(?:(\\d+(?:[.,]\\d+)?)M)?(?:(\\d+(?:[.,]\\d+)?)W)?(?:(\\d+(?:[.,]\\d+)?)D)?' +
    '(?:T(?=\\d)(?:(\\d+(?:[.,]\\d+)?)H)?(?:(\\d+(?:[.,]\\d+)?)M)?(?:(\\d+(?:[.,]\\d+)?)S)?)?$',
);
const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// Pragmatic: no whitespace or '@' in the local part, dot-separated domain labels and a
// top-level domain of at least two letters. Labels cannot contain '.', so no backtracking blow-up.
const EMAIL_PATTERN = /^[^\s@]{1,64}@(?:[A-Za-z0-9\u00a1-\uffff-]{1,63}\.)+[A-Za-z\u00a1-\uffff]{2,63}$/;
const URI_SCHEME_PATTERN = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$/;

function isDate(text: string): boolean {
  const match = DATE_PATTERN.exec(text);
  return match !== null && isCalendarDate(Number(match[1]), Number(match[2]), Number(match[3]));
}

function isTime(text: string): boolean {
  const match = TIME_PATTERN.exec(text);
  if (match === null) return false;
  return Number(match[1]) < 24 && Number(match[2]) < 60 && Number(match[3] ?? 0) < 60;
}

function isDuration(text: string): boolean {
  const match = DURATION_PATTERN.exec(text);
  if (match === null) return false;
  const components = match.slice(1).filter((component) => component !== undefined);
  return components.slice(0, -1).every((component) => !/[.,]/.test(component));
}

function isEmail(text: string): boolean {
  return text.length <= emailCharsMax && EMAIL_PATTERN.test(text);
}

function isUri(text: string): boolean {
  return URI_SCHEME_PATTERN.test(text) && URL.canParse(text);
}

function mismatch(expected: string, value: unknown): Failure {
  return { path: '', problem: `expected ${expected}, got ${jsonTypeName(value)}` };
}

function invalid(expected: string, found: string): Failure {
  return { path: '', problem: `expected ${expected}, got ${found}` };
}

