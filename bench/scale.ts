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
//    times the owners it gains); the bytes moved (every transfer chunk as sent on the wire:
//    records, keys, framing, signatures, chunks sent again) against the minimum's bytes (for
//    each partition, the bytes of its payloads' JSON times the owners it gains: the data the
//    new owners lack, counted independently of how it is stored or sent). Goal: ≤ 1.1×.
//    Beside it, every byte the nodes sent each other meanwhile (transfers, tables,
//    heartbeats, the joining node's catch-up) against that minimum, and the same less the
//    background (the bytes per second the nodes send each other with no change, sampled just
//    before it, times the change's seconds).
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
import { metricTotal } from './node-metrics.js';
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
const NODE_ARGS = ['--cluster-heartbeat-interval-ms', '1000', '--cluster-failure-timeout-ms', '3000', '--cluster-transfer-stall-ms', '10000', '--log-level', 'info'];

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
  /** Bytes of the change's transfer chunks as sent (TransferChunk messages, all nodes). */
  movedBytes: number;
  /** Bytes of the payloads the new owners lack: each partition's payload JSON, once per owner it gains. */
  minimumBytes: number;
  /** The goal's figure: bytes moved against the minimum. */
  movedBytesRatio: number;
  /**
   * Times a node took a peer for unavailable during the change (its failure detector, from
   * the nodes' logs): each one makes the transfers from that peer be asked for again, and
   * the chunks in flight are sent twice.
   */
  unavailableEvents: number;
  wireBytes: number;
  /** Bytes per second the nodes sent each other just before the change (heartbeats, gossip). */
  backgroundBytesPerSecond: number;
  /** What the change added: the wire bytes less the background over its seconds. */
  changeBytes: number;
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

/** Payloads and their JSON bytes per partition of the loaded stream, computed from what was posted. */
interface PartitionLoad {
  payloads: number[];
  bytes: number[];
}

function loadPerPartition(payloadJsons: readonly string[], ringSize: number): PartitionLoad {
  const load = { payloads: new Array<number>(ringSize).fill(0), bytes: new Array<number>(ringSize).fill(0) };
  const policy = { replicas: REPLICAS, ring_size: ringSize, hash_payload: { bytes: 128 } };
  for (const json of payloadJsons) {
    const partition = partitionOf(JSON.parse(json) as object, policy);
    load.payloads[partition]! += 1;
    load.bytes[partition]! += Buffer.byteLength(json);
  }
  return load;
}

/** What the change must move at least: each partition's payloads (and their bytes), once per owner it gains. */
function minimumMove(before: readonly string[], after: readonly string[], load: PartitionLoad): { records: number; bytes: number } {
  const [ringBefore, ringAfter] = [Object.freeze([...before].sort()), Object.freeze([...after].sort())];
  const minimum = { records: 0, bytes: 0 };
  load.payloads.forEach((count, partition) => {
    const owners = ringOwners(ringBefore, { partition, replicas: REPLICAS });
    const gained = ringOwners(ringAfter, { partition, replicas: REPLICAS }).filter((name) => !owners.includes(name)).length;
    minimum.records += count * gained;
    minimum.bytes += load.bytes[partition]! * gained;
  });
  return minimum;
}

/** Bytes of transfer chunks every node has sent so far (`tributary_transfer_chunk_bytes_total`). */
function transferBytesSent(nodes: readonly NodeProcess[]): Promise<number> {
  return metricTotal(nodes, 'tributary_transfer_chunk_bytes_total', 'direction="out"');
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

/** Lines of the nodes' logs written since `from` (each node's output length) that say a peer became unavailable. */
function unavailableSince(nodes: readonly NodeProcess[], from: ReadonlyMap<string, number>): number {
  let events = 0;
  for (const node of nodes) {
    for (const line of node.output.slice(from.get(node.name) ?? 0).split('\n')) {
      if (line.includes('"msg":"availability"') && line.includes('"available":false')) events += 1;
    }
  }
  return events;
}

/** Bytes per second the nodes send each other with no change under way, over a couple of heartbeats. */
async function backgroundRate(nodes: readonly NodeProcess[]): Promise<number> {
  const before = await wireBytesSent(nodes);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, BACKGROUND_SAMPLE_MS));
  const after = await wireBytesSent(nodes);
  return ((after - before) * 1000) / (performance.now() - started);
}

