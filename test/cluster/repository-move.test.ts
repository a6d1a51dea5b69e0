// Changing a stream's repository while it holds payloads (docs/storage.md, "Changing a
// stream's repository"), on three nodes with two replicas: the PUT answers 200, every owner
// moves what it holds from tsr to ssr in the background (paced here so that the move is
// seen under way), payloads are posted through two nodes during the move, one owner is
// killed with SIGKILL and started again mid-move, and searches and historical queries on
// every node count every payload exactly once throughout. At the end, nothing is left in
// the old repository and every copy is in the new one.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, startClusterNode, until, waitState } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';

const STREAM = '/streams/demo/mobile/happiness';
const KEY = 'demo/mobile/happiness';
const REPLICAS = 2;
/** Small steps a tenth of a second apart: the move lasts seconds, long enough to watch. */
const SLOW_MOVE = ['--storage-move-chunk-records', '8', '--storage-move-pacing-ms', '100', '--storage-move-grace-ms', '1000'];
const START_MS = Date.UTC(2017, 3, 21);

let nodes: NodeProcess[];
const clients: SseClient[] = [];
let posted = 0;

const batch = (count: number) =>
  Array.from({ length: count }, () => {
    const seq = posted++;
    return { user: `user-${seq % 13}`, happiness: seq % 11, seq, timestamp: new Date(START_MS + seq * 60_000).toISOString() };
  });

