// Transfer benchmark: the rate (MB/s) at which a joining node receives N stored payloads of
// ~1 KiB (200k; `--payloads 1000000` for the figure in docs/benchmarks.md), against a raw gRPC
// bidi stream of the same bytes over loopback and against LevelDB alone writing and reading the
// same records, and against the bare pipeline (those records read, sent over raw gRPC and
// written synced, nothing else: the floor of any transfer on the machine) and the same with
// each chunk signed and checked as a join's are, in the same run; then replicated ingest
// (replicated.ts). Goals: the join at 80% or more of the bare pipeline, the transfer at 50%
// or more of raw and at 80% or more of LevelDB alone, replicated ingest at 40% or more of one
// node. Results go to bench/results/transfer.json and markdown tables to stdout.
//
// The raw baseline runs in two child processes of this same module (`node
// dist/bench/transfer.js raw-sink | raw-source …`), so that, like the two nodes, each end
// has a process of its own, and neither shares this process's heap of prepared payloads.

import type { ChildProcess } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { ClassicLevel } from 'classic-level';
import { CHANNEL_OPTIONS } from '../src/peer/wire.js';
import { addNode, startClusterNode } from '../test/kit/cluster.js';
import { cleanup, client, type NodeProcess, sleep } from '../test/kit/node-process.js';
import { SseClient } from '../test/kit/sse-client.js';
import {
  expectOk,
  log,
  nodeFlags,
  PAYLOAD_BYTES_AVG_RANGE,
  phase,
  payloadBytesOf,
  postBatch,
  prepareBatches,
  type PreparedBatch,
  COLLECTION,
  TENANT,
  round,
  runBatches,
  SEED,
} from './ingest.js';
import {
  BENCH_POLICY,
  CLUSTER_NODES,
  defineBenchStream,
  REPLICATED_RATIO_MIN,
  replicatedTable,
  runReplicatedSet,
  storedOn,
  type ReplicatedSet,
} from './replicated.js';
import type { BenchOptions } from './options.js';
import { firstLine, runRoleIfMain, spawnRole as spawnChildRole, stopChild } from './child-role.js';
import { passBytes, rawBytesMethod } from './raw-grpc.js';
import { cpuSecondsOf, waitQuiet } from './server-process.js';
import { assert } from '../src/lib/assert.js';
import { type DigestAlgorithm, fastestPeerDigest, peerDigest } from '../src/peer/codec.js';
import { SIGNATURE_BYTES, signBytes, verifyBytes, verifyingKeyOf } from '../src/peer/signing.js';
import { machine } from './machine.js';
import { blockRecords } from '../src/streams/block-records.js';
import { DEFAULT_WRITE_BUFFER_BYTES, sequenceKeysOf } from '../src/storage/database.js';
import { blockKey } from '../src/storage/tsr.js';
import { WriteIdGenerator } from '../src/storage/write-ids.js';
import { decodePairs, encodePairs, PROGRESS_EVERY_BYTES, progressKey } from '../src/cluster/transfer-chunks.js';
import { type CpuByClass, cpuByClassSince, THREAD_CLASSES, threadTimesOf } from './thread-cpu.js';

// dist/bench/transfer.js → the package root, so results land in the source tree's bench/results.
const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'transfer.json');
const THIS_FILE = fileURLToPath(import.meta.url);
const TRANSFER_RATIO_MIN = 0.5;
/**
 * The join against the storage line, LevelDB alone writing the same
 * records in the same run (the slower of its write and read sides; the write on any disk
 * seen so far).
 */
const STORAGE_RATIO_MIN = 0.8;
const STREAM = 'transfer';
const SOURCE = 'node-1';
const TARGET = 'node-2';
/** Loading node-1 is not timed: as fast as it goes. */
const LOAD_CONCURRENCY = 4;
/** How often node-1's transfer list is sampled during the join, for the tsr transfer's percentComplete. */
const POLL_INTERVAL_MS = 100;
const JOIN_TIMEOUT_MS = 180_000;
/** Raw runs in a row (a fresh source process and connection each); the median is the figure. */
const RAW_RUNS = 3;
const RAW_METHOD_PATH = '/tributary.bench.Raw/Transfer';
const CHILD_READY_TIMEOUT_MS = 20_000;
/** The bare pipeline's source first makes and stores the records (a minute or two at 1M payloads). */
const PIPELINE_ANSWER_TIMEOUT_MS = 600_000;

// ---------------------------------------------------------------- CPU time of a process

/** CPU seconds between two readings of cpuSecondsOf (server-process.ts), or undefined when either is missing. */
function cpuSpent(before: number | undefined, after: number | undefined): number | undefined {
  return before === undefined || after === undefined ? undefined : round(after - before, 2);
}

// ---------------------------------------------------------------- the node's transfer settings

interface TransferSettings {
  chunkBytes: number;
  windowChunks: number;
}

/** The nodes run with config/default.json's values; the raw stream copies them. */
function transferSettings(): TransferSettings {
  const config = JSON.parse(readFileSync(join(PACKAGE_ROOT, 'config', 'default.json'), 'utf8')) as {
    cluster: { transferChunkBytes: number; transferWindowChunks: number };
  };
  return { chunkBytes: config.cluster.transferChunkBytes, windowChunks: config.cluster.transferWindowChunks };
}

// ---------------------------------------------------------------- raw gRPC, the child processes

/** One bidi method moving raw bytes: no proto, no envelope, no signature, no storage. */
const RAW_SERVICE: grpc.ServiceDefinition = { Transfer: rawBytesMethod(RAW_METHOD_PATH, true) };

/** The receiving end: a 4-byte ack (the chunk's number) per chunk, as soon as it arrives. */
function serveRawSink(): Promise<void> {
  return serveRaw((call) => {
    let received = 0;
    call.on('data', () => {
      call.write(chunkAck(received));
      received += 1;
    });
    call.on('end', () => call.end());
    call.on('error', () => undefined);
  });
}

/** The ack of the chunk of this number: its number, 4 bytes. */
function chunkAck(number: number): Buffer {
  const ack = Buffer.allocUnsafe(4);
  ack.writeUInt32BE(number);
  return ack;
}

interface RawRun {
  bytes: number;
  chunks: number;
  seconds: number;
  megabytesPerSecond: number;
  /** CPU seconds of each end while it ran (the sink's includes its idle wait for the source's start). */
  cpuSeconds: { source: number; sink: number | undefined };
}

