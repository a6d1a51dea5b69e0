// Scale benchmark (`npm run bench -- scale`): what a membership change costs as a cluster
// grows, with real node processes on loopback (docs/cluster.md, "Sizes").
//
// 1. Balance: how evenly the ring spreads partitions, for 4, 8, 16 and 32 nodes at
//    ring_size 128 and 1024 (replicas 3): the most partitions a node is first owner of
//    (and holds), against the mean. Pure ring math, the function every node places with.
// 2. Changes: one node loaded with `--payloads` payloads (~1 KiB) of an ssr stream at
//    replicas 3, then grown one join at a time to `--nodes` (32 by default), then one node
//    removed; per change, the time from the POST (or DELETE) to Joined (or Left), the
//    records its transfers moved against the minimum (for each partition, its payloads
//    times the owners it gains), and every byte the nodes sent each other meanwhile
//    (transfers, tables, heartbeats, the joining node's catch-up) against the minimum's
//    bytes (the records times the bytes a record took in the transfers); and the same less
//    the background (the bytes per second the nodes send each other with no change, sampled
//    just before it, times the change's seconds): what the change itself cost. Goal: ≤ 1.1×.
// Results go to bench/results/scale.json and markdown tables to stdout.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ringOwners } from '../src/cluster-core/placement.js';
import { partitionOf } from '../src/streams/partitioner.js';
import { addNode, startClusterNode, until } from '../test/kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../test/kit/node-process.js';
import { COLLECTION, expectOk, log, postBatch, prepareBatches, round, runBatches, SCHEMA, TENANT } from './ingest.js';
import { machine } from './machine.js';
import type { BenchOptions } from './options.js';

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'results', 'scale.json');
const SIZES = [4, 8, 16, 32];
const RING_SIZES = [128, 1024];
const REPLICAS = 3;
const BYTES_RATIO_MAX = 1.1;
const CHANGE_TIMEOUT_MS = 600_000;
/** How long the background traffic is sampled before each change. */
const BACKGROUND_SAMPLE_MS = 2_000;
const STREAM = 'scale';
/** Heartbeats as a node has them by default: the kit's faster ones would keep 32 processes busy on their own. */
const NODE_ARGS = ['--cluster-heartbeat-interval-ms', '1000', '--cluster-failure-timeout-ms', '3000', '--cluster-transfer-stall-ms', '10000'];

interface Balance {
  nodes: number;
  ringSize: number;
  firstOwnedMaxOverMean: number;
  heldMaxOverMean: number;
  /** Nodes that are first owner of no partition: they serve no partition's first copy. */
  nodesFirstOfNone: number;
}

interface ChangeCost {
  ringSize: number;
  change: string;
  /** Members once it is done. */
  nodes: number;
  seconds: number;
  recordsMoved: number;
  recordsMinimum: number;
  wireBytes: number;
  /** Bytes per second the nodes sent each other just before the change (heartbeats, gossip). */
  backgroundBytesPerSecond: number;
  /** What the change added: the wire bytes less the background over its seconds. */
  changeBytes: number;
  minimumBytes: number;
  bytesRatio: number;
  /** The change's own bytes against the minimum. */
  changeBytesRatio: number;
}

export function balanceOf(nodes: number, ringSize: number): Balance {
  const names = Object.freeze(Array.from({ length: nodes }, (_, index) => `node-${String(index + 1).padStart(2, '0')}`).sort());
  const first = new Map<string, number>(names.map((name) => [name, 0]));
  const held = new Map<string, number>(names.map((name) => [name, 0]));
  for (let partition = 0; partition < ringSize; partition += 1) {
    const owners = ringOwners(names, { partition, replicas: REPLICAS });
    first.set(owners[0]!, first.get(owners[0]!)! + 1);
    for (const owner of owners) held.set(owner, held.get(owner)! + 1);
  }
  const maxOverMean = (counts: Map<string, number>) => Math.max(...counts.values()) / ([...counts.values()].reduce((sum, count) => sum + count, 0) / nodes);
  return {
    nodes,
    ringSize,
    firstOwnedMaxOverMean: round(maxOverMean(first), 2),
    heldMaxOverMean: round(maxOverMean(held), 2),
    nodesFirstOfNone: [...first.values()].filter((count) => count === 0).length,
  };
}

/** Payloads per partition of the loaded stream, computed from what was posted. */
function payloadsPerPartition(payloadJsons: readonly string[], ringSize: number): number[] {
  const counts = new Array<number>(ringSize).fill(0);
  const policy = { replicas: REPLICAS, ring_size: ringSize, hash_payload: { bytes: 128 } };
  for (const json of payloadJsons) counts[partitionOf(JSON.parse(json) as object, policy)]! += 1;
  return counts;
}

