// A tsr block (issue 17): the payloads of one write that fall in one partition and within
// BLOCK_SPAN_MS of event time of each other, kept as one record. Storage, replication,
// hints, transfers and repair move blocks as they moved single payloads, so a batch of a
// few thousand points costs a LevelDB entry, a key and a peer record per partition instead
// of per point; and a read decodes columns, not one JSON object per point (InfluxDB keeps
// a series' points in compressed blocks for the same two reasons).
//
// Pure: text in, text out. The layout is part of the stored format:
//
//   tsb1 <count> <minTs> <maxTs>\n<columns JSON>[\n<rest JSON>]
//
// - Payloads are in event-time order, ties in the order they were written.
// - columns: {"t":[…],"c":{…}[,"o":[…]]}. `t` holds the timestamps (integer epoch ms): the
//   first, then each one's difference from the one before. `o` holds each payload's place
//   in its write (the POST's batch) the same way, absent when those are 0, 1, 2, …: a
//   payload's writeId is its write's id and that place (tsr.ts), so payloads of one
//   moment read back in the order they arrived, across partitions. `c` holds, by field name, each
//   top-level field that every payload has with one kind of value:
//     {"n":[…]}              integers (within 2^53: larger ones keep their digits in rest)
//     {"f":"…"}              other finite numbers, as base64 of little-endian float64s: no
//                            decimal text to write or read for a measurement
//     {"s":[…]}              strings
//     {"d":[…],"i":[…]}      strings, few distinct: the distinct ones and each payload's index into them
//     {"b":[…]}              booleans
//     {"iso":1}              the payload's own timestamp as an ISO string (toISOString):
//                            the primary datetime field is stored once, as `t`
// - rest: present when any payload has other fields: per payload, an object of those
//   fields ({} when none), as canonical JSON, read back with integers beyond 2^53 exact.
//
// A decoded payload has its fields in sorted order, as the canonical JSON ingest used to
// store: so a payload reads back as the same value it was stored as.

import { assert } from '../assert.js';
import { isPlainObject, parseJson } from '../json.js';
import { canonicalJson } from '../streams/partitioner.js';

// Float64Array is in the machine's byte order; the stored format is little-endian.
assert(new Uint8Array(new Uint16Array([1]).buffer)[0] === 1, 'tsr blocks need a little-endian machine');

/** Payloads of one block lie within this much event time of its first (the scan's look-back). */
export const BLOCK_SPAN_MS = 10 * 60_000;
/** Most payloads in one block; its count fits the key's 4 hex digits. */
export const BLOCK_PAYLOADS_MAX = 4096;
/** A block whose text is longer than this is split in two (unless it holds one payload). */
export const BLOCK_CHARS_MAX = 512 * 1024;
const MAGIC = 'tsb1';
/** The highest place in a write a block records (a writeId holds it in 7 hex digits). */
export const POSITION_MAX = 0xfffffff;

export interface BlockEntry {
  /** Event time, epoch milliseconds; truncated to an integer. */
  readonly timestamp: number;
  readonly payload: Record<string, unknown>;
  /** Its place in its write (a non-negative integer, unique in the write). */
  readonly position: number;
}

export interface BlockHeader {
  readonly count: number;
  readonly minTs: number;
  readonly maxTs: number;
}

export type Column =
  | { readonly kind: 'number'; readonly values: ArrayLike<number> }
  | { readonly kind: 'string'; readonly values: readonly string[] }
  | { readonly kind: 'dictionary'; readonly distinct: readonly string[]; readonly indices: readonly number[] }
  | { readonly kind: 'boolean'; readonly values: readonly boolean[] }
  | { readonly kind: 'iso' };

export interface Block extends BlockHeader {
  /** Absolute timestamps, ascending. */
  readonly timestamps: Float64Array;
  /** Each payload's place in its write. */
  readonly positions: Float64Array;
  readonly columns: ReadonlyMap<string, Column>;
  /** Per payload, its fields outside the columns; undefined when every field is a column. */
  readonly rest: ReadonlyArray<Record<string, unknown>> | undefined;
}

/** A block's text that is not one: the record is damaged (or a peer sent nonsense). */
export class BadBlockError extends Error {
  override name = 'BadBlockError';
}

// ---------------------------------------------------------------- encoding

/** A block's text and the places, in the entries packed, of the payloads it holds. */
export interface PackedBlock {
  readonly text: string;
  /** Event time of its first payload: the record's timestamp. */
  readonly minTs: number;
  readonly members: readonly number[];
}

