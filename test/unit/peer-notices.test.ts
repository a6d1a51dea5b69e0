// One-way notices (heartbeats) on one long-lived stream per peer: each still a signed envelope
// checked on arrival; a forged one ends the stream and its sender hears of it; strangers get
// no stream; and open streams hold none of the slots that bound calls in flight.

import { createServer, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { CORE_MESSAGE, PING } from '../../src/cluster/core-messages.js';
import { encodeBody, encodeEnvelope } from '../../src/peer/codec.js';
import { callerMetadata } from '../../src/peer/inbound-gate.js';
import { PeerUnavailableError } from '../../src/peer/errors.js';
import { NOTICES_QUEUED_MAX } from '../../src/peer/notice-streams.js';
import { peerMethodPath } from '../../src/peer/proto.js';
import { sealEnvelope, signingKeyOf } from '../../src/peer/signing.js';
import { PeerTransport } from '../../src/peer/transport.js';
import type { PeerMessage } from '../../src/protocol/cluster-types.js';
import { loopbackDirectory, newIdentity, PEER_HOST } from '../kit/peer-pair.js';

const HEARTBEAT: PeerMessage = { type: 'heartbeat', epoch: 3, at: { address: '127.0.0.1', port: 9000, httpPort: 8000 } } as PeerMessage;
const started: PeerTransport[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((transport) => transport.close(100)));
});

/** Two transports that know each other, what b was told, and `make` to start one of them again. */
async function pair(options: { callsInFlightMax?: number } = {}) {
  const ids = { a: newIdentity(), b: newIdentity() };
  const ports: Record<string, number> = {};
  const entries = { a: { key: ids.a.publicKeyBase64, port: () => ports.a! }, b: { key: ids.b.publicKeyBase64, port: () => ports.b! } };
  const make = (name: 'a' | 'b', port = 0) =>
    new PeerTransport({ name, identity: ids[name], directory: loopbackDirectory(entries), replayWindowMs: 5_000, log: pino({ level: 'silent' }), host: PEER_HOST, port, ...options });
  const a = make('a');
  const b = make('b');
  started.push(a, b);
  ports.a = await a.start();
  ports.b = await b.start();
  const heard: Array<{ sender: string; epoch: number }> = [];
  b.handle(CORE_MESSAGE, async (sender, message) => {
    heard.push({ sender, epoch: (message as { epoch: number }).epoch });
    return {};
  });
  return { a, b, ids, heard, make };
}

