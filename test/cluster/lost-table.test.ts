// A node whose cluster table is lost (its storage damaged: the chaos suite's join-leave-r3
// seed 17) comes back into the cluster. While the copy beside the database
// survives, the node takes its table from it. With both gone, a --join node waits for an
// Admit, which the members send when it refuses them as a stranger; the first node, started
// without --join, must not start a cluster of its own (a split), and waits the same way.

import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Database } from '../../src/storage/database.js';
import { addNode, defineStream, expectPlacement, startClusterNode, startJoinedCluster, until, waitState } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';

const STREAM = '/streams/demo/lost/events';
const SCHEMA = { version: '', config: {}, topDef: { type: 'record', properties: { id: { type: 'string' }, ts: { type: 'datetime' }, value: { type: 'int' } } } };
const PLACEMENT = { ringSize: 32, replicas: 3, hashBytes: 128 };
let nodes: NodeProcess[];
/** Every payload acknowledged, as sent (its partition is the hash of its bytes). */
const acknowledged: object[] = [];

beforeAll(async () => {
  nodes = await startJoinedCluster(3);
  await defineStream(nodes[0]!, STREAM, { schema: SCHEMA, repo: 'ssr', policy: { replicas: PLACEMENT.replicas, ring_size: PLACEMENT.ringSize, hash_payload: { bytes: PLACEMENT.hashBytes } } });
  const api = client(nodes[0]!);
  const payloads = Array.from({ length: 2_000 }, (_, index) => ({ id: `p${index}`, ts: new Date(1_700_000_000_000 + index * 1_000).toISOString(), value: index }));
  const response = await api.post(STREAM, payloads);
  expect(response.status, response.text).toBe(200);
  acknowledged.push(...payloads);
}, 120_000);
afterAll(cleanup);

/**
 * kill -9, then the table goes as damaged storage takes it (and its copy beside the
 * database too, unless `keepCopy`); the node starts again with the rest of its data.
 */
async function loseTable(node: NodeProcess, keepCopy = false): Promise<void> {
  await node.kill('SIGKILL');
  const database = await Database.open(node.dataDir);
  expect(await database.local.get('cluster-core'), `${node.name} had a table`).toBeDefined();
  await database.local.del('cluster-core');
  await database.close();
  if (!keepCopy) rmSync(join(node.dataDir, 'cluster-table'));
  await node.launch();
}

interface LocalCluster {
  epoch: number;
  members: Array<{ name: string; state: string }>;
}

async function clusterOf(node: NodeProcess): Promise<LocalCluster> {
  const response = await client(node).get('/monitoring/system/cluster?node=local');
  expect(response.status, response.text).toBe(200);
  return response.json.nodes[0].details;
}

/** Every node at one epoch, each with every node Joined. */
async function oneTable(names: readonly string[]): Promise<LocalCluster> {
  return until(`one table on ${names.join(', ')}`, async () => {
    const tables = await Promise.all(nodes.map(clusterOf));
    const joined = (table: LocalCluster) => names.every((name) => table.members.some((member) => member.name === name && member.state === 'Joined'));
    return new Set(tables.map((table) => table.epoch)).size === 1 && tables.every(joined) ? tables[0] : undefined;
  }, 60_000);
}

describe('cluster - a node that lost its table', () => {
  it('a node whose database lost its table takes the copy beside it, at the epoch it had', async () => {
    const before = await oneTable(['node-1', 'node-2', 'node-3']);
    const second = nodes[1]!;
    await loseTable(second, true);
    expect(second.output).toContain('taking the copy beside it');
    expect(second.output).not.toContain('holds none now');
    // Up and ready: its table is the one it had, with no member's help.
    expect((await clusterOf(second)).epoch).toBe(before.epoch);
    await oneTable(['node-1', 'node-2', 'node-3']);
  }, 60_000);

  it('a node that loses its table during (or right after) its join is admitted again, and the join completes', async () => {
    const joining = await startClusterNode('node-4', { join: true });
    nodes.push(joining);
    const added = await addNode(nodes[0]!, joining);
    expect(added.status, added.text).toBe(200);
    await until('node-4 in a table', async () => ['Joining', 'Joined'].includes((await clusterOf(joining)).members.find((member) => member.name === 'node-4')?.state ?? ''));
    await loseTable(joining);
    await waitState(joining, 'Joined');
    await oneTable(['node-1', 'node-2', 'node-3', 'node-4']);
    // Each payload on each of its 3 owners of 4, none elsewhere.
    await expectPlacement(nodes, 'ssr', 'demo/lost/events', PLACEMENT, acknowledged);
  }, 120_000);

  it('the first node, started without --join, starts no cluster of its own: it is admitted again and takes writes', async () => {
    const first = nodes[0]!;
    await loseTable(first);
    const table = await oneTable(['node-1', 'node-2', 'node-3', 'node-4']);
    expect(table.epoch).toBeGreaterThan(1);
    // Until a peer confirms its table, it answers 503 and the client retries (as any would).
    const after = { id: 'after', ts: new Date().toISOString(), value: 1 };
    await until('a write through node-1', async () => (await client(first).post(STREAM, [after])).status === 200, 10_000);
    acknowledged.push(after);
    // Readers go to every owner, node-1 among them: all it held before is still there.
    const total = await until('2,001 payloads found through node-1', async () => {
      const answer = await client(first).post('/ssr/demo/_search', { uris: [STREAM], query: {}, count: 1, from: 0 });
      return answer.status === 200 && answer.json.total === 2_001 ? answer.json.total : undefined;
    });
    expect(total).toBe(2_001);
    await expectPlacement(nodes, 'ssr', 'demo/lost/events', PLACEMENT, acknowledged);
  }, 120_000);
});