/**
 * The blocks of one partition's payloads: in event-time order, each spanning less than
 * BLOCK_SPAN_MS and holding at most BLOCK_PAYLOADS_MAX payloads and about BLOCK_CHARS_MAX
 * characters.
 */
export function packBlocks(entries: readonly BlockEntry[]): PackedBlock[] {
  const sorted = sortedByTime(entries);
  const blocks: PackedBlock[] = [];
  let first = 0;
  while (first < sorted.length) {
    const startMs = sorted[first]!.timestamp;
    let end = first + 1;
    while (end < sorted.length && end - first < BLOCK_PAYLOADS_MAX && sorted[end]!.timestamp - startMs < BLOCK_SPAN_MS) end += 1;
    encodeBounded(sorted, first, end, blocks);
    first = end;
  }
  return blocks;
}

interface SortedEntry extends BlockEntry {
  /** Its place among the entries packed. */
  readonly member: number;
}

function sortedByTime(entries: readonly BlockEntry[]): SortedEntry[] {
  const sorted = entries.map((entry, member) => ({ timestamp: Math.trunc(entry.timestamp), payload: entry.payload, position: entry.position, member }));
  let ordered = true;
  for (let i = 1; i < sorted.length && ordered; i += 1) ordered = sorted[i - 1]!.timestamp <= sorted[i]!.timestamp;
  // Array.prototype.sort is stable: ties keep the order they were written in.
  if (!ordered) sorted.sort((a, b) => a.timestamp - b.timestamp);
  return sorted;
}

function encodeBounded(sorted: readonly SortedEntry[], first: number, end: number, out: PackedBlock[]): void {
  const text = encodeBlock(sorted, first, end);
  if (text.length <= BLOCK_CHARS_MAX || end - first === 1) {
    const members = new Array<number>(end - first);
    for (let i = first; i < end; i += 1) members[i - first] = sorted[i]!.member;
    out.push({ text, minTs: sorted[first]!.timestamp, members });
    return;
  }
  const middle = first + Math.floor((end - first) / 2);
  encodeBounded(sorted, first, middle, out);
  encodeBounded(sorted, middle, end, out);
}

/**
 * What each field held across the payloads. Payloads of one stream mostly have the same
 * fields in the same order: while a payload's field names are the last one's, its kinds
 * are matched by place, without a lookup by name.
 */
function fieldsSeen(sorted: readonly SortedEntry[], first: number, end: number): Map<string, FieldSeen> {
  const fields = new Map<string, FieldSeen>();
  let shape: string[] = [];
  let shapeSeen: FieldSeen[] = [];
  for (let i = first; i < end; i += 1) {
    const payload = sorted[i]!.payload;
    const names = Object.keys(payload);
    if (!sameNames(names, shape)) {
      shape = names;
      shapeSeen = names.map((name) => {
        let seen = fields.get(name);
        if (seen === undefined) fields.set(name, (seen = { kind: 'u', count: 0 }));
        return seen;
      });
    }
    for (let f = 0; f < names.length; f += 1) {
      const value = payload[names[f]!];
      if (value === undefined) continue;
      const seen = shapeSeen[f]!;
      const kind = valueKind(value);
      if (seen.kind === 'u') seen.kind = kind;
      else if (seen.kind !== kind) seen.kind = 'x';
      seen.count += 1;
    }
  }
  return fields;
}

function sameNames(names: readonly string[], shape: readonly string[]): boolean {
  if (names.length !== shape.length) return false;
  for (let i = 0; i < names.length; i += 1) if (names[i] !== shape[i]) return false;
  return true;
}

/** What one field held across the payloads seen so far ('u': nothing yet). */
interface FieldSeen {
  kind: 'n' | 's' | 'b' | 'x' | 'u';
  count: number;
}

function valueKind(value: unknown): 'n' | 's' | 'b' | 'x' {
  switch (typeof value) {
    case 'number':
      // An integer beyond 2^53 reads back as a BigInt (json.ts): its digits stay in rest.
      return Number.isFinite(value) && (Number.isSafeInteger(value) || !Number.isInteger(value)) ? 'n' : 'x';
    case 'string':
      return 's';
    case 'boolean':
      return 'b';
    default:
      return 'x';
  }
}

