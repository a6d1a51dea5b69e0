// The floor of an ingest on this machine: processes, each doing the least a node of a
// (replicated) store of JSON payloads built from this project's parts (Node, gRPC, LevelDB)
// must do, with none of the node's own work. A batch is posted to one of them (Node's http
// server, no Koa), parsed (JSON.parse, on the main thread or on one of `threads` worker threads
// as the node's ingest workers do; an array, else 400), each payload written back as its JSON
// text and given a partition (FNV-1a of its first `hashBytes` characters modulo `ringSize`; the
// node hashes the first bytes of the payload's canonical JSON the same way, `hash_payload`),
// the batch's payloads grouped into one record per partition (a partition-prefixed key, as the
// node's tsr blocks), and the records written as one synced LevelDB batch (the node's write
// buffer) on this process and, over a raw gRPC unary call, on the others (no proto, no
// envelope, no digest, no signature); the 200 comes once all are durable. No schema, no checks
// beyond the parse, no epoch, no hints, no metrics, no compaction of anything but LevelDB's
// own. What our node does beyond this is its own cost; where this falls short of a goal, no
// design on these parts reaches it here. Two additions show what our node must do beyond it:
// `signed` authenticates every peer write and its answer as ours does, and `blocks` stores
// each partition's payloads as our tsr blocks, packed by our own code. A third, `mac`,
// authenticates them as a design with a key per pair of peers would, in place of `signed`.
//
// Nothing here is used by the product. The processes listen on 127.0.0.1 only, on ports
// they pick, and are stopped by their pids.

import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { createCipheriv, createHash, createPublicKey, diffieHellman, generateKeyPairSync, type KeyObject, randomBytes, sign, timingSafeEqual, verify } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { ClassicLevel } from 'classic-level';
import { decodePairs, encodePairs } from '../src/cluster/transfer-chunks.js';
import { fastestPeerDigest, peerDigest } from '../src/peer/codec.js';
import { verifyingKeyOf } from '../src/peer/signing.js';
import { DEFAULT_WRITE_BUFFER_BYTES } from '../src/storage/database.js';
import { CHANNEL_OPTIONS } from '../src/peer/wire.js';
import { firstLine, runRoleIfMain, spawnRole, stopChild } from './child-role.js';
import { passBytes, rawBytesMethod } from './raw-grpc.js';
import { SCHEMA, type Timing } from './ingest.js';
import { type BodyFile, sendBatches, startSender } from './batch-sender.js';
import { compilePayloadChecks } from '../src/streams/payload-checks.js';
import { bodyTextOf } from '../src/lib/body-text.js';
import { packTsrBatch, type PackedBatch, type PayloadChecks, type TsrBatch } from '../src/streams/tsr-batch.js';
import { blockHeader } from '../src/storage/tsr-block.js';
import { WARMUP_BATCHES_PER_NODE } from './replicated.js';
import { assert } from '../src/lib/assert.js';
import { cpuSecondsOf, folderBytes, temporaryFolder, waitQuiet } from './server-process.js';
import { type CpuByClass, cpuByClassSince, threadTimesOf } from './thread-cpu.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const WRITE_METHOD_PATH = '/tributary.bench.Floor/Write';
/** A posted batch larger than this is refused (the bench's are ~0.5 MB). */
const BODY_BYTES_MAX = 64 * 1024 * 1024;
/** Key prefixes: measured batches, and the warm-up's, which the count leaves out. */
const MEASURED = 'r';
const WARMUP = 'w';
/** The digest of signed writes, chosen as our node chooses it (codec.ts fastestPeerDigest). */
const DIGEST = fastestPeerDigest();

