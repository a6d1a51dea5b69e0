// The cluster over real node processes on loopback: grow 1 → 3 while writing, prove every
// acknowledged payload is on each of its owners, remove a node, kill a joining node
// mid-transfer, pause one with SIGSTOP during writes, and check the SSE sequence. The steps
// build on each other and run in order.

import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addNode,
  expectPlacement,
  startClusterNode,
  startWriter,
  until,
  waitState,
  type Placement,
} from '../kit/cluster.js';
import { cleanup, client, type NodeProcess, sleep } from '../kit/node-process.js';

const placement: Placement = { ringSize: 32, replicas: 2, hashBytes: 64 };
const schema = {
  version: '1',
  topDef: { type: 'record', properties: { host: { type: 'string' }, seq: { type: 'int' }, at: { type: 'datetime' } } },
};
const TSR = '/streams/demo/cluster/metrics';
const SSR = '/streams/demo/cluster/docs';

let one: NodeProcess;
let two: NodeProcess;
let three: NodeProcess;
let four: NodeProcess;
const events: Array<{ type: string; node?: string; state?: string }> = [];
let eventSource: EventSource;
const acknowledged = { tsr: [] as object[], ssr: [] as object[] };
let unacknowledged = 0;

beforeAll(async () => {
  one = await startClusterNode('node-1');
  eventSource = new EventSource(`${one.url}/output/cluster`);
  eventSource.onmessage = (event) => events.push(JSON.parse(event.data));
  const api = client(one);
  for (const [path, repo] of [[TSR, 'tsr'], [SSR, 'ssr']] as const) {
    expect((await api.put(path, { schema })).status).toBe(200);
    expect((await api.put(`${path}/repository`, { name: repo, config: {} })).status).toBe(200);
    expect((await api.put(`${path}/policy`, { replicas: placement.replicas, ring_size: placement.ringSize, hash_payload: { bytes: placement.hashBytes } })).status).toBe(200);
  }
});
afterAll(async () => {
  eventSource?.close();
  await cleanup();
});

async function writeWhile<T>(targets: () => NodeProcess[], work: () => Promise<T>): Promise<T> {
  const tsr = startWriter(targets, TSR);
  const ssr = startWriter(targets, SSR);
  try {
    return await work();
  } finally {
    await Promise.all([tsr.stop(), ssr.stop()]);
    acknowledged.tsr.push(...tsr.acknowledged);
    acknowledged.ssr.push(...ssr.acknowledged);
    unacknowledged += tsr.failed + ssr.failed;
  }
}

async function expectEverythingPlaced(nodes: NodeProcess[]): Promise<void> {
  await expectPlacement(nodes, 'tsr', 'demo/cluster/metrics', placement, acknowledged.tsr, unacknowledged);
  await expectPlacement(nodes, 'ssr', 'demo/cluster/docs', placement, acknowledged.ssr, unacknowledged);
}