/** The block of sorted[first..end), which are in time order. */
function encodeBlock(sorted: readonly SortedEntry[], first: number, end: number): string {
  const count = end - first;
  const fields = fieldsSeen(sorted, first, end);
  const names = [...fields].filter(([, seen]) => seen.count > 0).map(([name]) => name).sort();
  const columnNames = names.filter((name) => fields.get(name)!.kind !== 'x' && fields.get(name)!.count === count);
  const restNames = names.filter((name) => !columnNames.includes(name));
  let columns = '';
  for (const name of columnNames) {
    columns += `${columns === '' ? '' : ','}${JSON.stringify(name)}:${encodeColumn(sorted, first, end, name, fields.get(name)!.kind)}`;
  }
  const timestamps = new Array<number>(count);
  let previous = 0;
  for (let i = 0; i < count; i += 1) {
    const timestamp = sorted[first + i]!.timestamp;
    timestamps[i] = i === 0 ? timestamp : timestamp - previous;
    previous = timestamp;
  }
  const header = `${MAGIC} ${count} ${sorted[first]!.timestamp} ${sorted[end - 1]!.timestamp}`;
  const positions = encodePositions(sorted, first, end);
  const body = `{"t":${JSON.stringify(timestamps)},"c":{${columns}}${positions === undefined ? '' : `,"o":${positions}`}}`;
  return restNames.length === 0 ? `${header}\n${body}` : `${header}\n${body}\n${encodeRest(sorted, first, end, restNames)}`;
}

/** The positions as differences, or undefined when they are 0, 1, 2, … */
function encodePositions(sorted: readonly SortedEntry[], first: number, end: number): string | undefined {
  let counting = true;
  const deltas = new Array<number>(end - first);
  let previous = 0;
  for (let i = first; i < end; i += 1) {
    const position = sorted[i]!.position;
    if (position !== i - first) counting = false;
    deltas[i - first] = i === first ? position : position - previous;
    previous = position;
  }
  return counting ? undefined : JSON.stringify(deltas);
}

function encodeColumn(sorted: readonly SortedEntry[], first: number, end: number, name: string, kind: FieldSeen['kind']): string {
  const values = new Array<unknown>(end - first);
  for (let i = first; i < end; i += 1) values[i - first] = sorted[i]!.payload[name];
  if (kind === 'n') return encodeNumbers(values as number[]);
  if (kind === 'b') return `{"b":${JSON.stringify(values)}}`;
  const strings = values as string[];
  if (isIsoOfTimestamps(sorted, first, strings)) return '{"iso":1}';
  const distinct = new Map<string, number>();
  const indices = new Array<number>(strings.length);
  for (let i = 0; i < strings.length; i += 1) {
    let index = distinct.get(strings[i]!);
    if (index === undefined) distinct.set(strings[i]!, (index = distinct.size));
    indices[i] = index;
  }
  // A dictionary pays when values repeat: host names, units, states.
  if (distinct.size * 4 > strings.length) return `{"s":${JSON.stringify(strings)}}`;
  return `{"d":${JSON.stringify([...distinct.keys()])},"i":${JSON.stringify(indices)}}`;
}

function encodeNumbers(values: readonly number[]): string {
  let integers = true;
  for (let i = 0; i < values.length && integers; i += 1) integers = Number.isInteger(values[i]);
  if (integers) return `{"n":${JSON.stringify(values)}}`;
  const doubles = new Float64Array(values.length);
  // -0 as 0: as JSON text, which writes both as 0, gave it back.
  for (let i = 0; i < values.length; i += 1) doubles[i] = values[i]! === 0 ? 0 : values[i]!;
  return `{"f":"${Buffer.from(doubles.buffer, doubles.byteOffset, doubles.byteLength).toString('base64')}"}`;
}

function isIsoOfTimestamps(sorted: readonly BlockEntry[], first: number, strings: readonly string[]): boolean {
  for (let i = 0; i < strings.length; i += 1) {
    const text = strings[i]!;
    // The cheap tests first: toISOString is 24 characters for years 0 to 9999.
    if (text.length !== 24 || text.charCodeAt(23) !== 90 /* Z */ || text.charCodeAt(10) !== 84 /* T */) return false;
    if (isoString(sorted[first + i]!.timestamp) !== text) return false;
  }
  return true;
}

function encodeRest(sorted: readonly SortedEntry[], first: number, end: number, restNames: readonly string[]): string {
  let out = '[';
  for (let i = first; i < end; i += 1) {
    const payload = sorted[i]!.payload;
    const rest: Record<string, unknown> = {};
    for (const name of restNames) if (Object.hasOwn(payload, name) && payload[name] !== undefined) setField(rest, name, payload[name]);
    out += (i === first ? '' : ',') + canonicalJson(rest);
  }
  return `${out}]`;
}

