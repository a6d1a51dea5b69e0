// Cluster helpers for tests over real node processes: fast failure-detection settings,
// joining a node as an operator would, waiting for states, and checking placement.

import { expect } from 'vitest';
import { partitionOf } from '../../src/streams/partitioner.js';
import { ringOwners } from '../../src/cluster-core/placement.js';
import { client, NodeProcess, sleep, type StartOptions } from './node-process.js';

/** Heartbeats every 200 ms, a node is down after 1.5 s, a transfer stalls after 2 s. */
export const FAST_CLUSTER_ARGS = [
  '--cluster-heartbeat-interval-ms', '200',
  '--cluster-failure-timeout-ms', '1500',
  '--cluster-transfer-stall-ms', '2000',
  '--cluster-peer-deadline-ms', '2000',
];

export function startClusterNode(name: string, options: StartOptions = {}): Promise<NodeProcess> {
  return NodeProcess.start({ name, ...options, args: [...FAST_CLUSTER_ARGS, ...(options.args ?? [])] });
}

export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const value = await probe().catch((error: unknown) => void (lastError = error));
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await sleep(100);
  }
}

export async function localNode(node: NodeProcess): Promise<{ name: string; publicKey: string; state: string; available: string }> {
  return (await client(node).get('/cluster/localNode')).json.node;
}

/** POST /cluster/nodes on `seed` for `node`, with the key read from the node itself (and the seed's admin secret, if it has one). */
export async function addNode(seed: NodeProcess, node: NodeProcess, adminSecret?: string) {
  const { publicKey } = await localNode(node);
  const headers: Record<string, string> = adminSecret === undefined ? {} : { authorization: `Bearer ${adminSecret}` };
  return client(seed).post('/cluster/nodes', { nodes: [{ name: node.name, publicKey, address: '127.0.0.1', port: node.peerPort }] }, headers);
}

/** One POST /cluster/nodes on `seed` for all of `nodes`, in order (the first starts, the others queue). */
export async function addNodes(seed: NodeProcess, nodes: readonly NodeProcess[]) {
  const entries = await Promise.all(nodes.map(async (node) => ({ name: node.name, publicKey: (await localNode(node)).publicKey, address: '127.0.0.1', port: node.peerPort })));
  return client(seed).post('/cluster/nodes', { nodes: entries });
}

export async function waitState(node: NodeProcess, state: string, timeoutMs = 60_000): Promise<void> {
  await until(`${node.name} to be ${state}`, async () => (await localNode(node)).state === state, timeoutMs);
}

/** A lone first node and `count - 1` --join nodes added through it, all Joined. */
export async function startJoinedCluster(count: number): Promise<NodeProcess[]> {
  const nodes = [await startClusterNode('node-1')];
  for (let index = 2; index <= count; index += 1) nodes.push(await startClusterNode(`node-${index}`, { join: true }));
  for (const node of nodes.slice(1)) {
    const response = await addNode(nodes[0]!, node);
    if (response.status !== 200) throw new Error(`adding ${node.name}: ${response.status} ${response.text}`);
    await waitState(node, 'Joined');
  }
  return nodes;
}

/** PUTs a stream's schema, repository and placement policy through `node`, each expected to be 200. */
export async function defineStream(node: NodeProcess, path: string, parts: { schema: object; repo: 'ssr' | 'tsr'; policy: object }): Promise<void> {
  const api = client(node);
  for (const [suffix, body] of [['', { schema: parts.schema }], ['/repository', { name: parts.repo, config: {} }], ['/policy', parts.policy]] as const) {
    const response = await api.put(path + suffix, body);
    expect(response.status, `PUT ${path}${suffix}: ${response.text}`).toBe(200);
  }
}

export async function partitionCounts(node: NodeProcess, repo: string, stream: string): Promise<Record<string, number>> {
  const response = await client(node).get(`/_internal/repos/${repo}/${stream}`);
  expect(response.status).toBe(200);
  return response.json.partitions;
}

export interface Placement {
  ringSize: number;
  replicas: number;
  hashBytes: number;
}

/** Payloads per partition, computed by the test from what was acknowledged. */
export function expectedCounts(payloads: readonly object[], placement: Placement): Map<number, number> {
  const counts = new Map<number, number>();
  const policy = { replicas: placement.replicas, ring_size: placement.ringSize, hash_payload: { bytes: placement.hashBytes } };
  for (const payload of payloads) {
    const partition = partitionOf(payload, policy);
    counts.set(partition, (counts.get(partition) ?? 0) + 1);
  }
  return counts;
}

/**
 * Every acknowledged payload is on each owner of its partition, and nodes that do not own a
 * partition hold none of it. Counts may exceed the acknowledged ones only by payloads whose
 * request failed after being stored (`unacknowledged` of them at most).
 *
 * Old owners drop a partition once they adopt the table that completes its transfer, which
 * can be a heartbeat after the new owner is Joined: the check is repeated for up to
 * `settleMs` before its last failure is reported.
 */
export async function expectPlacement(
  nodes: readonly NodeProcess[],
  repo: string,
  stream: string,
  placement: Placement,
  acknowledged: readonly object[],
  unacknowledged = 0,
  settleMs = 10_000,
): Promise<void> {
  const deadline = performance.now() + settleMs;
  for (;;) {
    try {
      return await checkPlacement(nodes, repo, stream, placement, acknowledged, unacknowledged);
    } catch (error) {
      if (performance.now() >= deadline) throw error;
      await sleep(200);
    }
  }
}

async function checkPlacement(
  nodes: readonly NodeProcess[],
  repo: string,
  stream: string,
  placement: Placement,
  acknowledged: readonly object[],
  unacknowledged: number,
): Promise<void> {
  const expected = expectedCounts(acknowledged, placement);
  const names = nodes.map((node) => node.name).sort();
  const owners = Array.from({ length: placement.ringSize }, (_, partition) => ringOwners(names, { partition, replicas: placement.replicas }));
  for (const node of nodes) {
    const counts = await partitionCounts(node, repo, stream);
    for (let partition = 0; partition < placement.ringSize; partition += 1) {
      const stored = counts[partition] ?? 0;
      const want = expected.get(partition) ?? 0;
      if (owners[partition]!.includes(node.name)) {
        expect(stored, `${node.name} ${repo} partition ${partition}`).toBeGreaterThanOrEqual(want);
        expect(stored, `${node.name} ${repo} partition ${partition}`).toBeLessThanOrEqual(want + unacknowledged);
      } else {
        expect(stored, `${node.name} holds partition ${partition} it does not own`).toBe(0);
      }
    }
  }
}

/** Posts batches to the nodes in turn until stopped; keeps what was acknowledged. */
export function startWriter(targets: () => readonly NodeProcess[], path: string, batchSize = 50) {
  const acknowledged: object[] = [];
  let failed = 0;
  let sequence = 0;
  let stopped = false;
  const done = (async () => {
    for (let round = 0; !stopped; round += 1) {
      const nodes = targets();
      const node = nodes[round % nodes.length]!;
      const batch = Array.from({ length: batchSize }, () => ({ host: `host-${sequence % 17}`, seq: sequence++, at: new Date(Date.UTC(2024, 0, 1) + sequence).toISOString() }));
      try {
        const response = await client(node).post(path, batch);
        if (response.status === 200) acknowledged.push(...batch);
        else failed += batch.length;
      } catch {
        failed += batch.length;
      }
      await sleep(5);
    }
  })();
  return {
    acknowledged,
    get failed() {
      return failed;
    },
    async stop() {
      stopped = true;
      await done;
    },
  };
}
