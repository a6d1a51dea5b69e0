// Digests of the keys a replica holds of one partition, for anti-entropy
// in the manner of Riak's AAE hash trees and Cassandra's repair Merkle trees, cut to two
// levels: the partition's digest is a list of segment digests, and owners that differ
// compare keys only in the segments that differ. Pure: no I/O.
//
// Records are immutable (a key names one payload, written once by the node that received
// it), so two replicas hold the same data exactly when they hold the same keys: a digest
// of keys is a digest of data. A record whose bytes are damaged is found by its checksum
// when read, and is then missing, not different.
//
// A segment's digest is its key count and two XORs of 32-bit FNV-1a hashes of its keys
// (different offsets). XOR makes it independent of the order keys are read in.

/** Segments per partition: a difference is settled by exchanging 1/64 of the keys. */
export const SEGMENTS = 64;
/** Numbers per segment in a digest: keys, xor one, xor two. */
export const SEGMENT_FIELDS = 3;

const OFFSET_ONE = 0x811c9dc5;
const OFFSET_TWO = 0x01234567;
const PRIME = 0x01000193;

export function segmentOf(key: string): number {
  return hashKey(key, OFFSET_TWO) % SEGMENTS;
}

/** The digest of a set of keys: SEGMENT_FIELDS numbers per segment. */
export function digestKeys(keys: Iterable<string>): Uint32Array {
  const digest = new Uint32Array(SEGMENTS * SEGMENT_FIELDS);
  for (const key of keys) addKey(digest, key);
  return digest;
}

/**
 * Adds one key to a digest (digestKeys, a key at a time). The key must not be in it yet:
 * XOR takes a key added twice out again, so the caller feeds each key once (a transfer
 * reads and stores keys in rising order: transfer-chunks.ts).
 */
export function addKey(digest: Uint32Array, key: string): void {
  const one = hashKey(key, OFFSET_ONE);
  const two = hashKey(key, OFFSET_TWO);
  const at = (two % SEGMENTS) * SEGMENT_FIELDS;
  digest[at] = digest[at]! + 1;
  digest[at + 1] = digest[at + 1]! ^ one;
  digest[at + 2] = digest[at + 2]! ^ two;
}

/** Segments whose digests differ, in order. Throws on digests of the wrong shape (a peer's). */
export function differingSegments(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  if (a.length !== SEGMENTS * SEGMENT_FIELDS || b.length !== SEGMENTS * SEGMENT_FIELDS) {
    throw new Error(`a partition digest has ${SEGMENTS * SEGMENT_FIELDS} numbers, got ${a.length} and ${b.length}`);
  }
  const differing: number[] = [];
  for (let segment = 0; segment < SEGMENTS; segment += 1) {
    const at = segment * SEGMENT_FIELDS;
    if (a[at] !== b[at] || a[at + 1] !== b[at + 1] || a[at + 2] !== b[at + 2]) differing.push(segment);
  }
  return differing;
}

/** The keys of `keys` that fall in the given segments. */
export function keysInSegments(keys: Iterable<string>, segments: readonly number[]): string[] {
  const wanted = new Set(segments);
  const found: string[] = [];
  for (const key of keys) if (wanted.has(segmentOf(key))) found.push(key);
  return found;
}

/** Keys only `mine` has, and keys only `theirs` has. */
export function keyDifference(mine: readonly string[], theirs: readonly string[]): { onlyMine: string[]; onlyTheirs: string[] } {
  const mineSet = new Set(mine);
  const theirSet = new Set(theirs);
  return { onlyMine: mine.filter((key) => !theirSet.has(key)), onlyTheirs: theirs.filter((key) => !mineSet.has(key)) };
}

/** FNV-1a over the UTF-16 code units of the key (keys are ASCII: stream names and hex). */
function hashKey(key: string, offset: number): number {
  let hash = offset;
  for (let index = 0; index < key.length; index += 1) {
    hash ^= key.charCodeAt(index);
    hash = Math.imul(hash, PRIME) >>> 0;
  }
  return hash >>> 0;
}