/**
 * The sending end: `bytes` in chunks of `chunkBytes`, at most `windowChunks` unacked, as
 * the node's source keeps its window. Timed from the first write to the last ack, on a
 * channel that is already connected (the nodes' is too).
 */
async function runRawSource(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { port: { type: 'string' }, bytes: { type: 'string' }, 'chunk-bytes': { type: 'string' }, window: { type: 'string' } },
  });
  const bytes = Number(values.bytes);
  const chunkBytes = Number(values['chunk-bytes']);
  const windowChunks = Number(values.window);
  const rawClient = new grpc.Client(`127.0.0.1:${values.port}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  await new Promise<void>((resolveReady, reject) =>
    rawClient.waitForReady(Date.now() + CHILD_READY_TIMEOUT_MS, (error) => (error ? reject(error) : resolveReady())),
  );
  // Payload-like bytes; gRPC copies each message into its own frame buffer anyway.
  const template = Buffer.alloc(chunkBytes, '{"at":"2024-01-01T00:00:00.000Z","host":"host-042","message":"ingest partition"} ');
  const chunks = Math.ceil(bytes / chunkBytes);
  const call = rawClient.makeBidiStreamRequest<Buffer, Buffer>(RAW_METHOD_PATH, passBytes, passBytes, new grpc.Metadata(), {
    deadline: Date.now() + 10 * 60_000,
  });
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const seconds = await new Promise<number>((resolveDone, reject) => {
    let sent = 0;
    let acked = 0;
    const pump = (): void => {
      while (sent < chunks && sent - acked < windowChunks) {
        const size = Math.min(chunkBytes, bytes - sent * chunkBytes);
        call.write(template.subarray(0, size));
        sent += 1;
      }
    };
    call.on('data', () => {
      acked += 1;
      if (acked === chunks) resolveDone((performance.now() - started) / 1000);
      else pump();
    });
    call.on('error', reject);
    pump();
  });
  const cpu = process.cpuUsage(cpuBefore);
  call.end();
  rawClient.close();
  process.stdout.write(`${JSON.stringify(sourceRun(bytes, chunks, seconds, cpu))}\n`);
}

/** What a source measured; the parent fills in the sink's CPU. */
function sourceRun(bytes: number, chunks: number, seconds: number, cpu: NodeJS.CpuUsage): RawRun {
  return {
    bytes,
    chunks,
    seconds: round(seconds, 3),
    megabytesPerSecond: round(bytes / 1e6 / seconds, 2),
    cpuSeconds: { source: round((cpu.user + cpu.system) / 1e6, 2), sink: undefined },
  };
}

/** A gRPC server on a free loopback port with the raw method, its port printed as the child's answer. */
async function serveRaw(transfer: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => void, stopped: () => Promise<void> = async () => undefined): Promise<void> {
  const server = new grpc.Server(CHANNEL_OPTIONS);
  server.addService(RAW_SERVICE, { Transfer: transfer });
  const port = await new Promise<number>((resolvePort, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolvePort(bound))),
  );
  process.on('SIGTERM', () => {
    server.forceShutdown();
    void stopped().finally(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ port })}\n`);
}

// ---------------------------------------------------------------- raw gRPC, from the bench

function spawnRole(role: string, args: string[] = []): ChildProcess {
  return spawnChildRole(THIS_FILE, role, args);
}

async function runRaw(bytes: number, settings: TransferSettings): Promise<{ runs: RawRun[]; median: RawRun }> {
  const sink = spawnRole('raw-sink');
  const runs: RawRun[] = [];
  try {
    const { port } = await firstLine<{ port: number }>(sink, 'raw gRPC sink');
    for (let run = 1; run <= RAW_RUNS; run += 1) {
      log(`raw gRPC stream, run ${run} of ${RAW_RUNS}…`);
      const source = spawnRole('raw-source', [
        '--port', String(port),
        '--bytes', String(bytes),
        '--chunk-bytes', String(settings.chunkBytes),
        '--window', String(settings.windowChunks),
      ]);
      try {
        const sinkCpuBefore = cpuSecondsOf([sink.pid]);
        const run = await firstLine<RawRun>(source, 'raw gRPC source');
        runs.push({ ...run, cpuSeconds: { ...run.cpuSeconds, sink: cpuSpent(sinkCpuBefore, cpuSecondsOf([sink.pid])) } });
      } finally {
        await stopChild(source);
      }
    }
  } finally {
    await stopChild(sink);
  }
  const sorted = [...runs].sort((a, b) => a.megabytesPerSecond - b.megabytesPerSecond);
  return { runs, median: sorted[Math.floor(sorted.length / 2)]! };
}

// ---------------------------------------------------------------- LevelDB alone, the storage ceiling

/**
 * What LevelDB alone does with the join's records on this machine, in a child process of
 * its own: the target's side (every record written, in synced batches of one chunk's worth)
 * and the source's side (every record read back in key order with nextv, as the source
 * reads its chunks). No gRPC, no signatures, no node. A transfer that lands records in
 * LevelDB and reads them from LevelDB cannot beat the slower of the two, even with the
 * source and the target running in parallel on the two cores; the ratio of that to raw
 * gRPC is the ceiling for the transfer goal.
 */
interface StorageCeiling {
  bytes: number;
  records: number;
  write: { seconds: number; megabytesPerSecond: number; cpuSeconds: number };
  read: { seconds: number; megabytesPerSecond: number; cpuSeconds: number };
  /**
   * The same writes into a fresh database three times: as above; with the two keys a
   * numbered batch of the node puts in its `local` sublevel (the batch's sequence key, the
   * transfer's progress entry) in every chunk's batch, as the node's target wrote them
   * before; and with them in one chunk's batch per PROGRESS_EVERY_BYTES, as it writes them now
   * (transfer-chunks.ts). Each's CPU counted over its writes and the CEILING_SETTLE_MS after
   * them, in which the compaction they leave runs (not checked to be done by then: what
   * still runs later is not counted, on any side).
   */
  localKeys: { plain: SettledWrite; everyChunk: SettledWrite; asTheNode: SettledWrite };
}

interface SettledWrite {
  seconds: number;
  /** CPU of the writes and of the compaction they leave behind (CEILING_SETTLE_MS after). */
  cpuSeconds: number;
}

