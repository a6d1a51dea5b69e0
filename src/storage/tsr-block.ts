// A tsr block: the payloads of one write that fall in one partition and within
// BLOCK_SPAN_MS of event time of each other, kept as one record. Storage, replication,
// hints, transfers and repair move blocks as they moved single payloads, so a batch of a
// few thousand points costs a LevelDB entry, a key and a peer record per partition instead
// of per point; and a read decodes columns, not one JSON object per point (InfluxDB keeps
// a series' points in compressed blocks for the same two reasons).
//
// Pure: text in, text out. The layout is part of the stored format:
//
//   tsb2 <count> <minTs> <maxTs>\n<body: base64>\n<strings>[\n<rest: JSON>]
//
// - Payloads are in event-time order, ties in the order they were written.
// - The body is binary, little-endian, every array at a multiple of its element's size (the
//   body is decoded into memory of its own and read in place, no copy): decimal text and
//   JSON were most of what a block cost to write and to read.
//     u32 column count, u32 flags (1: positions stored)
//     i32[count] each timestamp's difference from the one before (the first's from minTs: 0)
//     i32[count] each payload's place in its write (the POST's batch), as differences; only
//       when those are not 0, 1, 2, …: a payload's writeId is its write's id and that place
//       (tsr-order.ts), so payloads of one moment read back in the order they arrived
//     padding to 8, then each column: u32 kind, u32 its name's place in the string table,
//     its values, padding to 8. A column is a top-level field that every payload has with
//     one kind of value:
//       1 doubles    f64[count]: finite numbers (not integers beyond 2^53: those keep their digits in rest)
//       2 strings    u32 the place of the first in the string table, the others after it
//       3 dictionary u32 the place of the first distinct string, u32 how many, u16[count]
//                    each payload's index into them: strings that repeat
//       4 booleans   u8[count]
//       5 iso        nothing: the payload's own timestamp as an ISO string (toISOString),
//                    the primary datetime field stored once, as the timestamps
//     then the string table: u32 count, u32[count] each string's length (UTF-16 units),
//     padding to 8. The strings themselves follow the body's line as they are, one after
//     another (their lengths say where each ends): text in base64 was a third larger and
//     most of a block's bytes to hash, send, write and compact (free text is most payloads).
//   tsb1, read as well (blocks stored before), has the strings inside the body, as UTF-8
//   after the lengths, and no strings line.
// - rest: present when any payload has other fields: per payload, an object of those
//   fields ({} when none), as canonical JSON, read back with integers beyond 2^53 exact.
//
// A decoded payload has its fields in sorted order, as the canonical JSON ingest used to
// store: so a payload reads back as the same value it was stored as.

import { assert } from '../lib/assert.js';
import { TributaryError } from '../lib/errors.js';
import { canonicalJson, isPlainObject, parseJson, setField } from '../lib/json.js';
import { isIsoStringOf, isoString } from '../lib/iso-time.js';
import { ByteSlab } from '../lib/byte-slab.js';

export { isoString } from '../lib/iso-time.js';

// Float64Array is in the machine's byte order; the stored format is little-endian.
assert(new Uint8Array(new Uint16Array([1]).buffer)[0] === 1, 'tsr blocks need a little-endian machine');

/** Payloads of one block lie within this much event time of its first (the scan's look-back). */
export const BLOCK_SPAN_MS = 10 * 60_000;
/** Most payloads in one block; its count fits the key's 4 hex digits. */
export const BLOCK_PAYLOADS_MAX = 4096;
/** A block whose text is longer than this is split in two (unless it holds one payload). */
export const BLOCK_CHARS_MAX = 512 * 1024;
const MAGIC = 'tsb2';
/** The first layout, still read: the strings as UTF-8 inside the body. */
const MAGIC_V1 = 'tsb1';
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
  | { readonly kind: 'dictionary'; readonly distinct: readonly string[]; readonly indices: Uint16Array }
  | { readonly kind: 'boolean'; readonly values: readonly boolean[] }
  | { readonly kind: 'iso' };

export interface Block extends BlockHeader {
  /** Absolute timestamps, ascending. */
  readonly timestamps: Float64Array;
  /** Each payload's place in its write. */
  readonly positions: Float64Array;
  /** The names of the columns, sorted. */
  readonly columnNames: readonly string[];
  /** A column, decoded (and checked) when first asked for: a read decodes what it reads. */
  column(name: string): Column | undefined;
  /** Per payload, its fields outside the columns; undefined when every field is a column. */
  readonly rest: ReadonlyArray<Record<string, unknown>> | undefined;
}

