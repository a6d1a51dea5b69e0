// Peers ingest benchmark: persisted, acknowledged ingest of the ingest bench's ~1 KiB JSON
// payloads by `--concurrency` clients (4), into Tributary (one node; 3 nodes with replicas 2
// and 3) and into a 3-server NATS JetStream cluster (file storage, R1 and R3), in the same run
// on the same payloads. Each side is fresh for each setup (new processes, new data folders) and
// gets a warm-up first (WARMUP_SHARE of the payloads, then quiet). The whole plan runs
// `--runs` times (3), and the goals take the median of the rounds' ratios: single runs of one
// setup move by ±10% here. Our clients and the floors' are a sender process (batch-sender.ts).
//
// Same work on both sides: our clients post batches of `--batch` payloads (500), one
// request in flight each, so each client has `batch` payloads unacknowledged; JetStream
// 2.9 has no batch publish, so each of its clients publishes single messages with the same
// number, `batch`, unacknowledged at once (an acknowledged `js.publish` per message, the
// `nats` npm client). Acknowledgement latency is per payload: from handing it to the client
// (the request carrying it; its publish) to its acknowledgement.
//
// Answers compared: after each run, what the side stored is counted (ours: every node's
// copies over /_internal; JetStream: every server's replica of the stream over /jsz) and must
// be replicas × acknowledged payloads; a difference fails the bench.
// Goal: ours at replicas 3 ≥ 2 × JetStream R3, ours fsynced at the ack.
// Beside them, the floor (ingest-floor.ts): three bare processes doing only what any
// replicated store of these payloads built on Node, gRPC and LevelDB must do at replicas 3,
// so that the report says how far above JetStream any design on these parts can get here.
// Results go to bench/results/peers-ingest.json and a markdown table to stdout.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect, type JetStreamClient, type NatsConnection, StorageType } from 'nats';
import { startClusterNode, until } from '../test/kit/cluster.js';
import { client, type NodeProcess, sleep } from '../test/kit/node-process.js';
import {
  log,
  medianOf,
  nodeFlags,
  phase,
  PAYLOAD_BYTES_AVG_RANGE,
  payloadBytesOf,
  percentile,
  prepareBatches,
  type PreparedBatch,
  round,
  SEED,
} from './ingest.js';
import { installDebianPackage } from './debian-package.js';
import { metricTotal } from './node-metrics.js';
import { findNatsServer, type NatsBinary, type NatsCluster, natsSyncAlwaysSupported, startNatsCluster } from './nats.js';
import {
  type BenchPolicy,
  CLUSTER_NODES,
  defineBenchStream,
  startCluster,
  stopAll,
  storedOn,
} from './replicated.js';
import type { BenchOptions } from './options.js';
import { machine } from './machine.js';
import { runIngestFloor } from './ingest-floor.js';
import { BodyFile, sendBatches, startSender } from './batch-sender.js';
import { cpuSecondsOf, folderBytes, waitQuiet } from './server-process.js';
import { type CpuByClass, cpuByClassSince, perItemUs, THREAD_CLASSES, threadTimesOf } from './thread-cpu.js';

const PACKAGE_ROOT = resolve(import.meta.dirname, '..', '..');
const RESULTS_PATH = join(PACKAGE_ROOT, 'bench', 'results', 'peers-ingest.json');
/** Goals: each of ours at least this share of the floor of the same shape… */
const OF_FLOOR_MIN = 0.8;
/** …and at replicas 3 at most this many times JetStream R3's server CPU per payload. */
const CPU_VS_JETSTREAM_MAX = 1.25;
const RUN_NAMES = [
  'ours-1',
  'floor-1',
  'jetstream-r1',
  'ours-r2',
  'floor-r2',
  'floor-r2-signed',
  'ours-r3',
  'floor-r3',
  'floor-r3-signed',
  'floor-r3-signed-blocks',
  'floor-r3-mac-blocks',
  'jetstream-r3',
  'jetstream-r3-sync',
] as const;
type RunName = (typeof RUN_NAMES)[number];