export interface FloorOptions {
  /** 1: a single node; 3: three processes. */
  processes: number;
  /**
   * Authenticate every peer write and its answer as ours does (a digest of the bytes and the
   * recipient's key, SHA-256 or SHA-512/256 as our node picks on this CPU, signed with the
   * sender's ed25519 key and checked by the recipient): the floor of a store that must not
   * trust its network.
   */
  signed?: boolean;
  /**
   * Authenticate them instead with a key per pair of processes (FloorMac: X25519, AES-GCM's
   * tag): what a design whose peers agree such keys once would cost, beside `signed`.
   */
  mac?: boolean;
  /**
   * Store each partition's payloads of a batch as our node does, as a tsr block, made by our
   * own pure code (tsr-batch.ts packTsrBatch: the schema's checks, each payload's partition,
   * the columns), instead of their JSON texts one per line: what our stored format costs at
   * least, with none of the node's other work.
   */
  blocks?: boolean;
  /** With `blocks`, the stream's schema the payloads are checked against (default: the ingest bench's). */
  schema?: unknown;
  /** Copies of each payload (at most `processes`; default all): partition p's on processes p, p+1, … mod `processes`. */
  replicas?: number;
  /**
   * Batches the processes take before the timed ones, in all, round robin, `warmupConcurrency`
   * in flight (default WARMUP_BATCHES_PER_NODE each, one at a time); with `quietAfterWarmup` the
   * timed ones wait until the processes are quiet (LevelDB done compacting the warm-up's).
   */
  warmupBatches?: number;
  warmupConcurrency?: number;
  quietAfterWarmup?: boolean;
  /** Worker threads that parse and make the records (0: the main thread does). */
  threads: number;
  ringSize: number;
  hashBytes: number;
  clients: number;
}

export interface FloorRun {
  timing: Timing;
  cpuSeconds: { servers: number | undefined; clients: number };
  /** The servers' CPU seconds by thread class (thread-cpu.ts); undefined without gdb. */
  cpuByClass: CpuByClass | undefined;
  /** Per process, the measured payloads it holds after the run. */
  storedCopies: Record<string, number>;
  bytesOnDisk: number;
}

interface FloorAddress {
  http: number;
  grpc: number;
  folder: string;
  /** Its ed25519 (signed) or X25519 (mac) public key, raw, base64. */
  publicKey: string;
}

const FLOOR_SERVICE: grpc.ServiceDefinition = { Write: rawBytesMethod(WRITE_METHOD_PATH, false) };

/**
 * Starts `options.processes` floor processes, warms them up, posts every body of `file`
 * round robin with `clients` in flight (from a sender process: batch-sender.ts).
 */
export async function runIngestFloor(file: BodyFile, options: FloorOptions): Promise<FloorRun> {
  const children: ChildProcess[] = [];
  try {
    const replicas = Math.min(options.replicas ?? options.processes, options.processes);
    const args = ['--ring-size', String(options.ringSize), '--hash-bytes', String(options.hashBytes), '--threads', String(options.threads), '--replicas', String(replicas)];
    assert(options.signed !== true || options.mac !== true, 'a floor either signs or MACs its peer writes');
    if (options.signed === true) args.push('--signed');
    if (options.mac === true) args.push('--mac');
    if (options.blocks === true) args.push('--blocks');
    if (options.schema !== undefined) args.push('--schema', JSON.stringify(options.schema));
    for (let index = 0; index < options.processes; index += 1) children.push(spawnRole(THIS_FILE, 'floor-node', ['--name', `floor-${index + 1}`, ...args]));
    const addresses = await Promise.all(children.map((child, index) => firstLine<FloorAddress>(child, `floor process ${index + 1}`)));
    await Promise.all(
      addresses.map(async (address, index) => {
        const peers: FloorPeers = { index, ports: addresses.map((each) => each.grpc), publicKeys: addresses.map((each) => each.publicKey) };
        const response = await fetch(`http://127.0.0.1:${address.http}/peers`, { method: 'POST', body: JSON.stringify(peers) });
        if (response.status !== 200) throw new Error(`floor: POST /peers answered ${response.status} ${await response.text()}`);
      }),
    );
    const urls = (prefix: string) => addresses.map((address) => `http://127.0.0.1:${address.http}/ingest/${prefix}`);
    const warmUp = Math.min(options.warmupBatches ?? WARMUP_BATCHES_PER_NODE * addresses.length, file.count);
    await sendBatches(file, { urls: urls(WARMUP), concurrency: options.warmupConcurrency ?? 1, count: warmUp });
    const pids = children.map((child) => child.pid);
    if (options.quietAfterWarmup === true) await waitQuiet(pids);
    const sender = await startSender(file, { urls: urls(MEASURED), concurrency: options.clients });
    const serversBefore = cpuSecondsOf(pids);
    const threadsBefore = threadTimesOf(pids);
    const { timing, cpuSeconds: clientSeconds } = await sender.run();
    const serversAfter = cpuSecondsOf(pids);
    const cpuByClass = cpuByClassSince(threadsBefore);
    const storedCopies: Record<string, number> = {};
    for (const [index, address] of addresses.entries()) {
      storedCopies[`floor-${index + 1}`] = Number(await (await fetch(`http://127.0.0.1:${address.http}/count`)).text());
    }
    return {
      timing,
      cpuSeconds: {
        servers: serversBefore === undefined || serversAfter === undefined ? undefined : serversAfter - serversBefore,
        clients: clientSeconds,
      },
      cpuByClass,
      storedCopies,
      bytesOnDisk: addresses.reduce((sum, address) => sum + folderBytes(address.folder), 0),
    };
  } finally {
    await Promise.all(children.map((child) => stopChild(child)));
  }
}