describe('cluster - growing 1 → 3 while writing', () => {
  it('adds two --join nodes through POST /cluster/nodes; a second add meanwhile is queued and starts after the first', async () => {
    two = await startClusterNode('node-2', { join: true });
    three = await startClusterNode('node-3', { join: true });
    await writeWhile(() => [one], async () => {
      await sleep(500);
      const first = await addNode(one, two);
      expect(first.status).toBe(200);
      expect(first.json.nodes.map((node: { name: string }) => node.name)).toContain('node-2');
      const second = await addNode(one, three);
      expect(second.status).toBe(200);
      expect(second.json.changes).toEqual([expect.objectContaining({ kind: 'join', node: 'node-3', status: 'queued', position: 1 })]);
      await waitState(two, 'Joined');
      await sleep(300);
    });
    await writeWhile(() => [one, two], async () => {
      await waitState(three, 'Joined');
      await sleep(300);
    });
    expect(acknowledged.tsr.length).toBeGreaterThan(200);
  });

  it('answers the same GET /cluster on every node, and every node is Joined and available', async () => {
    const views = await Promise.all([one, two, three].map(async (node) => (await client(node).get('/cluster')).json));
    for (const view of views) {
      expect(view.nodes.map((node: { name: string; state: string }) => `${node.name}:${node.state}`)).toEqual([
        'node-1:Joined', 'node-2:Joined', 'node-3:Joined',
      ]);
      expect(view.tenants).toEqual(views[0].tenants);
    }
    await until('every node available everywhere', async () => {
      const all = await Promise.all([one, two, three].map(async (node) => (await client(node).get('/cluster/nodes')).json.nodes));
      return all.flat().every((node: { available: string }) => node.available === 'true');
    }, 10_000);
    expect((await client(three).get('/streams/demo/cluster/metrics/policy')).json.ring_size).toBe(placement.ringSize);
  });

  it('has every acknowledged payload on each of its owners, and nothing on non-owners', async () => {
    await expectEverythingPlaced([one, two, three]);
  });

  it('lists completed transfers with rising percentComplete and sizes', async () => {
    const actions = (await client(two).get('/cluster/transfers')).json.actions as Array<Record<string, any>>;
    expect(actions.length).toBeGreaterThanOrEqual(3);
    for (const action of actions) {
      expect(action).toMatchObject({ type: 'repo_data_transfer', complete: true, percentComplete: 100 });
      expect(['KV', 'ssr', 'tsr']).toContain(action.repo);
    }
    const tsrToTwo = actions.filter((action) => action.repo === 'tsr' && action.to === 'node-2');
    expect(tsrToTwo.reduce((sum, action) => sum + action.info.payloads, 0)).toBeGreaterThan(0);
    expect(tsrToTwo.every((action) => action.info.bytes > 0)).toBe(true);
  });

  it('sends NODE_STATE_UPDATED for each state change, in order', async () => {
    await until('events', async () => events.some((event) => event.node === 'node-3' && event.state === 'Joined'), 5_000);
    const of = (name: string) => events.filter((event) => event.type === 'NODE_STATE_UPDATED' && event.node === name).map((event) => event.state);
    expect(of('node-2')).toEqual(['Pending', 'Joining', 'Joined']);
    expect(of('node-3')).toEqual(['Pending', 'Joining', 'Joined']);
    expect(events[0]!.type).toBe('CLUSTER_STATE');
  });
});

describe('cluster - definitions through the per-key coordinator', () => {
  it('two concurrent PUTs with the same version on two nodes: one 200, one 409, every node ends with the winner', async () => {
    for (let round = 0; round < 5; round += 1) {
      const path = `/streams/demo/cluster/race-${round}`;
      const created = await client(one).put(path, { schema });
      const version = created.headers.get('service-config-version')!;
      const bodies = [2, 3].map((n) => ({ schema: { ...schema, version: `from-node-${n}` } }));
      const [a, b] = await Promise.all([
        client(two).put(path, bodies[0], { 'Service-Config-Version': version }),
        client(three).put(path, bodies[1], { 'Service-Config-Version': version }),
      ]);
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const winner = a.status === 200 ? a : b;
      const loser = a.status === 200 ? b : a;
      expect(loser.text).toContain(`Valo-Config-Version: ${winner.headers.get('service-config-version')} `);
      await until('every node to hold the winner', async () => {
        const views = await Promise.all([one, two, three].map((node) => client(node).get(path)));
        return views.every((view) => view.json.schema.version === winner.json.schema.version &&
          view.headers.get('service-config-version') === winner.headers.get('service-config-version'));
      }, 5_000);
    }
  });
});

describe('cluster - a node down during writes', () => {
  it('marks a SIGSTOPped node unavailable within 5 s, keeps writing with hints, and replays them', async () => {
    await writeWhile(() => [one, three], async () => {
      two.pause();
      const pausedAt = Date.now();
      await until('node-2 unavailable', async () => (await client(one).get('/cluster/nodes/node-2')).json.node.available === 'false', 10_000);
      expect(Date.now() - pausedAt).toBeLessThan(5_000);
      await sleep(1_000);
      expect(await hintedFor('node-2')).toBeGreaterThan(0);
      two.resume();
      await until('node-2 available', async () => (await client(one).get('/cluster/nodes/node-2')).json.node.available === 'true', 10_000);
    });
    // Hints drain within a few replay rounds.
    await until('placement after hint replay', async () => {
      await expectEverythingPlaced([one, two, three]);
      return true;
    }, 20_000);
    await until('hint buffers empty', async () => (await hintedFor('node-2')) === 0, 10_000);
  });
});

