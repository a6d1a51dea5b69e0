import { describe, expect, it } from 'vitest';
import { Prng } from '../sim/prng.js';
import { canonicalJson } from '../../src/lib/json.js';
import { fnv1a32, partitionOf, partitionOfCanonical } from '../../src/streams/partitioner.js';

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

describe('partitioner - the frozen definition', () => {
  it('hashes the UTF-8 bytes of the first bytes characters, cut to bytes bytes, as Buffer.from encodes them', () => {
    const prng = new Prng(5);
    const pieces = ['a', 'é', '€', '😀', '\ud800', '\udc00', '"', '\n', 'z'.repeat(20)];
    for (let run = 0; run < 2_000; run += 1) {
      const text = Array.from({ length: prng.int(0, 40) }, () => prng.pick(pieces)).join('');
      for (const bytes of [1, 2, 3, 5, 8, 17, 64, 128]) {
        const frozen = fnv1a32(Buffer.from(text.slice(0, bytes), 'utf8').subarray(0, bytes)) % 977;
        expect(partitionOfCanonical(text, policy(977, bytes)), JSON.stringify(text)).toBe(frozen);
      }
    }
  });
});

describe('partitioner - the partition of a payload without its text', () => {
  it('is the partition of its canonical JSON, for any payload and any hash_payload.bytes', () => {
    const prng = new Prng(17);
    const texts = ['', 'plain', 'quote " and \\ backslash\n', '😀x😀', 'é', '\u0001', '\ud800 lone', 'lone low \udc00', 'end high \ud83d', 'ü€😀'.repeat(30), 'x'.repeat(300)];
    const value = (depth: number): unknown => {
      switch (prng.int(0, depth > 2 ? 5 : 7)) {
        case 0: return prng.pick(texts) + prng.pick(texts);
        case 1: return prng.int(-1000, 1000) / prng.pick([1, 4, 7, 1e6]);
        case 2: return prng.pick([true, false, null, undefined, NaN, 12345678901234567890n, 1e21, -0]);
        case 3: return prng.pick(texts);
        case 4: return prng.int(0, 1e9);
        case 5: return prng.pick(texts).slice(0, prng.int(0, 4));
        case 6: return Array.from({ length: prng.int(0, 4) }, () => value(depth + 1));
        default: {
          const object: Record<string, unknown> = {};
          for (let i = prng.int(0, 5); i > 0; i -= 1) object[prng.pick(['a', 'z', 'é', '😀k', 'k"q', 'b', 'A', '10', '9'])] = value(depth + 1);
          return object;
        }
      }
    };
    for (let run = 0; run < 3_000; run += 1) {
      const payload = value(0);
      const full = canonicalJson(payload);
      for (const bytes of [1, 2, 3, 4, 5, 8, 13, 32, 64, 128, 129, 1_000]) {
        expect(partitionOf(payload, policy(1 << 16, bytes)), `${full} at ${bytes}`).toBe(partitionOfCanonical(full, policy(1 << 16, bytes)));
      }
    }
  });

  it('is the partition of its canonical JSON for flat records, the common payload, at every cut', () => {
    const prng = new Prng(23);
    const keys = ['at', 'cpu', 'host', 'mem', 'A', '9', '10', 'k"q', 'é', 'tab\t'];
    const scalars = ['2024-01-01T00:00:00.000Z', 'host-007', '', 'q"uote', 'back\\slash', 'é', '😀', 'x'.repeat(140), 25.25, -0, 1e21, 7, NaN, Infinity, true, false, null, undefined, 12345678901234567890n];
    for (let run = 0; run < 1_000; run += 1) {
      const record: Record<string, unknown> = {};
      // Mostly plain ASCII keys in order (the flat path); sometimes any key, in any order.
      const plain = prng.int(0, 3) > 0;
      const names = plain ? keys.slice(0, 4).filter(() => prng.int(0, 4) > 0) : Array.from({ length: prng.int(0, 5) }, () => prng.pick(keys));
      for (const name of names) record[name] = plain && prng.int(0, 3) > 0 ? prng.pick([prng.int(0, 400) / 4, `host-${prng.int(0, 99)}`, true, null]) : prng.pick(scalars);
      const full = canonicalJson(record);
      for (let bytes = 1; bytes <= full.length + 2; bytes += 1) {
        expect(partitionOf(record, policy(1 << 16, bytes)), `${full} at ${bytes}`).toBe(partitionOfCanonical(full, policy(1 << 16, bytes)));
      }
    }
  });

  it('feeds every number as String() writes it: decimals, binary fractions, any double', () => {
    const prng = new Prng(31);
    const bits = new Float64Array(1);
    const words = new Uint32Array(bits.buffer);
    const kinds: Array<() => number> = [
      () => ((words[0] = prng.int(0, 2 ** 32 - 1)), (words[1] = prng.int(0, 2 ** 32 - 1)), bits[0]!),
      () => prng.int(0, 1e6) / 2 ** prng.int(0, 30),
      () => Number((prng.next() * 10 ** prng.int(0, 15)).toFixed(prng.int(0, 8))),
      () => prng.int(-(2 ** 53), 2 ** 53),
      () => (prng.next() - 0.5) * 10 ** prng.int(-20, 20),
      () => Number((prng.next() * 1000).toPrecision(prng.int(1, 17))),
      () => prng.int(-1000, 1000) / 10 ** prng.int(0, 7),
    ];
    const edges = [0, -0, 0.1 + 0.2, 1e-6, -1e-6, 1e-7, 1.5e-6, 999999999999999, 1e15, 1e15 + 1, 123456.789012, 5e-324, Number.MAX_VALUE, 2 ** 53 + 2, 1e21, 2.675, 1.005, 1234567.0000001];
    const values = [...edges, ...Array.from({ length: 100_000 }, (_, i) => kinds[i % kinds.length]!())].filter(Number.isFinite);
    const ring = policy(2 ** 31, 1024);
    for (const value of values) expect(partitionOf({ n: value }, ring), String(value)).toBe(partitionOfCanonical(`{"n":${String(value)}}`, ring));
  });

  it('cuts a surrogate pair at the character limit as the text hash does', () => {
    for (let pad = 0; pad < 8; pad += 1) {
      const payload = { k: `${'a'.repeat(pad)}😀😀` };
      for (let bytes = 1; bytes < 24; bytes += 1) {
        expect(partitionOf(payload, policy(1 << 16, bytes))).toBe(partitionOfCanonical(canonicalJson(payload), policy(1 << 16, bytes)));
      }
    }
  });
});
