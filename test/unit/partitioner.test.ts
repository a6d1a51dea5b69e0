import { describe, expect, it } from 'vitest';
import { canonicalJson, canonicalJsonPrefix, fnv1a32, partitionOf, partitionOfCanonical } from '../../src/streams/partitioner.js';

const policy = (ring_size: number, bytes: number) => ({ replicas: 1, ring_size, hash_payload: { bytes } });

describe('partitioner - canonical JSON', () => {
  it('sorts keys at every level and drops undefined fields', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null }, u: undefined })).toBe(
      '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('equal payloads with different key order land in the same partition', () => {
    expect(partitionOf({ host: 'a', cpu: 1 }, policy(128, 128))).toBe(partitionOf({ cpu: 1, host: 'a' }, policy(128, 128)));
  });
});

describe('partitioner - hash', () => {
  it('is FNV-1a 32 (frozen: stored data depends on it)', () => {
    expect(fnv1a32(new Uint8Array())).toBe(0x811c9dc5);
    expect(fnv1a32(Buffer.from('a'))).toBe(0xe40c292c);
    expect(fnv1a32(Buffer.from('foobar'))).toBe(0xbf9cf968);
  });

  it('hashes only the first hash_payload.bytes bytes of the canonical JSON', () => {
    const a = canonicalJson({ a: 'same-prefix', z: 1 });
    const b = canonicalJson({ a: 'same-prefix', z: 2 });
    expect(partitionOfCanonical(a, policy(1024, 16))).toBe(partitionOfCanonical(b, policy(1024, 16)));
    expect(partitionOfCanonical(a, policy(1 << 16, 128))).not.toBe(partitionOfCanonical(b, policy(1 << 16, 128)));
  });

  it('counts bytes, not characters, for non-ASCII text', () => {
    const text = canonicalJson({ s: 'ééééé' });
    const expected = fnv1a32(Buffer.from(text, 'utf8').subarray(0, 8)) % 97;
    expect(partitionOfCanonical(text, policy(97, 8))).toBe(expected);
  });

  it('spreads payloads over every partition of a small ring', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2_000; i += 1) seen.add(partitionOf({ id: i, host: `h${i % 13}` }, policy(32, 128)));
    expect(seen.size).toBe(32);
  });
});

describe('partitioner - canonical prefix', () => {
  it('is a prefix of the canonical JSON, at least as long as asked, and gives the same partition', () => {
    for (let i = 0; i < 300; i += 1) {
      const payload = { z: i, a: { nested: [i, 'x'.repeat(i % 17), { q: null, b: true }] }, m: `text ${i}`.repeat(i % 5) };
      const full = canonicalJson(payload);
      for (const chars of [1, 16, 40, 128, 10_000]) {
        const prefix = canonicalJsonPrefix(payload, chars);
        expect(full.startsWith(prefix)).toBe(true);
        expect(prefix.length).toBeGreaterThanOrEqual(Math.min(chars, full.length));
        expect(partitionOfCanonical(prefix, policy(128, chars))).toBe(partitionOfCanonical(full, policy(128, chars)));
      }
    }
  });
});

describe('partitioner - canonical prefix of strings', () => {
  it('matches the canonical JSON through escapes, quotes and surrogate pairs cut anywhere', () => {
    const texts = ['plain text that goes on', 'quote " and \\ backslash\n newline\t tab', '😀😀😀 emoji pairs 😀', '\u0001\u001f control', 'é'.repeat(40)];
    for (const text of texts) {
      const payload = { a: text, b: [text, { c: text }] };
      const full = canonicalJson(payload);
      for (let chars = 1; chars < full.length + 2; chars += 1) {
        const prefix = canonicalJsonPrefix(payload, chars);
        expect(full.startsWith(prefix), `${JSON.stringify(text)} at ${chars}`).toBe(true);
        expect(prefix.length).toBeGreaterThanOrEqual(Math.min(chars, full.length));
      }
    }
  });
});