describe('cluster - removing a node', () => {
  it('takes node-3 Leaving → Left, moves its data to the next owners, and it drops its own', async () => {
    const response = await client(one).delete('/cluster/nodes/node-3');
    expect(response.status).toBe(200);
    await until('node-3 Left', async () => (await client(one).get('/cluster/nodes/node-3')).json.node.state === 'Left');
    const states = events.filter((event) => event.node === 'node-3').map((event) => event.state);
    expect(states.slice(-2)).toEqual(['Leaving', 'Left']);
    await expectEverythingPlaced([one, two]);
    await until('node-3 dropped its data', async () => {
      const counts = (await client(three).get('/_internal/repos/tsr/demo/cluster/metrics')).json;
      return counts.total === 0;
    }, 10_000);
  });
});

describe('cluster - kill -9 mid-transfer', () => {
  it('a joining node killed mid-transfer resumes after restart and ends Joined with every payload', async () => {
    // Small chunks make the transfer long enough to be caught in the middle.
    four = await startClusterNode('node-4', { join: true });
    const slowArgs = ['--cluster-transfer-chunk-bytes', '2048'];
    await one.kill('SIGTERM');
    one = await restartWith(one, slowArgs);
    await two.kill('SIGTERM');
    two = await restartWith(two, slowArgs);
    await until('cluster available again', async () => (await client(one).get('/cluster/nodes/node-2')).json.node.available === 'true', 15_000);
    expect((await addNode(one, four)).status).toBe(200);
    const caught = await until('a transfer in the middle', async () => {
      const actions = (await client(one).get('/cluster/transfers')).json.actions as Array<{ to: string; repo: string; percentComplete: number; complete: boolean }>;
      return actions.find((action) => action.to === 'node-4' && action.repo !== 'KV' && action.percentComplete > 0 && action.percentComplete < 100 && !action.complete);
    }, 30_000);
    expect(caught.percentComplete).toBeGreaterThan(0);
    await four.kill('SIGKILL');
    await four.launch();
    await waitState(four, 'Joined', 120_000);
    await expectEverythingPlaced([one, two, four]);
  }, 180_000);
});

describe('cluster - identity and a killed source', () => {
  it('refuses to add a node whose public key is not the one its process holds', async () => {
    const five = await startClusterNode('node-5', { join: true, args: ['--cluster-transfer-chunk-bytes', '2048'] });
    const wrongKey = (await client(one).get('/cluster/localNode')).json.node.publicKey;
    const response = await client(one).post('/cluster/nodes', { nodes: [{ name: 'node-5', publicKey: wrongKey, host: '127.0.0.1', port: five.peerPort }] });
    expect(response.status).toBe(400);
    expect(response.json.error.message).toMatch(/answered with another key than /);
    expect((await client(five).get('/cluster/localNode')).json.node.state).toBe('Pending');
    expect((await client(one).get('/cluster/nodes')).json.nodes.map((node: { name: string }) => node.name)).not.toContain('node-5');
    nodeFive = five;
  });

  it('a transfer whose source is killed mid-way resumes once the source is back', async () => {
    const five = nodeFive!;
    expect((await addNode(one, five)).status).toBe(200);
    const caught = await until('a transfer to node-5 in the middle', async () => {
      const actions = (await client(one).get('/cluster/transfers')).json.actions as Array<{ from: string; to: string; repo: string; percentComplete: number; complete: boolean }>;
      return actions.find((action) => action.to === 'node-5' && action.repo !== 'KV' && action.percentComplete > 0 && action.percentComplete < 100 && !action.complete);
    }, 30_000);
    const source = [one, two, four].find((node) => node.name === caught.from)!;
    await source.kill('SIGKILL');
    await source.launch();
    await waitState(five, 'Joined', 120_000);
    await expectEverythingPlaced([one, two, four, five]);
  }, 180_000);
});

let nodeFive: NodeProcess | undefined;

/** Records hinted for `target`, summed over the hand-off buffers of every node (monitoring). */
async function hintedFor(target: string): Promise<number> {
  const response = await client(one).get('/monitoring/demo/handoff');
  expect(response.status).toBe(200);
  let records = 0;
  for (const node of response.json.nodes as Array<{ details: { targets?: Array<{ target: string; records: number }> } }>) {
    for (const entry of node.details.targets ?? []) if (entry.target === target) records += entry.records;
  }
  return records;
}

/** Restarts a node with the same data, ports and name, and extra flags. */
async function restartWith(node: NodeProcess, args: string[]): Promise<NodeProcess> {
  return startClusterNode(node.name, { dataDir: node.dataDir, httpPort: node.httpPort, peerPort: node.peerPort, args });
}
