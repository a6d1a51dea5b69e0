// Attack class "memory without bound": SSE clients that stop reading, many tag isolates, peer
// messages from strangers, huge definitions and deep JSON. Each attack is measured by the
// node's resident memory before and after, from /proc.

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import nacl from 'tweetnacl';
import { pino } from 'pino';
import { PeerTransport } from '../../src/peer/transport.js';
import { cleanup, client, NodeProcess, sleep } from '../kit/node-process.js';
import { alive, figure, ok, rssMiB } from './kit.js';
import { MONITORING_READ } from '../../src/monitoring/monitoring-peer.js';

const FEED = '/streams/demo/sec/feed';
let node: NodeProcess;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'memory', args: ['--limits-isolates-max', '32', '--limits-sse-clients-max', '64', '--limits-tag-timeout-ms', '2000'] });
  api = client(node);
  await ok(api.put(FEED, { schema: { version: '1', topDef: { type: 'record', properties: { text: { type: 'string' }, n: { type: 'int' } } } } }), 'feed');
}, 60_000);
afterAll(cleanup);

/**
 * An SSE client that sends its request and then reads nothing (its socket paused, so the
 * kernel buffers fill and the node's writes back up), until `drain()` reads what reached it:
 * a client the node dropped sees its stream end before everything offered.
 */
