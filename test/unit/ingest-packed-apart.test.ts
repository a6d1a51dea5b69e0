// A tsr batch packed by an ingest worker (ingest.ts ingestBytes), with a stand-in pool: the
// worker is moved a copy of the body, and a live listener that starts wanting the stream
// while the batch is packed still gets its payloads, parsed from the body this thread kept.

import { describe, expect, it } from 'vitest';
import { WriteIdGenerator } from '../../src/storage/write-ids.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import { compilePayloadChecks } from '../../src/streams/payload-checks.js';
import { IngestService } from '../../src/streams/ingest.js';
import type { IngestPool } from '../../src/streams/ingest-pool.js';
import type { CompiledStream, StreamRuntime } from '../../src/streams/stream-runtime.js';
import { packTsrBatchBytes, type PackedBatch, type TsrBatchBytes } from '../../src/streams/tsr-batch.js';

const SCHEMA = {
  version: '1',
  topDef: { type: 'record', properties: { at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] }, cpu: { type: 'double' } } },
};
const checks = compilePayloadChecks(SCHEMA);
const id = { tenant: 'demo', collection: 'c', name: 's' };
const stream: CompiledStream = {
  id,
  key: 'demo/c/s',
  validate: checks.validate,
  tags: undefined,
  repository: 'tsr',
  policy: { replicas: 1, ring_size: 4, hash_payload: { bytes: 128 } },
  timestampOf: checks.timestampOf,
  schema: { definition: SCHEMA, signature: '1' },
};

/** A pool that packs with the workers' own code once `release()` is called, keeping what it was handed. */
function standInPool() {
  const handed: TsrBatchBytes[] = [];
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const pool = {
    pack: (batch: TsrBatchBytes): Promise<PackedBatch> => {
      handed.push(batch);
      return released.then(() => packTsrBatchBytes(batch, checks));
    },
  };
  return { pool: pool as unknown as IngestPool, handed, release: () => release() };
}

function service(pool: IngestPool, written: StoredRecord[]): IngestService {
  const runtime = { resolve: async () => stream } as unknown as StreamRuntime;
  const router = {
    write: async (_repository: string, _policy: unknown, records: readonly StoredRecord[]) => {
      written.push(...records);
      return new Map<number, string>();
    },
  };
  return new IngestService(runtime, router, new WriteIdGenerator('n1'), { batchPayloadsMax: 100, jsonDepthMax: 8 }, { pool });
}

describe('ingest - a tsr batch packed apart', () => {
  it('hands the worker a copy of the body and keeps the body for a listener that starts wanting the stream meanwhile', async () => {
    const { pool, handed, release } = standInPool();
    const written: StoredRecord[] = [];
    const ingest = service(pool, written);
    const payloads = [
      { at: '2024-01-01T00:00:00.000Z', cpu: 1.5 },
      { at: '2024-01-01T00:00:01.000Z', cpu: 2.5 },
    ];
    const body = Buffer.from(JSON.stringify(payloads), 'utf8');
    const answered = ingest.ingestBytes(id, body, undefined);
    await new Promise((resolve) => setImmediate(resolve));
    // The worker's copy is its own buffer: moving it leaves the body here whole.
    expect(handed).toHaveLength(1);
    expect(handed[0]!.bytes.buffer).not.toBe(body.buffer);
    expect(Buffer.from(handed[0]!.bytes).equals(body)).toBe(true);
    // A live query starts while the batch is packed.
    const delivered: Array<Record<string, unknown>> = [];
    ingest.onPayloads((_stream, batch) => void delivered.push(...batch));
    release();
    expect(await answered).toEqual(new Map());
    expect(delivered).toEqual(payloads);
    expect(written.length).toBeGreaterThan(0);
  });
});