/** How long a write's background compaction is given to finish before its CPU is read. */
const CEILING_SETTLE_MS = 3_000;

const CEILING_READ_BATCH_RECORDS = 1_000;
/**
 * What one nextv may hold, in bytes: a batch of CEILING_READ_BATCH_RECORDS of these records
 * (~4 KiB each) whole. classic-level stops a nextv past its `highWaterMarkBytes`, 16 KiB by
 * default: four records a trip to LevelDB's thread, which made a node's transfer reads
 * 10 ms a chunk of 1 MiB (transfer-chunks.ts asks for a chunk's worth now).
 */
const CEILING_READ_BYTES = 8 * 1024 * 1024;

async function runStorageCeiling(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { payloads: { type: 'string' }, batch: { type: 'string' }, 'chunk-bytes': { type: 'string' } } });
  const chunkBytes = Number(values['chunk-bytes']);
  const batches = prepareBatches({ payloads: Number(values.payloads), batch: Number(values.batch) });
  // The records the node stores (its tsr blocks, as ingest packs each batch), in key order
  // as buffers, cut into chunk-sized batches, all before timing.
  const records = storedBlocks(batches)
    .map((operation) => ({ type: 'put' as const, key: Buffer.from(operation.key), value: Buffer.from(operation.value) }))
    .sort((a, b) => a.key.compare(b.key));
  const chunks: Array<typeof records> = [[]];
  let bytes = 0;
  let chunkFill = 0;
  for (const record of records) {
    const size = record.key.length + record.value.length;
    if (chunkFill + size > chunkBytes && chunks.at(-1)!.length > 0) {
      chunks.push([]);
      chunkFill = 0;
    }
    chunks.at(-1)!.push(record);
    chunkFill += size;
    bytes += size;
  }
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-ceiling-'));
  const level = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
  let measured: Omit<StorageCeiling, 'localKeys'>;
  try {
    await level.open();
    const timed = async (work: () => Promise<void>) => {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      await work();
      const seconds = (performance.now() - started) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      return { seconds: round(seconds, 3), megabytesPerSecond: round(bytes / 1e6 / seconds, 2), cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2) };
    };
    const write = await timed(() => writeChunks(level, chunks, undefined));
    let readBytes = 0;
    const read = await timed(async () => {
      const iterator = level.iterator({ highWaterMarkBytes: CEILING_READ_BYTES });
      try {
        for (let entries = await iterator.nextv(CEILING_READ_BATCH_RECORDS); entries.length > 0; entries = await iterator.nextv(CEILING_READ_BATCH_RECORDS)) {
          for (const [key, value] of entries) readBytes += key.length + value.length;
        }
      } finally {
        await iterator.close();
      }
    });
    if (readBytes !== bytes) throw new Error(`read back ${readBytes} bytes of ${bytes} written`);
    measured = { bytes, records: records.length, write, read };
  } finally {
    await level.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const localKeys = { plain: await settledWrite(chunks, undefined), everyChunk: await settledWrite(chunks, 0), asTheNode: await settledWrite(chunks, PROGRESS_EVERY_BYTES) };
  const ceiling: StorageCeiling = { ...measured, localKeys };
  // Answered only once the folder is gone: the parent stops this process on the answer.
  process.stdout.write(`${JSON.stringify(ceiling)}\n`);
}

/**
 * The chunks written into a fresh database, each as one synced chained batch, with the
 * root keys of the node's numbered batches every `localKeysEvery` bytes or without them
 * (writeChunks); the CPU counted includes the compaction the writes leave behind.
 */
