// Which partition a payload belongs to (docs/storage.md, "One database per node"): a stable
// hash of the first `hash_payload.bytes` bytes of its canonical JSON, modulo `ring_size`.
// "Stable" is a promise to stored data: changing this function moves every payload, so it
// is FNV-1a 32 over UTF-8 bytes of key-sorted JSON, frozen.

import { isPlainObject } from '../lib/json.js';
import type { DistributionPolicy } from './policy.js';

export function fnv1a32(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i += 1) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * `canonical` is canonicalJson(payload), or a prefix of it at least `hash_payload.bytes`
 * long. The definition, frozen: fnv1a32 of the first `bytes` bytes of
 * Buffer.from(canonical.slice(0, bytes), 'utf8'), modulo `ring_size` (the hasher feeds
 * the same bytes without making them).
 */
export function partitionOfCanonical(canonical: string, policy: DistributionPolicy): number {
  const hasher = HASHER.reset(policy.hash_payload.bytes);
  hasher.feed(canonical);
  return hasher.hash % policy.ring_size;
}

/**
 * partitionOfCanonical(canonicalJson(payload), policy), without building the text: the
 * hash is fed the canonical JSON's characters as they would be written, up to the first
 * hash_payload.bytes bytes (building the text and its bytes was 5 µs of the 10
 * a small point cost at ingest).
 */
export function partitionOf(payload: unknown, policy: DistributionPolicy): number {
  const flat = isPlainObject(payload) ? flatRecordHash(payload, policy.hash_payload.bytes) : undefined;
  if (flat !== undefined) return flat % policy.ring_size;
  // The flat hash may have spent the hasher on a record it then left to this walk: reset.
  const hasher = HASHER.reset(policy.hash_payload.bytes);
  hashCanonical(payload, hasher);
  return hasher.hash % policy.ring_size;
}

/**
 * The hash of a flat record, the common payload, fed as JSON writes it without a call per
 * piece: keys already in order, values strings, finite numbers, booleans or nulls, every
 * key and string ASCII with nothing to escape. undefined for any other record, which the
 * general walk hashes (1.42 -> 0.79 µs for a metric point of four fields).
 */