/**
 * A block's text that is not one: the stored record is damaged (or a peer sent nonsense).
 * It may surface when a column is first read, so it is the error a client sees.
 */
export class BadBlockError extends TributaryError {
  constructor(message: string) {
    super(500, 'DAMAGED_DATA', `damaged tsr block: ${message}`);
  }
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
  // Every payload packed is in exactly one block.
  let members = 0;
  for (const block of blocks) members += block.members.length;
  assert(members === entries.length, `${entries.length} payloads packed into blocks holding ${members}`);
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
  assert(sorted.length === 0 || sorted[0]!.timestamp <= sorted[sorted.length - 1]!.timestamp, 'payloads sorted out of time order');
  return sorted;
}

function encodeBounded(sorted: readonly SortedEntry[], first: number, end: number, out: PackedBlock[]): void {
  assert(first >= 0 && first < end && end <= sorted.length, `a block of payloads ${first} to ${end} of ${sorted.length}`);
  const text = blockEncoding.fault === undefined ? encodeBlock(sorted, first, end) : blockEncoding.fault(encodeBlock(sorted, first, end));
  checkEncoded(text, sorted, first, end);
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
 * How encoded blocks are checked. The header is always read back (it is what the record's
 * key is made of, and costs a few characters); with `decodeAll`, the whole block is decoded
 * and every payload, timestamp and place compared with what it was made of, before it is
 * stored: on under vitest and with TRIBUTARY_CHECK_BLOCKS=1, off in production, where it
 * would cost as much as encoding again.
 */
export const blockEncoding: {
  decodeAll: boolean;
  /** A test's change to what the encoder wrote, to show the check catches an encoder's fault. */
  fault: ((text: string) => string) | undefined;
} = {
  decodeAll: process.env.TRIBUTARY_CHECK_BLOCKS === '1' || process.env.VITEST !== undefined,
  fault: undefined,
};

/** The block encoded from sorted[first..end) reads back as them (blockEncoding says how far this looks). */
function checkEncoded(text: string, sorted: readonly SortedEntry[], first: number, end: number): void {
  const header = blockHeader(text);
  const count = end - first;
  assert(header.count === count && header.minTs === sorted[first]!.timestamp && header.maxTs === sorted[end - 1]!.timestamp, () => `a tsr block of ${count} payloads from ${sorted[first]!.timestamp} to ${sorted[end - 1]!.timestamp} encoded with header ${header.count} ${header.minTs} ${header.maxTs}`);
  if (!blockEncoding.decodeAll) return;
  const block = decodeBlock(text);
  for (let i = 0; i < count; i += 1) {
    const entry = sorted[first + i]!;
    assert(block.timestamps[i] === entry.timestamp && block.positions[i] === entry.position, () => `a tsr block's payload ${i} reads back at ${block.timestamps[i]} place ${block.positions[i]}, was ${entry.timestamp} place ${entry.position}`);
    const read = canonicalJson(blockPayload(block, i));
    const written = canonicalJson(entry.payload);
    assert(read === written, () => `a tsr block's payload ${i} reads back as ${read.slice(0, 200)}, was ${written.slice(0, 200)}`);
  }
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
    if (!hasNames(payload, shape)) {
      shape = Object.keys(payload);
      shapeSeen = shape.map((name) => {
        let seen = fields.get(name);
        if (seen === undefined) fields.set(name, (seen = { kind: 'u', count: 0, values: new Array<unknown>(end - first) }));
        return seen;
      });
    }
    for (let f = 0; f < shape.length; f += 1) {
      const value = payload[shape[f]!];
      if (value === undefined) continue;
      const seen = shapeSeen[f]!;
      const kind = valueKind(value);
      if (seen.kind === 'u') seen.kind = kind;
      else if (seen.kind !== kind) seen.kind = 'x';
      seen.count += 1;
      seen.values[i - first] = value;
    }
  }
  for (const [name, seen] of fields) assert(seen.count <= end - first, () => `field '${name}' seen ${seen.count} times in ${end - first} payloads`);
  return fields;
}

/** String.prototype.isWellFormed (ES2024; Node 20 has it, the TypeScript lib here does not). */
function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** Whether the payload's own keys are `shape`, in order (for-in: no array per payload). */
function hasNames(payload: Record<string, unknown>, shape: readonly string[]): boolean {
  let at = 0;
  for (const name in payload) {
    if (at === shape.length || shape[at] !== name || !Object.hasOwn(payload, name)) return false;
    at += 1;
  }
  return at === shape.length;
}