function stalledClient(path: string): Promise<{ socket: Socket; drain(): Promise<{ ended: boolean; bytes: number }> }> {
  return new Promise((resolve) => {
    let bytes = 0;
    const socket = connect(node.httpPort, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`);
      socket.pause();
      resolve({ socket, drain });
    });
    const ended = new Promise<void>((done) => {
      socket.once('end', () => done());
      socket.once('close', () => done());
    });
    socket.on('error', () => undefined);
    const drain = async () => {
      socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
      socket.resume();
      const finished = await Promise.race([ended.then(() => true), sleep(10_000).then(() => false)]);
      return { ended: finished, bytes };
    };
  });
}

describe('security - bounded memory', () => {
  it('SSE clients that stop reading are dropped at their buffer bound: 20 clients offered 30 MB each', async () => {
    const uri = (await ok(api.post('/execution/demo/sessions'), 'session')).session as string;
    const [query] = await ok(api.put(uri, { queries: [{ id: 'all', body: `from ${FEED} select text, n` }] }), 'put session');
    await ok(api.put(`${uri}/queries/all/_start`), 'start');
    const outputUri = query.query.outputs[0].outputUri as string;
    const clients = await Promise.all(Array.from({ length: 20 }, () => stalledClient(outputUri)));
    await sleep(300);
    const before = rssMiB(node);
    let peak = before;
    const text = 'y'.repeat(10_000);
    for (let batch = 0; batch < 30; batch++) {
      await ok(api.post(FEED, Array.from({ length: 100 }, (_, n) => ({ text, n }))), 'feed batch');
      peak = Math.max(peak, rssMiB(node));
    }
    const growth = Math.round(peak - before);
    const received = await Promise.all(clients.map(({ drain }) => drain()));
    const offeredBytes = 30 * 100 * text.length;
    const dropped = received.filter(({ ended, bytes }) => ended && bytes < offeredBytes);
    figure('SSE clients not reading', { clients: 20, offeredMBEach: offeredBytes / 1e6, dropped: dropped.length, mostReceivedMB: Math.max(...received.map(({ bytes }) => bytes)) / 1e6, rssGrowthMiB: growth });
    expect(dropped).toHaveLength(20);
    // Far below the 572 MiB offered: 20 buffers of 4 MiB (kept as strings, up to 2 bytes a
    // character) and the batches in flight. Measured 135-153 MiB on 2 cores.
    expect(growth).toBeLessThan(200);
    for (const { socket } of clients) socket.destroy();
    await api.delete(uri);
  });

  it('tag isolates stay within the pool: 10 streams × 32 tags with isolatesMax 32', async () => {
    const before = rssMiB(node);
    const tags = { tags: Array.from({ length: 32 }, (_, i) => ({ field: `t${i}`, lang: 'javascript', enabled: true, script: `const table = new Array(20000).fill(${i}); function tag(payload) { return [String(table.length + payload.n)]; }` })) };
    for (let stream = 0; stream < 10; stream++) {
      const path = `/streams/demo/tagged/s${stream}`;
      await ok(api.put(path, { schema: { version: '1', topDef: { type: 'record', properties: { n: { type: 'int' } } } } }), 'stream');
      await ok(api.put(`${path}/tags`, tags), 'tags');
      await ok(api.post(path, [{ n: stream }]), 'payload');
    }
    const growth = Math.round(rssMiB(node) - before);
    figure('tag isolates', { streams: 10, tagsEach: 32, isolatesMax: 32, rssGrowthMiB: growth });
    expect(growth).toBeLessThan(250);
    expect(alive(node)).toBe(true);
  });

  it('a stranger sending 40 peer messages of 12 MiB at once is refused before any body is read', async () => {
    const pair = nacl.sign.keyPair();
    const stranger = new PeerTransport({
      name: 'stranger',
      identity: { ...pair, publicKeyBase64: Buffer.from(pair.publicKey).toString('base64') },
      directory: { publicKeyOf: () => undefined, addressOf: () => undefined },
      replayWindowMs: 30_000,
      log: pino({ level: 'silent' }),
      host: '127.0.0.1',
      port: 0,
    });
    const nodeKey = (await ok(api.get('/cluster/localNode'), 'localNode')).node.publicKey as string;
    const before = rssMiB(node);
    const body = { service: 'system', tenant: 'z'.repeat(12 * 1024 * 1024), uri: undefined };
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, () => stranger.callUnknown({ address: '127.0.0.1', port: node.peerPort }, nodeKey, MONITORING_READ, body, { deadlineMs: 30_000 }).then(() => 'accepted', (error: { code?: string }) => error.code ?? 'error')),
    );
    await stranger.close(1_000);
    const growth = Math.round(rssMiB(node) - before);
    figure('peer messages from a stranger', { messages: 40, mibEach: 12, accepted: outcomes.filter((outcome) => outcome === 'accepted').length, rssGrowthMiB: growth });
    expect(outcomes.every((outcome) => outcome === 'PEER_AUTH')).toBe(true);
    expect(growth).toBeLessThan(100);
  });

  it('a vendor document of 15 MiB is refused (413, naming the limit); the node keeps nothing of it', async () => {
    const before = rssMiB(node);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await api.put(`/admin/demo/vendors/v${i}`, { id: `v${i}`, key: 'k', blob: 'b'.repeat(15 * 1024 * 1024) });
      statuses.push(response.status);
      expect(response.json.error.message).toMatch(/limit of one definition is 4194304/);
    }
    // Parsing each 15 MiB body takes memory for a moment; V8 keeps the pages, so RSS shows it.
    const growth = Math.round(rssMiB(node) - before);
    figure('15 MiB vendor documents', { sent: 4, statuses: [...new Set(statuses)], stored: 0, rssGrowthMiB: growth });
    expect(statuses.every((status) => status === 413)).toBe(true);
    expect((await api.get('/admin/demo/vendors')).json.instances).toEqual([]);
  });

  it('JSON nested 5,000 deep is a 400 at the body parser, and nothing deep is stored', async () => {
    const deep = `${'['.repeat(5_000)}1${']'.repeat(5_000)}`;
    const nested = `{"text":"x","n":1,"deep":${deep}}`;
    const responses = await Promise.all([api.post(FEED, nested), api.put('/admin/demo/vendors/deep', `{"id":"deep","key":"k","x":${deep}}`), api.post('/ssr/demo/_search', `{"query":${deep}}`)]);
    figure('JSON nested 5,000 deep', { statuses: responses.map((response) => response.status) });
    for (const response of responses) {
      expect(response.status).toBe(400);
      expect(response.json.error.message).toMatch(/deeper than the limit of 128 levels/);
    }
    expect(alive(node)).toBe(true);
  });
});
