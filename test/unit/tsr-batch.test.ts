// A tsr batch packed from the request's text (what an ingest worker does) against the same
// batch parsed, checked and packed as ingest does it on the main thread: the same records,
// failures and errors.

import { describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/lib/errors.js';
import { bodyTextOf, parseBodyText } from '../../src/lib/body-text.js';
import { stringifyJson } from '../../src/lib/json.js';
import { blockRecords } from '../../src/streams/block-records.js';
import { checkPayload } from '../../src/streams/ingest-checks.js';
import { compilePayloadChecks } from '../../src/streams/payload-checks.js';
import { packTsrBatch, packTsrBatchBytes, type TsrBatch } from '../../src/streams/tsr-batch.js';
import { Prng } from '../sim/prng.js';

const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      host: { type: 'string' },
      cpu: { type: 'double', optional: false },
    },
  },
};
const checks = compilePayloadChecks(SCHEMA);
const policy = { replicas: 1, ring_size: 16, hash_payload: { bytes: 128 } };
const RECEIVED_AT = Date.UTC(2024, 5, 1);

function batchOf(text: string, batchPayloadsMax = 1_000): TsrBatch {
  return { text, jsonDepthMax: 8, batchPayloadsMax, stream: 'demo/c/s', policy, receivedAt: RECEIVED_AT, base: 'w7' };
}

/** Ingest on the main thread, as ingest.ts does it for a stream without tags. */
function onMainThread(text: string) {
  const body = parseBodyText(text, 8);
  const payloads = Array.isArray(body) ? body : [body];
  const failures: Array<[number, string]> = [];
  const written = [];
  for (let index = 0; index < payloads.length; index += 1) {
    const outcome = checkPayload(checks.validate, payloads[index]);
    if (typeof outcome === 'string') failures.push([index, outcome]);
    else written.push({ payload: outcome, position: index, timestamp: checks.timestampOf(outcome) ?? RECEIVED_AT });
  }
  return { ...blockRecords('demo/c/s', policy, written, 'w7'), accepted: written.map((entry) => entry.position), failures };
}

function errorOf(run: () => unknown): { status: number; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TributaryError);
    return { status: (error as TributaryError).status, message: (error as Error).message };
  }
  throw new Error('no error');
}

describe('tsr batch - packed from the request text', () => {
  it('makes the records, members and failures ingest makes on the main thread', () => {
    const prng = new Prng(17);
    for (let round = 0; round < 20; round += 1) {
      const payloads = Array.from({ length: prng.int(1, 300) }, (_, index) => {
        const at = Date.UTC(2024, 0, 1) + prng.int(0, 3_600_000);
        switch (prng.int(0, 9)) {
          case 0: return { host: 'no-time', cpu: index };
          case 1: return { at: new Date(at).toISOString(), host: 'h', cpu: 'not a number' };
          case 2: return [1, 2];
          case 3: return { at: new Date(at).toISOString(), host: 'h' };
          case 4: return { at: new Date(at).toISOString(), host: 'é😀', cpu: index / 4, extra: { nested: [null, true] } };
          default: return { at: new Date(at).toISOString(), host: `host-${prng.int(0, 5)}`, cpu: prng.int(0, 400) / 4 };
        }
      });
      const text = stringifyJson(payloads);
      const packed = packTsrBatch(batchOf(text), checks);
      expect(packed).toEqual(onMainThread(text));
      expect(packed.accepted.length + packed.failures.length).toBe(payloads.length);
      expect(packed.failures.length).toBeGreaterThan(0);
    }
  });

  it('takes one payload as a batch of one', () => {
    const text = JSON.stringify({ at: '2024-01-01T00:00:00Z', host: 'h', cpu: 1.5 });
    const packed = packTsrBatch(batchOf(text), checks);
    expect(packed.accepted).toEqual([0]);
    expect(packed.records).toHaveLength(1);
    expect(packed.records[0]!.timestamp).toBe(Date.UTC(2024, 0, 1));
    expect(packed.records[0]!.writeId).toBe('w7.0');
  });

  it("packs a body's bytes as its text: a leading byte order mark left out, bad UTF-8 as U+FFFD", () => {
    const text = '[{"at": "2024-01-01T00:00:00.000Z", "host": "hé", "cpu": 1.5}]';
    const withMark = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text, 'utf8')]);
    const bytesBatch = { jsonDepthMax: 8, batchPayloadsMax: 1_000, stream: 'demo/c/s', policy, receivedAt: RECEIVED_AT, base: 'w7', bytes: withMark };
    expect(packTsrBatchBytes(bytesBatch, checks)).toEqual(packTsrBatch(batchOf(text), checks));
    expect(bodyTextOf(withMark)).toBe(text);
    expect(bodyTextOf(Buffer.from([0x5b, 0xff, 0x5d]))).toBe('[\ufffd]');
    // A mark after the first is text, as Buffer's decoding keeps it.
    expect(bodyTextOf(Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf, 0x31]))).toBe('\ufeff1');
  });

  it('refuses a bad body with the 400 the body middleware and the route give', () => {
    expect(errorOf(() => packTsrBatch(batchOf('[{"at": '), checks))).toEqual(errorOf(() => parseBodyText('[{"at": ', 8)));
    expect(errorOf(() => packTsrBatch(batchOf('[[[[[[[[[[1]]]]]]]]]]'), checks))).toEqual({ status: 400, message: 'the request body nests arrays and objects deeper than the limit of 8 levels' });
    expect(errorOf(() => packTsrBatch(batchOf('"text"'), checks)).status).toBe(400);
    expect(errorOf(() => packTsrBatch(batchOf('  '), checks)).status).toBe(400);
    expect(errorOf(() => packTsrBatch(batchOf('[{}, {}, {}]', 2), checks))).toEqual({ status: 400, message: 'a batch holds at most 2 payloads, got 3' });
  });
});
