// The ingest pool's bounds and failures, with stand-in workers (plain JavaScript modules
// written for the test): a worker that dies fails its batch only, the queue refuses past its
// bounds (the caller packs on the main thread), and closing fails what waits.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TributaryError } from '../../src/lib/errors.js';
import { IngestPool } from '../../src/streams/ingest-pool.js';
import type { TsrBatchBytes } from '../../src/streams/tsr-batch.js';

const folder = mkdtempSync(join(tmpdir(), 'tributary-ingest-pool-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/**
 * A stand-in worker: answers each task after 20 ms, packing nothing; the body 'die' kills
 * the worker, 'bad' is answered as a 400, 'hang' is never answered.
 */
const standIn = pathToFileURL(join(folder, 'stand-in.mjs'));
writeFileSync(
  standIn,
  `import { parentPort } from 'node:worker_threads';
parentPort.on('message', (task) => {
  const text = new TextDecoder().decode(task.batch.bytes);
  if (text === 'die') process.exit(3);
  if (text === 'hang') return;
  if (text === 'bad') return parentPort.postMessage({ id: task.id, error: { status: 400, code: 'BAD_REQUEST', message: 'not JSON' } });
  setTimeout(() => parentPort.postMessage({ id: task.id, wire: { stream: '', partitions: new Int32Array(0), timestamps: new Float64Array(0), writeIds: [], values: [], memberCounts: new Int32Array(0), members: new Int32Array(0), accepted: Int32Array.of(task.batch.receivedAt), failures: [] } }), 20);
});
`,
);

const batch = (text: string, receivedAt = 0): TsrBatchBytes => ({ bytes: new TextEncoder().encode(text), jsonDepthMax: 8, batchPayloadsMax: 10, stream: 't/c/s', policy: { replicas: 1, ring_size: 8, hash_payload: { bytes: 16 } }, receivedAt, base: 'w' });
const schema = { definition: {}, signature: '1' };
const pools: IngestPool[] = [];
const poolOf = (options: { threads: number; queuedBatchesMax?: number; queuedBytesMax?: number }) => {
  const pool = new IngestPool({ ...options, log: pino({ level: 'silent' }), workerUrl: standIn });
  pools.push(pool);
  return pool;
};
afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe('ingest pool', () => {
  it('answers each batch from a worker, a bad body as the 400 the worker threw', async () => {
    const pool = poolOf({ threads: 2 });
    const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => pool.pack(batch('ok', n), schema)!));
    expect(answers.map((packed) => packed.accepted)).toEqual([[1], [2], [3], [4], [5]]);
    const refused = await pool.pack(batch('bad'), schema)!.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TributaryError);
    expect(refused).toMatchObject({ status: 400, message: 'not JSON' });
  });

  it("moves a batch's bytes to the worker, and refuses bytes that share their buffer", async () => {
    const pool = poolOf({ threads: 1 });
    const moved = batch('ok', 3);
    const packing = pool.pack(moved, schema)!;
    // Moved, not copied: this side's view is emptied once the worker has them.
    expect(moved.bytes.byteLength).toBe(0);
    expect((await packing).accepted).toEqual([3]);
    const shared = new Uint8Array(8);
    expect(() => pool.pack({ ...batch('ok'), bytes: shared.subarray(0, 4) }, schema)).toThrow(/moving it would take the rest/);
  });

  it('a worker that dies fails its batch only; the next batch gets a new worker', async () => {
    const pool = poolOf({ threads: 1 });
    const died = pool.pack(batch('die'), schema)!;
    const after = pool.pack(batch('ok', 7), schema)!;
    await expect(died).rejects.toThrow(/ingest worker .* stopped: exit code 3/);
    expect((await after).accepted).toEqual([7]);
    expect((await pool.pack(batch('ok', 8), schema))!.accepted).toEqual([8]);
  });

  it('takes no more than its queue holds, in batches and in bytes: the caller packs those itself', async () => {
    const pool = poolOf({ threads: 1, queuedBatchesMax: 2, queuedBytesMax: 10 });
    const hung = pool.pack(batch('hang'), schema);
    expect(hung).toBeDefined();
    const waiting = [pool.pack(batch('ok'), schema), pool.pack(batch('ok'), schema)];
    expect(waiting.every((promise) => promise !== undefined)).toBe(true);
    expect(pool.pack(batch('ok'), schema)).toBeUndefined();
    const other = poolOf({ threads: 1, queuedBatchesMax: 10, queuedBytesMax: 10 });
    const otherHung = other.pack(batch('hang'), schema);
    expect(other.pack(batch('x'.repeat(11)), schema)).toBeUndefined();
    const otherWaiting = other.pack(batch('x'.repeat(10)), schema);
    expect([otherHung, otherWaiting].every((promise) => promise !== undefined)).toBe(true);
    void Promise.allSettled([otherHung!, otherWaiting!]);
    // Closing fails what is packing and what waits, and takes nothing more.
    const settled = Promise.allSettled([hung!, ...waiting]);
    await pool.close();
    expect((await settled).map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(pool.pack(batch('ok'), schema)).toBeUndefined();
  });
});