// ---------------------------------------------------------------- a floor process

/** FNV-1a of the first `count` UTF-16 units of `text`. */
function partitionOf(text: string, count: number, ringSize: number): number {
  let hash = 0x811c9dc5;
  const end = Math.min(count, text.length);
  for (let index = 0; index < end; index += 1) hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193);
  return (hash >>> 0) % ringSize;
}

/** A record: its partition, key and value. */
type FloorRecord = [number, Uint8Array, Uint8Array];

/** A record's key: partition-prefixed, in time order within it, as the node's tsr block keys. */
function floorKey(prefix: string, partition: number, atMs: number, id: string): Buffer {
  return Buffer.from(`${prefix}/${String(partition).padStart(5, '0')}/${String(atMs).padStart(15, '0')}/${id}`);
}

/** The batch's records: one per partition, its payloads' JSON texts one per line. */
function recordsOf(payloads: unknown[], prefix: string, name: string, sequence: { next: number }, ringSize: number, hashBytes: number): FloorRecord[] {
  const byPartition = new Map<number, { at: number; texts: string[] }>();
  for (const payload of payloads) {
    const text = JSON.stringify(payload);
    const partition = partitionOf(text, hashBytes, ringSize);
    const block = byPartition.get(partition);
    if (block === undefined) {
      const at = Date.parse(String((payload as { at?: unknown }).at));
      byPartition.set(partition, { at: Number.isNaN(at) ? 0 : at, texts: [text] });
    } else block.texts.push(text);
  }
  const records: FloorRecord[] = [];
  for (const [partition, block] of byPartition) {
    sequence.next += 1;
    records.push([partition, floorKey(prefix, partition, block.at, `${name}-${sequence.next}`), Buffer.from(block.texts.join('\n'))]);
  }
  return records;
}

/** Where each process is: this one's index, and every process's gRPC port by index. */
interface FloorPeers {
  index: number;
  ports: number[];
  publicKeys: string[];
}

/**
 * The encoded records each process must write, by process index: partition p's go to
 * processes p, p+1, … mod the count, `replicas` of them. With every process an owner of
 * everything, the batch is encoded once for all.
 */