// ---------------------------------------------------------------- decoding

/** The header of a block's text: what its key is made of. Throws BadBlockError. */
export function blockHeader(text: string): BlockHeader {
  const newline = text.indexOf('\n');
  const parts = (newline < 0 ? '' : text.slice(0, newline)).split(' ');
  if (parts.length !== 4 || parts[0] !== MAGIC) throw new BadBlockError('not a tsr block (no header)');
  const count = Number(parts[1]);
  const minTs = Number(parts[2]);
  const maxTs = Number(parts[3]);
  if (!Number.isSafeInteger(count) || count < 1 || count > BLOCK_PAYLOADS_MAX) throw new BadBlockError(`a tsr block holds 1 to ${BLOCK_PAYLOADS_MAX} payloads, its header says ${parts[1]}`);
  if (!Number.isSafeInteger(minTs) || !Number.isSafeInteger(maxTs) || maxTs < minTs || maxTs - minTs >= BLOCK_SPAN_MS) {
    throw new BadBlockError(`a tsr block spans less than ${BLOCK_SPAN_MS} ms, its header says ${parts[2]} to ${parts[3]}`);
  }
  return { count, minTs, maxTs };
}

/** Decodes a block's text, checking its shape. Throws BadBlockError. */
export function decodeBlock(text: string): Block {
  const header = blockHeader(text);
  const bodyStart = text.indexOf('\n') + 1;
  const restStart = text.indexOf('\n', bodyStart);
  let body: unknown;
  let rest: unknown;
  try {
    body = JSON.parse(restStart < 0 ? text.slice(bodyStart) : text.slice(bodyStart, restStart));
    rest = restStart < 0 ? undefined : parseJson(text.slice(restStart + 1));
  } catch (error) {
    throw new BadBlockError(`a tsr block's body is not JSON: ${(error as Error).message}`);
  }
  if (!isPlainObject(body) || !Array.isArray(body.t) || !isPlainObject(body.c)) throw new BadBlockError('a tsr block without timestamps or columns');
  const timestamps = decodeTimestamps(body.t, header);
  const positions = decodePositions(body.o, header.count);
  const columns = new Map<string, Column>();
  for (const name of Object.keys(body.c)) columns.set(name, decodeColumn(name, body.c[name], header.count));
  if (rest !== undefined && (!Array.isArray(rest) || rest.length !== header.count || !rest.every(isPlainObject))) {
    throw new BadBlockError(`a tsr block's rest is not ${header.count} objects`);
  }
  return { ...header, timestamps, positions, columns, rest: rest as Array<Record<string, unknown>> | undefined };
}

function decodeTimestamps(deltas: unknown[], header: BlockHeader): Float64Array {
  if (deltas.length !== header.count) throw new BadBlockError(`a tsr block of ${header.count} payloads has ${deltas.length} timestamps`);
  const timestamps = new Float64Array(header.count);
  let current = 0;
  for (let i = 0; i < deltas.length; i += 1) {
    const delta = deltas[i];
    if (typeof delta !== 'number' || !Number.isSafeInteger(delta) || (i > 0 && delta < 0)) throw new BadBlockError('a tsr block with timestamps out of order');
    current = i === 0 ? delta : current + delta;
    timestamps[i] = current;
  }
  if (timestamps[0] !== header.minTs || timestamps[header.count - 1] !== header.maxTs) throw new BadBlockError('a tsr block whose timestamps disagree with its header');
  return timestamps;
}

function decodePositions(deltas: unknown, count: number): Float64Array {
  const positions = new Float64Array(count);
  if (deltas === undefined) {
    for (let i = 0; i < count; i += 1) positions[i] = i;
    return positions;
  }
  if (!Array.isArray(deltas) || deltas.length !== count) throw new BadBlockError(`a tsr block of ${count} payloads has no ${count} positions`);
  let current = 0;
  for (let i = 0; i < count; i += 1) {
    const delta = deltas[i];
    if (typeof delta !== 'number' || !Number.isSafeInteger(delta)) throw new BadBlockError('a tsr block with a position that is not an integer');
    current = i === 0 ? delta : current + delta;
    if (current < 0 || current > POSITION_MAX) throw new BadBlockError(`a tsr block with a position outside 0 to ${POSITION_MAX}`);
    positions[i] = current;
  }
  return positions;
}