/** PEERS_INGEST_ONLY=ours-r3,floor-r3 runs only those (to profile one); unset runs them all. */
function onlyRuns(): Set<RunName> | undefined {
  const text = process.env.PEERS_INGEST_ONLY;
  if (text === undefined || text === '') return undefined;
  const names = text.split(',');
  const unknown = names.filter((name) => !(RUN_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`PEERS_INGEST_ONLY: unknown run ${unknown.join(', ')} (runs: ${RUN_NAMES.join(', ')})`);
  return new Set(names as RunName[]);
}
const OUR_REPLICAS = [2, 3] as const;
const JETSTREAM_REPLICAS = [1, 3] as const;
const RING_SIZE = 128;
const HASH_BYTES = 128;
const STREAM = 'ingest';
const SUBJECT = 'bench.ingest';
/** The floor's row (ingest-floor.ts). */
const FLOOR_SYSTEM = 'floor: bare Node + gRPC + LevelDB';
/** A publish not acknowledged in this long fails the bench (the shared machine can be slow). */
const PUBLISH_TIMEOUT_MS = 60_000;
/** How long followers may take to catch up after the last acknowledgement before the count. */
const REPLICAS_CATCH_UP_MS = 60_000;

export interface IngestRun {
  system: 'Tributary' | 'NATS JetStream' | typeof FLOOR_SYSTEM;
  setup: string;
  replicas: number;
  /** What is on disk when the acknowledgement arrives. */
  durableAtAck: string;
  payloads: number;
  payloadBytes: number;
  seconds: number;
  payloadsPerSecond: number;
  megabytesPerSecond: number;
  ackLatencyMs: { p50: number; p99: number };
  /** Per node or server, the payloads (messages) it holds after the run. */
  storedCopies: Record<string, number>;
  /** Ours: block records acknowledged with a hint for one owner instead of its write (delivered before the copies were counted). */
  hintedAtAck?: number;
  /** Bytes in the data folders after the run (every node or server). */
  bytesOnDisk: number;
  /** CPU seconds the servers (every node or nats-server) and this bench's clients used during the run. */
  cpuSeconds: { servers: number | undefined; clients: number };
  /** Ours and the floor: the servers' CPU per acknowledged payload, µs, by thread class (thread-cpu.ts). */
  cpuPerPayloadUsByThread?: CpuByClass;
  loadAverage1mBefore: number;
  /** Which round of the plan (runPlan): every setup runs once a round, in the same order. */
  round: number;
}

/** A run as its setup makes it; runPlan adds its round. */
type SetupRun = Omit<IngestRun, 'round'>;

interface Measured {
  elapsedMs: number;
  /** One per payload. */
  latenciesMs: ArrayLike<number>;
}

/** Runs `work` and says what CPU it cost the servers (also by thread class) and this process (the clients). */
async function withCpu<T>(
  pids: ReadonlyArray<number | undefined>,
  work: () => Promise<T>,
): Promise<[T, IngestRun['cpuSeconds'], CpuByClass | undefined]> {
  const serversBefore = cpuSecondsOf(pids);
  const threadsBefore = threadTimesOf(pids);
  const clientsBefore = process.cpuUsage();
  const value = await work();
  const clients = process.cpuUsage(clientsBefore);
  const serversAfter = cpuSecondsOf(pids);
  const byClass = cpuByClassSince(threadsBefore);
  const servers = serversBefore === undefined || serversAfter === undefined ? undefined : round(serversAfter - serversBefore, 2);
  return [value, { servers, clients: round((clients.user + clients.system) / 1e6, 2) }, byClass];
}

function summary(measured: Measured, payloads: number, payloadBytes: number) {
  const sorted = Float64Array.from(measured.latenciesMs).sort();
  const seconds = measured.elapsedMs / 1000;
  return {
    payloads,
    payloadBytes,
    seconds: round(seconds, 3),
    payloadsPerSecond: Math.round(payloads / seconds),
    megabytesPerSecond: round(payloadBytes / 1e6 / seconds, 2),
    ackLatencyMs: { p50: round(percentile(sorted, 0.5), 2), p99: round(percentile(sorted, 0.99), 2) },
  };
}

function countOf(batches: readonly PreparedBatch[]): number {
  return batches.reduce((sum, batch) => sum + batch.payloadJsons.length, 0);
}

// ---------------------------------------------------------------- ours

/**
 * The payloads each setup takes first, into a throwaway stream, at the measured concurrency,
 * before it is left until quiet and measured: with a warm-up of 4 batches a node, ~15% of
 * our nodes' CPU in the measured run at replicas 3 was V8 compiling (`perf`), which a node
 * running for hours has long paid and the floors, with far less code, hardly pay. Every
 * payload once doubled LevelDB's compaction instead (twice the data): 30% keeps most of
 * the compiling out and adds a third.
 */
const WARMUP_SHARE = 0.3;

/** A setup's warm-up batches in all, posted round robin over its processes. */
function warmUpBatches(bodies: BodyFile): number {
  return Math.ceil(bodies.count * WARMUP_SHARE);
}

function policyOf(replicas: number): BenchPolicy {
  return { replicas, ring_size: RING_SIZE, hash_payload: { bytes: HASH_BYTES } };
}

/** A batch's latency is that of each payload it carries. */
function perPayload(batches: readonly PreparedBatch[], batchLatenciesMs: readonly number[]): Float64Array {
  const latencies = new Float64Array(countOf(batches));
  let offset = 0;
  batches.forEach((batch, index) => {
    latencies.fill(batchLatenciesMs[index]!, offset, offset + batch.payloadJsons.length);
    offset += batch.payloadJsons.length;
  });
  return latencies;
}

/** The batches, and their bodies in a file for the sender processes that post them (batch-sender.ts). */
interface Workload {
  batches: readonly PreparedBatch[];
  bodies: BodyFile;
}

async function runOurs({ batches, bodies }: Workload, nodeCount: number, replicas: number, clients: number): Promise<SetupRun> {
  const loadAverage1mBefore = round(os.loadavg()[0]!, 2);
  let nodes: NodeProcess[] = [];
  try {
    nodes = nodeCount === 1 ? [await startClusterNode('alone', { execArgv: nodeFlags() })] : await startCluster();
    const warmUpPath = await defineBenchStream(client(nodes[0]!), 'warmup');
    await sendBatches(bodies, { urls: nodes.map((node) => node.url + warmUpPath), concurrency: clients, count: warmUpBatches(bodies) });
    await waitQuiet(nodes.map((node) => node.child?.pid));
    const path = await defineBenchStream(client(nodes[0]!), STREAM, policyOf(replicas));
    // A definition reaches the other nodes after its PUT answers: wait until each has it.
    await until('the stream on every node', async () => {
      const statuses = await Promise.all(nodes.map(async (node) => (await client(node).get(`${path}/policy`)).status));
      return statuses.every((status) => status === 200);
    });
    const setup = nodeCount === 1 ? 'one node' : `${nodeCount} nodes, replicas ${replicas}`;
    log(`peers-ingest: Tributary, ${setup}, ${clients} clients…`);
    phase(`tributary-${nodeCount}-${replicas}-start`);
    const sender = await startSender(bodies, { urls: nodes.map((node) => node.url + path), concurrency: clients });
    // withCpu's `clients` is this process's, idle while the sender posts: the sender's own is the clients'.
    const [{ timing, cpuSeconds: clientSeconds }, measured, byClass] = await withCpu(nodes.map((node) => node.child?.pid), () => sender.run());
    const cpuSeconds = { servers: measured.servers, clients: round(clientSeconds, 2) };
    phase(`tributary-${nodeCount}-${replicas}-end`);
    // A replica write unanswered within cluster.writeDeadlineMs was acknowledged with a
    // durable hint for that owner instead (docs/cluster.md, "When a write counts"): counted here, and
    // the copies counted once the hints reached their owners.
    const hintedAtAck = await hintedRecords(nodes);
    if (hintedAtAck > 0) await until('every hint delivered', async () => (await hintedRecords(nodes)) === 0, HINTS_DELIVERED_TIMEOUT_MS);
    const storedCopies: Record<string, number> = {};
    for (const node of nodes) storedCopies[node.name] = await storedOn(node, STREAM);
    const copies = Math.min(replicas, nodeCount);
    expectCopies(`Tributary ${setup}`, storedCopies, copies * countOf(batches));
    const bytesOnDisk = nodes.reduce((sum, node) => sum + folderBytes(node.dataDir), 0);
    return {
      system: 'Tributary',
      setup,
      replicas: copies,
      durableAtAck: copies === 1 ? 'fsynced on its 1 node' : hintedAtAck === 0 ? `fsynced on all ${copies} owners` : `fsynced on all ${copies} owners, or on ${copies - 1} and hinted for the other (${hintedAtAck} block records hinted)`,
      hintedAtAck,
      ...summary({ elapsedMs: timing.elapsedMs, latenciesMs: perPayload(batches, timing.latenciesMs) }, countOf(batches), payloadBytesOf(batches)),
      storedCopies,
      bytesOnDisk,
      cpuSeconds,
      cpuPerPayloadUsByThread: perItemUs(byClass, countOf(batches), 1),
      loadAverage1mBefore,
    };
  } finally {
    await stopAll(nodes);
  }
}

const HINTS_DELIVERED_TIMEOUT_MS = 120_000;

/** The floor of the same shape as one of our runs (ingest-floor.ts), with what it stores checked as ours is. */
async function runFloor({ batches, bodies }: Workload, processes: number, replicas: number, clients: number, auth?: 'signed' | 'mac', blocks = false): Promise<SetupRun> {
  const loadAverage1mBefore = round(os.loadavg()[0]!, 2);
  const setup = (processes === 1 ? 'one process' : `${processes} processes, replicas ${replicas}`) + (auth === 'signed' ? ', signed' : auth === 'mac' ? ', a MAC per pair' : '') + (blocks ? ', our tsr blocks' : '');
  log(`peers-ingest: the floor, ${setup}, ${clients} clients…`);
  // Parsed on each process's main thread: with three processes on two cores a hop to a
  // worker thread only adds work (ours measured the same with and without its workers).
  const warmUp = { warmupBatches: warmUpBatches(bodies), warmupConcurrency: clients, quietAfterWarmup: true };
  const run = await runIngestFloor(bodies, { ...warmUp, processes, replicas, signed: auth === 'signed', mac: auth === 'mac', blocks, threads: 0, ringSize: RING_SIZE, hashBytes: HASH_BYTES, clients });
  expectCopies(`the floor, ${setup}`, run.storedCopies, replicas * countOf(batches));
  return {
    system: FLOOR_SYSTEM,
    setup,
    replicas,
    durableAtAck: `fsynced on all ${replicas}`,
    ...summary({ elapsedMs: run.timing.elapsedMs, latenciesMs: perPayload(batches, run.timing.latenciesMs) }, countOf(batches), payloadBytesOf(batches)),
    storedCopies: run.storedCopies,
    bytesOnDisk: run.bytesOnDisk,
    cpuSeconds: { servers: run.cpuSeconds.servers === undefined ? undefined : round(run.cpuSeconds.servers, 2), clients: round(run.cpuSeconds.clients, 2) },
    cpuPerPayloadUsByThread: perItemUs(run.cpuByClass, countOf(batches), 1),
    loadAverage1mBefore,
  };
}

/** Hinted records the nodes hold (tributary_hint_records, summed over targets and nodes). */
function hintedRecords(nodes: readonly NodeProcess[]): Promise<number> {
  return metricTotal(nodes, 'tributary_hint_records');
}

function expectCopies(what: string, storedCopies: Record<string, number>, expected: number): void {
  const copies = Object.values(storedCopies).reduce((sum, count) => sum + count, 0);
  if (copies !== expected) throw new Error(`${what} holds ${copies} copies, ${expected} were acknowledged: ${JSON.stringify(storedCopies)}`);
}

// ---------------------------------------------------------------- JetStream

/**
 * What JetStream has on disk at the ack, from the v2.9.10 source: a stream's file store
 * write(2)s each message before the ack (AsyncFlush false) and fsyncs every 2 minutes
 * (stream.go), a replicated stream's raft log every 5 minutes (jetstream_cluster.go); an R3
 * ack waits for a quorum of 2 (JETSTREAM_DURABILITY explains it in the report).
 */
function jetStreamDurability(replicas: number, syncAlways: boolean): string {
  const where = replicas === 1 ? 'on its 1 server' : `on ${Math.floor(replicas / 2) + 1} of ${replicas} servers`;
  return syncAlways ? `fsynced ${where}` : `written ${where}, not fsynced`;
}

const JETSTREAM_DURABILITY =
  'at the ack a message is written (write(2), in the page cache) to the stream files of its server (R1) or of a quorum of ' +
  'its servers (R3: the leader and one follower, through the raft log); nats-server 2.9 fsyncs stream files every 2 minutes ' +
  'and the raft log every 5 minutes';

async function connectClients(cluster: NatsCluster, clients: number): Promise<NatsConnection[]> {
  // Client i connects to server i mod 3, as our clients' batches go to the nodes in turn.
  return Promise.all(
    Array.from({ length: clients }, (_, index) =>
      connect({ servers: cluster.urls[index % cluster.urls.length]!, name: `bench-${index}`, noRandomize: true, maxReconnectAttempts: 0 }),
    ),
  );
}

/**
 * Publishes every message once: `clients` publishers take the next message in turn, each
 * with at most `window` unacknowledged. Every acknowledgement must name the stream and not
 * be a duplicate; a failed or missing one fails the bench.
 */
async function publishAll(jetStreams: readonly JetStreamClient[], subject: string, stream: string, messages: readonly Uint8Array[], window: number): Promise<Measured> {
  const latenciesMs = new Float64Array(messages.length);
  let next = 0;
  const publisher = (js: JetStreamClient) =>
    new Promise<void>((resolveAll, reject) => {
      let inFlight = 0;
      let failed = false;
      const pump = () => {
        while (!failed && inFlight < window && next < messages.length) {
          const index = next;
          next += 1;
          inFlight += 1;
          const started = performance.now();
          js.publish(subject, messages[index]!, { timeout: PUBLISH_TIMEOUT_MS }).then(
            (ack) => {
              latenciesMs[index] = performance.now() - started;
              inFlight -= 1;
              if (ack.stream !== stream || ack.duplicate) {
                failed = true;
                reject(new Error(`publish ${index}: unexpected acknowledgement ${JSON.stringify(ack)}`));
                return;
              }
              pump();
            },
            (error: unknown) => {
              failed = true;
              reject(new Error(`publish ${index} not acknowledged: ${(error as Error).message}`));
            },
          );
        }
        if (!failed && inFlight === 0 && next >= messages.length) resolveAll();
      };
      pump();
    });
  const started = performance.now();
  await Promise.all(jetStreams.map(publisher));
  return { elapsedMs: performance.now() - started, latenciesMs };
}

async function addStream(connection: NatsConnection, name: string, subject: string, replicas: number): Promise<void> {
  const manager = await connection.jetstreamManager();
  await manager.streams.add({ name, subjects: [subject], storage: StorageType.File, num_replicas: replicas });
  await until(`JetStream stream ${name}: a leader and ${replicas - 1} current replicas`, async () => {
    const cluster = (await manager.streams.info(name)).cluster;
    const replicasCurrent = (cluster?.replicas ?? []).filter((replica) => replica.current).length;
    return typeof cluster?.leader === 'string' && cluster.leader !== '' && replicasCurrent >= replicas - 1;
  });
}

async function runJetStream(binary: NatsBinary, batches: readonly PreparedBatch[], replicas: number, clients: number, window: number, syncAlways: boolean): Promise<SetupRun> {
  const loadAverage1mBefore = round(os.loadavg()[0]!, 2);
  // Encoded before any timing, as our request bodies are.
  const messages = batches.flatMap((batch) => batch.payloadJsons.map((json) => Buffer.from(json, 'utf8')));
  const cluster = await startNatsCluster(binary, CLUSTER_NODES, { syncAlways });
  let connections: NatsConnection[] = [];
  try {
    connections = await connectClients(cluster, clients);
    const jetStreams = connections.map((connection) => connection.jetstream());
    await addStream(connections[0]!, 'warmup', 'bench.warmup', replicas);
    await publishAll(jetStreams, 'bench.warmup', 'warmup', messages.slice(0, Math.ceil(messages.length * WARMUP_SHARE)), window);
    await waitQuiet(cluster.pids);
    await addStream(connections[0]!, STREAM, SUBJECT, replicas);
    const setup = `${CLUSTER_NODES} servers, R${replicas}${syncAlways ? ', sync_interval: always' : ''}`;
    log(`peers-ingest: JetStream, ${setup}, ${clients} clients…`);
    const [measured, cpuSeconds] = await withCpu(cluster.pids, () => publishAll(jetStreams, SUBJECT, STREAM, messages, window));
    const manager = await connections[0]!.jetstreamManager();
    const leaderCount = (await manager.streams.info(STREAM)).state.messages;
    if (leaderCount !== messages.length) throw new Error(`JetStream ${setup}: the stream holds ${leaderCount} messages, ${messages.length} were acknowledged`);
    // Followers may trail the quorum: wait (bounded) until every replica holds them all.
    const storedCopies = await untilCaughtUp(cluster, replicas * messages.length);
    expectCopies(`JetStream ${setup}`, storedCopies, replicas * messages.length);
    return {
      system: 'NATS JetStream',
      setup,
      replicas,
      durableAtAck: jetStreamDurability(replicas, syncAlways),
      ...summary(measured, messages.length, payloadBytesOf(batches)),
      storedCopies,
      bytesOnDisk: cluster.bytesOnDisk(),
      cpuSeconds,
      loadAverage1mBefore,
    };
  } finally {
    await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
    await cluster.stop();
  }
}

async function untilCaughtUp(cluster: NatsCluster, copies: number): Promise<Record<string, number>> {
  const deadline = Date.now() + REPLICAS_CATCH_UP_MS;
  for (;;) {
    const counts = await cluster.storedPerServer(STREAM);
    const total = Object.values(counts).reduce((sum, count) => sum + count, 0);
    if (total >= copies || Date.now() > deadline) return counts;
    await sleep(200);
  }
}

// ---------------------------------------------------------------- report

function markdown(report: { runs: IngestRun[]; goal: any; params: any; machine: ReturnType<typeof machine>; jetStream: any }): string {
  const n = (value: number) => value.toLocaleString('en-US');
  const lines = [
    '| round | system | setup | at the ack | payloads/s | MB/s | p50 ack ms | p99 ack ms | stored (all copies) | on disk after, MB | server CPU s | client CPU s |',
    '|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...report.runs.map(
      (run) =>
        `| ${run.round} | ${run.system} | ${run.setup} | ${run.durableAtAck} | ${n(run.payloadsPerSecond)} | ${run.megabytesPerSecond.toFixed(1)} | ` +
        `${run.ackLatencyMs.p50.toFixed(1)} | ${run.ackLatencyMs.p99.toFixed(1)} | ${n(Object.values(run.storedCopies).reduce((a, b) => a + b, 0))} | ` +
        `${Math.round(run.bytesOnDisk / 1e6)} | ${run.cpuSeconds.servers ?? '–'} | ${run.cpuSeconds.clients} |`,
    ),
    '',
    'Ours: the 200 of a batch comes after it is fsynced on every owner of each payload.' +
      (report.jetStream.ran ? ` JetStream (${report.jetStream.version}): ${report.jetStream.durability}; ${report.jetStream.syncEveryWrite}.` : ''),
    `Params: ${JSON.stringify(report.params)}. Machine: ${report.machine.cpus} × ${report.machine.model}, Node ${report.machine.node}, ` +
      `load average ${report.machine.loadAverage1m.before} → ${report.machine.loadAverage1m.after}.`,
  ];
  lines.push(
    '',
    'The floor: bare processes of the same shape (Node http, JSON.parse, one record per partition per batch, one synced LevelDB batch ' +
      'on each owner over raw gRPC; no Koa, schema, checks, protobuf, digest, signature, epoch or hints): a ceiling for any design on ' +
      'Node, gRPC and LevelDB on this machine. Signed: the same, with each peer write and its answer signed and checked as ours are.',
  );
  const byThread = report.runs.filter((run) => run.cpuPerPayloadUsByThread !== undefined);
  if (byThread.length > 0) {
    lines.push(
      '',
      'Server CPU per acknowledged payload, µs, by thread class (all processes of a run; thread-cpu.ts):',
      '',
      `| round | system | setup | ${THREAD_CLASSES.join(' | ')} | all |`,
      `|---:|---|---|${THREAD_CLASSES.map(() => '---:|').join('')}---:|`,
      ...byThread.map((run) => {
        const cells = THREAD_CLASSES.map((name) => run.cpuPerPayloadUsByThread![name]);
        return `| ${run.round} | ${run.system} | ${run.setup} | ${cells.join(' | ')} | ${round(cells.reduce((a, b) => a + b, 0), 1)} |`;
      }),
    );
  }
  const goal = report.goal;
  // A median, then each round's value when there were several.
  const cell = (pick: (ratios: any) => number | undefined, median: number | undefined) =>
    median === undefined ? '–' : goal.rounds.length > 1 ? `${median} (${goal.rounds.map((ratios: any) => pick(ratios) ?? '–').join(', ')})` : String(median);
  lines.push(
    '',
    `Goals (${goal.rounds.length > 1 ? `medians of ${goal.rounds.length} rounds, each round's in brackets` : 'one round'}): each of ours ≥ ${goal.ofFloorMin} of the floor of its shape: ` +
      `one node ${cell((r) => r.ofFloor.oneNode, goal.ofFloor.oneNode)}, replicas 2 ${cell((r) => r.ofFloor.replicas2, goal.ofFloor.replicas2)}, ` +
      `replicas 3 ${cell((r) => r.ofFloor.replicas3, goal.ofFloor.replicas3)}; server CPU at replicas 3 ≤ ${goal.cpuVsJetStreamR3Max}× JetStream R3's: ` +
      `${cell((r) => r.cpuVsJetStreamR3, goal.cpuVsJetStreamR3)}×. ` +
      `${goal.met === undefined ? 'Not all measured.' : goal.met ? 'Met.' : '**NOT met**.'}`,
  );
  if (goal.ofSignedFloor.replicas3 !== undefined || goal.ofSignedFloor.replicas2 !== undefined) {
    lines.push(
      `Against the floor that signs and checks every peer write as ours must (SHA-256 or SHA-512/256, as our node picks on this CPU, and ed25519): ` +
        `replicas 2 ${cell((r) => r.ofSignedFloor.replicas2, goal.ofSignedFloor.replicas2)}, replicas 3 ${cell((r) => r.ofSignedFloor.replicas3, goal.ofSignedFloor.replicas3)}.`,
    );
  }
  if (goal.signedBlocks.ofFloor !== undefined) {
    lines.push(
      `The signed floor storing our tsr blocks (packed by our code: schema checks, partitions, columns) reaches ${cell((r) => r.signedBlocks.ofFloor, goal.signedBlocks.ofFloor)} of the bare floor at replicas 3: ` +
        `a design that authenticates its peer writes and packs this format with this code gets no higher here. Ours is ${cell((r) => r.signedBlocks.oursOfIt, goal.signedBlocks.oursOfIt)} of it.`,
    );
  }
  if (goal.macBlocks.ofFloor !== undefined) {
    lines.push(
      `The same floor with a key per pair of processes (X25519, AES-GCM's tag over each write and answer) in place of signatures reaches ` +
        `${cell((r) => r.macBlocks.ofFloor, goal.macBlocks.ofFloor)} of the bare floor: where a design whose nodes agreed such keys would stand.`,
    );
  }
  if (goal.ratio !== undefined) lines.push(`Tributary at replicas 3 is ${cell((r) => r.ratio, goal.ratio)}× JetStream R3; the floor reaches ${cell((r) => r.floorRatio, goal.floorRatio)}×.`);
  return lines.join('\n');
}