function recordsByProcess(records: readonly FloorRecord[], processes: number, replicas: number): Uint8Array[] {
  if (replicas >= processes) {
    const all = encodePairs(records.map(([, key, value]) => [key, value]));
    return Array.from({ length: processes }, () => all);
  }
  const pairs = Array.from({ length: processes }, (): Array<[Uint8Array, Uint8Array]> => []);
  for (const [partition, key, value] of records) {
    for (let copy = 0; copy < replicas; copy += 1) pairs[(partition + copy) % processes]!.push([key, value]);
  }
  return pairs.map((each) => encodePairs(each));
}

interface Parsed {
  records?: FloorRecord[];
  /** Why the body was refused (400). */
  refused?: string;
}

/** How a floor process makes its records. */
interface RecordShape {
  name: string;
  ringSize: number;
  hashBytes: number;
  /** Our tsr blocks (FloorOptions.blocks), else the payloads' JSON lines. */
  blocks: boolean;
  /** The schema blocks are checked against (FloorOptions.schema). */
  schema: unknown;
}

/** The records of a batch's text, or why it is refused. */
function parseBatch(text: string, prefix: string, shape: RecordShape, sequence: { next: number }): Parsed {
  if (shape.blocks) return blockRecordsOf(text, prefix, shape, sequence);
  const { name, ringSize, hashBytes } = shape;
  let payloads: unknown;
  try {
    payloads = JSON.parse(text);
  } catch (error) {
    return { refused: `not JSON: ${(error as Error).message}` };
  }
  if (!Array.isArray(payloads)) return { refused: 'not an array of payloads' };
  return { records: recordsOf(payloads, prefix, name, sequence, ringSize, hashBytes) };
}

/** The checks of the shape's schema, compiled as our node compiles them (payload-checks.ts). */
let blockChecks: PayloadChecks | undefined;
/** Payloads one posted batch may hold (the bench's are 500), and how deep it may nest (the node's default). */
const FLOOR_BATCH_PAYLOADS_MAX = 100_000;
const FLOOR_JSON_DEPTH_MAX = 128;

/** The batch as our ingest worker packs it, each block a record under a floor key. */
function blockRecordsOf(text: string, prefix: string, shape: RecordShape, sequence: { next: number }): Parsed {
  blockChecks ??= compilePayloadChecks(shape.schema);
  sequence.next += 1;
  const batch: TsrBatch = {
    text,
    jsonDepthMax: FLOOR_JSON_DEPTH_MAX,
    batchPayloadsMax: FLOOR_BATCH_PAYLOADS_MAX,
    stream: 'floor',
    policy: { replicas: 1, ring_size: shape.ringSize, hash_payload: { bytes: shape.hashBytes } },
    receivedAt: Date.now(),
    base: `${shape.name}-${sequence.next}`,
  };
  let packed: PackedBatch;
  try {
    packed = packTsrBatch(batch, blockChecks);
  } catch (error) {
    return { refused: (error as Error).message };
  }
  if (packed.failures.length > 0) return { refused: `payload ${packed.failures[0]![0]}: ${packed.failures[0]![1]}` };
  return {
    records: packed.records.map((record): FloorRecord => [record.partition, floorKey(prefix, record.partition, record.timestamp, record.writeId), Buffer.from(record.value)]),
  };
}

interface WorkerSetup extends RecordShape {
  role: 'floor-worker';
}

/** Batches parsed on worker threads in turn (as the node's ingest pool does), or on this thread. */
/**
 * Parses on the main thread (`threads` 0) or on worker threads, which are moved the body's
 * bytes and decode them, as our node's ingest workers are (ingest-pool.ts).
 */