function flatRecordHash(record: Record<string, unknown>, limit: number): number | undefined {
  const hasher = HASHER.reset(limit);
  hasher.unit(OPEN_BRACE);
  let first = true;
  let previous: string | undefined;
  // for-in, not Object.keys: no array per record. Every key is checked to be in order
  // (a key out of order anywhere moves others in the canonical text), also past the prefix.
  for (const key in record) {
    if (!Object.hasOwn(record, key) || (previous !== undefined && !(previous < key))) return undefined;
    previous = key;
    if (hasher.complete) continue;
    const value = record[key];
    if (value === undefined) continue;
    if (!first) hasher.unit(COMMA);
    first = false;
    hasher.unit(QUOTE);
    if (!hasher.plain(key)) return undefined;
    hasher.unit(QUOTE);
    hasher.unit(COLON);
    switch (typeof value) {
      case 'string':
        hasher.unit(QUOTE);
        if (!hasher.plain(value)) return undefined;
        hasher.unit(QUOTE);
        break;
      case 'number':
        if (Number.isFinite(value)) hasher.number(value);
        else hasher.plain('null');
        break;
      case 'boolean':
        hasher.plain(value ? 'true' : 'false');
        break;
      default:
        if (value !== null) return undefined;
        hasher.plain('null');
    }
  }
  hasher.unit(CLOSE_BRACE);
  return hasher.hash;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const BACKSLASH = 0x5c;

/**
 * FNV-1a 32 over the UTF-8 bytes of the first `limit` characters of a text fed in pieces,
 * cut to `limit` bytes: exactly what partitionOfCanonical hashes, a high surrogate whose
 * pair the character cut separates encoded as U+FFFD (as Buffer.from encodes it).
 */
class PrefixHasher {
  /** FNV-1a state as a signed 32-bit integer (xor and imul work on those); `hash` gives it unsigned. */
  private state = FNV_OFFSET_BASIS;
  bytes = 0;
  chars = 0;

  constructor(public limit: number) {}

  /** Starts again, for a text cut at `limit`. */
  reset(limit: number): this {
    this.limit = limit;
    this.state = FNV_OFFSET_BASIS;
    this.bytes = 0;
    this.chars = 0;
    return this;
  }

  get hash(): number {
    return this.state >>> 0;
  }

  get complete(): boolean {
    return this.bytes >= this.limit || this.chars >= this.limit;
  }

  /** Feeds one ASCII character (flatRecordHash's punctuation). */
  unit(code: number): void {
    if (this.complete) return;
    this.state = Math.imul(this.state ^ code, FNV_PRIME);
    this.bytes += 1;
    this.chars += 1;
  }

  /**
   * Feeds text that JSON writes as it is: ASCII without a quote, a backslash or a control
   * character. false at the first character that is not, and the hasher is then spent.
   */
  plain(text: string): boolean {
    const limit = this.limit;
    let state = this.state;
    let bytes = this.bytes;
    for (let i = 0; i < text.length && bytes < limit; i += 1) {
      const unit = text.charCodeAt(i);
      if (unit < 0x20 || unit === QUOTE || unit === BACKSLASH || unit >= 0x80) return false;
      state = Math.imul(state ^ unit, FNV_PRIME);
      bytes += 1;
    }
    this.state = state;
    this.chars += bytes - this.bytes;
    this.bytes = bytes;
    return true;
  }

  /**
   * Feeds a finite number as JSON writes it, String(value), without making the text for
   * the common number: at most 15 significant digits and 6 decimals (String() was 250 ns
   * of a metric point's ~1 µs hash). Such a number is the decimal n / 10^d for the first d
   * at which value * 10^d is an integer n that divides back to value: that decimal reads
   * back as value, and no other decimal of at most 15 significant digits does (15 digits
   * survive a round trip through a double), so it is the shortest one, which String()
   * writes, in plain notation (10^-6 <= |value| < 10^21).
   */
  number(value: number): void {
    const magnitude = Math.abs(value);
    for (let d = 0; d < POWERS_OF_TEN.length; d += 1) {
      const scaled = magnitude * POWERS_OF_TEN[d]!;
      if (scaled >= SIGNIFICAND_LIMIT) break;
      if (Number.isInteger(scaled) && scaled / POWERS_OF_TEN[d]! === magnitude) {
        this.decimal(value < 0, scaled, d);
        return;
      }
    }
    this.plain(String(value));
  }

  /** Feeds the digits of (negative ? -1 : 1) * n / 10^d, without trailing zeros after the point. */
  private decimal(negative: boolean, n: number, d: number): void {
    const digits = DIGITS;
    let count = 0;
    do {
      // Exact below 2^53, and without the floating-point remainder (fmod) `%` would be.
      const quotient = Math.floor(n / 10);
      digits[count++] = n - quotient * 10;
      n = quotient;
    } while (n > 0);
    // At least one digit before the point ("0.25").
    while (count <= d) digits[count++] = 0;
    let last = 0;
    while (last < d && digits[last] === 0) last += 1;
    if (negative) this.unit(MINUS);
    for (let i = count - 1; i >= d; i -= 1) this.unit(ZERO + digits[i]!);
    if (last < d) {
      this.unit(POINT);
      for (let i = d - 1; i >= last; i -= 1) this.unit(ZERO + digits[i]!);
    }
  }

  /** Feeds the characters of `text` (JSON text already); true once the prefix is complete. */
  feed(text: string): boolean {
    const limit = this.limit;
    let state = this.state;
    let bytes = this.bytes;
    let chars = this.chars;
    for (let i = 0; i < text.length && chars < limit && bytes < limit; i += 1) {
      const unit = text.charCodeAt(i);
      // ASCII, the common case, in line: one byte per character.
      if (unit < 0x80) {
        state = Math.imul(state ^ unit, FNV_PRIME);
        bytes += 1;
        chars += 1;
        continue;
      }
      let point = unit;
      let units = 1;
      if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length && chars + 1 < limit && isLowSurrogate(text.charCodeAt(i + 1))) {
        point = 0x10000 + ((unit - 0xd800) << 10) + (text.charCodeAt(i + 1) - 0xdc00);
        units = 2;
      } else if (unit >= 0xd800 && unit <= 0xdfff) {
        // A surrogate without its pair in the prefix: U+FFFD.
        point = 0xfffd;
      }
      const encoded = utf8Bytes(point);
      for (let b = 0; b < encoded.length && bytes < limit; b += 1) {
        state = Math.imul(state ^ encoded[b]!, FNV_PRIME);
        bytes += 1;
      }
      chars += units;
      i += units - 1;
    }
    this.state = state;
    this.bytes = bytes;
    this.chars = chars;
    return bytes >= limit || chars >= limit;
  }
}