// ---------------------------------------------------------------- entry point

/** Every run of the plan that `only` keeps and the machine allows, in order. */
async function runPlan(workload: Workload, clients: number, window: number, binary: NatsBinary | undefined, syncAlways: boolean, rounds: number): Promise<IngestRun[]> {
  // Ours, the floor of the same shape and theirs alternate, so that a change of the machine's load hits all.
  const only = onlyRuns();
  const { batches } = workload;
  const plan: Array<[RunName, () => Promise<SetupRun>]> = [
    ['ours-1', () => runOurs(workload, 1, 1, clients)],
    ['floor-1', () => runFloor(workload, 1, 1, clients)],
    ['jetstream-r1', () => runJetStream(binary!, batches, JETSTREAM_REPLICAS[0], clients, window, false)],
    ...OUR_REPLICAS.flatMap((replicas): Array<[RunName, () => Promise<SetupRun>]> => [
      [`ours-r${replicas}`, () => runOurs(workload, CLUSTER_NODES, replicas, clients)],
      [`floor-r${replicas}`, () => runFloor(workload, CLUSTER_NODES, replicas, clients)],
      [`floor-r${replicas}-signed`, () => runFloor(workload, CLUSTER_NODES, replicas, clients, 'signed')],
    ]),
    // What our stored format and authentication cost together, at least: the signed floor storing our tsr blocks.
    ['floor-r3-signed-blocks', () => runFloor(workload, CLUSTER_NODES, 3, clients, 'signed', true)],
    // The same with a key per pair of nodes (a MAC) instead of signatures: where a design that agreed such keys would stand.
    ['floor-r3-mac-blocks', () => runFloor(workload, CLUSTER_NODES, 3, clients, 'mac', true)],
    ['jetstream-r3', () => runJetStream(binary!, batches, JETSTREAM_REPLICAS[1], clients, window, false)],
    ['jetstream-r3-sync', () => runJetStream(binary!, batches, JETSTREAM_REPLICAS[1], clients, window, true)],
  ];
  // Single runs of one setup move by ±10% on a shared machine, more than some of the gaps
  // measured: the whole plan runs `rounds` times, and the goals take the median of each
  // round's ratios (runs of one round ran minutes apart, not hours).
  const runs: IngestRun[] = [];
  for (let round = 1; round <= rounds; round += 1) {
    for (const [name, run] of plan) {
      if (only !== undefined && !only.has(name)) continue;
      if (name.startsWith('jetstream') && (binary === undefined || (name.endsWith('sync') && !syncAlways))) continue;
      runs.push({ ...(await run()), round });
    }
  }
  return runs;
}