/** What one field held across the payloads seen so far ('u': nothing yet), and its values by payload. */
interface FieldSeen {
  kind: 'n' | 's' | 'b' | 'x' | 'u';
  count: number;
  /** Read once here, so a column is made without reading each payload's field again. */
  values: unknown[];
}

function valueKind(value: unknown): 'n' | 's' | 'b' | 'x' {
  switch (typeof value) {
    case 'number':
      // An integer beyond 2^53 reads back as a BigInt (json.ts): its digits stay in rest.
      return Number.isFinite(value) && (Number.isSafeInteger(value) || !Number.isInteger(value)) ? 'n' : 'x';
    case 'string':
      // A lone surrogate does not survive UTF-8: such a string keeps its JSON escape in rest.
      return isWellFormed(value) ? 's' : 'x';
    case 'boolean':
      return 'b';
    default:
      return 'x';
  }
}

/** The block of sorted[first..end), which are in time order. */
function encodeBlock(sorted: readonly SortedEntry[], first: number, end: number): string {
  const count = end - first;
  // packBlocks' grouping: 1 to BLOCK_PAYLOADS_MAX payloads within BLOCK_SPAN_MS, in time order.
  assert(count >= 1 && count <= BLOCK_PAYLOADS_MAX && sorted[end - 1]!.timestamp - sorted[first]!.timestamp < BLOCK_SPAN_MS, () => `a block of ${count} payloads over ${sorted[end - 1]!.timestamp - sorted[first]!.timestamp} ms`);
  const fields = fieldsSeen(sorted, first, end);
  const names = [...fields].filter(([, seen]) => seen.count > 0).map(([name]) => name).sort();
  const columnNames = names.filter((name) => fields.get(name)!.kind !== 'x' && fields.get(name)!.count === count && isWellFormed(name));
  const restNames = names.filter((name) => !columnNames.includes(name));
  const strings: string[] = [];
  const columns = columnNames.map((name) => planColumn(sorted, first, name, fields.get(name)!, strings));
  const positions = positionDeltas(sorted, first, end);
  const body = new BodyWriter(bodyBytes(count, positions !== undefined, columns, strings.length));
  body.u32(columns.length);
  body.u32(positions === undefined ? 0 : 1);
  // Differences within a block are below BLOCK_SPAN_MS: an int32 holds each.
  const deltas = body.int32s(count);
  for (let i = 1; i < count; i += 1) deltas[i] = sorted[first + i]!.timestamp - sorted[first + i - 1]!.timestamp;
  if (positions !== undefined) body.int32s(count).set(positions);
  body.align(8);
  for (const column of columns) writeColumn(body, column);
  body.u32(strings.length);
  for (const text of strings) body.u32(text.length);
  body.align(8);
  const header = `${MAGIC} ${count} ${sorted[first]!.timestamp} ${sorted[end - 1]!.timestamp}`;
  const text = `${header}\n${body.base64()}\n${strings.join('')}`;
  return restNames.length === 0 ? text : `${text}\n${encodeRest(sorted, first, end, restNames)}`;
}

/** A column to write: its kind, its name's place in the string table, and its values. */
type PlannedColumn = { readonly name: number } & (
  | { readonly kind: typeof KIND_DOUBLES; readonly values: Float64Array }
  | { readonly kind: typeof KIND_BOOLEANS; readonly values: readonly boolean[] }
  | { readonly kind: typeof KIND_ISO }
  /** The strings are in the table from `first` on, one per payload. */
  | { readonly kind: typeof KIND_STRINGS; readonly first: number }
  | { readonly kind: typeof KIND_DICTIONARY; readonly first: number; readonly distinct: number; readonly indices: Uint16Array }
);

const KIND_DOUBLES = 1;
const KIND_STRINGS = 2;
const KIND_DICTIONARY = 3;
const KIND_BOOLEANS = 4;
const KIND_ISO = 5;

