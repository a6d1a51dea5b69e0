// The ingest pipeline (docs/cluster.md, "When a write counts"): for each payload of a batch,
// run the tags, check the schema, place it in its partition, and write it to every owner; the
// batch answers with the payloads that failed, by index, and every other payload is durable. A
// tsr batch nothing here needs the payload objects of is parsed, checked and packed by an
// ingest worker thread instead (ingest-pool.ts); its writes are made here alike.

import { assert } from '../lib/assert.js';
import { partitionOfCanonical } from './partitioner.js';
import { blockRecords, type PackedRecords } from './block-records.js';
import { canonicalJson, isPlainObject } from '../lib/json.js';
import { ForbiddenError } from '../lib/errors.js';
import { parseBodyBytes } from '../lib/body-text.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { WriteIdGenerator } from '../storage/write-ids.js';
import { checkBatchSize, checkPayload, payloadsOf } from './ingest-checks.js';
import type { IngestPool } from './ingest-pool.js';
import { type StreamId, SYSTEM_COLLECTION } from './stream-id.js';
import type { DistributionPolicy } from './policy.js';
import type { CompiledStream, StreamRuntime } from './stream-runtime.js';
import type { PackedBatch } from './tsr-batch.js';

/** Messages of the failed payloads, by their index in the request. */
export type IngestFailures = Map<number, string>;

/**
 * Live consumers of accepted payloads (live queries subscribe here). A listener may return a
 * promise: the batch answers once it settles, so what it records at ingest (the contributors'
 * published-to index) is visible when the client gets its 200.
 */
export type PayloadListener = (stream: CompiledStream, payloads: readonly Record<string, unknown>[]) => void | Promise<void>;

/** What one batch did, per stream (metrics): payloads accepted and refused, bytes stored, and whether an ingest worker packed it. */
export type IngestOutcomeListener = (stream: string, outcome: { accepted: number; refused: number; bytes: number; packedApart: boolean }) => void;

export interface IngestLimits {
  batchPayloadsMax: number;
  /** Deepest nesting of a request body's JSON (limits.jsonDepthMax). */
  jsonDepthMax: number;
}

export interface IngestOptions {
  nowMs?: () => number;
  /** Worker threads that pack tsr batches nobody on the main thread needs the payloads of. */
  pool?: IngestPool;
  /**
   * Why this node stores nothing now (its disk is below the floor, or a write failed:
   * docs/storage.md), as the error a batch of a persisted stream is refused with (507)
   * before anything of it is written; undefined when it stores.
   */
  storageRefusal?: () => Error | undefined;
}

interface Subscription {
  listener: PayloadListener;
  wants: (stream: CompiledStream) => boolean;
}

/**
 * Where an ingest's records go: cluster/partition-router.ts's PartitionRouter, which writes
 * each record to the owners of its partition (the cluster sits above streams).
 */
export interface IngestRouter {
  /** The message of each record that could not be written, by position in `records`. */
  write(repository: RepositoryName, policy: DistributionPolicy, records: readonly StoredRecord[]): Promise<Map<number, string>>;
}

export class IngestService {
  private readonly subscriptions = new Set<Subscription>();
  private outcomeListener: IngestOutcomeListener | undefined;
  private readonly nowMs: () => number;
  private readonly pool: IngestPool | undefined;
  private readonly storageRefusal: () => Error | undefined;

  constructor(
    private readonly runtime: StreamRuntime,
    private readonly router: IngestRouter,
    private readonly writeIds: WriteIdGenerator,
    private readonly limits: IngestLimits,
    options: IngestOptions = {},
  ) {
    this.nowMs = options.nowMs ?? Date.now;
    this.pool = options.pool;
    this.storageRefusal = options.storageRefusal ?? (() => undefined);
    assert(limits.batchPayloadsMax >= 1 && limits.jsonDepthMax >= 1, `ingest limits ${limits.batchPayloadsMax} payloads, depth ${limits.jsonDepthMax}`);
  }

  /**
   * `wants`: whether the listener needs a stream's payloads now (a live query reads it, it
   * has contributor fields); a batch no listener wants may be packed off the main thread.
   */
  onPayloads(listener: PayloadListener, wants: (stream: CompiledStream) => boolean = () => true): () => void {
    const subscription = { listener, wants };
    assert(!this.subscriptions.has(subscription), 'a payload listener subscribed twice');
    this.subscriptions.add(subscription);
    return () => this.subscriptions.delete(subscription);
  }

  /** One listener told the outcome of every batch (metrics). */
  onOutcome(listener: IngestOutcomeListener): void {
    assert(this.outcomeListener === undefined, 'a second ingest outcome listener');
    this.outcomeListener = listener;
  }

