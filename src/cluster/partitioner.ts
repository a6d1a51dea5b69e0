// Which partition a payload belongs to (DESIGN.md, "Data and where it lives"): a stable
// hash of the first `hash_payload.bytes` bytes of its canonical JSON, modulo `ring_size`.
// "Stable" is a promise to stored data: changing this function moves every payload, so it
// is FNV-1a 32 over UTF-8 bytes of key-sorted JSON, frozen.

export interface DistributionPolicy {
  replicas: number;
  ring_size: number;
  hash_payload: { bytes: number };
}

export const DEFAULT_POLICY: DistributionPolicy = Object.freeze({
  replicas: 3,
  ring_size: 128,
  hash_payload: Object.freeze({ bytes: 128 }),
}) as DistributionPolicy;

/** JSON with object keys sorted at every level, so equal payloads give equal text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
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
  try {
    writeCanonical(value, writer);
  } catch (error) {
    if (error !== PREFIX_COMPLETE) throw error;
  }
  return writer.out;
}

const PREFIX_COMPLETE = Symbol('prefix complete');

function writeCanonical(value: unknown, writer: { out: string; charsMin: number }): void {
  const emit = (text: string) => {
    writer.out += text;
    if (writer.out.length >= writer.charsMin) throw PREFIX_COMPLETE;
  };
  if (value === null || typeof value !== 'object') return emit(JSON.stringify(value) ?? 'null');
  if (Array.isArray(value)) {
    emit('[');
    for (let i = 0; i < value.length; i += 1) {
      if (i > 0) emit(',');
      writeCanonical(value[i] ?? null, writer);
    }
    return emit(']');
  }
  const record = value as Record<string, unknown>;
  emit('{');
  let first = true;
  for (const key of Object.keys(record).sort()) {
    if (record[key] === undefined) continue;
    emit((first ? '' : ',') + JSON.stringify(key) + ':');
    first = false;
    writeCanonical(record[key], writer);
  }
  emit('}');
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
