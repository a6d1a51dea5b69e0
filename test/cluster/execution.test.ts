// Execution across a cluster. Four nodes: a session's host leaves the cluster (DELETE
// /cluster/nodes) and the session moves to a Joined node, its query still running. Then, on the
// three left: an SSE client on one node reads a live query hosted on another while payloads are
// posted to the third; the host is killed with SIGKILL, the session moves, and the query goes
// on. On the two left: a daemon deleted through the node that does not run it has stopped when
// the DELETE answers, and a client of a session deleted through another node is ended.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJoinedCluster, until, waitState } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';
import { Prng } from '../sim/prng.js';

const CPU = '/streams/demo/infra/cpu';
const prng = new Prng(909);
const at = (i: number) => new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString();
const batch = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => ({ host: prng.pick(['a', 'b', 'c']), user: prng.int(0, 100), timestamp: at(from + i) }));

let nodes: NodeProcess[];
const clients: SseClient[] = [];

beforeAll(async () => {
  nodes = await startJoinedCluster(4);
  const api = client(nodes[0]!);
  const schema = { host: { type: 'string' }, user: { type: 'double' }, timestamp: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] } };
  expect((await api.put(CPU, { schema: { version: '1', topDef: { type: 'record', properties: schema } } })).status).toBe(200);
  expect((await api.put(`${CPU}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
  expect((await api.put(`${CPU}/policy`, { replicas: 2, ring_size: 16, hash_payload: { bytes: 64 } })).status).toBe(200);
}, 180_000);

afterAll(async () => {
  for (const sse of clients) sse.close();
  await cleanup();
});

/** How many stored payloads of `stream` a historical query counts where `condition` holds. */
async function storedCount(node: NodeProcess, stream: string, condition: string): Promise<number> {
  const api = client(node);
  const session = (await api.post('/execution/demo/sessions')).json.session as string;
  const put = await api.put(session, { queries: [{ id: 'n', body: `from historical ${stream} where ${condition} select count() as n` }] });
  expect(put.status, put.text).toBe(200);
  const sse = await SseClient.connect(`${node.url}${put.json[0].query.outputs[0].outputUri}`);
  clients.push(sse);
  expect((await api.put(`${session}/queries/n/_start`)).status).toBe(200);
  await sse.eos;
  await api.delete(session);
  return sse.adds()[0]!.n as number;
}

/** The node whose monitoring lists the session as hosted there. */
async function hostOf(session: string, among: NodeProcess[]): Promise<NodeProcess> {
  return until(`a host of ${session}`, async () => {
    for (const node of among) {
      const response = await client(node).get('/monitoring/demo/execution?node=local');
      const sessions = response.json?.nodes?.[0]?.details?.sessions as Array<{ session: string; queries: Array<{ state: string }> }> | undefined;
      if (sessions?.some((each) => each.session === session && each.queries.some((query) => query.state === 'running'))) return node;
    }
    return undefined;
  });
}

describe('cluster execution - four nodes, then three', () => {
  it('a session moves off a host that leaves the cluster, and its query goes on', async () => {
    const created = await client(nodes[0]!).post('/execution/demo/sessions');
    const session = created.json.session as string;
    const put = await client(nodes[0]!).put(session, { queries: [{ id: 'all', body: `from ${CPU} select host, user` }] });
    expect(put.status, put.text).toBe(200);
    const outputUri = put.json[0].query.outputs[0].outputUri as string;
    expect((await client(nodes[0]!).put(`${session}/queries/all/_start`)).status).toBe(200);

    const host = await hostOf(session, nodes);
    const [reader, operator] = nodes.filter((node) => node !== host) as [NodeProcess, NodeProcess];
    const removed = await client(operator).delete(`/cluster/nodes/${host.name}`);
    expect(removed.status, removed.text).toBe(200);
    await waitState(host, 'Left');
    nodes = nodes.filter((node) => node !== host);
    await host.kill('SIGTERM');

    const newHost = await hostOf(session, nodes);
    expect(newHost).not.toBe(host);
    const sse = await SseClient.connect(`${reader.url}${outputUri}`);
    clients.push(sse);
    await sse.waitFor('sos from the new host', (c) => c.messages.some((m) => m.type === 'sos'));
    const payloads = batch(5_000, 100);
    expect((await client(operator).post(CPU, payloads)).status).toBe(200);
    const expected = payloads.map((p) => ({ host: p.host, user: p.user }));
    await sse.waitFor('rows from the new host', (c) => c.adds().length >= expected.length, 30_000);
    expect(sse.adds()).toEqual(expected);
    expect((await client(reader).get(`${session}/queries`)).json[0].query.state).toBe('running');
    sse.close();
  }, 120_000);

  it('an SSE client on one node reads a live query hosted elsewhere while payloads go to a third; the session survives kill -9 of its host', async () => {
    const created = await client(nodes[0]!).post('/execution/demo/sessions');
    const session = created.json.session as string;
    const put = await client(nodes[1]!).put(session, { queries: [{ id: 'hot', body: `from ${CPU} where user > 70 select host, user` }] });
    expect(put.status, put.text).toBe(200);
    const outputUri = put.json[0].query.outputs[0].outputUri as string;
    expect((await client(nodes[2]!).put(`${session}/queries/hot/_start`)).status).toBe(200);

    const host = await hostOf(session, nodes);
    const [reader, writer] = nodes.filter((node) => node !== host) as [NodeProcess, NodeProcess];
    const sse = await SseClient.connect(`${reader.url}${outputUri}`);
    clients.push(sse);
    await sse.waitFor('sos on a node that does not host the query', (c) => c.messages.some((m) => m.type === 'sos'));

    const first = batch(0, 300);
    for (let i = 0; i < first.length; i += 50) expect((await client(writer).post(CPU, first.slice(i, i + 50))).status).toBe(200);
    const expectedFirst = first.filter((p) => p.user > 70).map((p) => ({ host: p.host, user: p.user }));
    await sse.waitFor('rows posted to the third node', (c) => c.adds().length >= expectedFirst.length);
    expect(sse.adds()).toEqual(expectedFirst);

    await host.kill('SIGKILL');
    const survivors = nodes.filter((node) => node !== host);
    const newHost = await hostOf(session, survivors);
    expect(newHost).not.toBe(host);
    // The reader's channel starts over from the new host: a new sos.
    await sse.waitFor('a new sos from the new host', (c) => c.messages.filter((m) => m.type === 'sos').length >= 2, 30_000);
    // Payloads accepted by a node that still takes the dead host for alive are forwarded
    // to it and lost to live queries (docs/platform-decisions.md, "Execution sessions"): post once the writer
    // has seen the host go, as its failure detector does within seconds.
    await until('the writer sees the host unavailable', async () => {
      const listed = (await client(writer).get(`/cluster/nodes/${host.name}`)).json?.node as { available?: string } | undefined;
      return listed?.available === 'false';
    }, 30_000);
    const seen = sse.adds().length;
    const second = batch(1_000, 200);
    expect((await client(writer).post(CPU, second)).status).toBe(200);
    const expectedSecond = second.filter((p) => p.user > 70).map((p) => ({ host: p.host, user: p.user }));
    await sse.waitFor('rows after the host died', (c) => c.adds().length >= seen + expectedSecond.length, 30_000);
    expect(sse.adds().slice(seen)).toEqual(expectedSecond);
    const queries = await client(writer).get(`${session}/queries`);
    expect(queries.json[0].query.state).toBe('running');
    nodes = survivors;
  }, 120_000);

  it('a daemon deleted through a node that does not run it has stopped when the DELETE answers; a client of a session deleted elsewhere ends', async () => {
    const hot = '/streams/demo/infra/hot';
    const api = client(nodes[0]!);
    expect((await api.put(hot, { schema: { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, user: { type: 'double' } } } } })).status).toBe(200);
    expect((await api.put(`${hot}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
    const daemon = { query: { queries: [{ id: 'copy', body: `from ${CPU} select host, user` }] }, settings: { target: { type: 'STREAM', uri: hot } } };
    const put = await api.put('/daemon/demo/watch/copier', daemon);
    expect(put.status, put.text).toBe(200);
    const host = await hostOf('/execution/demo/sessions/daemon.watch.copier', nodes);
    const other = nodes.find((node) => node !== host)!;
    expect((await client(host).post(CPU, batch(9_000, 20))).status).toBe(200);
    await until('the daemon wrote the rows', async () => (await storedCount(other, hot, 'user <= 100')) === 20, 30_000);
    const deleted = await client(other).delete('/daemon/demo/watch/copier');
    expect(deleted.status, deleted.text).toBe(200);
    // Posted to the node that ran the daemon, at once: it reaches no live query there.
    const marked = Array.from({ length: 10 }, (_, i) => ({ host: 'a', user: 1_000 + i, timestamp: at(9_500 + i) }));
    expect((await client(host).post(CPU, marked)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(await storedCount(other, hot, 'user >= 1000')).toBe(0);

    const created = await client(other).post('/execution/demo/sessions');
    const session = created.json.session as string;
    const live = await client(other).put(session, { queries: [{ id: 'live', body: `from ${CPU} select host, user` }] });
    expect((await client(other).put(`${session}/queries/live/_start`)).status).toBe(200);
    const sessionHost = await hostOf(session, nodes);
    const reader = nodes.find((node) => node !== sessionHost)!;
    const sse = await SseClient.connect(`${reader.url}${live.json[0].query.outputs[0].outputUri}`);
    clients.push(sse);
    await sse.waitFor('sos on a node that does not host the query', (c) => c.messages.some((m) => m.type === 'sos'));
    expect((await client(sessionHost).delete(session)).status).toBe(200);
    await Promise.race([sse.finished, new Promise((_, reject) => setTimeout(() => reject(new Error('the client of the deleted session was not ended')), 10_000))]);
  }, 120_000);
});