function batchParser(threads: number, shape: RecordShape): { parse(body: Buffer, prefix: string): Promise<Parsed>; close(): void } {
  const sequence = { next: 0 };
  if (threads === 0) return { parse: async (body, prefix) => parseBatch(bodyTextOf(body), prefix, shape, sequence), close: () => undefined };
  const waiting = new Map<number, (parsed: Parsed) => void>();
  const workers = Array.from({ length: threads }, (_, index) => {
    const setup: WorkerSetup = { ...shape, role: 'floor-worker', name: `${shape.name}-w${index}` };
    const worker = new Worker(THIS_FILE, { workerData: setup });
    worker.on('message', ({ id, parsed }: { id: number; parsed: Parsed }) => {
      waiting.get(id)?.(parsed);
      waiting.delete(id);
    });
    worker.on('error', (error) => {
      console.error(`floor worker: ${error.stack ?? error.message}`);
      process.exit(1);
    });
    return worker;
  });
  let next = 0;
  return {
    parse: (body, prefix) =>
      new Promise<Parsed>((resolveParsed) => {
        const id = next;
        next += 1;
        waiting.set(id, resolveParsed);
        // A body smaller than Buffer's pool shares its buffer: that one is copied.
        const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength ? body : new Uint8Array(body);
        workers[id % workers.length]!.postMessage({ id, bytes: owned, prefix }, [owned.buffer as ArrayBuffer]);
      }),
    close: () => {
      for (const worker of workers) void worker.terminate();
    },
  };
}

function serveFloorWorker(setup: WorkerSetup): void {
  const sequence = { next: 0 };
  parentPort!.on('message', ({ id, bytes, prefix }: { id: number; bytes: Uint8Array; prefix: string }) => {
    parentPort!.postMessage({ id, parsed: parseBatch(bodyTextOf(bytes), prefix, setup, sequence) });
  });
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolveBody, reject) => {
    const parts: Buffer[] = [];
    let bytes = 0;
    request.on('data', (part: Buffer) => {
      bytes += part.length;
      if (bytes > BODY_BYTES_MAX) request.destroy(new Error(`a body over ${BODY_BYTES_MAX} bytes`));
      else parts.push(part);
    });
    request.on('end', () => resolveBody(Buffer.concat(parts)));
    request.on('error', reject);
  });
}

function wholeNumber(flag: string, text: string | undefined, least: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < least) throw new Error(`${flag} must be a whole number of at least ${least}, got '${text}'`);
  return value;
}

/** This process's LevelDB (the node's write buffer): synced batches of records, and the measured payloads it holds. */
class FloorStore {
  private constructor(
    readonly folder: string,
    private readonly level: ClassicLevel<Buffer, Buffer>,
  ) {}

  static async open(): Promise<FloorStore> {
    const folder = temporaryFolder('floor');
    const level = new ClassicLevel<Buffer, Buffer>(folder, { keyEncoding: 'buffer', valueEncoding: 'buffer', writeBufferSize: DEFAULT_WRITE_BUFFER_BYTES });
    await level.open();
    return new FloorStore(folder, level);
  }

  async write(records: Uint8Array): Promise<void> {
    const batch = this.level.batch();
    for (const [key, value] of decodePairs(records)) batch.put(key, value);
    await batch.write({ sync: true });
  }

  /** The measured payloads: a record's payloads are its lines, or with `blocks` its block's count. */
  async countMeasured(blocks: boolean): Promise<number> {
    let payloads = 0;
    for await (const value of this.level.values({ gte: Buffer.from(`${MEASURED}/`), lt: Buffer.from(`${MEASURED}0`) })) {
      if (blocks) {
        // The header line is ASCII: the rest of the block is not decoded.
        payloads += blockHeader(value.toString('latin1', 0, value.indexOf(10) + 1)).count;
        continue;
      }
      payloads += 1;
      for (let at = value.indexOf(10); at !== -1; at = value.indexOf(10, at + 1)) payloads += 1;
    }
    return payloads;
  }

  async close(): Promise<void> {
    await this.level.close();
    rmSync(this.folder, { recursive: true, force: true });
  }
}