async function settledWrite(chunks: ReadonlyArray<ReadonlyArray<{ key: Buffer; value: Buffer }>>, localKeysEvery: number | undefined): Promise<SettledWrite> {
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-ceiling-keys-'));
  const level = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
  try {
    await level.open();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await writeChunks(level, chunks, localKeysEvery);
    const seconds = (performance.now() - started) / 1000;
    await sleep(CEILING_SETTLE_MS);
    const cpu = process.cpuUsage(cpuBefore);
    return { seconds: round(seconds, 3), cpuSeconds: round((cpu.user + cpu.system) / 1e6, 2) };
  } finally {
    await level.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Each chunk as one synced chained batch (LevelDB's fastest write path from Node; the node
 * writes chunks so too), with the two `local` keys of the node's numbered batches in the
 * chunk that brings the bytes since the last ones to `localKeysEvery`, and in the last
 * chunk (0: every chunk; undefined: none), as the node's target stores a transfer's
 * progress (transfer-chunks.ts).
 */
async function writeChunks(level: ClassicLevel<Buffer, Buffer>, chunks: ReadonlyArray<ReadonlyArray<{ key: Buffer; value: Buffer }>>, localKeysEvery: number | undefined): Promise<void> {
  let sequenced = 0;
  let unsavedBytes = 0;
  for (const [index, chunk] of chunks.entries()) {
    const batch = level.batch();
    for (const record of chunk) {
      batch.put(record.key, record.value);
      unsavedBytes += record.key.length + record.value.length;
    }
    if (localKeysEvery !== undefined && (unsavedBytes >= localKeysEvery || index === chunks.length - 1)) {
      unsavedBytes = 0;
      sequenced += 1;
      const sequence = sequenceKeysOf('!local!', sequenced);
      batch.put(Buffer.from(sequence.put), Buffer.alloc(0));
      if (sequence.del !== undefined) batch.del(Buffer.from(sequence.del));
      batch.put(Buffer.from(`!local!${progressKey('e2-join-node-2/tsr/node-1>node-2')}`), Buffer.from(JSON.stringify({ seqAcked: index + 1 })));
    }
    await batch.write({ sync: true });
  }
}

/** The tsr records a node stores of the batches (block-records.ts), keyed as the node keys them. */
function storedBlocks(batches: readonly PreparedBatch[]): Array<{ key: string; value: string }> {
  const writeIds = new WriteIdGenerator('bench');
  return batches.flatMap((batch) => {
    const payloads = batch.payloadJsons.map((json, position) => ({ payload: JSON.parse(json) as Record<string, unknown>, position, timestamp: batch.timestamps[position]! }));
    const { records } = blockRecords(`${TENANT}/${COLLECTION}/${STREAM}`, BENCH_POLICY, payloads, writeIds.blockBase('', undefined));
    return records.map((record) => ({ key: `!tsr!${blockKey(record)}`, value: record.value }));
  });
}

async function measureStorageCeiling(options: BenchOptions, settings: TransferSettings): Promise<StorageCeiling> {
  log('LevelDB alone: the same records written, then read back…');
  const child = spawnRole('storage-ceiling', [
    '--payloads', String(options.payloads),
    '--batch', String(options.batch),
    '--chunk-bytes', String(settings.chunkBytes),
  ]);
  try {
    return await firstLine<StorageCeiling>(child, 'LevelDB ceiling');
  } finally {
    await stopChild(child);
  }
}

// ---------------------------------------------------------------- the bare pipeline, the floor of any transfer

/**
 * The least a transfer between two processes can do with the join's records on this
 * machine: the source reads them from LevelDB with nextv, packs them as the node does
 * (transfer-chunks.ts, encodePairs) into chunks of the node's size and sends them over a
 * raw gRPC bidi stream (the node's window); the sink unpacks each chunk (decodePairs),
 * writes it as one synced chained batch and acks it. No envelope, no digest, no
 * signature, no protobuf, no core, no progress: what a join does beyond this is the node's
 * own cost, and where this falls short of LevelDB alone no transfer design gets there.
 * Both ends start settled (the source's records written and compacted first). The
 * authenticated pipeline adds what every chunk of a join must have and nothing else: its
 * SHA-256 signed with ed25519 by the source and checked by the sink before it is written.
 */
interface PipelineRun extends RawRun {
  records: number;
  /** How long the source's LevelDB took to settle (waitQuiet) after its records were written. */
  quietAfterSeconds: number;
}

/**
 * The authenticated pipeline's chunk: an ed25519 signature of the chunk's digest (the
 * node's peer digest, SHA-256 here) before its bytes, as every chunk of a join is signed
 * by its source and checked by its target (docs/cluster.md, "Trust").
 */
function signedChunk(chunk: Buffer, key: KeyObject, digest: DigestAlgorithm): Buffer {
  const signature = signBytes(key, peerDigest(chunk, digest));
  assert(signature.length === SIGNATURE_BYTES, `an ed25519 signature of ${signature.length} bytes`);
  return Buffer.concat([signature, chunk]);
}

function checkedChunk(signed: Buffer, key: KeyObject, digest: DigestAlgorithm): Buffer {
  const chunk = signed.subarray(SIGNATURE_BYTES);
  if (!verifyBytes(key, peerDigest(chunk, digest), signed.subarray(0, SIGNATURE_BYTES))) throw new Error('a pipeline chunk with a bad signature');
  return chunk;
}

/**
 * The sink: a fresh LevelDB; each chunk one synced chained batch, in order, acked when
 * written. `--public-key`: the authenticated pipeline, each chunk's signature checked first.
 */
async function servePipelineSink(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { 'public-key': { type: 'string' } } });
  const publicKey = values['public-key'] === undefined ? undefined : verifyingKeyOf(values['public-key']);
  const digest = fastestPeerDigest();
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-pipeline-sink-'));
  const level = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
  await level.open();
  const transfer = (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
    let written = Promise.resolve();
    let received = 0;
    call.on('data', (data: Buffer) => {
      const number = received;
      received += 1;
      written = written.then(async () => {
        const chunk = publicKey === undefined ? data : checkedChunk(data, publicKey, digest);
        const batch = level.batch();
        for (const [key, value] of decodePairs(chunk)) batch.put(key, value);
        await batch.write({ sync: true });
        call.write(chunkAck(number));
      });
    });
    call.on('end', () => void written.then(() => call.end()));
    call.on('error', () => undefined);
  };
  await serveRaw(transfer, async () => {
    await level.close();
    rmSync(dir, { recursive: true, force: true });
  });
}