/** Records the change must move at least: each partition's payloads, once per owner it gains. */
function minimumRecords(before: readonly string[], after: readonly string[], counts: readonly number[]): number {
  const [ringBefore, ringAfter] = [Object.freeze([...before].sort()), Object.freeze([...after].sort())];
  let records = 0;
  counts.forEach((count, partition) => {
    const owners = ringOwners(ringBefore, { partition, replicas: REPLICAS });
    records += count * ringOwners(ringAfter, { partition, replicas: REPLICAS }).filter((name) => !owners.includes(name)).length;
  });
  return records;
}

/** Bytes every node has sent its peers so far (the transport monitoring service). */
async function wireBytesSent(nodes: readonly NodeProcess[]): Promise<number> {
  let bytes = 0;
  for (const node of nodes) {
    const answer = await client(node).get('/monitoring/system/transport?node=local');
    if (answer.status !== 200) throw new Error(`transport monitoring of ${node.name}: ${answer.status}`);
    for (const peer of answer.json.nodes[0].details.peers as Array<{ sent: { bytes: number } }>) bytes += peer.sent.bytes;
  }
  return bytes;
}

/** Bytes per second the nodes send each other with no change under way, over a couple of heartbeats. */
async function backgroundRate(nodes: readonly NodeProcess[]): Promise<number> {
  const before = await wireBytesSent(nodes);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, BACKGROUND_SAMPLE_MS));
  const after = await wireBytesSent(nodes);
  return ((after - before) * 1000) / (performance.now() - started);
}

/** Records and bytes the change's transfers (ssr and tsr) stored, as the coordinator lists them. */
async function transferred(via: NodeProcess, changeId: string): Promise<{ records: number; bytes: number }> {
  const answer = await client(via).get('/cluster/transfers');
  const actions = (answer.json.actions as Array<{ repo: string; info: { id: string; bytes: number; payloads: number } }>).filter((action) => action.info.id.startsWith(`${changeId}/`) && action.repo !== 'KV');
  return { records: actions.reduce((sum, action) => sum + action.info.payloads, 0), bytes: actions.reduce((sum, action) => sum + action.info.bytes, 0) };
}

async function stateOf(via: NodeProcess, name: string): Promise<{ state: string | undefined; change: string | null; queued: number }> {
  const answer = await client(via).get('/cluster/transfers');
  const nodes = await client(via).get('/cluster/nodes');
  const state = (nodes.json.nodes as Array<{ name: string; state: string }>).find((node) => node.name === name)?.state;
  return { state, change: answer.json.change?.id ?? null, queued: answer.json.queue.length };
}

async function measureChange(
  ringSize: number,
  first: NodeProcess,
  members: NodeProcess[],
  counts: readonly number[],
  change: { kind: 'join'; node: NodeProcess } | { kind: 'leave'; node: NodeProcess },
): Promise<ChangeCost> {
  const before = members.map((node) => node.name);
  const after = change.kind === 'join' ? [...before, change.node.name] : before.filter((name) => name !== change.node.name);
  const everyone = change.kind === 'join' ? [...members, change.node] : members;
  const background = await backgroundRate(everyone);
  const wireBefore = await wireBytesSent(everyone);
  const started = performance.now();
  const answer = change.kind === 'join' ? await addNode(first, change.node) : await client(first).delete(`/cluster/nodes/${change.node.name}`);
  if (answer.status !== 200) throw new Error(`${change.kind} of ${change.node.name}: ${answer.status} ${answer.text.slice(0, 300)}`);
  const changeId = (await stateOf(first, change.node.name)).change;
  const wanted = change.kind === 'join' ? 'Joined' : 'Left';
  await until(`${change.node.name} ${wanted}`, async () => (await stateOf(first, change.node.name)).state === wanted, CHANGE_TIMEOUT_MS);
  const seconds = (performance.now() - started) / 1000;
  const wireBytes = (await wireBytesSent(everyone)) - wireBefore;
  const moved = changeId === null ? { records: 0, bytes: 0 } : await transferred(first, changeId);
  const recordsMinimum = minimumRecords(before, after, counts);
  const minimumBytes = moved.records === 0 ? 0 : Math.round((recordsMinimum * moved.bytes) / moved.records);
  const changeBytes = Math.max(0, Math.round(wireBytes - background * seconds));
  const cost = {
    ringSize,
    change: `${change.kind} ${change.node.name}`,
    nodes: after.length,
    seconds: round(seconds, 1),
    recordsMoved: moved.records,
    recordsMinimum,
    wireBytes,
    backgroundBytesPerSecond: Math.round(background),
    changeBytes,
    minimumBytes,
    bytesRatio: minimumBytes === 0 ? 0 : round(wireBytes / minimumBytes, 2),
    changeBytesRatio: minimumBytes === 0 ? 0 : round(changeBytes / minimumBytes, 2),
  };
  log(`ring_size ${ringSize}: ${cost.change} → ${cost.nodes} nodes in ${cost.seconds} s; records ${cost.recordsMoved} / ${cost.recordsMinimum}; wire ${cost.wireBytes} / ${cost.minimumBytes} bytes (${cost.bytesRatio}x), less ${cost.backgroundBytesPerSecond} B/s of background: ${cost.changeBytesRatio}x`);
  return cost;
}