/** How floor processes authenticate their peer writes and the answers (signed, mac). */
interface FloorAuth {
  /** This process's public key, raw: the other processes are told it (POST /peers). */
  readonly publicKey: Buffer;
  know(self: number, publicKeys: readonly string[]): void;
  /** The write to send: a header, then the records. `recordsDigest` is made once for every recipient of the same records. */
  seal(self: number, recipient: number, records: Uint8Array, recordsDigest: () => Buffer): Buffer;
  /** The records of a write meant for `self`, and its answer; undefined when it does not check. */
  open(self: number, sealed: Buffer): { records: Buffer; answer: () => Buffer } | undefined;
  checkAnswer(recipient: number, sealed: Buffer, answer: Buffer): boolean;
}

/**
 * Peer writes signed as ours are (signing.ts): the sender's index, then an ed25519
 * signature over a digest of the recipient's key and the digest of the records, then the
 * records; the answer is the recipient's signature over the request's signature. The digest
 * is the one our node picks on this CPU (codec.ts fastestPeerDigest).
 */
class FloorSigning implements FloorAuth {
  readonly publicKey: Buffer;
  private readonly privateKey: KeyObject;
  /** Every process's public key by index, once known. */
  private keys: KeyObject[] = [];
  private rawKeys: Buffer[] = [];

  constructor() {
    ({ privateKey: this.privateKey, publicKey: this.publicKey } = rawKeyPair('ed25519'));
  }

  know(_self: number, publicKeys: readonly string[]): void {
    this.rawKeys = publicKeys.map((key) => Buffer.from(key, 'base64'));
    this.keys = this.rawKeys.map((raw) => verifyingKeyOf(raw));
  }

  seal(self: number, recipient: number, records: Uint8Array, recordsDigest: () => Buffer): Buffer {
    const signature = sign(null, requestDigest(this.rawKeys[recipient]!, recordsDigest()), this.privateKey);
    return Buffer.concat([Buffer.from([self]), signature, records]);
  }

  open(self: number, sealed: Buffer): { records: Buffer; answer: () => Buffer } | undefined {
    const sender = this.keys[sealed[0]!];
    const signature = sealed.subarray(1, 65);
    const records = sealed.subarray(65);
    if (sender === undefined || !verify(null, requestDigest(this.rawKeys[self]!, peerDigest(records, DIGEST)), sender, signature)) return undefined;
    return { records, answer: () => sign(null, peerDigest(signature, DIGEST), this.privateKey) };
  }

  checkAnswer(recipient: number, sealed: Buffer, answer: Buffer): boolean {
    return verify(null, peerDigest(sealed.subarray(1, 65), DIGEST), this.keys[recipient]!, answer);
  }
}

/** A new key pair, its public key as the raw 32 bytes the other processes are told. */
function rawKeyPair(kind: 'ed25519' | 'x25519'): { privateKey: KeyObject; publicKey: Buffer } {
  const pair = kind === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('x25519');
  return { privateKey: pair.privateKey, publicKey: pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32) };
}

function requestDigest(recipient: Buffer, recordsDigest: Buffer): Buffer {
  return peerDigest(Buffer.concat([recipient, recordsDigest]), DIGEST);
}

/**
 * Peer writes authenticated by a key per pair of processes instead, a design our node does
 * not have: each process makes an X25519 key pair, a pair's key is the SHA-256 of their
 * shared secret, and a write carries AES-128-GCM's tag (GMAC: nothing encrypted) over the
 * recipient's index and the records, after the sender's index and the tag's IV; the answer is
 * the tag over the request's. What authenticating every write would cost with such keys once
 * agreed (the agreement, once per pair, is not timed).
 */
class FloorMac implements FloorAuth {
  readonly publicKey: Buffer;
  private readonly privateKey: KeyObject;
  /** Each pair's key, by the other process's index. */
  private keys: Buffer[] = [];

  constructor() {
    ({ privateKey: this.privateKey, publicKey: this.publicKey } = rawKeyPair('x25519'));
  }

