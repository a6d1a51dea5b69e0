import { describe, expect, it } from 'vitest';
import { packedOf, wireOf } from '../../src/streams/packed-wire.js';
import { packTsrBatch } from '../../src/streams/tsr-batch.js';
import { compilePayloadChecks } from '../../src/streams/payload-checks.js';

const SCHEMA = {
  version: '1',
  topDef: { type: 'record', properties: { at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] }, cpu: { type: 'double' }, host: { type: 'string' } } },
};

describe('packed wire - a packed batch as a worker sends it', () => {
  it('comes back as the same records, member lists, accepted places and failures', () => {
    const payloads = Array.from({ length: 300 }, (_, i) => ({ at: new Date(Date.UTC(2024, 0, 1) + i * 997).toISOString(), cpu: i / 4, host: `h${i % 7}` }));
    // Two refused: a string where a double goes, and not a record at all.
    const text = JSON.stringify([...payloads.slice(0, 100), { at: '2024-01-01T00:00:00.000Z', cpu: 'high', host: 'h1' }, ...payloads.slice(100), 7]);
    const packed = packTsrBatch({ text, jsonDepthMax: 16, batchPayloadsMax: 1000, stream: 't/c/s', policy: { replicas: 1, ring_size: 16, hash_payload: { bytes: 128 } }, receivedAt: 0, base: 'w1' }, compilePayloadChecks(SCHEMA));
    expect(packed.records.length).toBeGreaterThan(1);
    expect(packed.failures.map(([index]) => index)).toEqual([100, 301]);
    const sent = structuredClone(wireOf(packed));
    expect(packedOf(sent)).toEqual(packed);
  });

  it('carries a batch that stored nothing', () => {
    const empty = { records: [], members: [], accepted: [], failures: [[0, 'not a record'] as [number, string]] };
    expect(packedOf(structuredClone(wireOf(empty)))).toEqual(empty);
  });
});