  /**
   * `idempotencyKey` (the Idempotency-Key header): a retry of the batch with the same key
   * stores every payload under the key it had the first time (write-ids.ts).
   */
  async ingest(id: StreamId, batch: readonly unknown[], idempotencyKey?: string): Promise<IngestFailures> {
    if (id.collection === SYSTEM_COLLECTION) throw new ForbiddenError(`streams of '${SYSTEM_COLLECTION}' are read-only`);
    checkBatchSize(batch.length, this.limits.batchPayloadsMax);
    const stream = await this.runtime.resolve(id);
    this.checkStores(stream);
    const failures: IngestFailures = new Map();
    const accepted: Array<{ index: number; payload: Record<string, unknown> }> = [];
    for (let index = 0; index < batch.length; index += 1) {
      const outcome = await prepare(stream, batch[index]);
      if (typeof outcome === 'string') failures.set(index, outcome);
      else accepted.push({ index, payload: outcome });
    }
    const { written, bytes } = stream.repository === undefined ? { written: accepted, bytes: 0 } : await this.store(stream, accepted, failures, idempotencyKey);
    // Every payload of the batch is answered once: written (the 200's part) or failed, by its index.
    assert(written.length + failures.size === batch.length && written.every((entry) => !failures.has(entry.index)), `a batch of ${batch.length} answered ${written.length} written and ${failures.size} failed`);
    this.outcomeListener?.(stream.key, { accepted: written.length, refused: failures.size, bytes, packedApart: false });
    if (written.length > 0) await this.deliver(stream, written.map((entry) => entry.payload));
    return failures;
  }

  /**
   * The POST's body as bytes: a tsr batch whose payloads no tag and no listener needs is
   * decoded, parsed, checked and packed by a worker thread; any other is decoded and parsed
   * here and ingested as above. Both answer alike, errors and all, in the same order for a
   * bad body.
   */
  async ingestBytes(id: StreamId, body: Uint8Array, idempotencyKey?: string): Promise<IngestFailures> {
    const stream = this.pool === undefined || id.collection === SYSTEM_COLLECTION ? undefined : await this.runtime.resolve(id).catch(() => undefined);
    const packing = stream !== undefined && this.packsApart(stream) ? this.packApart(stream, body, idempotencyKey) : undefined;
    if (stream === undefined || packing === undefined) {
      return this.ingest(id, this.payloadsOfBody(body), idempotencyKey);
    }
    const packed = await packing;
    this.checkStores(stream);
    const failures: IngestFailures = new Map(packed.failures);
    const { failed, bytes } = await this.write(stream, packed, packed.accepted, failures);
    const written = failed.size === 0 ? packed.accepted : packed.accepted.filter((_, place) => !failed.has(place));
    assert(written.every((index) => !failures.has(index)), 'a payload both written and failed');
    this.outcomeListener?.(stream.key, { accepted: written.length, refused: failures.size, bytes, packedApart: true });
    // A listener that started wanting the stream's payloads while the batch was packed
    // (a live query started) gets them, parsed here: rare, and nothing is missed.
    if (written.length > 0 && this.wanted(stream)) {
      const payloads = this.payloadsOfBody(body);
      await this.deliver(stream, written.map((index) => payloads[index] as Record<string, unknown>));
    }
    return failures;
  }

  /** A persisted stream's batch is refused whole while this node stores nothing (507), before any of it is written. */
  private checkStores(stream: CompiledStream): void {
    if (stream.repository === undefined) return;
    const refusal = this.storageRefusal();
    if (refusal !== undefined) throw refusal;
  }

  private packsApart(stream: CompiledStream): boolean {
    assert(this.pool !== undefined, 'a batch packed apart without an ingest pool');
    return stream.repository === 'tsr' && stream.tags === undefined && !this.wanted(stream);
  }

  private wanted(stream: CompiledStream): boolean {
    for (const subscription of this.subscriptions) if (subscription.wants(stream)) return true;
    return false;
  }

  private async deliver(stream: CompiledStream, payloads: readonly Record<string, unknown>[]): Promise<void> {
    assert(payloads.length > 0, `nothing of ${stream.key} to deliver`);
    await Promise.all([...this.subscriptions].map(({ listener }) => listener(stream, payloads)));
  }

  /** The payloads of a POST's body, decoded and parsed on this thread. */
  private payloadsOfBody(body: Uint8Array): readonly unknown[] {
    return payloadsOf(parseBodyBytes(body, this.limits.jsonDepthMax));
  }

  /**
   * The batch packed by the pool; undefined when the pool takes no more now. The worker is
   * handed a copy of the bytes (moved, not copied again): the body stays here for a listener
   * that starts wanting the stream while the batch is packed.
   */
  private packApart(stream: CompiledStream, body: Uint8Array, idempotencyKey: string | undefined): Promise<PackedBatch> | undefined {
    const receivedAt = this.receivedAt(stream, idempotencyKey);
    assert(stream.repository === 'tsr', `a ${stream.repository} batch packed apart`);
    const batch = {
      bytes: new Uint8Array(body),
      jsonDepthMax: this.limits.jsonDepthMax,
      batchPayloadsMax: this.limits.batchPayloadsMax,
      stream: stream.key,
      policy: stream.policy,
      receivedAt,
      base: this.writeIds.blockBase(stream.key, idempotencyKey),
    };
    return this.pool!.pack(batch, stream.schema);
  }