/** Plans a column of a field every payload of sorted[first..) has, adding its name and strings to the block's string table. */
function planColumn(sorted: readonly SortedEntry[], first: number, field: string, seen: FieldSeen, table: string[]): PlannedColumn {
  const name = table.push(field) - 1;
  const count = seen.values.length;
  if (seen.kind === 'n') {
    const values = new Float64Array(count);
    // -0 as 0: as JSON text, which writes both as 0, gave it back.
    for (let i = 0; i < count; i += 1) values[i] = (seen.values[i] as number) || 0;
    return { name, kind: KIND_DOUBLES, values };
  }
  if (seen.kind === 'b') return { name, kind: KIND_BOOLEANS, values: seen.values as boolean[] };
  const strings = seen.values as string[];
  if (isIsoOfTimestamps(sorted, first, strings)) return { name, kind: KIND_ISO };
  const firstString = table.length;
  const dictionary = dictionaryOf(strings);
  if (dictionary === undefined) {
    table.push(...strings);
    return { name, kind: KIND_STRINGS, first: firstString };
  }
  // One index per payload, each into the distinct strings the table gets.
  assert(dictionary.indices.length === count && dictionary.distinct.size < count, () => `a dictionary of ${dictionary.distinct.size} strings for ${count} payloads, ${dictionary.indices.length} indices`);
  table.push(...dictionary.distinct.keys());
  return { name, kind: KIND_DICTIONARY, first: firstString, distinct: dictionary.distinct.size, indices: dictionary.indices };
}

/** A dictionary is looked for among strings at most this long on average (UTF-16 units). */
const DICTIONARY_CHARS_MAX = 64;

/**
 * The column's distinct strings and each payload's index into them, when values repeat (host
 * names, units, states: each is then read once, and a grouping finds its group once per
 * distinct value); undefined when they do not, or when the strings are long. Free text
 * seldom repeats, and looking a string up hashes every character of it (a column of 1 KiB
 * messages spent more on that than the rest of its block); LevelDB's compression still
 * finds repeats among long strings.
 */
function dictionaryOf(strings: readonly string[]): { distinct: Map<string, number>; indices: Uint16Array } | undefined {
  const count = strings.length;
  let chars = 0;
  for (let i = 0; i < count; i += 1) chars += strings[i]!.length;
  if (chars > DICTIONARY_CHARS_MAX * count) return undefined;
  const distinct = new Map<string, number>();
  // At most BLOCK_PAYLOADS_MAX distinct: a uint16 holds each index.
  const indices = new Uint16Array(count);
  for (let i = 0; i < count; i += 1) {
    let index = distinct.get(strings[i]!);
    if (index === undefined) distinct.set(strings[i]!, (index = distinct.size));
    indices[i] = index;
  }
  if (distinct.size === count) return undefined;
  assert(distinct.size <= BLOCK_PAYLOADS_MAX, `a dictionary of ${distinct.size} strings: its indices do not fit a uint16`);
  return { distinct, indices };
}

/** The positions as differences, or undefined when they are 0, 1, 2, … */
function positionDeltas(sorted: readonly SortedEntry[], first: number, end: number): Int32Array | undefined {
  let counting = true;
  const deltas = new Int32Array(end - first);
  let previous = 0;
  for (let i = first; i < end; i += 1) {
    const position = sorted[i]!.position;
    // A place in a write (the POST's batch index): what a writeId's 7 hex digits hold.
    assert(Number.isInteger(position) && position >= 0 && position <= POSITION_MAX, () => `payload place ${position}`);
    if (position !== i - first) counting = false;
    deltas[i - first] = i === first ? position : position - previous;
    previous = position;
  }
  return counting ? undefined : deltas;
}

function isSorted(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i += 1) if (names[i - 1]! > names[i]!) return false;
  return true;
}

function align(offset: number, to: number): number {
  return Math.ceil(offset / to) * to;
}

/** The body's size: the layout encodeBlock and writeColumn write, DecodedBlock reads. */
function bodyBytes(count: number, positions: boolean, columns: readonly PlannedColumn[], strings: number): number {
  assert(count >= 1 && count <= BLOCK_PAYLOADS_MAX && strings >= 0, `a block body of ${count} payloads, ${strings} strings`);
  let size = align(8 + 4 * count + (positions ? 4 * count : 0), 8);
  for (const column of columns) {
    size += 8;
    switch (column.kind) {
      case KIND_DOUBLES:
        size += 8 * count;
        break;
      case KIND_BOOLEANS:
        size += count;
        break;
      case KIND_STRINGS:
        size += 4;
        break;
      case KIND_DICTIONARY:
        size += 8 + 2 * count;
        break;
      default:
        break;
    }
    size = align(size, 8);
  }
  return align(size + 4 + 4 * strings, 8);
}

