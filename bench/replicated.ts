// Replicated ingest: the ingest benchmark's payloads posted round-robin
// to three joined nodes whose stream keeps 2 replicas, against the same workload into one
// node alone, in the same run. The goal is the cluster at 40% or more of the one node's
// rate. `npm run bench -- transfer` runs this after the transfer measurement (transfer.ts
// writes both into bench/results/transfer.json).

import { addNode, startClusterNode, until, waitState } from '../test/kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../test/kit/node-process.js';
import {
  type Api,
  COLLECTION,
  expectOk,
  log,
  nodeFlags,
  postBatch,
  type PreparedBatch,
  runBatches,
  SCHEMA,
  type StoreResult,
  summarise,
  TENANT,
  type Timing,
} from './ingest.js';

export const REPLICATED_RATIO_MIN = 0.4;
export const CLUSTER_NODES = 3;
/** The placement of every stream in this file (and of transfer.ts): 2 copies of each payload. */
export const BENCH_POLICY = { replicas: 2, ring_size: 128, hash_payload: { bytes: 128 } } as const;
// Warm-up batches per node, into a throwaway stream, as in ingest.ts: the first requests
// pay for JIT compilation and the stream's compile, which a long-running node has paid.
export const WARMUP_BATCHES_PER_NODE = 4;
const JOINED_TIMEOUT_MS = 60_000;

export interface ReplicatedSet {
  concurrency: number;
  oneNode: StoreResult;
  /** ratioToRaw here is the ratio to the one node. */
  threeNodes: StoreResult & { storedCopies: Record<string, number> };
}

/** The placement a bench stream gets: BENCH_POLICY unless a bench (peers-ingest) says otherwise. */
export type BenchPolicy = { replicas: number; ring_size: number; hash_payload: { bytes: number } };

/** PUT of the stream, its tsr repository and its policy; answers the stream's path. */
export async function defineBenchStream(api: Api, name: string, policy: BenchPolicy = BENCH_POLICY): Promise<string> {
  const path = `/streams/${TENANT}/${COLLECTION}/${name}`;
  await expectOk(`PUT ${path}`, api.put(path, { schema: SCHEMA }));
  await expectOk(`PUT ${path}/repository`, api.put(`${path}/repository`, { name: 'tsr', config: {} }));
  await expectOk(`PUT ${path}/policy`, api.put(`${path}/policy`, policy));
  return path;
}

/** What one node holds of a tsr stream (GET /_internal/repos; the kit starts nodes with --internal-reads). */
export async function storedOn(node: NodeProcess, name: string): Promise<number> {
  const response = await client(node).get(`/_internal/repos/tsr/${TENANT}/${COLLECTION}/${name}`);
  if (response.status !== 200) throw new Error(`internal read of ${name} on ${node.name}: HTTP ${response.status} ${response.text.slice(0, 300)}`);
  return (response.json as { total: number }).total;
}

/** Every node sees every node Joined and available, so no write is routed with an old table. */
async function waitSettled(nodes: readonly NodeProcess[]): Promise<void> {
  await until(
    'every node Joined and available on every node',
    async () => {
      const views = await Promise.all(nodes.map(async (node) => (await client(node).get('/cluster/nodes')).json.nodes));
      return views.every(
        (view: Array<{ state: string; available: string }>) =>
          view.length === nodes.length && view.every((entry) => entry.state === 'Joined' && entry.available === 'true'),
      );
    },
    JOINED_TIMEOUT_MS,
  );
}

/** Posts batch i to nodes[i % n] with `concurrency` batches in flight. */
export async function postRoundRobin(
  nodes: readonly NodeProcess[],
  path: string,
  batches: readonly PreparedBatch[],
  concurrency: number,
): Promise<Timing> {
  const urls = nodes.map((node) => node.url + path);
  return runBatches(batches.length, concurrency, (index) => postBatch(urls[index % urls.length]!, batches[index]!.body));
}

export async function warmUp(nodes: readonly NodeProcess[], batches: readonly PreparedBatch[]): Promise<void> {
  const path = await defineBenchStream(client(nodes[0]!), 'warmup');
  await postRoundRobin(nodes, path, batches.slice(0, WARMUP_BATCHES_PER_NODE * nodes.length), 1);
}

export async function stopAll(nodes: readonly NodeProcess[]): Promise<void> {
  // SIGTERM, so that nodes started with --cpu-prof write their profiles; cleanup() then
  // removes the data folders (and kills whatever did not stop).
  await Promise.all(nodes.map((node) => node.kill('SIGTERM')));
  await cleanup();
}