/**
 * The goals, from the runs made: each ratio is the median of the rounds' own (runs of one
 * round against each other), undefined when its runs were not made, and so is `met` then.
 * `rounds` has each round's.
 */
function goalOf(runs: readonly IngestRun[]) {
  const rounds = [...new Set(runs.map((run) => run.round))].sort((a, b) => a - b).map((round) => ratiosOf(runs.filter((run) => run.round === round)));
  const median = (pick: (ratios: Ratios) => number | undefined) => medianOf(rounds.map(pick));
  const ofFloor = { oneNode: median((r) => r.ofFloor.oneNode), replicas2: median((r) => r.ofFloor.replicas2), replicas3: median((r) => r.ofFloor.replicas3) };
  const ofSignedFloor = { replicas2: median((r) => r.ofSignedFloor.replicas2), replicas3: median((r) => r.ofSignedFloor.replicas3) };
  const signedBlocks = { ofFloor: median((r) => r.signedBlocks.ofFloor), oursOfIt: median((r) => r.signedBlocks.oursOfIt) };
  const macBlocks = { ofFloor: median((r) => r.macBlocks.ofFloor) };
  const cpuVsJetStreamR3 = median((r) => r.cpuVsJetStreamR3);
  const measured = Object.values(ofFloor).every((value) => value !== undefined) && cpuVsJetStreamR3 !== undefined;
  const met = measured ? Object.values(ofFloor).every((value) => value! >= OF_FLOOR_MIN) && cpuVsJetStreamR3 <= CPU_VS_JETSTREAM_MAX : undefined;
  return {
    ofFloorMin: OF_FLOOR_MIN,
    ofFloor,
    ofSignedFloor,
    signedBlocks,
    macBlocks,
    cpuVsJetStreamR3Max: CPU_VS_JETSTREAM_MAX,
    cpuVsJetStreamR3,
    met,
    ratio: median((r) => r.ratio),
    floorRatio: median((r) => r.floorRatio),
    rounds,
  };
}

