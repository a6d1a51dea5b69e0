// Worker threads that pack tsr ingests: parsing a batch's JSON, checking its
// payloads and packing their blocks is most of an ingest's CPU, and all of it ran on the
// node's main thread, leaving the second core of a small machine idle. A batch whose
// payloads nobody on the main thread needs (no tags, no live query, no contributor field:
// ingest.ts decides) goes to a worker as the request's bytes and comes back as the records
// to write; the writes, their replicas and the answer stay on the main thread. The bytes
// move to the worker and back (transferred, not copied): copying half a megabyte of text
// into a message was the main thread's largest single cost of a replicated ingest after
// hashing (~7 % of it).
//
// Bounded: at most `threads` workers, each packing one batch at a time; at most
// `queuedBatchesMax` batches and `queuedBytesMax` bytes of bodies wait for one. A batch
// that finds the queue full is packed on the main thread, as without the pool.

import { Worker } from 'node:worker_threads';
import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import { TributaryError } from '../lib/errors.js';
import type { SchemaSource } from './payload-checks.js';
import type { PackedBatch, TsrBatch } from './tsr-batch.js';

/** A batch as the pool takes it: the body's bytes instead of its text (the worker decodes them). */
export type BodyBatch = Omit<TsrBatch, 'text'> & { readonly body: Uint8Array };

/** What the pool sends a worker. */
export interface PackTask {
  id: number;
  batch: BodyBatch;
  schema: SchemaSource;
}

/**
 * A worker's answer: the packed batch with the body's bytes given back, or the error
 * packing it threw (a 400 for a bad body).
 */
export type PackReply =
  | { id: number; packed: PackedBatch; body: Uint8Array }
  | { id: number; error: { status: number; code: string; message: string; details?: Record<string, unknown> } };

/** A packed batch and its body's bytes, back from the worker. */
export interface Packed {
  packed: PackedBatch;
  body: Uint8Array;
}

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
  resolve: (packed: Packed) => void;
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
   * The batch packed by a worker, with its body's bytes; undefined when the queue is full
   * or the pool closed (pack it on the main thread). Once taken, `batch.body` is the
   * worker's until the answer gives it back: the caller must not read it meanwhile.
   */
  pack(batch: BodyBatch, schema: SchemaSource): Promise<Packed> | undefined {
    const bytes = batch.body.byteLength;
    if (this.closed || this.queue.length >= this.queuedBatchesMax || this.queuedBytes + bytes > this.queuedBytesMax) return undefined;
    return new Promise((resolve, reject) => {
      this.queue.push({ task: { id: this.nextId++, batch: { ...batch, body: movable(batch.body) }, schema }, resolve, reject });
      this.queuedBytes += bytes;
      this.dispatch();
      // The queue's bounds hold after each batch queued (dispatch only takes from it).
      assert(this.queue.length <= this.queuedBatchesMax && this.queuedBytes <= this.queuedBytesMax, 'an ingest pool queue past its bounds');
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
      this.queuedBytes -= pending.task.batch.body.byteLength;
      assert(this.queuedBytes >= 0 && thread.packing === undefined, `${this.queuedBytes} bytes queued, a batch given to a busy worker`);
      thread.packing = pending;
      thread.worker.postMessage(pending.task, [pending.task.batch.body.buffer as ArrayBuffer]);
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
      if ('packed' in reply) pending.resolve({ packed: reply.packed, body: reply.body });
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

/**
 * Bytes that own all of their memory, so that it can move to a worker: a body read in one
 * piece does; a small one may share Node's buffer pool, and is copied.
 */
function movable(bytes: Uint8Array): Uint8Array {
  const owned = bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return owned ? bytes : new Uint8Array(bytes);
}

/** A client's error as the worker threw it (its status, code and message); anything else a 500 without details. */
function errorOf(error: Extract<PackReply, { error: unknown }>['error']): Error {
  // describe() in the worker gives every error a status: a TributaryError's own, else 500.
  assert(Number.isInteger(error.status) && error.status >= 400, `a worker's error with status ${error.status}`);
  if (error.status < 500) return new TributaryError(error.status, error.code, error.message, { details: error.details });
  return new Error(error.message);
}