  know(self: number, publicKeys: readonly string[]): void {
    this.keys = publicKeys.map((key, index) => {
      if (index === self) return Buffer.alloc(0);
      const publicKey = createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, Buffer.from(key, 'base64')]), format: 'der', type: 'spki' });
      return createHash('sha256').update(diffieHellman({ privateKey: this.privateKey, publicKey })).digest().subarray(0, 16);
    });
  }

  seal(self: number, recipient: number, records: Uint8Array): Buffer {
    const iv = randomBytes(MAC_IV_BYTES);
    return Buffer.concat([Buffer.from([self]), iv, gmac(this.keys[recipient]!, iv, recipient, records), records]);
  }

  open(self: number, sealed: Buffer): { records: Buffer; answer: () => Buffer } | undefined {
    const from = sealed[0]!;
    const key = this.keys[from];
    const iv = sealed.subarray(1, 1 + MAC_IV_BYTES);
    const tag = sealed.subarray(1 + MAC_IV_BYTES, MAC_HEADER_BYTES);
    const records = sealed.subarray(MAC_HEADER_BYTES);
    if (key === undefined || from === self || !timingSafeEqual(gmac(key, iv, self, records), tag)) return undefined;
    return {
      records,
      answer: () => {
        const answerIv = randomBytes(MAC_IV_BYTES);
        return Buffer.concat([answerIv, gmac(key, answerIv, from, tag)]);
      },
    };
  }

  checkAnswer(recipient: number, sealed: Buffer, answer: Buffer): boolean {
    if (answer.length !== MAC_IV_BYTES + MAC_TAG_BYTES) return false;
    const tag = gmac(this.keys[recipient]!, answer.subarray(0, MAC_IV_BYTES), sealed[0]!, sealed.subarray(1 + MAC_IV_BYTES, MAC_HEADER_BYTES));
    return timingSafeEqual(tag, answer.subarray(MAC_IV_BYTES));
  }
}

/** The DER prefix of a raw X25519 public key (RFC 8410). */
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const MAC_IV_BYTES = 12;
const MAC_TAG_BYTES = 16;
const MAC_HEADER_BYTES = 1 + MAC_IV_BYTES + MAC_TAG_BYTES;

/** AES-128-GCM's tag over `to` (the recipient's index) and the bytes, nothing encrypted. */
function gmac(key: Buffer, iv: Uint8Array, to: number, bytes: Uint8Array): Buffer {
  const cipher = createCipheriv('aes-128-gcm', key, iv);
  cipher.setAAD(Buffer.from([to]));
  cipher.setAAD(bytes);
  cipher.final();
  return cipher.getAuthTag();
}

/** The raw gRPC server that writes what the other floor processes send (checked with `auth`); answers its port. */
async function servePeerWrites(server: grpc.Server, store: FloorStore, auth: { floor: FloorAuth; self: () => number } | undefined): Promise<number> {
  server.addService(FLOOR_SERVICE, {
    Write: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const opened = auth === undefined ? { records: call.request, answer: () => Buffer.alloc(0) } : auth.floor.open(auth.self(), call.request);
      if (opened === undefined) return callback({ code: grpc.status.UNAUTHENTICATED, details: 'does not authenticate' });
      store.write(opened.records).then(
        () => callback(null, opened.answer()),
        (error: Error) => callback(error),
      );
    },
  });
  return new Promise<number>((resolvePort, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolvePort(port))),
  );
}

function writeOnPeer(peer: grpc.Client, records: Uint8Array, check: (answer: Buffer) => boolean = () => true): Promise<void> {
  const bytes = Buffer.from(records.buffer, records.byteOffset, records.byteLength);
  return new Promise<void>((resolveWrite, reject) =>
    peer.makeUnaryRequest(WRITE_METHOD_PATH, passBytes, passBytes, bytes, (error, answer) => {
      if (error) reject(error);
      else if (!check(answer!)) reject(new Error('an answer that does not authenticate'));
      else resolveWrite();
    }),
  );
}

function answer(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'content-type': 'text/plain' });
  response.end(text);
}