type Ratios = ReturnType<typeof ratiosOf>;

/** The ratios of one round's runs. */
function ratiosOf(runs: readonly IngestRun[]) {
  const ours = (replicas: number, nodes: number) => runs.find((run) => run.system === 'Tributary' && run.replicas === replicas && (nodes === 1) === (run.setup === 'one node'));
  const floorOf = (replicas: number, processes: number, auth?: 'signed' | 'mac', blocks = false) =>
    runs.find(
      (run) =>
        run.system === FLOOR_SYSTEM && run.replicas === replicas && (processes === 1) === (run.setup === 'one process') &&
        (auth === 'signed') === run.setup.includes('signed') && (auth === 'mac') === run.setup.includes('MAC') && blocks === run.setup.includes('blocks'),
    );
  const ours3 = ours(3, CLUSTER_NODES);
  const theirs3 = runs.find((run) => run.system === 'NATS JetStream' && run.replicas === 3 && !run.setup.includes('always'));
  const floor = floorOf(3, CLUSTER_NODES);
  const share = (mine: IngestRun | undefined, base: IngestRun | undefined) =>
    mine === undefined || base === undefined ? undefined : round(mine.payloadsPerSecond / base.payloadsPerSecond, 2);
  const ofFloor = { oneNode: share(ours(1, 1), floorOf(1, 1)), replicas2: share(ours(2, CLUSTER_NODES), floorOf(2, CLUSTER_NODES)), replicas3: share(ours3, floor) };
  const ofSignedFloor = { replicas2: share(ours(2, CLUSTER_NODES), floorOf(2, CLUSTER_NODES, 'signed')), replicas3: share(ours3, floorOf(3, CLUSTER_NODES, 'signed')) };
  // Where the goal lies for any design that signs and stores our blocks: that floor's share of the bare one.
  const signedBlocksFloor = floorOf(3, CLUSTER_NODES, 'signed', true);
  const signedBlocks = { ofFloor: share(signedBlocksFloor, floor), oursOfIt: share(ours3, signedBlocksFloor) };
  // And for a design that authenticated with a key per pair of nodes instead.
  const macBlocks = { ofFloor: share(floorOf(3, CLUSTER_NODES, 'mac', true), floor) };
  const cpuVsJetStreamR3 =
    ours3?.cpuSeconds.servers === undefined || theirs3?.cpuSeconds.servers === undefined ? undefined : round(ours3.cpuSeconds.servers / theirs3.cpuSeconds.servers, 2);
  return { ofFloor, ofSignedFloor, signedBlocks, macBlocks, cpuVsJetStreamR3, ratio: share(ours3, theirs3), floorRatio: share(floor, theirs3) };
}

