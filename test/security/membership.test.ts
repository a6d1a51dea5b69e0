// Attack class "a stranger joins, captures or crashes a node" (docs/security.md): the
// membership endpoints need the admin secret, a Pending node refuses a malformed or
// stranger's Admit (and keeps running), a node told a join token trusts only the keys it
// names, even across a restart, POST /cluster/nodes names why a node cannot be added only
// to a caller the membership authority admits, and refuses a relay in front of a real node.

import { createServer, connect, type Server } from 'node:net';
import nacl from 'tweetnacl';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Membership } from '../../src/protocol/cluster-types.js';
import { PeerTransport } from '../../src/peer/transport.js';
import { FAST_CLUSTER_ARGS, localNode, startClusterNode, waitState } from '../kit/cluster.js';
import { cleanup, client, freePort, type NodeProcess } from '../kit/node-process.js';
import { alive, figure } from './kit.js';
import { ADMIT } from '../../src/cluster/core-messages.js';

const SECRET = 'membership-suite-secret-0123456789';
const admin = { authorization: `Bearer ${SECRET}` };
let one: NodeProcess;
let stranger: PeerTransport;
let strangerKey: string;

beforeAll(async () => {
  one = await startClusterNode('node-1', { args: ['--admin-secret', SECRET] });
  const pair = nacl.sign.keyPair();
  strangerKey = Buffer.from(pair.publicKey).toString('base64');
  stranger = new PeerTransport({
    name: 'evil',
    identity: { ...pair, publicKeyBase64: strangerKey },
    directory: { publicKeyOf: () => undefined, addressOf: () => undefined },
    replayWindowMs: 30_000,
    log: pino({ level: 'silent' }),
    host: '127.0.0.1',
    port: 0,
  });
  await stranger.start();
}, 60_000);
afterAll(async () => {
  await stranger.close(1_000);
  await cleanup();
});

/** The table a stranger sends: itself Joined, the target Pending and joining. */
function strangersTable(target: NodeProcess, targetKey: string): Membership {
  return {
    epoch: 2,
    members: [
      { name: 'evil', publicKey: strangerKey, address: '127.0.0.1', port: stranger.port, httpPort: 1, zone: 'z', state: 'Joined' },
      { name: target.name, publicKey: targetKey, address: '127.0.0.1', port: target.peerPort, httpPort: target.httpPort, zone: 'local', state: 'Pending' },
    ].sort((a, b) => (a.name < b.name ? -1 : 1)) as Membership['members'],
    change: { id: `e2-join-${target.name}`, kind: 'join', node: target.name, slots: [], transfers: [] },
  };
}

async function admit(target: NodeProcess, membership: Membership): Promise<string> {
  const key = (await localNode(target)).publicKey;
  return stranger.callUnknown({ address: '127.0.0.1', port: target.peerPort }, key, ADMIT, { membership, targetPublicKey: key }, { deadlineMs: 5_000 }).then(
    () => 'accepted',
    (error: { code?: string }) => error.code ?? 'error',
  );
}