async function serveFloorNode(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      name: { type: 'string' },
      'ring-size': { type: 'string' },
      'hash-bytes': { type: 'string' },
      threads: { type: 'string' },
      replicas: { type: 'string' },
      signed: { type: 'boolean' },
      mac: { type: 'boolean' },
      blocks: { type: 'boolean' },
      schema: { type: 'string' },
    },
  });
  const floorAuth: FloorAuth | undefined = values.signed === true ? new FloorSigning() : values.mac === true ? new FloorMac() : undefined;
  const replicas = wholeNumber('--replicas', values.replicas, 1);
  const name = values.name ?? 'floor';
  const ringSize = wholeNumber('--ring-size', values['ring-size'], 1);
  const hashBytes = wholeNumber('--hash-bytes', values['hash-bytes'], 1);
  const blocks = values.blocks === true;
  const schema: unknown = values.schema === undefined ? SCHEMA : JSON.parse(values.schema);
  const parser = batchParser(wholeNumber('--threads', values.threads ?? '0', 0), { name, ringSize, hashBytes, blocks, schema });
  const store = await FloorStore.open();
  const server = new grpc.Server(CHANNEL_OPTIONS);
  // By process index; this process's own entry is undefined.
  let peers: Array<grpc.Client | undefined> = [];
  let self = 0;
  const grpcPort = await servePeerWrites(server, store, floorAuth === undefined ? undefined : { floor: floorAuth, self: () => self });
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readBody(request);
    if (request.method === 'POST' && request.url === '/peers') {
      const posted = JSON.parse(body.toString('utf8')) as FloorPeers;
      self = posted.index;
      floorAuth?.know(self, posted.publicKeys);
      peers = posted.ports.map((port, index) =>
        index === self ? undefined : new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), CHANNEL_OPTIONS),
      );
      return answer(response, 200, 'ok');
    }
    if (request.method === 'GET' && request.url === '/count') return answer(response, 200, String(await store.countMeasured(blocks)));
    const prefix = request.url === `/ingest/${MEASURED}` ? MEASURED : request.url === `/ingest/${WARMUP}` ? WARMUP : undefined;
    if (request.method !== 'POST' || prefix === undefined) return answer(response, 404, 'no such path');
    const { records, refused } = await parser.parse(body, prefix);
    if (records === undefined) return answer(response, 400, refused ?? 'refused');
    const shares = recordsByProcess(records, Math.max(peers.length, 1), replicas);
    const digests = new Map<Uint8Array, Buffer>();
    const digestOf = (share: Uint8Array) => digests.get(share) ?? digests.set(share, peerDigest(share, DIGEST)).get(share)!;
    await Promise.all(
      shares.map((share, index) => {
        if (share.length === 0) return undefined; // no record of this batch is this process's
        const peer = peers[index];
        if (peer === undefined) return store.write(share);
        if (floorAuth === undefined) return writeOnPeer(peer, share);
        const sealed = floorAuth.seal(self, index, share, () => digestOf(share));
        return writeOnPeer(peer, sealed, (answer) => floorAuth.checkAnswer(index, sealed, answer));
      }),
    );
    answer(response, 200, '{}');
  };
  const http = createServer((request, response) => {
    handle(request, response).catch((error: Error) => answer(response, 500, error.message));
  });
  await new Promise<void>((resolveListening) => http.listen(0, '127.0.0.1', resolveListening));

  process.on('SIGTERM', () => {
    http.close();
    parser.close();
    for (const peer of peers) peer?.close();
    server.forceShutdown();
    void store.close().finally(() => process.exit(0));
  });
  process.stdout.write(`${JSON.stringify({ http: (http.address() as AddressInfo).port, grpc: grpcPort, folder: store.folder, publicKey: (floorAuth?.publicKey ?? Buffer.alloc(0)).toString('base64') })}\n`);
}

if (isMainThread) runRoleIfMain(THIS_FILE, { 'floor-node': serveFloorNode });
else if ((workerData as WorkerSetup | undefined)?.role === 'floor-worker') serveFloorWorker(workerData as WorkerSetup);