/** Writes a column: kind and name, then its values 8-byte aligned (readColumnPlace reads it). */
function writeColumn(body: BodyWriter, column: PlannedColumn): void {
  // Each column starts 8-byte aligned, so its values can be read in place (DecodedBlock).
  assert(body.isAlignedTo(8), 'a tsr block column written at an unaligned place');
  body.u32(column.kind);
  body.u32(column.name);
  switch (column.kind) {
    case KIND_DOUBLES:
      body.doubles(column.values.length).set(column.values);
      break;
    case KIND_BOOLEANS:
      for (const value of column.values) body.u8(value ? 1 : 0);
      break;
    case KIND_STRINGS:
      body.u32(column.first);
      break;
    case KIND_DICTIONARY:
      body.u32(column.first);
      body.u32(column.distinct);
      body.uint16s(column.indices.length).set(column.indices);
      break;
    default:
      break;
  }
  body.align(8);
}

/** Writes a body's bytes in order; arrays are views of its own memory at aligned places. */
class BodyWriter {
  private readonly buffer: ArrayBuffer;
  private readonly view: DataView;
  private at = 0;

  constructor(size: number) {
    assert(size > 0 && size % 8 === 0, `a block body of ${size} bytes`);
    this.buffer = new ArrayBuffer(size);
    this.view = new DataView(this.buffer);
  }

  u8(value: number): void {
    this.view.setUint8(this.at, value);
    this.at += 1;
  }

  u32(value: number): void {
    this.view.setUint32(this.at, value, true);
    this.at += 4;
  }

  align(to: number): void {
    this.at = align(this.at, to);
  }

  isAlignedTo(to: number): boolean {
    return this.at % to === 0;
  }

  int32s(count: number): Int32Array {
    const array = new Int32Array(this.buffer, this.at, count);
    this.at += 4 * count;
    return array;
  }

  uint16s(count: number): Uint16Array {
    const array = new Uint16Array(this.buffer, this.at, count);
    this.at += 2 * count;
    return array;
  }

  doubles(count: number): Float64Array {
    const array = new Float64Array(this.buffer, this.at, count);
    this.at += 8 * count;
    return array;
  }

  base64(): string {
    assert(this.at === this.buffer.byteLength, `a block body of ${this.buffer.byteLength} bytes written to ${this.at}`);
    return Buffer.from(this.buffer).toString('base64');
  }
}

function isIsoOfTimestamps(sorted: readonly BlockEntry[], first: number, strings: readonly string[]): boolean {
  assert(first >= 0 && first + strings.length <= sorted.length, `${strings.length} strings from payload ${first} of ${sorted.length}`);
  for (let i = 0; i < strings.length; i += 1) {
    const text = strings[i]!;
    // The cheap tests first: toISOString is 24 characters for years 0 to 9999.
    if (text.length !== 24 || text.charCodeAt(23) !== 90 /* Z */ || text.charCodeAt(10) !== 84 /* T */) return false;
    if (!isIsoStringOf(text, sorted[first + i]!.timestamp)) return false;
  }
  return true;
}

function encodeRest(sorted: readonly SortedEntry[], first: number, end: number, restNames: readonly string[]): string {
  assert(first >= 0 && first < end && end <= sorted.length, `the rest of payloads ${first} to ${end} of ${sorted.length}`);
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
  // Read in place (a split and three Numbers per block were a third of a read's decoding).
  const reader = { text, at: MAGIC.length + 1 };
  if (!text.startsWith(`${MAGIC} `) && !text.startsWith(`${MAGIC_V1} `)) throw new BadBlockError('not a tsr block (no header)');
  const count = headerInteger(reader, ' ');
  const minTs = headerInteger(reader, ' ');
  const maxTs = headerInteger(reader, '\n');
  if (count === undefined || minTs === undefined || maxTs === undefined) throw new BadBlockError(`not a tsr block (header '${text.slice(0, Math.max(0, text.indexOf('\n')) || 60)}')`);
  if (count < 1 || count > BLOCK_PAYLOADS_MAX) throw new BadBlockError(`a tsr block holds 1 to ${BLOCK_PAYLOADS_MAX} payloads, its header says ${count}`);
  if (maxTs < minTs || maxTs - minTs >= BLOCK_SPAN_MS) throw new BadBlockError(`a tsr block spans less than ${BLOCK_SPAN_MS} ms, its header says ${minTs} to ${maxTs}`);
  return { count, minTs, maxTs };
}

