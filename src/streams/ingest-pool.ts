// Worker threads that pack tsr ingests: parsing a batch's JSON, checking its
// payloads and packing their blocks is most of an ingest's CPU, and all of it ran on the
// node's main thread, leaving the second core of a small machine idle. A batch whose
// payloads nobody on the main thread needs (no tags, no live query, no contributor field:
// ingest.ts decides) goes to a worker as the request's bytes, moved (not copied), and comes
// back as the records to write; the writes, their replicas and the answer stay on the main
// thread. The worker decodes the bytes too: handed over as text, a body was a string made
// twice, on this thread and in the worker, each on fresh pages (the body of a batch of 500
// ~1 KiB payloads is a large object to V8), ~3% of a node's CPU at replicas 3 in page faults
// alone (`perf`).
//
// Bounded: at most `threads` workers, each packing one batch at a time; at most
// `queuedBatchesMax` batches and `queuedBytesMax` bytes of body wait for one. A batch that
// finds the queue full is packed on the main thread, as without the pool.

import { Worker } from 'node:worker_threads';
import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import { TributaryError } from '../lib/errors.js';
import type { SchemaSource } from './payload-checks.js';
import type { PackedBatch, TsrBatchBytes } from './tsr-batch.js';
import { packedOf, type PackedWire } from './packed-wire.js';

/** What the pool sends a worker. */
export interface PackTask {
  id: number;
  batch: TsrBatchBytes;
  schema: SchemaSource;
}

/** A worker's answer: the packed batch, or the error packing it threw (a 400 for a bad body). */
export type PackReply = { id: number; wire: PackedWire } | { id: number; error: { status: number; code: string; message: string; details?: Record<string, unknown> } };

export interface IngestPoolOptions {
  threads: number;
  log: Logger;
  queuedBatchesMax?: number;
  queuedBytesMax?: number;
  /** The worker's module (tests give another). */
  workerUrl?: URL;
}

const QUEUED_BATCHES_MAX = 256;
const QUEUED_BYTES_MAX = 256 * 1024 * 1024;
const WORKER_URL = new URL('./ingest-worker.js', import.meta.url);

interface Pending {
  task: PackTask;
  resolve: (packed: PackedBatch) => void;
  reject: (error: Error) => void;
}

interface Thread {
  worker: Worker;
  packing: Pending | undefined;
}

export class IngestPool {
  private readonly threads: Thread[] = [];
  private readonly queue: Pending[] = [];
  private queuedBytes = 0;
  private nextId = 0;
  private closed = false;
  private readonly threadsMax: number;
  private readonly log: Logger;
  private readonly queuedBatchesMax: number;
  private readonly queuedBytesMax: number;
  private readonly workerUrl: URL;

  constructor(options: IngestPoolOptions) {
    this.threadsMax = options.threads;
    this.log = options.log;
    this.queuedBatchesMax = options.queuedBatchesMax ?? QUEUED_BATCHES_MAX;
    this.queuedBytesMax = options.queuedBytesMax ?? QUEUED_BYTES_MAX;
    this.workerUrl = options.workerUrl ?? WORKER_URL;
    assert(this.threadsMax >= 1 && this.queuedBatchesMax >= 1 && this.queuedBytesMax >= 1, `an ingest pool of ${this.threadsMax} threads, ${this.queuedBatchesMax} batches and ${this.queuedBytesMax} bytes queued`);
  }

  /**
   * The batch packed by a worker; undefined when the queue is full or the pool closed (pack
   * it on the main thread). The batch's bytes are moved to the worker: they must be the whole
   * of their buffer, which the caller no longer reads.
   */
  pack(batch: TsrBatchBytes, schema: SchemaSource): Promise<PackedBatch> | undefined {
    const bytes = batch.bytes;
    assert(bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength, () => `a batch of ${bytes.byteLength} bytes in a buffer of ${bytes.buffer.byteLength}: moving it would take the rest`);
    if (this.closed || this.queue.length >= this.queuedBatchesMax || this.queuedBytes + bytes.byteLength > this.queuedBytesMax) return undefined;
    return new Promise((resolve, reject) => {
      this.queue.push({ task: { id: this.nextId++, batch, schema }, resolve, reject });
      this.queuedBytes += bytes.byteLength;
      this.dispatch();
      // The queue's bounds hold after each batch queued (dispatch only takes from it).
      assert(this.queue.length <= this.queuedBatchesMax && this.queuedBytes <= this.queuedBytesMax, `${this.queue.length} batches of ${this.queuedBytes} bytes queued`);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const pending of this.queue.splice(0)) pending.reject(new Error('the node is stopping'));
    this.queuedBytes = 0;
    assert(this.queue.length === 0, `${this.queue.length} batches left queued by close`);
    await Promise.all(this.threads.splice(0).map(async (thread) => {
      thread.packing?.reject(new Error('the node is stopping'));
      await thread.worker.terminate();
    }));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      const thread = this.threads.find((candidate) => candidate.packing === undefined) ?? this.spawn();
      if (thread === undefined) return;
      const pending = this.queue.shift()!;
      this.queuedBytes -= pending.task.batch.bytes.byteLength;
      assert(this.queuedBytes >= 0 && thread.packing === undefined, `${this.queuedBytes} bytes queued, a batch given to a busy worker`);
      thread.packing = pending;
      thread.worker.postMessage(pending.task, [pending.task.batch.bytes.buffer as ArrayBuffer]);
    }
  }

  /** A new worker, while there are fewer than threadsMax. */
  private spawn(): Thread | undefined {
    if (this.threads.length >= this.threadsMax) return undefined;
    assert(!this.closed, 'a worker started by a closed pool');
    const worker = new Worker(this.workerUrl);
    // An idle pool does not keep the process alive; a batch in flight has its request.
    worker.unref();
    const thread: Thread = { worker, packing: undefined };
    worker.on('message', (reply: PackReply) => {
      const pending = thread.packing;
      if (pending === undefined || pending.task.id !== reply.id) return;
      thread.packing = undefined;
      if ('wire' in reply) pending.resolve(packedOf(reply.wire));
      else pending.reject(errorOf(reply.error));
      this.dispatch();
    });
    // A worker that fails (it ran out of memory, a bug threw outside a task) fails its batch
    // only; the next batch starts a new worker.
    const lost = (why: string) => {
      const at = this.threads.indexOf(thread);
      if (at === -1) return;
      this.threads.splice(at, 1);
      assert(this.threads.length < this.threadsMax, () => `${this.threads.length + 1} ingest workers, above ${this.threadsMax}`);
      this.log.error({ why }, 'an ingest worker stopped');
      thread.packing?.reject(new Error(`the ingest worker packing this batch stopped: ${why}`));
      thread.packing = undefined;
      this.dispatch();
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    this.threads.push(thread);
    return thread;
  }
}

/** A client's error as the worker threw it (its status, code and message); anything else a 500 without details. */
function errorOf(error: Extract<PackReply, { error: unknown }>['error']): Error {
  // describe() in the worker gives every error a status: a TributaryError's own, else 500.
  assert(Number.isInteger(error.status) && error.status >= 400, `a worker's error with status ${error.status}`);
  if (error.status < 500) return new TributaryError(error.status, error.code, error.message, { details: error.details });
  return new Error(error.message);
}