describe('security - membership authority', () => {
  it('POST and DELETE /cluster/nodes and the join token need the admin secret', async () => {
    const entry = { nodes: [{ name: 'x', publicKey: Buffer.alloc(32, 7).toString('base64'), address: '127.0.0.1', port: 1 }] };
    const answers = [
      await client(one).post('/cluster/nodes', entry),
      await client(one).post('/cluster/nodes', entry, { authorization: 'Bearer not-the-secret-at-all' }),
      await client(one).delete('/cluster/nodes/node-1'),
      await client(one).get('/cluster/join-token'),
    ];
    figure('membership without the admin secret', { requests: answers.length, statuses: answers.map((answer) => answer.status) });
    for (const answer of answers) expect(answer.status).toBe(401);
  });

  it("a Pending node (bare --join) refuses an Admit with unsorted members, logs it and keeps running (it exited 70)", async () => {
    const pending = await startClusterNode('pending', { join: true });
    const key = (await localNode(pending)).publicKey;
    const table = strangersTable(pending, key);
    const unsorted = { ...table, members: [...table.members].reverse() };
    const outcome = await admit(pending, unsorted);
    expect(outcome).toBe('PEER_AUTH');
    expect(alive(pending)).toBe(true);
    expect((await localNode(pending)).state).toBe('Pending');
    // The node's log reaches the test through a pipe, possibly after the refusal's answer.
    await expect.poll(() => pending.output, { timeout: 10_000 }).toMatch(/Admit refused.*not sorted|not sorted.*Admit refused/);
    figure('malformed Admit to a Pending node', { outcome, alive: alive(pending), state: (await localNode(pending)).state });
  });

  it("a node started with a join token refuses a stranger's well-formed Admit, and is still Pending after a restart", async () => {
    const token = (await client(one).get('/cluster/join-token', admin)).json.joinToken as string;
    const guarded = await startClusterNode('guarded', { join: true, args: ['--join-token', token] });
    const key = (await localNode(guarded)).publicKey;
    const outcome = await admit(guarded, strangersTable(guarded, key));
    expect(outcome).toBe('PEER_AUTH');
    expect(guarded.output).toMatch(/join token/);
    await guarded.restart();
    expect((await localNode(guarded)).state).toBe('Pending');
    figure("stranger's Admit to a join-token node", { outcome, stateAfterRestart: 'Pending' });
    // The cluster the token names admits it.
    const added = await client(one).post('/cluster/nodes', { nodes: [{ name: 'guarded', publicKey: key, address: '127.0.0.1', port: guarded.peerPort }] }, admin);
    expect(added.status).toBe(200);
    await waitState(guarded, 'Joined');
  });

  it('POST /cluster/nodes names the cause to the administrator (refused, not a peer port, another key, timed out), and answers anyone else 401 before calling out', async () => {
    const logged = await startClusterNode('logged', { args: ['--admin-secret', SECRET, '--log-level', 'info', '--log-format', 'json'] });
    const pending = await startClusterNode('probe', { join: true });
    const { publicKey } = await localNode(pending);
    const closed = await freePort();
    const silent = await listening();
    const attempt = async (port: number, key: string, headers: Record<string, string> = admin) => {
      const started = performance.now();
      const response = await client(logged).post('/cluster/nodes', { nodes: [{ name: 'probe', publicKey: key, address: '127.0.0.1', port }] }, headers);
      return { status: response.status, message: String(response.json.error.message), ms: Math.round(performance.now() - started) };
    };
    const answers = {
      refused: await attempt(closed, publicKey),
      httpPort: await attempt(pending.httpPort, publicKey),
      otherKey: await attempt(pending.peerPort, Buffer.alloc(32, 9).toString('base64')),
      otherPeer: await attempt(one.peerPort, publicKey),
      silent: await attempt(silent.port, publicKey),
      anonymous: await attempt(closed, publicKey, {}),
    };
    silent.server.close();
    figure('POST /cluster/nodes at a wrong port', { answers });
    expect(answers.refused).toMatchObject({ status: 400, message: expect.stringMatching(/^connection refused at 127\.0\.0\.1:\d+: nothing listens there/) });
    expect(answers.httpPort).toMatchObject({ status: 400, message: expect.stringMatching(/^127\.0\.0\.1:\d+ is not a Tributary peer port/) });
    expect(answers.otherKey).toMatchObject({ status: 400, message: expect.stringMatching(/^the node at 127\.0\.0\.1:\d+ answered with another key than /) });
    expect(answers.otherPeer).toMatchObject({ status: 400, message: expect.stringMatching(/answered with another key than /) });
    // FAST_CLUSTER_ARGS: peer deadline 2 s. The causes known at once are answered at once.
    expect(answers.silent).toMatchObject({ status: 400, message: expect.stringMatching(/^no answer from 127\.0\.0\.1:\d+ within 2000 ms/) });
    expect(answers.silent.ms).toBeGreaterThanOrEqual(1_900);
    for (const quick of [answers.refused, answers.httpPort, answers.otherKey]) expect(quick.ms).toBeLessThan(1_500);
    expect(answers.anonymous.status).toBe(401);
    expect((await localNode(pending)).state).toBe('Pending');
    // The coordinator logs one line per failure, with its cause, and no stack (that is at debug).
    const failures = logged.output.split('\n').filter((line) => line.includes('identity proof failed'));
    expect(failures.map((line) => (JSON.parse(line) as { cause: string }).cause)).toEqual(['connection refused', 'not a Tributary peer port', 'another key', 'another key', 'timed out']);
    expect(logged.output).not.toMatch(/"stack"|\n\s+at /);
  });

  it('a relay in front of a real Pending node is refused: the signed reply names where the node is', async () => {
    const real = await startClusterNode('relayed', { join: true });
    const relay = await tcpRelay(real.peerPort);
    const { publicKey } = await localNode(real);
    const response = await client(one).post('/cluster/nodes', { nodes: [{ name: 'relayed', publicKey, address: '127.0.0.1', port: relay.port }] }, admin);
    relay.server.close();
    figure('relay in front of a Pending node', { status: response.status });
    expect(response.status).toBe(400);
    expect(response.json.error.message).toMatch(new RegExp(`says it is reached at 127\\.0\\.0\\.1:${real.peerPort}`));
    expect((await localNode(real)).state).toBe('Pending');
  });
});

async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.on('error', () => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** Forwards every connection to 127.0.0.1:`targetPort`, byte for byte. */
async function tcpRelay(targetPort: number): Promise<{ server: Server; port: number }> {
  const server = createServer((inbound) => {
    const outbound = connect(targetPort, '127.0.0.1');
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}