/** The source: the records stored first (not timed), then read, packed and sent with the node's window. */
async function runPipelineSource(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      payloads: { type: 'string' },
      batch: { type: 'string' },
      'chunk-bytes': { type: 'string' },
      window: { type: 'string' },
      'private-key': { type: 'string' },
    },
  });
  const privateKey = values['private-key'] === undefined ? undefined : createPrivateKey({ key: Buffer.from(values['private-key'], 'base64'), format: 'der', type: 'pkcs8' });
  const digest = fastestPeerDigest();
  const chunkBytes = Number(values['chunk-bytes']);
  const windowChunks = Number(values.window);
  const batches = prepareBatches({ payloads: Number(values.payloads), batch: Number(values.batch) });
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-pipeline-source-'));
  const level = new ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
  const rawClient = new grpc.Client(`127.0.0.1:${values.port}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
  let run: PipelineRun;
  try {
    await level.open();
    const stored = storedBlocks(batches);
    for (let at = 0; at < stored.length; at += 1_000) {
      const batch = level.batch();
      for (const { key, value } of stored.slice(at, at + 1_000)) batch.put(Buffer.from(key), Buffer.from(value));
      await batch.write();
    }
    // Settled before it is read, as the join's source is (runJoin).
    const quietAfterSeconds = await waitQuiet([process.pid]);
    await new Promise<void>((resolveReady, reject) =>
      rawClient.waitForReady(Date.now() + CHILD_READY_TIMEOUT_MS, (error) => (error ? reject(error) : resolveReady())),
    );
    const call = rawClient.makeBidiStreamRequest<Buffer, Buffer>(RAW_METHOD_PATH, passBytes, passBytes, new grpc.Metadata(), {
      deadline: Date.now() + 10 * 60_000,
    });
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const iterator = level.iterator({ highWaterMarkBytes: CEILING_READ_BYTES });
    let bytes = 0;
    let records = 0;
    let chunks = 0;
    let acked = 0;
    let ackWaiter: (() => void) | undefined;
    call.on('data', () => {
      acked += 1;
      ackWaiter?.();
    });
    const failed = new Promise<never>((_, reject) => call.on('error', reject));
    const untilAcked = (count: number) =>
      Promise.race([
        failed,
        new Promise<void>((resolveAcked) => {
          const check = () => (acked >= count ? ((ackWaiter = undefined), resolveAcked()) : (ackWaiter = check));
          check();
        }),
      ]);
    try {
      let pending: Array<[Buffer, Buffer]> = [];
      let pendingBytes = 0;
      const send = async () => {
        await untilAcked(chunks - windowChunks + 1);
        const chunk = encodePairs(pending);
        call.write(privateKey === undefined ? chunk : signedChunk(chunk, privateKey, digest));
        chunks += 1;
        pending = [];
        pendingBytes = 0;
      };
      for (let entries = await iterator.nextv(CEILING_READ_BATCH_RECORDS); entries.length > 0; entries = await iterator.nextv(CEILING_READ_BATCH_RECORDS)) {
        for (const entry of entries) {
          const size = entry[0].length + entry[1].length;
          if (pendingBytes + size > chunkBytes && pending.length > 0) await send();
          pending.push(entry);
          pendingBytes += size;
          bytes += size;
          records += 1;
        }
      }
      if (pending.length > 0) await send();
      await untilAcked(chunks);
    } finally {
      await iterator.close();
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    call.end();
    run = { ...sourceRun(bytes, chunks, seconds, cpu), records, quietAfterSeconds };
  } finally {
    rawClient.close();
    await level.close();
    rmSync(dir, { recursive: true, force: true });
  }
  // Answered only once the folder is gone: the parent stops this process on the answer.
  process.stdout.write(`${JSON.stringify(run)}\n`);
}

/** The bare pipeline, or with `authenticated` each chunk signed by the source and checked by the sink. */
async function measurePipeline(options: BenchOptions, settings: TransferSettings, authenticated = false): Promise<PipelineRun> {
  log(`${authenticated ? 'authenticated' : 'bare'} pipeline: LevelDB read → raw gRPC → LevelDB synced write, in two processes…`);
  const keys = authenticated ? generateKeyPairSync('ed25519') : undefined;
  const sink = spawnRole('pipeline-sink', keys === undefined ? [] : ['--public-key', keys.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64')]);
  try {
    const { port } = await firstLine<{ port: number }>(sink, 'pipeline sink');
    const source = spawnRole('pipeline-source', [
      '--port', String(port),
      '--payloads', String(options.payloads),
      '--batch', String(options.batch),
      '--chunk-bytes', String(settings.chunkBytes),
      '--window', String(settings.windowChunks),
      ...(keys === undefined ? [] : ['--private-key', keys.privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')]),
    ]);
    try {
      const sinkCpuBefore = cpuSecondsOf([sink.pid]);
      const run = await firstLine<PipelineRun>(source, 'pipeline source', PIPELINE_ANSWER_TIMEOUT_MS);
      return { ...run, cpuSeconds: { ...run.cpuSeconds, sink: cpuSpent(sinkCpuBefore, cpuSecondsOf([sink.pid])) } };
    } finally {
      await stopChild(source);
    }
  } finally {
    await stopChild(sink);
  }
}

// ---------------------------------------------------------------- the join

interface TransferAction {
  type: string;
  repo: 'KV' | 'ssr' | 'tsr';
  from: string;
  to: string;
  complete: boolean;
  percentComplete: number;
  info: { id: string; bytes: number; payloads: number; partitions: number };
}

/** node-1's tsr transfers to node-2, seen while polling: [ms since the POST, percentComplete, bytes]. */
type ProgressSample = [number, number, number];

interface JoinResult {
  seconds: number;
  /** How long the loaded source took to settle (waitQuiet) before the join started. */
  sourceQuietAfterSeconds: number;
  bytes: number;
  payloadsMoved: number;
  payloadsOnTarget: number;
  megabytesPerSecond: number;
  /** CPU seconds each node used from the POST to Joined (with the polling's few requests). */
  cpuSeconds: { source: number | undefined; target: number | undefined };
  /** The same by thread class (thread-cpu.ts): e.g. the source's LevelDB still compacting what it was loaded with. */
  cpuSecondsByThread: { source: CpuByClass | undefined; target: CpuByClass | undefined };
  /** Every transfer of the join as node-1 lists it at the end. */
  transfers: TransferAction[];
  /** Distinct samples of the tsr transfer's progress; percentComplete should rise. */
  progress: ProgressSample[];
  percentRose: boolean;
}

async function transfersTo(node: NodeProcess, target: string): Promise<TransferAction[]> {
  const response = await client(node).get('/cluster/transfers');
  if (response.status !== 200) throw new Error(`GET /cluster/transfers: HTTP ${response.status}`);
  return (response.json.actions as TransferAction[]).filter((action) => action.to === target);
}

function tsrProgress(actions: readonly TransferAction[]): [number, number] {
  const tsr = actions.filter((action) => action.repo === 'tsr');
  const percent = tsr.length === 0 ? 0 : Math.min(...tsr.map((action) => action.percentComplete));
  return [percent, tsr.reduce((sum, action) => sum + action.info.bytes, 0)];
}

/**
 * Waits for node-2's own event saying it is Joined (its /output/cluster, followed since
 * before the POST), polling node-1's transfer list every POLL_INTERVAL_MS meanwhile. The
 * join's time is the event's arrival, seen at the next poll: not rounded up to it (a 100 ms grid added 50 ms
 * to a join on average), and node-2 answers no request every few ms while it joins (polling
 * its state every 10 ms cost it ~200 requests in a join of 200,000 payloads).
 */
async function followJoin(source: NodeProcess, events: SseClient, started: number): Promise<{ seconds: number; progress: ProgressSample[] }> {
  const progress: ProgressSample[] = [];
  const joinedAt = () => {
    const index = (events.messages as unknown as ClusterEvent[]).findIndex((event) => event.type === 'NODE_STATE_UPDATED' && event.node === TARGET && event.state === 'Joined');
    return index < 0 ? undefined : events.arrivals[index]!;
  };
  for (;;) {
    const joined = joinedAt();
    if (joined !== undefined) return { seconds: (joined - started) / 1000, progress };
    const elapsedMs = performance.now() - started;
    if (elapsedMs > JOIN_TIMEOUT_MS || events.done) {
      throw new Error(`${TARGET} not Joined after ${Math.round(elapsedMs)} ms (its events ${events.done ? 'ended' : 'go on'}); transfers: ${JSON.stringify(await transfersTo(source, TARGET))}`);
    }
    const actions = await transfersTo(source, TARGET);
    const [percent, bytes] = tsrProgress(actions);
    const last = progress.at(-1);
    if (actions.length > 0 && (last === undefined || last[1] !== percent || last[2] !== bytes)) progress.push([Math.round(elapsedMs), percent, bytes]);
    await sleep(POLL_INTERVAL_MS);
  }
}

/** The events of /output/cluster this bench reads. */
type ClusterEvent = { type: 'NODE_STATE_UPDATED'; node: string; state: string } | { type: string; node?: undefined; state?: undefined };

/**
 * node-1 alone holds the payloads of a tsr stream with 2 replicas; node-2 joins, and as
 * the second owner of every partition it receives all of them. Timed from POST
 * /cluster/nodes to node-2 Joined.
 */
async function runJoin(options: BenchOptions, batches: ReturnType<typeof prepareBatches>): Promise<JoinResult> {
  const nodes: NodeProcess[] = [];
  try {
    const source = await startClusterNode(SOURCE, { execArgv: nodeFlags() });
    nodes.push(source);
    const path = await defineBenchStream(client(source), STREAM);
    log(`loading ${options.payloads} payloads into ${SOURCE} (not timed)…`);
    await runBatches(batches.length, LOAD_CONCURRENCY, (index) => postBatch(source.url + path, batches[index]!.body));
    const loaded = await storedOn(source, STREAM);
    if (loaded !== options.payloads) throw new Error(`${SOURCE} holds ${loaded} payloads, ${options.payloads} were posted`);
    // The join starts from a settled store, as the bare pipeline's source does: LevelDB
    // compacting what it was just loaded with is the load's cost (0.5 CPU-s of a join of
    // 200,000, 4 of one of 1,000,000), not the join's.
    const sourceQuietAfterSeconds = await waitQuiet([source.child?.pid]);
    log(`${SOURCE} quiet after ${sourceQuietAfterSeconds} s`);
    const target = await startClusterNode(TARGET, { join: true, execArgv: nodeFlags() });
    nodes.push(target);

    log(`${TARGET} joins; timing the transfer…`);
    const cpuBefore = [cpuSecondsOf([source.child?.pid]), cpuSecondsOf([target.child?.pid])];
    const threadsBefore = threadTimesOf([source.child?.pid, target.child?.pid]);
    const events = await SseClient.connect(`${target.url}/output/cluster`);
    if (events.status !== 200) throw new Error(`GET ${TARGET} /output/cluster: HTTP ${events.status}`);
    const started = performance.now();
    phase('join-start');
    await expectOk(`POST /cluster/nodes (${TARGET})`, addNode(source, target));
    const { seconds, progress } = await followJoin(source, events, started).finally(() => events.close());
    phase('join-end');
    const cpuSeconds = {
      source: cpuSpent(cpuBefore[0], cpuSecondsOf([source.child?.pid])),
      target: cpuSpent(cpuBefore[1], cpuSecondsOf([target.child?.pid])),
    };
    const byThreadOf = (pid: number | undefined) => {
      const before = pid === undefined ? undefined : threadsBefore.get(pid);
      return pid === undefined || before === undefined ? undefined : cpuByClassSince(new Map([[pid, before]]));
    };
    const cpuSecondsByThread = { source: byThreadOf(source.child?.pid), target: byThreadOf(target.child?.pid) };

    const transfers = await transfersTo(source, TARGET);
    const moved = transfers.filter((action) => action.repo === 'ssr' || action.repo === 'tsr');
    const bytes = moved.reduce((sum, action) => sum + action.info.bytes, 0);
    const payloadsMoved = moved.reduce((sum, action) => sum + action.info.payloads, 0);
    const payloadsOnTarget = await storedOn(target, STREAM);
    if (payloadsOnTarget !== payloadsMoved) throw new Error(`${TARGET} holds ${payloadsOnTarget} payloads, the transfers moved ${payloadsMoved}`);
    const percents = progress.map((sample) => sample[1]);
    return {
      seconds: round(seconds, 3),
      sourceQuietAfterSeconds,
      bytes,
      payloadsMoved,
      payloadsOnTarget,
      megabytesPerSecond: round(bytes / 1e6 / seconds, 2),
      cpuSeconds,
      cpuSecondsByThread,
      transfers,
      progress,
      percentRose: percents.every((percent, index) => index === 0 || percent >= percents[index - 1]!) && percents.at(-1)! > percents[0]!,
    };
  } finally {
    // SIGTERM, so that nodes started with --cpu-prof write their profiles.
    await Promise.all(nodes.map((node) => node.kill('SIGTERM')));
    await cleanup();
  }
}

// ---------------------------------------------------------------- results

function transferTable(
  join: JoinResult,
  emptyJoin: JoinResult,
  raw: { runs: RawRun[]; median: RawRun },
  ceiling: StorageCeiling,
  pipelines: { bare: PipelineRun; authenticated: PipelineRun },
  settings: TransferSettings,
): string {
  const kib = settings.chunkBytes / 1024;
  const spread = raw.runs.map((run) => run.megabytesPerSecond.toFixed(1)).join(', ');
  const ceilingRow = (what: string, side: StorageCeiling['write']) =>
    `| LevelDB alone: ${what} | ${ceiling.bytes.toLocaleString('en-US')} | ${ceiling.records.toLocaleString('en-US')} records | ` +
    `${side.seconds.toFixed(2)} | ${side.megabytesPerSecond.toFixed(1)} | ${side.cpuSeconds.toFixed(1)} | ${(side.megabytesPerSecond / raw.median.megabytesPerSecond).toFixed(2)} |`;
  return [
    '| transfer | bytes | payloads | seconds | MB/s | CPU s (source + target) | ratio to raw |',
    '|---|---:|---:|---:|---:|---:|---:|',
    `| raw gRPC bidi stream, ${kib} KiB chunks, window ${settings.windowChunks} (median of ${spread}) | ` +
      `${raw.median.bytes.toLocaleString('en-US')} | – | ${raw.median.seconds.toFixed(2)} | ${raw.median.megabytesPerSecond.toFixed(1)} | ` +
      `${cpuCell(raw.median.cpuSeconds.source, raw.median.cpuSeconds.sink)} | 1.00 |`,
    `| join: ${SOURCE} → ${TARGET}, POST /cluster/nodes → Joined | ${join.bytes.toLocaleString('en-US')} | ` +
      `${join.payloadsMoved.toLocaleString('en-US')} | ${join.seconds.toFixed(2)} | ${join.megabytesPerSecond.toFixed(1)} | ` +
      `${cpuCell(join.cpuSeconds.source, join.cpuSeconds.target)} | ${(join.megabytesPerSecond / raw.median.megabytesPerSecond).toFixed(2)} |`,
    `| the same join of nothing (the stream defined, empty) | – | 0 | ${emptyJoin.seconds.toFixed(2)} | – | ${cpuCell(emptyJoin.cpuSeconds.source, emptyJoin.cpuSeconds.target)} | – |`,
    ceilingRow(`write, synced batches of ${kib} KiB (the target's side)`, ceiling.write),
    ceilingRow(`read, nextv of ${CEILING_READ_BATCH_RECORDS} (the source's side)`, ceiling.read),
    pipelineRow('bare pipeline: LevelDB read → raw gRPC → LevelDB synced write', pipelines.bare),
    pipelineRow('authenticated pipeline: the same, each chunk signed and checked', pipelines.authenticated),
  ].join('\n');

  function pipelineRow(what: string, pipeline: PipelineRun): string {
    return (
      `| ${what} | ${pipeline.bytes.toLocaleString('en-US')} | ` +
      `${pipeline.records.toLocaleString('en-US')} records | ${pipeline.seconds.toFixed(2)} | ${pipeline.megabytesPerSecond.toFixed(1)} | ` +
      `${cpuCell(pipeline.cpuSeconds.source, pipeline.cpuSeconds.sink)} | ${(pipeline.megabytesPerSecond / raw.median.megabytesPerSecond).toFixed(2)} |`
    );
  }
}