const FNV_PRIME = 0x01000193;
/** FNV-1a's offset basis as a signed 32-bit integer. */
const FNV_OFFSET_BASIS = 0x811c9dc5 | 0;
/**
 * The one hasher every partition hash feeds, reset for each (a hash runs to its end before
 * the next starts, as for DIGITS): one made per payload was ~60 bytes a point that packing
 * a tsr batch allocated for nothing (a sampling heap profile).
 */
const HASHER = new PrefixHasher(0);
const MINUS = 0x2d;
const POINT = 0x2e;
const ZERO = 0x30;
const POWERS_OF_TEN = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];
const SIGNIFICAND_LIMIT = 1e15;
/** The digits of the number being fed, least significant first (reused: one hash at a time). */
const DIGITS = new Array<number>(24).fill(0);

/** The UTF-8 bytes of a code point above 0x7f. */
function utf8Bytes(point: number): number[] {
  if (point < 0x800) return [0xc0 | (point >> 6), 0x80 | (point & 0x3f)];
  if (point < 0x10000) return [0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)];
  return [0xf0 | (point >> 18), 0x80 | ((point >> 12) & 0x3f), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)];
}

function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Feeds canonicalJson(value) to the hasher; true once the prefix is complete. */
function hashCanonical(value: unknown, hasher: PrefixHasher): boolean {
  switch (typeof value) {
    case 'string':
      return hashString(value, hasher);
    case 'number':
      return hasher.feed(Number.isFinite(value) ? String(value) : 'null');
    case 'boolean':
      return hasher.feed(value ? 'true' : 'false');
    case 'bigint':
      return hasher.feed(value.toString());
    case 'object':
      if (value === null) return hasher.feed('null');
      return Array.isArray(value) ? hashArray(value, hasher) : hashObject(value as Record<string, unknown>, hasher);
    default:
      return hasher.feed('null');
  }
}

function hashArray(value: readonly unknown[], hasher: PrefixHasher): boolean {
  if (hasher.feed('[')) return true;
  for (let i = 0; i < value.length; i += 1) {
    if ((i > 0 && hasher.feed(',')) || hashCanonical(value[i] ?? null, hasher)) return true;
  }
  return hasher.feed(']');
}

function hashObject(record: Record<string, unknown>, hasher: PrefixHasher): boolean {
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i += 1) sorted = keys[i - 1]! < keys[i]!;
  if (!sorted) keys.sort();
  if (hasher.feed('{')) return true;
  let first = true;
  for (const key of keys) {
    const field = record[key];
    if (field === undefined) continue;
    if ((!first && hasher.feed(',')) || hashString(key, hasher) || hasher.feed(':') || hashCanonical(field, hasher)) return true;
    first = false;
  }
  return hasher.feed('}');
}

/**
 * Feeds JSON.stringify(text): the text between quotes when the prefix holds no character
 * to escape, which is the rule (escaping changes nothing before the first such character).
 */
function hashString(text: string, hasher: PrefixHasher): boolean {
  if (needsEscape(text, hasher.limit - hasher.chars)) return hasher.feed(JSON.stringify(text));
  return hasher.feed('"') || hasher.feed(text) || hasher.feed('"');
}

/**
 * Whether JSON.stringify escapes one of the first `charsMax` characters of `text`: a quote,
 * a backslash, a control character or a lone surrogate.
 */
function needsEscape(text: string, charsMax: number): boolean {
  const end = Math.min(text.length, charsMax);
  for (let i = 0; i < end; i += 1) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 || unit === 0x22 || unit === 0x5c) return true;
    if (unit >= 0xd800 && unit <= 0xdfff) {
      if (unit > 0xdbff || i + 1 >= text.length || !isLowSurrogate(text.charCodeAt(i + 1))) return true;
      i += 1;
    }
  }
  return false;
}