beforeAll(async () => {
  nodes = [await startClusterNode('move-1', { args: SLOW_MOVE })];
  for (const name of ['move-2', 'move-3']) nodes.push(await startClusterNode(name, { join: true, args: SLOW_MOVE }));
  for (const node of nodes.slice(1)) {
    expect((await addNode(nodes[0]!, node)).status).toBe(200);
    await waitState(node, 'Joined');
  }
  const api = client(nodes[0]!);
  const schema = { version: '1', topDef: { type: 'record', properties: { user: { type: 'string' }, happiness: { type: 'int' }, seq: { type: 'int' }, timestamp: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] } } } };
  expect((await api.put(STREAM, { schema })).status).toBe(200);
  expect((await api.put(`${STREAM}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
  expect((await api.put(`${STREAM}/policy`, { replicas: REPLICAS, ring_size: 16, hash_payload: { bytes: 128 } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  for (const sse of clients) sse.close();
  await cleanup();
});

/** Payloads a node stores of the stream in one repository (copies: each payload is on REPLICAS owners). */
async function stored(node: NodeProcess, repo: 'ssr' | 'tsr'): Promise<number> {
  return (await client(node).get(`/_internal/repos/${repo}/${KEY}`)).json.total as number;
}

async function searchTotal(node: NodeProcess): Promise<number> {
  const response = await client(node).post('/ssr/demo/_search', { uris: [STREAM], query: { base: null }, count: 1, from: 0 });
  expect(response.status, response.text).toBe(200);
  return response.json.total as number;
}

/** count() and the distinct seq values a historical query reads through `node`. */
async function historical(node: NodeProcess): Promise<{ count: number; distinct: number }> {
  const api = client(node);
  const session = (await api.post('/execution/demo/sessions')).json.session as string;
  const put = await api.put(session, { queries: [{ id: 'all', body: `from historical ${STREAM} select seq` }] });
  expect(put.status, put.text).toBe(200);
  const sse = await SseClient.connect(`${node.url}${put.json[0].query.outputs[0].outputUri}`);
  clients.push(sse);
  expect((await api.put(`${session}/queries/all/_start`)).status).toBe(200);
  await sse.eos;
  await api.delete(session);
  const seqs = sse.adds().map((row) => row.seq as number);
  return { count: seqs.length, distinct: new Set(seqs).size };
}

async function move(node: NodeProcess): Promise<{ complete: boolean; percentComplete: number; nodes: Array<{ node: string; phase: string }> }> {
  const response = await client(node).get(`${STREAM}/repository/move`);
  expect(response.status, response.text).toBe(200);
  return response.json.move;
}

/** Every node counts `expected` payloads, each once, by search and by a historical query. */
async function everyNodeCounts(expected: number, among: NodeProcess[]): Promise<void> {
  for (const node of among) {
    expect(await searchTotal(node), `search through ${node.name}`).toBe(expected);
    expect(await historical(node), `historical query through ${node.name}`).toEqual({ count: expected, distinct: expected });
  }
}

describe('cluster repository move - tsr to ssr on every owner, under writes and a restart', () => {
  it('answers 200 and moves the stored payloads in the background; reads count each payload once all along', async () => {
    for (let i = 0; i < 40; i += 1) expect((await client(nodes[i % 3]!).post(STREAM, batch(20))).status).toBe(200);
    const before = posted;
    expect(await Promise.all(nodes.map((node) => stored(node, 'ssr')))).toEqual([0, 0, 0]);
    const tsrCopies = (await Promise.all(nodes.map((node) => stored(node, 'tsr')))).reduce((sum, count) => sum + count, 0);
    expect(tsrCopies).toBe(before * REPLICAS);

    const put = await client(nodes[0]!).put(`${STREAM}/repository`, { name: 'ssr', config: {} });
    expect(put.status, put.text).toBe(200);
    expect(put.json).toEqual({ name: 'ssr', config: {} });
    expect((await client(nodes[1]!).get(`${STREAM}/repository`)).json).toEqual({ name: 'ssr', config: {} });
    const started = await move(nodes[1]!);
    expect(started).toMatchObject({ from: 'tsr', to: 'ssr', complete: false });
    expect(started.nodes.map((each) => each.node).sort()).toEqual(['move-1', 'move-2', 'move-3']);
    // Another change while it runs is refused: one move at a time.
    const again = await client(nodes[2]!).put(`${STREAM}/repository`, { name: 'tsr', config: {} });
    expect(again.status).toBe(409);
    expect(again.json.error.type).toBe('STATE_CONFLICT');

    // Writes during the move, through two nodes, and reads while it runs.
    expect((await client(nodes[1]!).post(STREAM, batch(30))).status).toBe(200);
    expect((await client(nodes[2]!).post(STREAM, batch(30))).status).toBe(200);
    await everyNodeCounts(posted, nodes);
    const during = await move(nodes[0]!);
    expect(during.complete, 'the reads above ran while the move did').toBe(false);
    const transfers = (await client(nodes[2]!).get('/cluster/transfers')).json.actions.filter((action: any) => action.info.kind === 'repository-move');
    expect(transfers.map((action: any) => action.from).sort()).toEqual(['move-1', 'move-2', 'move-3']);
    expect(transfers.every((action: any) => action.repo === 'ssr' && action.info.stream === STREAM && action.percentComplete >= 0 && action.percentComplete <= 100)).toBe(true);

    // An owner dies mid-move and starts again: it carries on from its cursor.
    const victim = nodes[2]!;
    expect((await move(nodes[0]!)).nodes.find((each) => each.node === victim.name)!.phase).not.toBe('done');
    await victim.kill('SIGKILL');
    await victim.launch();
    await until('the restarted node is available to the others', async () => (await client(nodes[0]!).get(`/cluster/nodes/${victim.name}`)).json?.node?.available === 'true', 30_000);
    expect((await client(nodes[0]!).post(STREAM, batch(20))).status).toBe(200);
    await everyNodeCounts(posted, nodes);

    await until('the move is complete', async () => (await move(nodes[1]!)).complete, 120_000);
    const ended = await move(nodes[2]!);
    expect(ended.percentComplete).toBe(100);
    expect(ended.nodes.every((each) => each.phase === 'done')).toBe(true);
    expect(await Promise.all(nodes.map((node) => stored(node, 'tsr')))).toEqual([0, 0, 0]);
    const ssrCopies = (await Promise.all(nodes.map((node) => stored(node, 'ssr')))).reduce((sum, count) => sum + count, 0);
    expect(ssrCopies).toBe(posted * REPLICAS);
    await everyNodeCounts(posted, nodes);
    // The move over, the repository may change again.
    const done = (await client(nodes[2]!).get('/cluster/transfers')).json.actions.filter((action: any) => action.info.kind === 'repository-move');
    expect(done.every((action: any) => action.complete && action.percentComplete === 100)).toBe(true);
  }, 300_000);
});