/** A decimal integer (safe) ending at `end`, moving past it; undefined when there is none. */
function headerInteger(reader: { text: string; at: number }, end: string): number | undefined {
  const { text } = reader;
  const stop = text.indexOf(end, reader.at);
  const negative = text.charCodeAt(reader.at) === 45;
  const start = negative ? reader.at + 1 : reader.at;
  if (stop <= start || stop - start > 16) return undefined;
  let value = 0;
  for (let i = start; i < stop; i += 1) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  reader.at = stop + 1;
  return Number.isSafeInteger(value) ? (negative ? -value : value) : undefined;
}

/** Decodes a block's text, checking its shape (a column's values when first read). Throws BadBlockError. */
export function decodeBlock(text: string): Block {
  const header = blockHeader(text);
  const bodyStart = text.indexOf('\n') + 1;
  const bodyEnd = text.indexOf('\n', bodyStart);
  const body = bodyOf(bodyEnd < 0 ? text.slice(bodyStart) : text.slice(bodyStart, bodyEnd));
  if (text.startsWith(MAGIC_V1)) return new DecodedBlock(header, body, undefined, bodyEnd < 0 ? undefined : restOf(text, bodyEnd + 1, header.count));
  if (bodyEnd < 0) throw new BadBlockError('a tsr block without its strings');
  return new DecodedBlock(header, body, { text, at: bodyEnd + 1 }, undefined);
}