function countOf(batches: readonly PreparedBatch[]): number {
  return batches.reduce((sum, batch) => sum + batch.payloadJsons.length, 0);
}

function bytesOf(batches: readonly PreparedBatch[]): number {
  return batches.reduce((sum, batch) => sum + batch.payloadBytes, 0);
}

async function runOneNode(batches: readonly PreparedBatch[], concurrency: number): Promise<StoreResult> {
  const nodes: NodeProcess[] = [];
  try {
    nodes.push(await startClusterNode('alone', { execArgv: nodeFlags() }));
    await warmUp(nodes, batches);
    const path = await defineBenchStream(client(nodes[0]!), 'ingest');
    log(`replicated ingest, concurrency ${concurrency}: one node…`);
    const timing = await postRoundRobin(nodes, path, batches, concurrency);
    const stored = await storedOn(nodes[0]!, 'ingest');
    if (stored !== countOf(batches)) throw new Error(`the lone node holds ${stored} payloads, ${countOf(batches)} were posted`);
    return summarise(timing, countOf(batches), bytesOf(batches));
  } finally {
    await stopAll(nodes);
  }
}

/** CLUSTER_NODES fresh nodes, joined one after another, every one seeing every one Joined. */
export async function startCluster(): Promise<NodeProcess[]> {
  const nodes: NodeProcess[] = [await startClusterNode('node-1', { execArgv: nodeFlags() })];
  for (let index = 2; index <= CLUSTER_NODES; index += 1) {
    const node = await startClusterNode(`node-${index}`, { join: true, execArgv: nodeFlags() });
    await expectOk(`POST /cluster/nodes (${node.name})`, addNode(nodes[0]!, node));
    await waitState(node, 'Joined', JOINED_TIMEOUT_MS);
    nodes.push(node);
  }
  await waitSettled(nodes);
  return nodes;
}

async function runCluster(
  batches: readonly PreparedBatch[],
  concurrency: number,
  oneNode: StoreResult,
): Promise<ReplicatedSet['threeNodes']> {
  let nodes: NodeProcess[] = [];
  try {
    nodes = await startCluster();
    await warmUp(nodes, batches);
    const path = await defineBenchStream(client(nodes[0]!), 'ingest');
    // A definition is pushed to the other nodes after its PUT answers: wait until each has it.
    await until('the stream on every node', async () => {
      const statuses = await Promise.all(nodes.map(async (node) => (await client(node).get(`${path}/policy`)).status));
      return statuses.every((status) => status === 200);
    });
    log(`replicated ingest, concurrency ${concurrency}: ${CLUSTER_NODES} nodes, replicas ${BENCH_POLICY.replicas}…`);
    const timing = await postRoundRobin(nodes, path, batches, concurrency);
    const storedCopies: Record<string, number> = {};
    for (const node of nodes) storedCopies[node.name] = await storedOn(node, 'ingest');
    const copies = Object.values(storedCopies).reduce((sum, count) => sum + count, 0);
    const expected = BENCH_POLICY.replicas * countOf(batches);
    if (copies !== expected) throw new Error(`the cluster holds ${copies} copies, ${expected} were expected: ${JSON.stringify(storedCopies)}`);
    return { ...summarise(timing, countOf(batches), bytesOf(batches), oneNode.payloadsPerSecond), storedCopies };
  } finally {
    await stopAll(nodes);
  }
}

/** One node, then three, at one concurrency; fresh nodes (and data folders) for each. */
export async function runReplicatedSet(batches: readonly PreparedBatch[], concurrency: number): Promise<ReplicatedSet> {
  const oneNode = await runOneNode(batches, concurrency);
  const threeNodes = await runCluster(batches, concurrency, oneNode);
  return { concurrency, oneNode, threeNodes };
}

export function replicatedTable(sets: readonly ReplicatedSet[]): string {
  const row = (what: string, concurrency: number, result: StoreResult) =>
    `| ${what} | ${concurrency} | ${result.payloadsPerSecond.toLocaleString('en-US')} | ` +
    `${result.megabytesPerSecond.toFixed(1)} | ${result.batchLatencyMs.p50.toFixed(1)} | ` +
    `${result.batchLatencyMs.p99.toFixed(1)} | ${result.ratioToRaw.toFixed(2)} |`;
  return [
    '| ingest | concurrency | payloads/s | MB/s | p50 batch ms | p99 batch ms | ratio to one node |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...sets.flatMap((set) => [
      row('one node', set.concurrency, set.oneNode),
      row(`${CLUSTER_NODES} nodes, replicas ${BENCH_POLICY.replicas}, round-robin`, set.concurrency, set.threeNodes),
    ]),
  ].join('\n');
}