function cpuCell(source: number | undefined, target: number | undefined): string {
  return source === undefined || target === undefined ? '–' : `${source.toFixed(1)} + ${target.toFixed(1)}`;
}

/** At most `count` samples, evenly spaced, the last one always: enough to see the rise. */
function thinned<T>(samples: readonly T[], count: number): T[] {
  if (samples.length <= count) return [...samples];
  const step = (samples.length - 1) / (count - 1);
  return Array.from({ length: count }, (_, index) => samples[Math.round(index * step)]!);
}

/**
 * What the empty join says of the join in the same run. `bestOfBare`: the share of the bare
 * pipeline's rate a join would reach if it moved its bytes as fast as the authenticated
 * pipeline (every chunk must be signed and checked) and spent the empty join's time besides.
 * `chunksOfAuthenticated`: the join's rate over its time less the empty join's, against the
 * authenticated pipeline's (1 is the node adding nothing per chunk).
 */
function joinBound(join: JoinResult, empty: JoinResult, bare: PipelineRun, authenticated: PipelineRun) {
  const movingSeconds = join.bytes / (authenticated.megabytesPerSecond * 1e6);
  const bestOfBare = join.bytes / (movingSeconds + empty.seconds) / (bare.megabytesPerSecond * 1e6);
  const chunksSeconds = Math.max(join.seconds - empty.seconds, Number.EPSILON);
  return {
    fixedSeconds: empty.seconds,
    bestOfBare: round(bestOfBare, 2),
    chunksOfAuthenticated: round(join.bytes / chunksSeconds / (authenticated.megabytesPerSecond * 1e6), 2),
  };
}

