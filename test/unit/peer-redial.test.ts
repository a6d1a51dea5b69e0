// A peer that restarts (docs/cluster.md, "Hints"): while it was down, this node's channel to
// it failed and waits out gRPC's reconnect backoff (up to 2 s), failing every call at once.
// Once the peer calls this node again (its heartbeats: the failure detector takes it for
// available from then on), a call to it must get through at once, not fail for the rest
// of the backoff: a write that fails then is hinted, and a read sent to the peer misses it.

import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { PeerTransport } from '../../src/peer/transport.js';
import { loopbackDirectory, newIdentity, PEER_HOST } from '../kit/peer-pair.js';
import { MONITORING_READ } from '../../src/monitoring/monitoring-peer.js';

const KEEPALIVE_MS = 200;
const CALL = { deadlineMs: 2_000 };

const read = (tenant: string) => ({ service: 'system', tenant, uri: undefined });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('peer transport - a peer back from a restart', () => {
  const keys = { a: newIdentity(), b: newIdentity() };
  const log = pino({ level: 'silent' });
  const common = { replayWindowMs: 30_000, log, host: PEER_HOST, keepaliveMs: KEEPALIVE_MS };
  const started: PeerTransport[] = [];
  let bPort = 0;
  let a: PeerTransport;

  async function startB(port: number): Promise<PeerTransport> {
    const b = new PeerTransport({ ...common, port, name: 'b', identity: keys.b, directory: loopbackDirectory({ a: { key: keys.a.publicKeyBase64, port: () => a.port } }) });
    b.handle(MONITORING_READ, async (sender, request) => ({ node: sender, details: { echo: request.tenant } }));
    started.push(b);
    bPort = await b.start();
    return b;
  }

  afterAll(async () => {
    for (const transport of started) await transport.close(100);
  });

  it('is called at once after it calls in, not after the reconnect backoff', async () => {
    a = new PeerTransport({ ...common, port: 0, name: 'a', identity: keys.a, directory: loopbackDirectory({ b: { key: keys.b.publicKeyBase64, port: () => bPort } }) });
    a.handle(MONITORING_READ, async (sender, request) => ({ node: sender, details: { echo: request.tenant } }));
    started.push(a);
    await a.start();
    const first = await startB(0);
    expect((await a.call('b', MONITORING_READ, read('up'), CALL)).details).toEqual({ echo: 'up' });

    // b goes down; a keeps calling (heartbeats, writes), and its channel backs off to the most.
    await first.close(0);
    const failedWhileDown: string[] = [];
    for (let round = 0; round < 30; round += 1) {
      await a.call('b', MONITORING_READ, read('down'), CALL).catch((error: Error) => failedWhileDown.push(error.message));
      await sleep(100);
    }
    expect(failedWhileDown.length).toBe(30);

    // b is back on its port and calls a, as its first heartbeat does; a's next call gets through.
    const restarted = await startB(bPort);
    expect((await restarted.call('a', MONITORING_READ, read('back'), CALL)).details).toEqual({ echo: 'back' });
    const calledAt = performance.now();
    const answer = await a.call('b', MONITORING_READ, read('again'), CALL);
    expect(answer.details).toEqual({ echo: 'again' });
    expect(performance.now() - calledAt).toBeLessThan(1_000);
  }, 20_000);
});
