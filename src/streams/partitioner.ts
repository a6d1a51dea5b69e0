// Which partition a payload belongs to (DESIGN.md, "Data and where it lives"): a stable
// hash of the first `hash_payload.bytes` bytes of its canonical JSON, modulo `ring_size`.
// "Stable" is a promise to stored data: changing this function moves every payload, so it
// is FNV-1a 32 over UTF-8 bytes of key-sorted JSON, frozen.

import type { DistributionPolicy } from './policy.js';

/** JSON with object keys sorted at every level, so equal payloads give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return scalarJson(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i += 1) out += (i === 0 ? '' : ',') + canonicalJson(value[i] ?? null);
    return out + ']';
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const field = record[key];
    if (field === undefined) continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(field);
    first = false;
  }
  return out + '}';
}

/**
 * The first characters of canonicalJson(value): at least `charsMin` of them, or all of it
 * when it is shorter. Ingest hashes only the first hash_payload.bytes bytes, so it need not
 * build the whole canonical text of a payload (the JS serialiser is slower than the native
 * JSON.stringify that stores it).
 */
export function canonicalJsonPrefix(value: unknown, charsMin: number): string {
  const writer = { out: '', charsMin };
  writeCanonical(value, writer);
  return writer.out;
}

interface PrefixWriter {
  out: string;
  charsMin: number;
}

/** Appends canonical JSON of `value`; true once the writer holds `charsMin` characters. */
function writeCanonical(value: unknown, writer: PrefixWriter): boolean {
  if (typeof value === 'string') return writeString(value, writer);
  if (value === null || typeof value !== 'object') return emit(scalarJson(value), writer);
  if (Array.isArray(value)) {
    if (emit('[', writer)) return true;
    for (let i = 0; i < value.length; i += 1) {
      if ((i > 0 && emit(',', writer)) || writeCanonical(value[i] ?? null, writer)) return true;
    }
    return emit(']', writer);
  }
  const record = value as Record<string, unknown>;
  if (emit('{', writer)) return true;
  let first = true;
  for (const key of Object.keys(record).sort()) {
    if (record[key] === undefined) continue;
    if (emit((first ? '' : ',') + JSON.stringify(key) + ':', writer) || writeCanonical(record[key], writer)) return true;
    first = false;
  }
  return emit('}', writer);
}

/** A scalar's JSON; a BigInt (a long beyond 2^53, issue 13) is its digits. */
function scalarJson(value: unknown): string {
  return typeof value === 'bigint' ? value.toString() : (JSON.stringify(value) ?? 'null');
}

function emit(text: string, writer: PrefixWriter): boolean {
  writer.out += text;
  return writer.out.length >= writer.charsMin;
}

/**
 * A long string is encoded only as far as needed: JSON escapes each character on its own
 * (to one character or more), so the first `remaining + 1` characters are enough; a cut
 * is never made inside a surrogate pair, whose halves would be escaped differently alone.
 */
function writeString(value: string, writer: PrefixWriter): boolean {
  let needed = writer.charsMin - writer.out.length + 1;
  if (value.length <= needed) return emit(JSON.stringify(value), writer);
  const code = value.charCodeAt(needed - 1);
  if (code >= 0xd800 && code <= 0xdbff) needed += 1;
  const encoded = JSON.stringify(value.slice(0, needed));
  return emit(encoded.slice(0, -1), writer);
}

export function fnv1a32(bytes: Uint8Array): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i += 1) {
    hash ^= bytes[i]!;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** `canonical` is canonicalJson(payload), or a prefix of it at least `hash_payload.bytes` long. */
export function partitionOfCanonical(canonical: string, policy: DistributionPolicy): number {
  // Every character is at least one UTF-8 byte, so the first `bytes` characters hold at
  // least `bytes` bytes: encode only those, not the whole payload.
  const limit = policy.hash_payload.bytes;
  const bytes = Buffer.from(canonical.length > limit ? canonical.slice(0, limit) : canonical, 'utf8');
  return fnv1a32(bytes.subarray(0, limit)) % policy.ring_size;
}

export function partitionOf(payload: unknown, policy: DistributionPolicy): number {
  return partitionOfCanonical(canonicalJsonPrefix(payload, policy.hash_payload.bytes), policy);
}
