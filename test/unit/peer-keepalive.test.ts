// Peer connections whose packets are silently dropped (docs/cluster.md, "Transfers"): a TCP
// proxy between two transports stops forwarding without closing anything, as a partition
// does. A transfer stream must be noticed broken within a keepalive (heartbeat) interval
// and the keepalive timeout (the failure timeout), and a stream opened afterwards must get
// through once packets flow again, also when the first dial after the break went into the void.

import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeerUnavailableError } from '../../src/peer/errors.js';
import type { TransferAck, TransferChunk } from '../../src/peer/codec.js';
import { PeerTransport } from '../../src/peer/transport.js';
import { loopbackDirectory, newIdentity, PEER_HOST } from '../kit/peer-pair.js';

const KEEPALIVE_MS = 250;
/** A node passes its failure timeout, several heartbeat intervals. */
const TIMEOUT_MS = 500;
/** Timers and the event loop of a busy test machine. */
const SLACK_MS = 250;

/** Forwards TCP to `targetPort` until blackhole(); from then on every byte of every connection made so far is dropped. */
class BlackholeProxy {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private dropping = false;
  /** Connections accepted while dropping stay dead, as a dial into a partition does. */
  private generation = 0;
  port = 0;

  constructor(private readonly targetPort: number) {
    this.server = createServer((client) => this.accept(client));
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, PEER_HOST, resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  blackhole(): void {
    this.dropping = true;
    this.generation += 1;
  }

  /** New connections are forwarded again; those of before stay dead. */
  restore(): void {
    this.dropping = false;
    this.generation += 1;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    this.sockets.add(client);
    client.on('error', () => undefined);
    if (this.dropping) {
      client.on('data', () => undefined);
      return;
    }
    const generation = this.generation;
    const upstream = createConnection(this.targetPort, PEER_HOST);
    this.sockets.add(upstream);
    upstream.on('error', () => undefined);
    const live = () => this.generation === generation && !this.dropping;
    client.on('data', (data) => void (live() && upstream.write(data)));
    upstream.on('data', (data) => void (live() && client.write(data)));
    client.on('close', () => live() && upstream.destroy());
    upstream.on('close', () => live() && client.destroy());
  }
}

const chunkOf = (seq: number): TransferChunk => ({
  type: 'transfer-chunk',
  transferId: 'ka',
  seq,
  chunk: { bytes: Buffer.alloc(100, seq), records: 1, cursor: `k${seq}` },
  last: false,
  totalEstimate: 10,
  fromCursor: seq === 0 ? undefined : `k${seq - 1}`,
});

describe('peer keepalive - a stream whose packets are silently dropped', () => {
  const keys = { a: newIdentity(), b: newIdentity() };
  let proxy: BlackholeProxy;
  let a: PeerTransport;
  let b: PeerTransport;

  beforeAll(async () => {
    const log = pino({ level: 'silent' });
    const common = { replayWindowMs: 30_000, log, host: PEER_HOST, port: 0, keepaliveMs: KEEPALIVE_MS, keepaliveTimeoutMs: TIMEOUT_MS };
    b = new PeerTransport({ ...common, name: 'b', identity: keys.b, directory: loopbackDirectory({ a: { key: keys.a.publicKeyBase64, port: () => 1 } }) });
    b.handleTransfer(async (_sender, chunk) => ({ type: 'transfer-ack', transferId: chunk.transferId, seq: chunk.seq }));
    await b.start();
    proxy = new BlackholeProxy(b.port);
    await proxy.start();
    // a reaches b only through the proxy.
    a = new PeerTransport({ ...common, name: 'a', identity: keys.a, directory: loopbackDirectory({ b: { key: keys.b.publicKeyBase64, port: () => proxy.port } }) });
    await a.start();
  });

  afterAll(async () => {
    await a.close(100);
    await b.close(100);
    await proxy.close();
  });

  function open(): { acks: TransferAck[]; closed: Promise<unknown> } & { send(chunk: TransferChunk): boolean } {
    const acks: TransferAck[] = [];
    let resolveClosed: (error: unknown) => void = () => undefined;
    const closed = new Promise<unknown>((resolve) => (resolveClosed = resolve));
    const stream = a.openTransferStream('b', { onAck: (ack) => acks.push(ack), onClose: (error) => resolveClosed(error) }, { deadlineMs: 24 * 3_600_000 });
    return { acks, closed, send: (chunk) => stream.send(chunk) };
  }

  async function until(what: string, probe: () => boolean, timeoutMs: number): Promise<number> {
    const started = performance.now();
    while (!probe()) {
      if (performance.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return performance.now() - started;
  }

  it('is noticed broken within a keepalive interval and timeout, and a new stream gets through once packets flow again', async () => {
    const first = open();
    first.send(chunkOf(0));
    await until('the first ack', () => first.acks.length === 1, 5_000);

    proxy.blackhole();
    const cutAt = performance.now();
    first.send(chunkOf(1));
    let closedWith: unknown;
    void first.closed.then((error) => (closedWith = error ?? 'clean'));
    const noticedMs = await until('the broken stream noticed', () => closedWith !== undefined, KEEPALIVE_MS + TIMEOUT_MS + SLACK_MS);
    expect(closedWith).toBeInstanceOf(PeerUnavailableError);
    expect(first.acks).toHaveLength(1);
    expect(noticedMs).toBeGreaterThan(0);

    // Re-opened while still cut: the dial goes into the void, as a SYN to a partitioned node.
    const second = open();
    second.send(chunkOf(1));
    await new Promise((resolve) => setTimeout(resolve, KEEPALIVE_MS));
    expect(second.acks).toHaveLength(0);

    // Packets flow again. The cluster shell opens a stream for each chunk once the last one
    // closed, and heartbeats make calls all the while: here a stream every quarter interval.
    // The dial stuck in the void is given up after the timeout, and a new one gets through.
    proxy.restore();
    const healedAt = performance.now();
    const streams = [second];
    while (!streams.some((stream) => stream.acks.length > 0) && performance.now() - healedAt < TIMEOUT_MS + 2 * SLACK_MS) {
      await new Promise((resolve) => setTimeout(resolve, KEEPALIVE_MS / 4));
      const next = open();
      next.send(chunkOf(1));
      streams.push(next);
    }
    const reopenedMs = performance.now() - healedAt;
    expect(streams.flatMap((stream) => stream.acks.map((ack) => ack.seq))).toContain(1);
    expect(reopenedMs).toBeLessThan(TIMEOUT_MS + 2 * SLACK_MS);
    expect(performance.now() - cutAt).toBeGreaterThan(KEEPALIVE_MS);
  }, 20_000);
});