// ---------------------------------------------------------------- entry point

/** Issue 37's goal: a join at this share of the bare pipeline's rate, at least. */
const JOIN_OF_PIPELINE_MIN = 0.8;

export async function runTransferBench(options: BenchOptions): Promise<void> {
  const settings = transferSettings();
  const batches = prepareBatches(options);
  const payloadBytesAvg = payloadBytesOf(batches) / options.payloads;
  if (payloadBytesAvg < PAYLOAD_BYTES_AVG_RANGE[0] || payloadBytesAvg > PAYLOAD_BYTES_AVG_RANGE[1]) {
    throw new Error(`payloads average ${payloadBytesAvg.toFixed(0)} bytes, outside ${PAYLOAD_BYTES_AVG_RANGE.join('–')}`);
  }
  log(`${options.payloads} payloads (${payloadBytesAvg.toFixed(0)} bytes on average) in ${batches.length} batches`);
  // Other processes on a small machine move these figures a lot; the load says how busy it was.
  const loadAverageBefore = os.loadavg()[0]!;

  const join = await runJoin(options, batches);
  // The same join of a node holding the stream but none of its payloads: what a join costs
  // before and after its chunks (the membership's steps, the final sync), in the same run.
  const emptyJoin = await runJoin({ ...options, payloads: 0 }, []);
  const raw = await runRaw(join.bytes, settings);
  const ceiling = await measureStorageCeiling(options, settings);
  const pipeline = await measurePipeline(options, settings);
  const authenticated = await measurePipeline(options, settings, true);
  const transferRatio = round(join.megabytesPerSecond / raw.median.megabytesPerSecond, 3);
  const joinToPipeline = round(join.megabytesPerSecond / pipeline.megabytesPerSecond, 2);
  const joinToAuthenticated = round(join.megabytesPerSecond / authenticated.megabytesPerSecond, 2);
  const bound = joinBound(join, emptyJoin, pipeline, authenticated);
  const storageLine = Math.min(ceiling.write.megabytesPerSecond, ceiling.read.megabytesPerSecond);
  const ceilingRatio = round(storageLine / raw.median.megabytesPerSecond, 3);
  const storageRatio = round(join.megabytesPerSecond / storageLine, 3);
  const pipelineRatio = round(pipeline.megabytesPerSecond / storageLine, 3);
  const replicated: ReplicatedSet[] = [await runReplicatedSet(batches, options.concurrency)];
  if (options.extraConcurrency > 0 && options.extraConcurrency !== options.concurrency) {
    replicated.push(await runReplicatedSet(batches, options.extraConcurrency));
  }
  const headline = replicated[0]!;

  const report = {
    date: new Date().toISOString(),
    machine: machine(loadAverageBefore),
    params: {
      payloads: options.payloads,
      batch: options.batch,
      payloadBytesAvg: Math.round(payloadBytesAvg),
      seed: SEED,
      policy: BENCH_POLICY,
      repository: 'tsr',
      transferChunkBytes: settings.chunkBytes,
      transferWindowChunks: settings.windowChunks,
      loadConcurrency: LOAD_CONCURRENCY,
      pollIntervalMs: POLL_INTERVAL_MS,
      rawRuns: RAW_RUNS,
      clusterNodes: CLUSTER_NODES,
      ingestConcurrency: replicated.map((set) => set.concurrency),
    },
    transfer: {
      join,
      raw,
      ratioToRaw: transferRatio,
      storageCeiling: { ...ceiling, ratioToRaw: ceilingRatio },
      barePipeline: { ...pipeline, ratioToStorage: pipelineRatio },
      authenticatedPipeline: { ...authenticated, ratioToBare: round(authenticated.megabytesPerSecond / pipeline.megabytesPerSecond, 2), joinToIt: joinToAuthenticated },
      emptyJoin: { seconds: emptyJoin.seconds, cpuSeconds: emptyJoin.cpuSeconds, cpuSecondsByThread: emptyJoin.cpuSecondsByThread },
      joinBound: bound,
    },
    replicated: { headline, ...(replicated.length > 1 ? { concurrent: replicated[1] } : {}) },
    goals: {
      joinToPipeline: { ratioMin: JOIN_OF_PIPELINE_MIN, ratio: joinToPipeline, met: joinToPipeline >= JOIN_OF_PIPELINE_MIN },
      transfer: { ratioMin: TRANSFER_RATIO_MIN, ratio: transferRatio, met: transferRatio >= TRANSFER_RATIO_MIN },
      transferToStorage: { ratioMin: STORAGE_RATIO_MIN, ratio: storageRatio, met: storageRatio >= STORAGE_RATIO_MIN },
      replicated: {
        ratioMin: REPLICATED_RATIO_MIN,
        ratio: headline.threeNodes.ratioToRaw,
        met: headline.threeNodes.ratioToRaw >= REPLICATED_RATIO_MIN,
      },
    },
  };
  mkdirSync(dirname(RESULTS_PATH), { recursive: true });
  writeFileSync(RESULTS_PATH, JSON.stringify(report, null, 2) + '\n');

  const load = `load average ${report.machine.loadAverage1m.before} → ${report.machine.loadAverage1m.after}`;
  const samples = thinned(join.progress, 12).map(([ms, percent]) => `${percent}% @ ${(ms / 1000).toFixed(1)} s`).join(', ');
  console.log(transferTable(join, emptyJoin, raw, ceiling, { bare: pipeline, authenticated }, settings));
  const byThread = (cpu: CpuByClass | undefined) => (cpu === undefined ? '– (no gdb)' : THREAD_CLASSES.map((name) => `${name} ${cpu[name].toFixed(1)}`).join(', '));
  console.log(`\nThe join's CPU by thread, s: ${SOURCE} ${byThread(join.cpuSecondsByThread.source)}; ${TARGET} ${byThread(join.cpuSecondsByThread.target)}.`);
  console.log(
    `The join moved ${joinToPipeline} × the bare pipeline's MB/s (goal ${JOIN_OF_PIPELINE_MIN}), ${joinToAuthenticated} × the authenticated pipeline's ` +
      `(the bare one with each chunk's SHA-256 signed by the source and checked by the sink, as a join's are: ${report.transfer.authenticatedPipeline.ratioToBare} × the bare one).`,
  );
  console.log(
    `A join that moves nothing (the same two nodes, the stream defined and empty) takes ${emptyJoin.seconds.toFixed(2)} s from the POST to Joined: ` +
      `with it, a join moving its chunks at the authenticated pipeline's rate would reach ${bound.bestOfBare} × the bare pipeline. ` +
      `This join's chunks, its time less that, moved at ${bound.chunksOfAuthenticated} × the authenticated pipeline's rate.`,
  );
  const { plain, everyChunk, asTheNode } = ceiling.localKeys;
  const withKeys = (write: SettledWrite) => `${write.cpuSeconds.toFixed(1)} s (${write.seconds.toFixed(2)} s), ${round(write.cpuSeconds / plain.cpuSeconds, 2)} ×`;
  console.log(
    `LevelDB alone, CPU of the target's writes and the compaction they leave: ${plain.cpuSeconds.toFixed(1)} s (${plain.seconds.toFixed(2)} s of writes); ` +
      `with the two local keys of a numbered batch (sequence, progress) in every chunk's batch ${withKeys(everyChunk)}; ` +
      `once per ${PROGRESS_EVERY_BYTES / 1024 / 1024} MiB of chunks, as the node stores a transfer's progress, ${withKeys(asTheNode)}.`,
  );
  console.log(
    `\ntsr percentComplete, ${join.progress.length} distinct samples polling every ${POLL_INTERVAL_MS} ms (all in the JSON): ` +
      `${samples || 'none seen'} (rose: ${join.percentRose}).`,
  );
  console.log(`\n${replicatedTable(replicated)}`);
  console.log(`\nParams: ${JSON.stringify(report.params)}. Machine: ${report.machine.cpus} × ${report.machine.model}, Node ${report.machine.node}, ${load}.`);
  const verdict = (goal: { met: boolean; ratio: number }) => `${goal.met ? 'met' : 'NOT met'} (${goal.ratio})`;
  console.log(`\nGoal transfer ≥ ${TRANSFER_RATIO_MIN} × raw: ${verdict(report.goals.transfer)}; LevelDB alone allows at most ${ceilingRatio} × raw.`);
  console.log(
    `Goal transfer ≥ ${STORAGE_RATIO_MIN} × LevelDB alone (${storageLine.toFixed(1)} MB/s): ${verdict(report.goals.transferToStorage)}; ` +
      `POST → Joined for ${join.payloadsMoved.toLocaleString('en-US')} payloads: ${join.seconds.toFixed(1)} s. ` +
      `The bare pipeline, the floor of any transfer here, reaches ${pipelineRatio} × LevelDB alone.`,
  );
  console.log(`Goal replicated ingest ≥ ${REPLICATED_RATIO_MIN} × one node: ${verdict(report.goals.replicated)}.`);
  log(`results written to ${RESULTS_PATH}`);
}

// ---------------------------------------------------------------- as a child process

runRoleIfMain(THIS_FILE, {
  'raw-sink': serveRawSink,
  'raw-source': runRawSource,
  'storage-ceiling': runStorageCeiling,
  'pipeline-sink': servePipelineSink,
  'pipeline-source': runPipelineSource,
});