function decodeColumn(name: string, column: unknown, count: number): Column {
  const bad = (why: string) => new BadBlockError(`column '${name}' of a tsr block ${why}`);
  if (!isPlainObject(column)) throw bad('is not an object');
  if (column.iso === 1) return { kind: 'iso' };
  if (column.f !== undefined) return { kind: 'number', values: decodeDoubles(column.f, count, bad) };
  const values = column.n ?? column.s ?? column.b ?? column.i;
  if (!Array.isArray(values) || values.length !== count) throw bad(`does not hold ${count} values`);
  if (column.n !== undefined) {
    if (!values.every((value) => typeof value === 'number')) throw bad('holds a value that is not a number');
    return { kind: 'number', values };
  }
  if (column.s !== undefined) {
    if (!values.every((value) => typeof value === 'string')) throw bad('holds a value that is not a string');
    return { kind: 'string', values };
  }
  if (column.b !== undefined) {
    if (!values.every((value) => typeof value === 'boolean')) throw bad('holds a value that is not a boolean');
    return { kind: 'boolean', values };
  }
  const distinct = column.d;
  if (!Array.isArray(distinct) || !distinct.every((value) => typeof value === 'string')) throw bad('has no dictionary of strings');
  if (!values.every((index) => Number.isSafeInteger(index) && index >= 0 && index < distinct.length)) throw bad('points outside its dictionary');
  return { kind: 'dictionary', distinct, indices: values };
}

function decodeDoubles(text: unknown, count: number, bad: (why: string) => BadBlockError): Float64Array {
  if (typeof text !== 'string') throw bad('holds no base64 text');
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== count * 8) throw bad(`does not hold ${count} values`);
  // Copied: a Buffer's offset in its pool need not be a multiple of 8.
  const doubles = new Float64Array(count);
  new Uint8Array(doubles.buffer).set(bytes);
  for (let i = 0; i < count; i += 1) if (!Number.isFinite(doubles[i])) throw bad('holds a number that is not finite');
  return doubles;
}

/** The value of one column for payload `index`. */
export function columnValue(column: Column, block: Block, index: number): unknown {
  switch (column.kind) {
    case 'dictionary':
      return column.distinct[column.indices[index]!];
    case 'iso':
      return isoString(block.timestamps[index]!);
    default:
      return column.values[index];
  }
}

/** The payload at `index`, fields in sorted order. */
export function blockPayload(block: Block, index: number): Record<string, unknown> {
  const payload: Record<string, unknown> = {};
  const rest = block.rest?.[index];
  const restNames = rest === undefined ? [] : Object.keys(rest).sort();
  let next = 0;
  for (const [name, column] of sortedColumns(block)) {
    while (next < restNames.length && restNames[next]! < name) {
      setField(payload, restNames[next]!, rest![restNames[next]!]);
      next += 1;
    }
    setField(payload, name, columnValue(column, block, index));
  }
  for (; next < restNames.length; next += 1) setField(payload, restNames[next]!, rest![restNames[next]!]);
  return payload;
}

/** A field of that name, even '__proto__' (JSON.parse makes it an own field; `=` would set the prototype). */
function setField(object: Record<string, unknown>, name: string, value: unknown): void {
  if (name === '__proto__') Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
  else object[name] = value;
}

const sortedColumnCache = new WeakMap<Block, Array<[string, Column]>>();

function sortedColumns(block: Block): Array<[string, Column]> {
  let sorted = sortedColumnCache.get(block);
  if (sorted === undefined) {
    sorted = [...block.columns].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    sortedColumnCache.set(block, sorted);
  }
  return sorted;
}

// ---------------------------------------------------------------- ISO strings

let isoDayStartMs = NaN;
let isoDayPrefix = '';

/**
 * `new Date(ms).toISOString()`, for the 'iso' column's many timestamps of one day: the
 * date part is formatted once per day. Years outside 0 to 9999 go to toISOString.
 */
export function isoString(ms: number): string {
  const dayStartMs = Math.floor(ms / 86_400_000) * 86_400_000;
  if (dayStartMs !== isoDayStartMs) {
    const full = new Date(ms).toISOString();
    if (full.length !== 24) return full;
    isoDayStartMs = dayStartMs;
    isoDayPrefix = full.slice(0, 11);
  }
  const inDay = ms - dayStartMs;
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1000) % 60;
  const millis = inDay % 1000;
  return `${isoDayPrefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

function pad2(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}