  /** The event time of payloads without one: now, or when this node first saw the batch's idempotency key. */
  private receivedAt(stream: CompiledStream, idempotencyKey: string | undefined): number {
    assert(idempotencyKey === undefined || idempotencyKey.length > 0, `an empty idempotency key for ${stream.key}`);
    return idempotencyKey === undefined ? this.nowMs() : this.writeIds.receiptOf(stream.key, idempotencyKey);
  }

  /** Writes the accepted payloads; returns those written and their bytes, and adds the others to failures. */
  private async store(
    stream: CompiledStream,
    accepted: Array<{ index: number; payload: Record<string, unknown> }>,
    failures: IngestFailures,
    idempotencyKey: string | undefined,
  ): Promise<{ written: Array<{ index: number; payload: Record<string, unknown> }>; bytes: number }> {
    const receivedAt = this.receivedAt(stream, idempotencyKey);
    const packed = stream.repository === 'tsr' ? this.blockRecords(stream, accepted, receivedAt, idempotencyKey) : this.payloadRecords(stream, accepted, receivedAt, idempotencyKey);
    const { failed, bytes } = await this.write(stream, packed, accepted.map((entry) => entry.index), failures);
    assert(failed.size <= accepted.length, `${failed.size} of ${accepted.length} payloads failed`);
    return { written: failed.size === 0 ? accepted : accepted.filter((_, place) => !failed.has(place)), bytes };
  }

  /**
   * Writes the records to every owner; a record that fails fails the payloads it holds
   * (`accepted[member]` is a member's index in the request): they are added to failures,
   * and their places in `accepted` returned. `bytes`: what the written records hold.
   */
  private async write(stream: CompiledStream, { records, members }: PackedRecords, accepted: readonly number[], failures: IngestFailures): Promise<{ failed: Set<number>; bytes: number }> {
    // Every accepted payload is in exactly one record (block-records.ts; one each for ssr).
    let held = 0;
    for (const places of members) held += places.length;
    assert(members.length === records.length && held === accepted.length, `${accepted.length} payloads in ${records.length} records holding ${held}`);
    const writeFailures = await this.router.write(stream.repository!, stream.policy, records);
    const failed = new Set<number>();
    for (const [position, message] of writeFailures) {
      for (const member of members[position]!) {
        failures.set(accepted[member]!, message);
        failed.add(member);
      }
    }
    // Counted only when someone listens: a byte count per record is not free.
    const bytes = this.outcomeListener === undefined ? 0 : records.reduce((sum, record, position) => (writeFailures.has(position) ? sum : sum + Buffer.byteLength(record.value)), 0);
    return { failed, bytes };
  }

  /** ssr: a record per payload, its value the payload's canonical JSON. */
  private payloadRecords(stream: CompiledStream, accepted: ReadonlyArray<{ index: number; payload: Record<string, unknown> }>, receivedAt: number, idempotencyKey: string | undefined): PackedRecords {
    assert(stream.repository === 'ssr', `payload records for a ${stream.repository} stream`);
    const records = accepted.map(({ index, payload }): StoredRecord => {
      // One canonical text serves both the partition hash and storage: measured cheaper
      // (3.0 µs for a 1 KiB payload) than a hashed prefix plus JSON.stringify (3.5 µs).
      const value = canonicalJson(payload);
      const timestamp = stream.timestampOf(payload) ?? receivedAt;
      return {
        stream: stream.key,
        partition: partitionOfCanonical(value, stream.policy),
        timestamp,
        writeId: idempotencyKey === undefined ? this.writeIds.next() : this.writeIds.idempotent(stream.key, idempotencyKey, index, timestamp),
        value,
      };
    });
    return { records, members: records.map((_, position) => [position]) };
  }

  /** tsr: a record per block of the payloads of one partition (block-records.ts). */
  private blockRecords(stream: CompiledStream, accepted: ReadonlyArray<{ index: number; payload: Record<string, unknown> }>, receivedAt: number, idempotencyKey: string | undefined): PackedRecords {
    assert(stream.repository === 'tsr', `block records for a ${stream.repository} stream`);
    const payloads = accepted.map(({ index, payload }) => ({ payload, position: index, timestamp: stream.timestampOf(payload) ?? receivedAt }));
    return blockRecords(stream.key, stream.policy, payloads, this.writeIds.blockBase(stream.key, idempotencyKey));
  }
}

/** Tags first, then the schema; a string is the reason the payload is refused. */
async function prepare(stream: CompiledStream, payload: unknown): Promise<Record<string, unknown> | string> {
  if (stream.tags !== undefined && isPlainObject(payload)) {
    try {
      await stream.tags.apply(payload);
    } catch (error) {
      return (error as Error).message;
    }
  }
  return checkPayload(stream.validate, payload);
}