/** One node loaded, grown one join at a time to `size` nodes, then one removed. */
async function growAndShrink(options: BenchOptions, size: number, ringSize: number, onCost: (cost: ChangeCost) => void): Promise<void> {
  const batches = prepareBatches(options);
  const counts = payloadsPerPartition(batches.flatMap((batch) => batch.payloadJsons), ringSize);
  try {
    const first = await startClusterNode('node-01', { args: NODE_ARGS });
    const members = [first];
    const api = client(first);
    const path = `/streams/${TENANT}/${COLLECTION}/${STREAM}`;
    await expectOk(`PUT ${path}`, api.put(path, { schema: SCHEMA }));
    await expectOk(`PUT ${path}/repository`, api.put(`${path}/repository`, { name: 'ssr', config: {} }));
    await expectOk(`PUT ${path}/policy`, api.put(`${path}/policy`, { replicas: REPLICAS, ring_size: ringSize, hash_payload: { bytes: 128 } }));
    log(`ring_size ${ringSize}: loading ${options.payloads} payloads into node-01 (not timed)…`);
    await runBatches(batches.length, 2, (index) => postBatch(first.url + path, batches[index]!.body));
    for (let index = 2; index <= size; index += 1) {
      const node = await startClusterNode(`node-${String(index).padStart(2, '0')}`, { join: true, args: NODE_ARGS });
      onCost(await measureChange(ringSize, first, members, counts, { kind: 'join', node }));
      members.push(node);
    }
    const leaving = members[Math.floor(members.length / 2)]!;
    onCost(await measureChange(ringSize, first, members, counts, { kind: 'leave', node: leaving }));
  } finally {
    await cleanup();
  }
}

function balanceTable(rows: readonly Balance[]): string {
  return [
    '| nodes | ring_size | partitions a node is first owner of, max / mean | held, max / mean | nodes first owner of none |',
    '|---:|---:|---:|---:|---:|',
    ...rows.map((row) => `| ${row.nodes} | ${row.ringSize} | ${row.firstOwnedMaxOverMean} | ${row.heldMaxOverMean} | ${row.nodesFirstOfNone} |`),
  ].join('\n');
}

function changeTable(rows: readonly ChangeCost[]): string {
  return [
    '| ring_size | change | nodes after | POST → done s | records moved / minimum | bytes sent / minimum | less the background / minimum |',
    '|---:|---|---:|---:|---:|---:|---:|',
    ...rows.map((row) => `| ${row.ringSize} | ${row.change} | ${row.nodes} | ${row.seconds} | ${row.recordsMoved.toLocaleString('en-US')} / ${row.recordsMinimum.toLocaleString('en-US')} | ${row.bytesRatio}x | ${row.changeBytesRatio}x |`),
  ].join('\n');
}

export async function runScaleBench(options: BenchOptions): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const size = Math.max(...SIZES);
  const balance = RING_SIZES.flatMap((ringSize) => SIZES.map((nodes) => balanceOf(nodes, ringSize)));
  console.log(balanceTable(balance));
  const changes: ChangeCost[] = [];
  // Written after every change: a run cut short (it takes the better part of an hour on two
  // cores) still leaves what it measured, marked partial.
  const save = (complete: boolean) => writeReport(options, loadBefore, balance, changes, complete);
  for (const ringSize of RING_SIZES) await growAndShrink(options, size, ringSize, (cost) => (changes.push(cost), save(false)));
  save(true);
  const reported = changes.filter((row) => SIZES.includes(row.nodes) || row.change.startsWith('leave'));
  console.log(changeTable(reported));
  log(`written ${RESULTS}`);
}

function writeReport(options: BenchOptions, loadBefore: number, balance: readonly Balance[], changes: readonly ChangeCost[], complete: boolean): void {
  const worst = Math.max(0, ...changes.map((row) => row.bytesRatio));
  const worstOwn = Math.max(0, ...changes.map((row) => row.changeBytesRatio));
  const report = {
    complete,
    params: { payloads: options.payloads, batch: options.batch, replicas: REPLICAS, sizes: SIZES, ringSizes: RING_SIZES, nodeArgs: NODE_ARGS },
    machine: machine(loadBefore),
    balance,
    changes,
    goal: { bytesRatioMax: BYTES_RATIO_MAX, worstBytesRatio: worst, worstChangeBytesRatio: worstOwn, met: worstOwn <= BYTES_RATIO_MAX, recordsAlwaysMinimum: changes.every((row) => row.recordsMoved === row.recordsMinimum) },
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
}