function jetStreamOf(binary: NatsBinary | undefined, syncAlways: boolean, window: number) {
  return {
    ran: binary !== undefined,
    version: binary?.version ?? 'not installed',
    storage: 'file',
    durability: JETSTREAM_DURABILITY,
    publish: `nats npm client, js.publish per message, ${window} unacknowledged per client (JetStream 2.9 has no batch publish)`,
    syncEveryWrite:
      binary === undefined
        ? 'not run'
        : syncAlways
          ? 'this version syncs on an interval by default (sync_interval); also measured with sync_interval: always'
          : 'this version has no setting to sync every write (sync_interval arrived in 2.10): not measured with a sync per write',
  };
}

export async function runPeersIngestBench(options: BenchOptions): Promise<void> {
  const loadAverageBefore = os.loadavg()[0]!;
  const batches = prepareBatches(options);
  const payloadBytesAvg = payloadBytesOf(batches) / options.payloads;
  if (payloadBytesAvg < PAYLOAD_BYTES_AVG_RANGE[0] || payloadBytesAvg > PAYLOAD_BYTES_AVG_RANGE[1]) {
    throw new Error(`payloads average ${payloadBytesAvg.toFixed(0)} bytes, outside ${PAYLOAD_BYTES_AVG_RANGE.join('–')}`);
  }
  const clients = options.concurrency;
  const window = options.batch;
  log(`peers-ingest: ${options.payloads} payloads (${payloadBytesAvg.toFixed(0)} bytes on average), ${clients} clients, ${window} unacknowledged each`);
  const binary = findNatsServer() ?? (installDebianPackage('nats-server') ? findNatsServer() : undefined);
  const syncAlways = binary !== undefined && natsSyncAlwaysSupported(binary);
  if (binary === undefined) log('nats-server not found (apt-get install nats-server, or NATS_SERVER_BIN): measuring Tributary only.');
  else log(`JetStream: ${binary.version} at ${binary.path}; sync on every write ${syncAlways ? 'supported' : 'not supported by this version'}`);

  const bodies = BodyFile.write(batches.map((batch) => batch.body));
  let runs: IngestRun[];
  try {
    runs = await runPlan({ batches, bodies }, clients, window, binary, syncAlways, options.runs);
  } finally {
    bodies.remove();
  }
  const report = {
    date: new Date().toISOString(),
    machine: machine(loadAverageBefore),
    params: {
      payloads: options.payloads,
      payloadBytesAvg: Math.round(payloadBytesAvg),
      clients,
      unacknowledgedPerClient: window,
      ourBatch: options.batch,
      rounds: options.runs,
      seed: SEED,
      policy: `ring_size ${RING_SIZE}, hash_payload.bytes ${HASH_BYTES}`,
      nodeExecArgv: nodeFlags(),
    },
    jetStream: jetStreamOf(binary, syncAlways, window),
    runs,
    verified: 'after each run every node or server counted what it holds: replicas × acknowledged, else the bench fails',
    goal: goalOf(runs),
  };
  // A run of some of the runs (PEERS_INGEST_ONLY, to profile one) keeps the full run's results.
  const path = onlyRuns() === undefined ? RESULTS_PATH : RESULTS_PATH.replace(/\.json$/, '-only.json');
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  console.log(markdown(report));
  if (binary === undefined) console.log('\nnats-server not installed: the comparison was skipped.');
  log(`results written to ${path}`);
}