async function until(what: string, check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('peer notices - one-way messages on one stream per peer', () => {
  it('delivers every notice, checked and in order, on one stream', async () => {
    const { a, b, heard } = await pair();
    const errors: Error[] = [];
    for (let epoch = 1; epoch <= 50; epoch += 1) expect(a.notify('b', CORE_MESSAGE, { ...HEARTBEAT, epoch } as PeerMessage, (error) => errors.push(error))).toBe(true);
    await until('50 notices', () => heard.length === 50);
    expect(heard.map((each) => each.epoch)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
    expect(new Set(heard.map((each) => each.sender))).toEqual(new Set(['a']));
    expect(errors).toEqual([]);
    expect(b.counters.snapshot().find((peer) => peer.peer === 'a')?.received.messages).toBe(50);
  });

  it('refuses a kind that is not one-way, and ends the stream of a forged notice, telling its sender', async () => {
    const { a, b, ids, heard } = await pair();
    expect(() => a.notify('b', PING as never, {}, () => undefined)).toThrow(/not a one-way kind/);
    // A notice signed by a's key but meant for someone else: its recipient check fails at b.
    const client = new grpc.Client(`${PEER_HOST}:${b.port}`, grpc.credentials.createInsecure());
    const status = await new Promise<grpc.ServiceError | null>((resolve) => {
      const call = client.makeClientStreamRequest<Buffer, Buffer>(peerMethodPath('Notify'), (bytes) => bytes, (bytes) => bytes, callerMetadata(signingKeyOf(ids.a), 'a', CORE_MESSAGE.name, Date.now()), {}, (error) => resolve(error));
      const envelope = sealEnvelope({ signingKey: signingKeyOf(ids.a), sender: 'a', kind: CORE_MESSAGE.name, body: encodeBody(CORE_MESSAGE.request, HEARTBEAT), sentAtMs: Date.now(), recipientPublicKey: newIdentity().publicKey, replyTo: new Uint8Array() });
      call.write(Buffer.from(encodeEnvelope(envelope)));
    });
    client.close();
    expect(status?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status?.details).toMatch(/bad signature/);
    expect(heard).toEqual([]);
  });

  it('gives a stranger no stream', async () => {
    const { b } = await pair();
    const stranger = newIdentity();
    const client = new grpc.Client(`${PEER_HOST}:${b.port}`, grpc.credentials.createInsecure());
    const status = await new Promise<grpc.ServiceError | null>((resolve) => {
      const call = client.makeClientStreamRequest<Buffer, Buffer>(peerMethodPath('Notify'), (bytes) => bytes, (bytes) => bytes, callerMetadata(signingKeyOf(stranger), 'x', PING.name, Date.now()), {}, (error) => resolve(error));
      call.write(Buffer.alloc(10));
    });
    client.close();
    expect(status?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(status?.details).toMatch(/unknown sender 'x'/);
  });

  it('reports a stream that breaks, and opens another with the next notice', async () => {
    const { a, b, heard, make } = await pair();
    const errors: Error[] = [];
    a.notify('b', CORE_MESSAGE, HEARTBEAT, (error) => errors.push(error));
    await until('the first notice', () => heard.length === 1);
    const port = b.port;
    await b.close(0);
    await until('the broken stream reported', () => errors.length === 1);
    expect(errors[0]).toBeInstanceOf(PeerUnavailableError);
    const again = make('b', port);
    started.push(again);
    await again.start();
    again.handle(CORE_MESSAGE, async (sender) => {
      heard.push({ sender, epoch: 0 });
      return {};
    });
    await until('a notice on a new stream', () => {
      a.notify('b', CORE_MESSAGE, HEARTBEAT, (error) => errors.push(error));
      return heard.length >= 2;
    }, 10_000);
  });

  it('keeps at most NOTICES_QUEUED_MAX notices for a peer that takes none, and drops the rest', async () => {
    // A peer that accepts the connection and never reads from it (a paused process).
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, PEER_HOST, resolve));
    const port = (silent.address() as { port: number }).port;
    const id = newIdentity();
    const a = new PeerTransport({
      name: 'a', identity: id, replayWindowMs: 5_000, log: pino({ level: 'silent' }), host: PEER_HOST, port: 0,
      directory: loopbackDirectory({ a: { key: id.publicKeyBase64, port: () => 0 }, b: { key: newIdentity().publicKeyBase64, port: () => port } }),
    });
    started.push(a);
    await a.start();
    const sent = Array.from({ length: NOTICES_QUEUED_MAX + 20 }, () => a.notify('b', CORE_MESSAGE, HEARTBEAT, () => undefined));
    expect(sent.filter(Boolean)).toHaveLength(NOTICES_QUEUED_MAX);
    expect(sent.slice(NOTICES_QUEUED_MAX).some(Boolean)).toBe(false);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it('holds none of the slots of calls in flight', async () => {
    const { a, b, heard } = await pair({ callsInFlightMax: 1 });
    b.handle(PING, async () => ({ name: 'b', publicKey: '', state: 'Joined', zone: 'z', httpPort: 1, address: PEER_HOST, port: 1 }));
    a.notify('b', CORE_MESSAGE, HEARTBEAT, () => undefined);
    await until('the notice', () => heard.length === 1);
    expect(b.gate.inFlight).toBe(0);
    await expect(a.call('b', PING, {}, { deadlineMs: 2_000 })).resolves.toMatchObject({ name: 'b' });
  });
});