/** The payloads' fields outside the columns: the JSON from `at` on. */
function restOf(text: string, at: number, count: number): Array<Record<string, unknown>> {
  let rest: unknown;
  try {
    rest = parseJson(text.slice(at));
  } catch (error) {
    throw new BadBlockError(`a tsr block's rest is not JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(rest) || rest.length !== count || !rest.every(isPlainObject)) throw new BadBlockError(`a tsr block's rest is not ${count} objects`);
  return rest as Array<Record<string, unknown>>;
}

/** Decoded bodies and timestamps, carved out of shared slabs (byte-slab.ts). */
const decodedBytes = new ByteSlab(64 * 1024);

/** The body's bytes, carved for it: its arrays are read in place, at the offsets they were written to (from the body's start). */
function bodyOf(base64: string): BodyReader {
  const size = Buffer.byteLength(base64, 'base64');
  if (size % 8 !== 0) throw new BadBlockError(`a tsr block's body of ${size} bytes`);
  const { buffer, offset } = decodedBytes.carve(size);
  if (Buffer.from(buffer, offset, size).write(base64, 'base64') !== size) throw new BadBlockError("a tsr block's body is not base64");
  return new BodyReader(buffer, offset, offset + size);
}

/**
 * Reads a body's bytes in order; every read is checked against its end. Places are
 * offsets in `buffer` (the body starts at `start`, a multiple of 8, so what was aligned
 * from the body's start is aligned in the buffer).
 */
class BodyReader {
  readonly view: DataView;
  at: number;

  constructor(
    readonly buffer: ArrayBuffer,
    start: number,
    readonly end: number,
  ) {
    this.view = new DataView(buffer);
    this.at = start;
  }

  /** The place of `bytes` bytes, moved past. */
  skip(bytes: number): number {
    if (this.at + bytes > this.end) throw new BadBlockError("a tsr block's body ends early");
    const at = this.at;
    this.at += bytes;
    return at;
  }

  u32(): number {
    return this.view.getUint32(this.skip(4), true);
  }

  align(to: number): void {
    this.skip(align(this.at, to) - this.at);
  }
}

/** Where a column's values lie in the body; decoded when first read. */
interface ColumnPlace {
  readonly kind: number;
  /** The start of its values (or of its string table entry), after its name. */
  readonly at: number;
}

class DecodedBlock implements Block {
  readonly count: number;
  readonly minTs: number;
  readonly maxTs: number;
  readonly timestamps: Float64Array;
  readonly columnNames: readonly string[];
  readonly rest: ReadonlyArray<Record<string, unknown>> | undefined;
  private readonly strings: string[];
  /** Where the stored positions lie (or undefined when they are 0, 1, 2, …), read when first asked for. */
  private readonly positionsAt: number | undefined;
  private decodedPositions: Float64Array | undefined;
  private readonly places = new Map<string, ColumnPlace>();
  private readonly decoded = new Map<string, Column>();

  /**
   * `table`: where the strings line starts in the block's text (tsb2), undefined when the
   * strings are inside the body (tsb1, whose `rest` is read already). A tsb2 block's rest
   * follows its strings.
   */
  constructor(
    header: BlockHeader,
    private readonly body: BodyReader,
    table: { text: string; at: number } | undefined,
    rest: ReadonlyArray<Record<string, unknown>> | undefined,
  ) {
    this.count = header.count;
    this.minTs = header.minTs;
    this.maxTs = header.maxTs;
    const columnCount = body.u32();
    const flags = body.u32();
    this.timestamps = readTimestamps(body, header);
    this.positionsAt = (flags & 1) === 1 ? body.skip(4 * header.count) : undefined;
    body.align(8);
    const places: Array<[number, ColumnPlace]> = [];
    for (let index = 0; index < columnCount; index += 1) places.push(readColumnPlace(body, header.count));
    if (table === undefined) {
      this.strings = readStrings(body);
      this.rest = rest;
    } else {
      const [strings, end] = readStringsLine(body, table.text, table.at);
      this.strings = strings;
      if (end === table.text.length) this.rest = undefined;
      else if (table.text.charCodeAt(end) !== 10) throw new BadBlockError("a tsr block's strings do not end its line");
      else this.rest = restOf(table.text, end + 1, header.count);
    }
    const names: string[] = [];
    for (const [nameIndex, place] of places) {
      const name = this.string(nameIndex);
      if (this.places.has(name)) throw new BadBlockError(`a tsr block with two columns '${name}'`);
      this.places.set(name, place);
      names.push(name);
    }
    // Written in name order (encodeBlock): sorted only when not.
    this.columnNames = isSorted(names) ? names : names.sort();
  }

  /** Each payload's place in its write: only reads in (time, writeId) order need them. */
  get positions(): Float64Array {
    this.decodedPositions ??= readPositions(this.body, this.count, this.positionsAt);
    return this.decodedPositions;
  }

  column(name: string): Column | undefined {
    let column = this.decoded.get(name);
    if (column === undefined) {
      const place = this.places.get(name);
      if (place === undefined) return undefined;
      this.decoded.set(name, (column = decodeColumn(name, place, this)));
    }
    return column;
  }

  /** A string of the block's table. */
  string(index: number): string {
    if (index >= this.strings.length) throw new BadBlockError(`a tsr block names string ${index} of ${this.strings.length}`);
    return this.strings[index]!;
  }

  get view(): DataView {
    return this.body.view;
  }

  get buffer(): ArrayBuffer {
    return this.body.buffer;
  }
}

function readTimestamps(body: BodyReader, header: BlockHeader): Float64Array {
  const deltas = new Int32Array(body.buffer, body.skip(4 * header.count), header.count);
  const carved = decodedBytes.carve(8 * header.count);
  const timestamps = new Float64Array(carved.buffer, carved.offset, header.count);
  let current = header.minTs;
  for (let i = 0; i < header.count; i += 1) {
    if (deltas[i]! < 0 || (i === 0 && deltas[i] !== 0)) throw new BadBlockError('a tsr block with timestamps out of order');
    current += deltas[i]!;
    timestamps[i] = current;
  }
  if (current !== header.maxTs) throw new BadBlockError('a tsr block whose timestamps disagree with its header');
  return timestamps;
}

function readPositions(body: BodyReader, count: number, at: number | undefined): Float64Array {
  const positions = new Float64Array(count);
  if (at === undefined) {
    for (let i = 0; i < count; i += 1) positions[i] = i;
    return positions;
  }
  const deltas = new Int32Array(body.buffer, at, count);
  let current = 0;
  for (let i = 0; i < count; i += 1) {
    current = i === 0 ? deltas[i]! : current + deltas[i]!;
    if (current < 0 || current > POSITION_MAX) throw new BadBlockError(`a tsr block with a position outside 0 to ${POSITION_MAX}`);
    positions[i] = current;
  }
  return positions;
}

/** A column's name (its place in the string table) and where its values lie, moving past them. */
function readColumnPlace(body: BodyReader, count: number): [number, ColumnPlace] {
  const kind = body.u32();
  const name = body.u32();
  const at = body.at;
  switch (kind) {
    case KIND_DOUBLES:
      body.skip(8 * count);
      break;
    case KIND_BOOLEANS:
      body.skip(count);
      break;
    case KIND_ISO:
      break;
    case KIND_STRINGS:
      body.skip(4);
      break;
    case KIND_DICTIONARY:
      body.skip(8 + 2 * count);
      break;
    default:
      throw new BadBlockError(`a tsr block's column of no known kind (${kind})`);
  }
  body.align(8);
  return [name, { kind, at }];
}

/**
 * The string table of a tsb2 block: how long each string is (UTF-16 units), ending the
 * body, and the strings in the block's text from `at` on; and where they end.
 */
function readStringsLine(body: BodyReader, text: string, at: number): [string[], number] {
  const count = body.u32();
  const lengthsAt = body.skip(4 * count);
  body.align(8);
  if (body.at !== body.end) throw new BadBlockError("a tsr block's body goes on after its string table");
  let end = at;
  for (let index = 0; index < count; index += 1) end += body.view.getUint32(lengthsAt + 4 * index, true);
  if (end > text.length) throw new BadBlockError("a tsr block's strings end early");
  // A copy of the strings' line alone: slices of the block's text would keep all of it alive
  // for as long as any value read from it is kept (latest values, a query's groups).
  const table = Buffer.from(text.slice(at, end), 'utf8').toString('utf8');
  return [stringsOf(table, body.view, lengthsAt, count)[0], end];
}

/**
 * The `count` strings one after another in `table`, each as long as the u32 at lengthsAt
 * says (UTF-16 units), and where the lengths say they end (past the table when it is short).
 */
function stringsOf(table: string, view: DataView, lengthsAt: number, count: number): [string[], number] {
  const strings = new Array<string>(count);
  let at = 0;
  for (let index = 0; index < count; index += 1) {
    const length = view.getUint32(lengthsAt + 4 * index, true);
    strings[index] = table.slice(at, at + length);
    at += length;
  }
  return [strings, at];
}

/** The string table of a tsb1 block: how long each string is (UTF-16 units), then all of them as one UTF-8 text. */
function readStrings(body: BodyReader): string[] {
  const count = body.u32();
  const lengthsAt = body.skip(4 * count);
  const textAt = body.at;
  const text = Buffer.from(body.buffer, textAt, body.end - textAt).toString('utf8');
  const [strings, at] = stringsOf(text, body.view, lengthsAt, count);
  // What follows the strings is padding, which decodes to NUL characters only.
  if (at > text.length || /[^\0]/.test(text.slice(at))) throw new BadBlockError("a tsr block's strings do not fill its table");
  return strings;
}

function decodeColumn(name: string, place: ColumnPlace, block: DecodedBlock): Column {
  const bad = (why: string) => new BadBlockError(`column '${name}' of a tsr block ${why}`);
  const count = block.count;
  switch (place.kind) {
    case KIND_ISO:
      return { kind: 'iso' };
    case KIND_DOUBLES: {
      const values = new Float64Array(block.buffer, place.at, count);
      for (let i = 0; i < count; i += 1) if (!Number.isFinite(values[i])) throw bad('holds a number that is not finite');
      return { kind: 'number', values };
    }
    case KIND_BOOLEANS: {
      const bytes = new Uint8Array(block.buffer, place.at, count);
      const values = new Array<boolean>(count);
      for (let i = 0; i < count; i += 1) {
        if (bytes[i]! > 1) throw bad('holds a value that is not a boolean');
        values[i] = bytes[i] === 1;
      }
      return { kind: 'boolean', values };
    }
    case KIND_STRINGS: {
      const first = block.view.getUint32(place.at, true);
      const values = new Array<string>(count);
      for (let i = 0; i < count; i += 1) values[i] = block.string(first + i);
      return { kind: 'string', values };
    }
    default: {
      const first = block.view.getUint32(place.at, true);
      const distinctCount = block.view.getUint32(place.at + 4, true);
      if (distinctCount > count) throw bad(`has ${distinctCount} distinct values of ${count}`);
      const distinct = new Array<string>(distinctCount);
      for (let index = 0; index < distinctCount; index += 1) distinct[index] = block.string(first + index);
      const indices = new Uint16Array(block.buffer, place.at + 8, count);
      for (let i = 0; i < count; i += 1) if (indices[i]! >= distinctCount) throw bad('points outside its dictionary');
      return { kind: 'dictionary', distinct, indices };
    }
  }
}

/** The value of one column for payload `index`. */
export function columnValue(column: Column, block: Block, index: number): unknown {
  // Per value read: a constant message, no closure made per call.
  assert(index >= 0 && index < block.count, 'a column value read outside its block');
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
  assert(Number.isInteger(index) && index >= 0 && index < block.count, 'a payload read outside its block');
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

const sortedColumnCache = new WeakMap<Block, Array<[string, Column]>>();

/** Every column of the block (decoded), by name: what a whole payload is read from. */
function sortedColumns(block: Block): Array<[string, Column]> {
  let sorted = sortedColumnCache.get(block);
  if (sorted === undefined) sortedColumnCache.set(block, (sorted = block.columnNames.map((name) => [name, block.column(name)!])));
  return sorted;
}