/** Records the change's transfers (ssr and tsr) stored, as the coordinator lists them. */
async function recordsTransferred(via: NodeProcess, changeId: string): Promise<number> {
  const answer = await client(via).get('/cluster/transfers');
  const actions = (answer.json.actions as Array<{ repo: string; info: { id: string; payloads: number } }>).filter((action) => action.info.id.startsWith(`${changeId}/`) && action.repo !== 'KV');
  return actions.reduce((sum, action) => sum + action.info.payloads, 0);
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
  load: PartitionLoad,
  change: { kind: 'join'; node: NodeProcess } | { kind: 'leave'; node: NodeProcess },
): Promise<ChangeCost> {
  const before = members.map((node) => node.name);
  const after = change.kind === 'join' ? [...before, change.node.name] : before.filter((name) => name !== change.node.name);
  const everyone = change.kind === 'join' ? [...members, change.node] : members;
  const background = await backgroundRate(everyone);
  const wireBefore = await wireBytesSent(everyone);
  const movedBefore = await transferBytesSent(everyone);
  const logsFrom = new Map(everyone.map((node) => [node.name, node.output.length]));
  const started = performance.now();
  const answer = change.kind === 'join' ? await addNode(first, change.node) : await client(first).delete(`/cluster/nodes/${change.node.name}`);
  if (answer.status !== 200) throw new Error(`${change.kind} of ${change.node.name}: ${answer.status} ${answer.text.slice(0, 300)}`);
  const changeId = (await stateOf(first, change.node.name)).change;
  const wanted = change.kind === 'join' ? 'Joined' : 'Left';
  await until(`${change.node.name} ${wanted}`, async () => (await stateOf(first, change.node.name)).state === wanted, CHANGE_TIMEOUT_MS);
  const seconds = (performance.now() - started) / 1000;
  const wireBytes = (await wireBytesSent(everyone)) - wireBefore;
  const movedBytes = (await transferBytesSent(everyone)) - movedBefore;
  const recordsMoved = changeId === null ? 0 : await recordsTransferred(first, changeId);
  const minimum = minimumMove(before, after, load);
  const minimumBytes = minimum.bytes;
  const changeBytes = Math.max(0, Math.round(wireBytes - background * seconds));
  const cost = {
    ringSize,
    change: `${change.kind} ${change.node.name}`,
    nodes: after.length,
    seconds: round(seconds, 1),
    recordsMoved,
    recordsMinimum: minimum.records,
    movedBytes,
    minimumBytes,
    movedBytesRatio: minimumBytes === 0 ? 0 : round(movedBytes / minimumBytes, 2),
    unavailableEvents: unavailableSince(everyone, logsFrom),
    wireBytes,
    backgroundBytesPerSecond: Math.round(background),
    changeBytes,
    bytesRatio: minimumBytes === 0 ? 0 : round(wireBytes / minimumBytes, 2),
    changeBytesRatio: minimumBytes === 0 ? 0 : round(changeBytes / minimumBytes, 2),
  };
  log(`ring_size ${ringSize}: ${cost.change} → ${cost.nodes} nodes in ${cost.seconds} s; records ${cost.recordsMoved} / ${cost.recordsMinimum}; moved ${cost.movedBytes} / ${cost.minimumBytes} bytes (${cost.movedBytesRatio}x, ${cost.unavailableEvents} peers taken for unavailable); wire ${cost.wireBytes} / ${cost.minimumBytes} bytes (${cost.bytesRatio}x), less ${cost.backgroundBytesPerSecond} B/s of background: ${cost.changeBytesRatio}x`);
  return cost;
}

/** One node loaded, grown one join at a time to `size` nodes, then one removed. */
async function growAndShrink(options: BenchOptions, size: number, ringSize: number, onCost: (cost: ChangeCost) => void): Promise<void> {
  const batches = prepareBatches(options);
  const load = loadPerPartition(batches.flatMap((batch) => batch.payloadJsons), ringSize);
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
      onCost(await measureChange(ringSize, first, members, load, { kind: 'join', node }));
      members.push(node);
    }
    const leaving = members[Math.floor(members.length / 2)]!;
    onCost(await measureChange(ringSize, first, members, load, { kind: 'leave', node: leaving }));
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
    '| ring_size | change | nodes after | POST → done s | records moved / minimum | bytes moved / minimum | all bytes sent / minimum | less the background / minimum |',
    '|---:|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((row) => `| ${row.ringSize} | ${row.change} | ${row.nodes} | ${row.seconds} | ${row.recordsMoved.toLocaleString('en-US')} / ${row.recordsMinimum.toLocaleString('en-US')} | ${row.movedBytesRatio}x | ${row.bytesRatio}x | ${row.changeBytesRatio}x |`),
  ].join('\n');
}

export async function runScaleBench(options: BenchOptions): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const size = options.nodes;
  const balance = RING_SIZES.flatMap((ringSize) => SIZES.map((nodes) => balanceOf(nodes, ringSize)));
  console.log(balanceTable(balance));
  const changes: ChangeCost[] = [];
  // Written after every change: a run cut short (it takes the better part of an hour on two
  // cores) still leaves what it measured, marked partial.
  const save = (complete: boolean) => writeReport(options, loadBefore, balance, changes, complete);
  for (const ringSize of RING_SIZES) await growAndShrink(options, size, ringSize, (cost) => (changes.push(cost), save(false)));
  save(true);
  const reported = changes.filter((row) => SIZES.includes(row.nodes) || row.nodes === size || row.change.startsWith('leave'));
  console.log(changeTable(reported));
  log(`written ${RESULTS}`);
}

function writeReport(options: BenchOptions, loadBefore: number, balance: readonly Balance[], changes: readonly ChangeCost[], complete: boolean): void {
  const worstMoved = Math.max(0, ...changes.map((row) => row.movedBytesRatio));
  const worst = Math.max(0, ...changes.map((row) => row.bytesRatio));
  const worstOwn = Math.max(0, ...changes.map((row) => row.changeBytesRatio));
  const report = {
    complete,
    params: { payloads: options.payloads, batch: options.batch, replicas: REPLICAS, nodes: options.nodes, sizes: SIZES, ringSizes: RING_SIZES, nodeArgs: NODE_ARGS },
    machine: machine(loadBefore),
    balance,
    changes,
    goal: { bytesRatioMax: BYTES_RATIO_MAX, worstMovedBytesRatio: worstMoved, met: worstMoved <= BYTES_RATIO_MAX, worstBytesRatio: worst, worstChangeBytesRatio: worstOwn, recordsAlwaysMinimum: changes.every((row) => row.recordsMoved === row.recordsMinimum) },
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(report, null, 2)}\n`);
}
