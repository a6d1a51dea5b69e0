import { createServer } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import nacl from 'tweetnacl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Membership } from '../../src/protocol/cluster-types.js';
import type { NodeIdentity } from '../../src/peer/identity.js';
import { VersionConflictError } from '../../src/lib/errors.js';
import { PeerUnavailableError } from '../../src/peer/errors.js';
import { TRANSFER_CHUNK, decodeEnvelope, decodeProto, encodeBody, encodeEnvelope, encodeProto, type DigestAlgorithm, type TransferAck, type TransferChunk } from '../../src/peer/codec.js';
import { WRITE_RECORDS } from '../../src/cluster/write-messages.js';
import { NodeTable, type NodeDocument } from '../../src/cluster/node-table.js';
import { admitSenderKey, nodeTableDirectory, startPeerServer } from '../../src/cluster/peer-server.js';
import { sealEnvelope, signingKeyOf, verifyEnvelope, verifyingKeyOf } from '../../src/peer/signing.js';
import { PeerTransport, acceptStrangers, type PeerDirectory } from '../../src/peer/transport.js';
import { callerMetadata } from '../../src/peer/inbound-gate.js';
import { peerMethodPath, peerServiceDefinition } from '../../src/peer/proto.js';
import { ADMIT, PING } from '../../src/cluster/core-messages.js';
import { MONITORING_READ } from '../../src/monitoring/monitoring-peer.js';

const WINDOW_MS = 5_000;
const CALL = { deadlineMs: 5_000 };
const HOST = '127.0.0.1';

interface Peer {
  identity: NodeIdentity;
  transport: PeerTransport;
  logs: Array<Record<string, unknown>>;
  /** Names this peer knows: name → key and port. */
  known: Map<string, { publicKey: string; port: number }>;
}

function identity(): NodeIdentity {
  const pair = nacl.sign.keyPair();
  return { ...pair, publicKeyBase64: Buffer.from(pair.publicKey).toString('base64') };
}

function directoryOf(known: Peer['known']): PeerDirectory {
  return {
    publicKeyOf: (name) => known.get(name)?.publicKey,
    addressOf: (name) => {
      const entry = known.get(name);
      return entry === undefined ? undefined : { address: HOST, port: entry.port };
    },
  };
}

async function startPeer(name: string, options: { identity?: NodeIdentity; pending?: () => boolean; trustedKeys?: ReadonlySet<string>; digest?: DigestAlgorithm } = {}): Promise<Peer> {
  const keys = options.identity ?? identity();
  const logs: Peer['logs'] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as Record<string, unknown>) });
  const known: Peer['known'] = new Map();
  const pending = options.pending;
  const transport = new PeerTransport({
    name,
    identity: keys,
    directory: directoryOf(known),
    replayWindowMs: WINDOW_MS,
    log,
    host: HOST,
    port: 0,
    ...(options.digest === undefined ? {} : { digest: options.digest }),
    acceptUnknown:
      pending &&
      acceptStrangers(ADMIT, (sender, admit) => {
        if (!pending()) return undefined;
        const verdict = admitSenderKey(sender, admit, keys.publicKeyBase64, options.trustedKeys);
        if ('refusal' in verdict) log.warn({ sender, reason: verdict.refusal }, 'Admit refused');
        return 'key' in verdict ? verdict.key : undefined;
      }),
  });
  transport.handle(PING, async () => ({ name, publicKey: keys.publicKeyBase64, state: 'Joined', zone: 'local', httpPort: 8888, address: HOST, port: 1 }));
  // MonitoringRead stands for any call here: its tenant is echoed back with the verified sender.
  transport.handle(MONITORING_READ, async (sender, request) => {
    if (request.tenant === 'hang') return new Promise(() => undefined);
    if (request.tenant === 'conflict') throw new VersionConflictError('k', '1', '3');
    return { node: sender, details: { echo: request.tenant } };
  });
  await transport.start();
  return { identity: keys, transport, logs, known };
}

function introduce(to: Peer, ...others: Peer[]): void {
  for (const other of others) to.known.set(other.transport.name, { publicKey: other.identity.publicKeyBase64, port: other.transport.port });
}

/** A valid envelope from `from` to `to`, built outside the transport so a test can alter it. */
function envelopeFrom(from: Peer, to: Peer, kind: string, body: Uint8Array, overrides: { sentAtMs?: number; signer?: NodeIdentity } = {}) {
  return sealEnvelope({
    signingKey: signingKeyOf(overrides.signer ?? from.identity),
    sender: from.transport.name,
    kind,
    body,
    sentAtMs: overrides.sentAtMs ?? Date.now(),
    recipientPublicKey: to.identity.publicKey,
    replyTo: new Uint8Array(0),
  });
}

/** A call whose tenant the test peers echo (see startPeer). */
const echo = (text: string) => ({ service: 'echo', tenant: text, uri: undefined });
const echoBody = (text: string) => encodeBody(MONITORING_READ.request, echo(text));

function refusals(peer: Peer): string[] {
  return peer.logs.filter((line) => line.level === 40 && /refused/.test(String(line.msg))).map((line) => String(line.reason));
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let a: Peer;
let b: Peer;
let stranger: Peer;

beforeAll(async () => {
  [a, b, stranger] = await Promise.all([startPeer('a'), startPeer('b'), startPeer('c')]);
  introduce(a, b);
  introduce(b, a);
  introduce(stranger, a);
});

afterAll(async () => {
  await Promise.all([a, b, stranger].map((peer) => peer.transport.close(1_000)));
});

describe('peer transport - calls', () => {
  it('answers a call both ways, naming the verified sender', async () => {
    await expect(a.transport.call('b', PING, {}, CALL)).resolves.toEqual({ name: 'b', publicKey: b.identity.publicKeyBase64, state: 'Joined', zone: 'local', httpPort: 8888, address: HOST, port: 1 });
    const reply = await b.transport.call('a', MONITORING_READ, echo('q1'), CALL);
    expect(reply).toEqual({ node: 'b', details: { echo: 'q1' } });
  });

  it('calls several nodes with one body, each envelope signed for its own recipient', async () => {
    const d = await startPeer('d');
    try {
      introduce(d, a, b);
      introduce(a, d);
      introduce(b, d);
      const replies = await Promise.all(d.transport.callEach(['a', 'b'], MONITORING_READ, echo('fan'), CALL));
      // Both answered: each checked its envelope against its own key (one signed for a would be refused by b).
      expect(replies).toEqual([
        { node: 'd', details: { echo: 'fan' } },
        { node: 'd', details: { echo: 'fan' } },
      ]);
      // One outcome per node: a node that fails fails alone.
      const [toA, toNobody] = await Promise.allSettled(d.transport.callEach(['a', 'nobody'], MONITORING_READ, echo('half'), CALL));
      expect(toA).toEqual({ status: 'fulfilled', value: { node: 'd', details: { echo: 'half' } } });
      expect(toNobody).toMatchObject({ status: 'rejected', reason: { code: 'PEER_UNKNOWN' } });
    } finally {
      a.known.delete('d');
      b.known.delete('d');
      await d.transport.close(1_000);
    }
  });

  it('rethrows the remote error with its status, code, message and details', async () => {
    const error = await a.transport.call('b', MONITORING_READ, echo('conflict'), CALL).catch((caught: unknown) => caught);
    const expected = new VersionConflictError('k', '1', '3');
    expect(error).toMatchObject({ status: 409, code: 'VERSION_CONFLICT', message: expected.message, details: { currentVersion: '3' } });
  });

  it('refuses a kind nobody handles with 400', async () => {
    await expect(a.transport.call('b', WRITE_RECORDS, { repo: 'ssr', records: [], epoch: 3, replicas: 1 }, CALL)).rejects.toMatchObject({
      status: 400,
      code: 'BAD_PEER_MESSAGE',
    });
  });
});

describe('peer transport - refusals', () => {
  it('refuses and logs a forged message (body altered after signing)', async () => {
    const envelope = envelopeFrom(a, b, 'MonitoringRead', echoBody('amount 1'));
    const forged = { ...envelope, body: echoBody('amount 1000000') };
    await expect(a.transport.sendRawEnvelope('b', encodeEnvelope(forged), CALL)).rejects.toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(refusals(b).at(-1)).toMatch(/bad signature/);
  });

  it('refuses a replayed message (the exact same bytes again)', async () => {
    const bytes = encodeEnvelope(envelopeFrom(a, b, 'MonitoringRead', echoBody('once')));
    await expect(a.transport.sendRawEnvelope('b', bytes, CALL)).resolves.toEqual({ node: 'a', details: { echo: 'once' } });
    await expect(a.transport.sendRawEnvelope('b', bytes, CALL)).rejects.toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(refusals(b).at(-1)).toMatch(/already seen/);
  });

  it('refuses a timestamp outside the window, past or future', async () => {
    for (const skewMs of [-WINDOW_MS - 1_000, WINDOW_MS + 1_000]) {
      const envelope = envelopeFrom(a, b, 'Ping', encodeBody(PING.request, {}), { sentAtMs: Date.now() + skewMs });
      await expect(a.transport.sendRawEnvelope('b', encodeEnvelope(envelope), CALL)).rejects.toMatchObject({ status: 401, code: 'PEER_AUTH' });
      expect(refusals(b).at(-1)).toMatch(/outside/);
    }
  });

  it("refuses a message signed by a key that is not the sender's", async () => {
    const envelope = envelopeFrom(a, b, 'Ping', encodeBody(PING.request, {}), { signer: stranger.identity });
    await expect(a.transport.sendRawEnvelope('b', encodeEnvelope(envelope), CALL)).rejects.toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(refusals(b).at(-1)).toMatch(/bad signature/);
  });

  it('refuses a message meant for another node', async () => {
    const envelope = envelopeFrom(a, stranger, 'Ping', encodeBody(PING.request, {}));
    await expect(a.transport.sendRawEnvelope('b', encodeEnvelope(envelope), CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
  });

  it('refuses a sender not in the node table', async () => {
    await expect(stranger.transport.call('a', MONITORING_READ, echo(''), CALL)).rejects.toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(refusals(a).at(-1)).toMatch(/unknown sender 'c'/);
  });

  it('rejects a reply signed by a key that is not the callee’s', async () => {
    // An impostor named 'b' with its own key answers at the address the caller has for b.
    const impostor = await startPeer('b');
    introduce(impostor, a);
    const misled = await startPeer('a', { identity: a.identity });
    misled.known.set('b', { publicKey: b.identity.publicKeyBase64, port: impostor.transport.port });
    try {
      const error = await misled.transport.call('b', PING, {}, CALL).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ status: 401, code: 'PEER_AUTH', message: expect.stringMatching(/reply from b refused: bad signature/) });
      expect(misled.logs.some((line) => line.msg === 'peer reply refused')).toBe(true);
    } finally {
      await Promise.all([misled.transport.close(1_000), impostor.transport.close(1_000)]);
    }
  });
});

describe('peer transport - the node table as its directory', () => {
  it("knows a member of the node's own table before the node table lists it (one persist later), never anyone else", () => {
    const table = new NodeTable('a');
    const directory = nodeTableDirectory(table, (name) => (name === 'b' ? 'key-of-b' : undefined));
    expect(directory.publicKeyOf('b')).toBe('key-of-b');
    expect(directory.acceptsRequestsFrom?.('b', 'WriteRecords')).toBe(true);
    expect(directory.publicKeyOf('c')).toBeUndefined();
    expect(nodeTableDirectory(table).publicKeyOf('b')).toBeUndefined();
  });
});

describe('peer transport - the gate before the body', () => {
  it("refuses a stranger's large call from its header alone, never reading its body", async () => {
    const refusedBefore = a.transport.gate.refused;
    const body = echo('x'.repeat(8 * 1024 * 1024));
    const error = await stranger.transport.call('a', MONITORING_READ, body, CALL).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(a.transport.gate.refused).toBe(refusedBefore + 1);
    expect(refusals(a).at(-1)).toMatch(/unknown sender 'c'/);
  });

  it('refuses a call without a caller header, and one whose envelope is not the one its header announced', async () => {
    const raw = new grpc.Client(`${HOST}:${b.transport.port}`, grpc.credentials.createInsecure());
    try {
      const send = (metadata: grpc.Metadata) =>
        new Promise<grpc.ServiceError | undefined>((resolve) =>
          raw.makeUnaryRequest(peerMethodPath('Call'), (x: Buffer) => x, (x: Buffer) => x, Buffer.from(encodeEnvelope(envelopeFrom(a, b, 'MonitoringRead', echoBody('1')))), metadata, (error) => resolve(error ?? undefined)),
        );
      expect(await send(new grpc.Metadata())).toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      const lifted = callerMetadata(signingKeyOf(a.identity), 'a', 'MonitoringRead', Date.now());
      expect(await send(lifted)).toMatchObject({ code: grpc.status.UNAUTHENTICATED, details: expect.stringMatching(/differs from its caller header/) });
    } finally {
      raw.close();
    }
  });

  it('answers RESOURCE_EXHAUSTED (PEER_BUSY) beyond the calls it serves at once, and serves again after', async () => {
    const keys = identity();
    const limited = new PeerTransport({ name: 'lim', identity: keys, directory: directoryOf(new Map([['a', { publicKey: a.identity.publicKeyBase64, port: a.transport.port }]])), replayWindowMs: WINDOW_MS, log: pino({ level: 'silent' }), host: HOST, port: 0, callsInFlightMax: 2 });
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    limited.handle(MONITORING_READ, async () => {
      await held;
      return { node: 'lim', details: {} };
    });
    await limited.start();
    a.known.set('lim', { publicKey: keys.publicKeyBase64, port: limited.port });
    try {
      const first = a.transport.call('lim', MONITORING_READ, echo('1'), CALL);
      const second = a.transport.call('lim', MONITORING_READ, echo('2'), CALL);
      await until(() => limited.gate.inFlight === 2);
      await expect(a.transport.call('lim', MONITORING_READ, echo('3'), CALL)).rejects.toMatchObject({ status: 503, code: 'PEER_BUSY' });
      release();
      await Promise.all([first, second]);
      await until(() => limited.gate.inFlight === 0);
      await expect(a.transport.call('lim', MONITORING_READ, echo('4'), CALL)).resolves.toEqual({ node: 'lim', details: {} });
    } finally {
      a.known.delete('lim');
      await limited.close(1_000);
    }
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; tries < 200 && !condition(); tries++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('peer transport - Admit from a node not yet known', () => {
  let pending = true;
  let joiner: Peer;
  const admitted: Membership[] = [];

  beforeAll(async () => {
    joiner = await startPeer('p', { pending: () => pending });
    joiner.transport.handle(ADMIT, async (_sender, admit) => {
      admitted.push(admit.membership);
      return { name: 'p', publicKey: joiner.identity.publicKeyBase64, state: 'Pending', zone: 'local', httpPort: 8888, address: HOST, port: 1 };
    });
  });
  afterAll(() => joiner.transport.close(1_000));

  const membershipWith = (coordinatorKey: string): Membership => ({
    epoch: 2,
    members: [
      { name: 'a', publicKey: coordinatorKey, address: HOST, port: a.transport.port, httpPort: 1, zone: 'z', state: 'Joined' },
      { name: 'p', publicKey: joiner.identity.publicKeyBase64, address: HOST, port: joiner.transport.port, httpPort: 2, zone: 'z', state: 'Pending' },
    ],
    change: { id: 'e2-join-p', kind: 'join', node: 'p', slots: [], transfers: [] },
  });
  const target = () => ({ address: HOST, port: joiner.transport.port });

  it('accepts an Admit for its own key from the sender the membership names, while Pending', async () => {
    const admit = { membership: membershipWith(a.identity.publicKeyBase64), targetPublicKey: joiner.identity.publicKeyBase64 };
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, ADMIT, admit, CALL)).resolves.toEqual({
      name: 'p',
      publicKey: joiner.identity.publicKeyBase64,
      state: 'Pending',
      zone: 'local',
      httpPort: 8888,
      address: HOST,
      port: 1,
    });
    expect(admitted).toHaveLength(1);
  });

  it('refuses any other kind from an unknown sender, an Admit for another key, and one signed by another key', async () => {
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, MONITORING_READ, echo(''), CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    const elsewhere = { membership: membershipWith(a.identity.publicKeyBase64), targetPublicKey: b.identity.publicKeyBase64 };
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, ADMIT, elsewhere, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    const claimsOtherKey = { membership: membershipWith(b.identity.publicKeyBase64), targetPublicKey: joiner.identity.publicKeyBase64 };
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, ADMIT, claimsOtherKey, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    expect(admitted).toHaveLength(1);
  });

  it('refuses, and logs, an Admit whose table is malformed (members unsorted), without adopting it', async () => {
    const good = membershipWith(a.identity.publicKeyBase64);
    const unsorted = { ...good, members: [...good.members].reverse() };
    const admit = { membership: unsorted, targetPublicKey: joiner.identity.publicKeyBase64 };
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, ADMIT, admit, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    expect(joiner.logs.some((line) => line.msg === 'Admit refused' && /not sorted/.test(String(line.reason)))).toBe(true);
    expect(admitted).toHaveLength(1);
  });

  it('with a join token, refuses an Admit signed by a key the token does not name and accepts one it names', async () => {
    const tokened = await startPeer('q', { pending: () => true, trustedKeys: new Set([b.identity.publicKeyBase64]) });
    const taken: Membership[] = [];
    tokened.transport.handle(ADMIT, async (_sender, admit) => {
      taken.push(admit.membership);
      return { name: 'q', publicKey: tokened.identity.publicKeyBase64, state: 'Pending', zone: 'local', httpPort: 8888, address: HOST, port: 1 };
    });
    try {
      const tableFrom = (sender: Peer): Membership => ({
        epoch: 2,
        members: [
          { name: sender.transport.name, publicKey: sender.identity.publicKeyBase64, address: HOST, port: sender.transport.port, httpPort: 1, zone: 'z', state: 'Joined' },
          { name: 'q', publicKey: tokened.identity.publicKeyBase64, address: HOST, port: tokened.transport.port, httpPort: 2, zone: 'z', state: 'Pending' },
        ],
        change: { id: 'e2-join-q', kind: 'join', node: 'q', slots: [], transfers: [] },
      });
      const where = { address: HOST, port: tokened.transport.port };
      const fromA = { membership: tableFrom(a), targetPublicKey: tokened.identity.publicKeyBase64 };
      await expect(a.transport.callUnknown(where, tokened.identity.publicKeyBase64, ADMIT, fromA, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
      expect(tokened.logs.some((line) => line.msg === 'Admit refused' && /join token/.test(String(line.reason)))).toBe(true);
      const fromB = { membership: tableFrom(b), targetPublicKey: tokened.identity.publicKeyBase64 };
      await expect(b.transport.callUnknown(where, tokened.identity.publicKeyBase64, ADMIT, fromB, CALL)).resolves.toMatchObject({ name: 'q' });
      expect(taken).toHaveLength(1);
    } finally {
      await tokened.transport.close(1_000);
    }
  });

  it('answers a Ping from anyone, and the caller proves who answered by the reply signature', async () => {
    const reply = await a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, PING, {}, CALL);
    expect(reply.name).toBe('p');
    await expect(a.transport.callUnknown(target(), b.identity.publicKeyBase64, PING, {}, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
  });

  it('refuses an Admit from an unknown sender once no longer Pending', async () => {
    pending = false;
    const admit = { membership: membershipWith(a.identity.publicKeyBase64), targetPublicKey: joiner.identity.publicKeyBase64 };
    await expect(a.transport.callUnknown(target(), joiner.identity.publicKeyBase64, ADMIT, admit, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    expect(refusals(joiner).at(-1)).toMatch(/unknown sender 'a'/);
  });

  it('rejects a reply not signed by the expected key', async () => {
    await expect(a.transport.callUnknown(target(), b.identity.publicKeyBase64, PING, {}, CALL)).rejects.toMatchObject({
      code: 'PEER_AUTH',
      message: expect.stringMatching(/reply .* refused/),
    });
  });
});

describe('peer transport - transfer streams', () => {
  const received: TransferChunk[] = [];

  beforeAll(() => {
    b.transport.handleTransfer(async (sender, chunk) => {
      expect(sender).toBe('a');
      received.push(chunk);
      return { type: 'transfer-ack', transferId: chunk.transferId, seq: chunk.seq };
    });
  });

  const chunkOf = (transferId: string, seq: number): TransferChunk => ({
    type: 'transfer-chunk',
    transferId,
    seq,
    chunk: { bytes: Buffer.alloc(1_000 + seq, seq), records: seq + 1, cursor: `k${seq}` },
    last: false,
    totalEstimate: 10,
    fromCursor: seq === 0 ? undefined : `k${seq - 1}`,
  });

  function open(): { acks: TransferAck[]; closed: Promise<unknown>; stream: ReturnType<PeerTransport['openTransferStream']> } {
    const acks: TransferAck[] = [];
    let resolveClosed: (error: unknown) => void = () => undefined;
    const closed = new Promise<unknown>((resolve) => (resolveClosed = resolve));
    const stream = a.transport.openTransferStream('b', { onAck: (ack) => acks.push(ack), onClose: (error) => resolveClosed(error) }, CALL);
    return { acks, closed, stream };
  }

  it('acks every chunk in order and ends cleanly', async () => {
    const { acks, closed, stream } = open();
    for (let seq = 0; seq < 20; seq += 1) stream.send(chunkOf('clean', seq));
    stream.close();
    await expect(closed).resolves.toBeUndefined();
    expect(acks.map((ack) => ack.seq)).toEqual([...Array(20).keys()]);
    const chunks = received.filter((chunk) => chunk.transferId === 'clean');
    expect(chunks.map((chunk) => chunk.seq)).toEqual([...Array(20).keys()]);
    expect(Buffer.from(chunks[3]!.chunk.bytes).equals(Buffer.alloc(1_003, 3))).toBe(true);
  });

  it('refuses a chunk whose digest does not match, after acking the good ones before it', async () => {
    const { acks, closed, stream } = open();
    stream.send(chunkOf('tampered', 0));
    stream.send(chunkOf('tampered', 1));
    const proto = decodeProto('TransferChunk', encodeBody(TRANSFER_CHUNK, chunkOf('tampered', 2)));
    const bytes = Buffer.from((proto.chunk as { bytes: Buffer }).bytes);
    bytes[0] = bytes[0]! ^ 0xff;
    const body = encodeProto('TransferChunk', { ...proto, chunk: { ...(proto.chunk as object), bytes } });
    stream.sendRawEnvelope(encodeEnvelope(envelopeFrom(a, b, 'TransferChunk', body)));
    stream.send(chunkOf('tampered', 3));
    await expect(closed).resolves.toMatchObject({ status: 400, code: 'CHUNK_CHECKSUM' });
    expect(acks.map((ack) => ack.seq)).toEqual([0, 1]);
    expect(received.filter((chunk) => chunk.transferId === 'tampered').map((chunk) => chunk.seq)).toEqual([0, 1]);
    expect(b.logs.some((line) => line.msg === 'peer chunk refused' && /digest/.test(String(line.reason)))).toBe(true);
  });

  it('refuses a chunk whose signature does not hold', async () => {
    const { acks, closed, stream } = open();
    const envelope = envelopeFrom(a, b, 'TransferChunk', encodeBody(TRANSFER_CHUNK, chunkOf('forged', 0)), { signer: stranger.identity });
    stream.sendRawEnvelope(encodeEnvelope(envelope));
    await expect(closed).resolves.toMatchObject({ status: 401, code: 'PEER_AUTH' });
    expect(acks).toEqual([]);
  });
});

describe('peer transport - digests', () => {
  /** A peer port that keeps the raw envelopes it is sent (a call, a transfer stream's first chunk) and answers none. */
  async function listener(): Promise<{ port: number; sent: Buffer[]; close(): void }> {
    const sent: Buffer[] = [];
    const server = new grpc.Server();
    server.addService(peerServiceDefinition(), {
      Call: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        sent.push(call.request);
        callback({ code: grpc.status.UNAVAILABLE, details: 'a listener only' });
      },
      Transfer: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        call.on('data', (data: Buffer) => sent.push(data));
        call.on('end', () => call.end());
      },
      Notify: (call: grpc.ServerReadableStream<Buffer, Buffer>) => call.on('data', () => undefined),
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync(`${HOST}:0`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
    return { port, sent, close: () => server.forceShutdown() };
  }

  it('signs calls and chunks by the digest it was given, and names it in each envelope and chunk', async () => {
    const [fast, plain, port] = await Promise.all([startPeer('s', { digest: 'sha256' }), startPeer('p'), listener()]);
    try {
      for (const peer of [fast, plain]) {
        peer.known.set('l', { publicKey: stranger.identity.publicKeyBase64, port: port.port });
        await peer.transport.call('l', MONITORING_READ, echo('named'), CALL).catch(() => undefined);
        const stream = peer.transport.openTransferStream('l', { onAck: () => undefined, onClose: () => undefined }, CALL);
        stream.send({ type: 'transfer-chunk', transferId: 'named', seq: 0, chunk: { bytes: Buffer.alloc(100, 1), records: 1, cursor: 'k' }, last: true, totalEstimate: 1, fromCursor: undefined });
        await until(() => port.sent.length === (peer === fast ? 2 : 4));
        stream.close();
      }
      const [fastCall, fastChunk, plainCall, plainChunk] = port.sent.map((bytes) => decodeEnvelope(bytes));
      expect([fastCall!.digest, fastChunk!.digest]).toEqual(['sha256', 'sha256']);
      expect((decodeProto('TransferChunk', fastChunk!.body).chunk as { digestAlgorithm: string }).digestAlgorithm).toBe('DIGEST_SHA256');
      // SHA-512/256, v2's, is named nowhere.
      expect([plainCall!.digest, plainChunk!.digest]).toEqual([undefined, undefined]);
      expect((decodeProto('TransferChunk', plainChunk!.body).chunk as { digestAlgorithm: string }).digestAlgorithm).toBe('DIGEST_SHA512_256');
      expect(verifyEnvelope(fastCall!, verifyingKeyOf(fast.identity.publicKey), stranger.identity.publicKey)).toBe(true);
      expect(verifyEnvelope(fastChunk!, verifyingKeyOf(fast.identity.publicKey), stranger.identity.publicKey)).toBe(true);
    } finally {
      port.close();
      await Promise.all([fast.transport.close(1_000), plain.transport.close(1_000)]);
    }
  });

  it('a node signing by SHA-256 and one by SHA-512/256 answer each other, and take each other’s chunks', async () => {
    const [fast, plain] = await Promise.all([startPeer('s', { digest: 'sha256' }), startPeer('p')]);
    try {
      introduce(fast, plain);
      introduce(plain, fast);
      await expect(fast.transport.call('p', MONITORING_READ, echo('one'), CALL)).resolves.toEqual({ node: 's', details: { echo: 'one' } });
      await expect(plain.transport.call('s', MONITORING_READ, echo('two'), CALL)).resolves.toEqual({ node: 'p', details: { echo: 'two' } });
      for (const [from, to] of [[fast, plain], [plain, fast]] as const) {
        const got: Array<[string, TransferChunk]> = [];
        to.transport.handleTransfer(async (sender, chunk) => {
          got.push([sender, chunk]);
          return { type: 'transfer-ack', transferId: chunk.transferId, seq: chunk.seq };
        });
        const acks: TransferAck[] = [];
        let closedWith: (error: unknown) => void = () => undefined;
        const closed = new Promise<unknown>((resolve) => (closedWith = resolve));
        const stream = from.transport.openTransferStream(to.transport.name, { onAck: (ack) => acks.push(ack), onClose: (error) => closedWith(error) }, CALL);
        for (let seq = 0; seq < 3; seq += 1) {
          stream.send({ type: 'transfer-chunk', transferId: 'mixed', seq, chunk: { bytes: Buffer.alloc(2_000, seq), records: 1, cursor: `k${seq}` }, last: seq === 2, totalEstimate: 3, fromCursor: undefined });
        }
        stream.close();
        await expect(closed).resolves.toBeUndefined();
        expect(acks.map((ack) => ack.seq)).toEqual([0, 1, 2]);
        expect(got.map(([sender, chunk]) => [sender, chunk.seq, Buffer.from(chunk.chunk.bytes).equals(Buffer.alloc(2_000, chunk.seq))])).toEqual([0, 1, 2].map((seq) => [from.transport.name, seq, true]));
      }
      expect([...refusals(fast), ...refusals(plain)]).toEqual([]);
    } finally {
      await Promise.all([fast.transport.close(1_000), plain.transport.close(1_000)]);
    }
  });
});

describe('peer transport - unreachable peers', () => {
  it('fails fast with PeerUnavailableError when nobody listens', async () => {
    a.known.set('down', { publicKey: stranger.identity.publicKeyBase64, port: await closedPort() });
    const started = performance.now();
    const error = await a.transport.call('down', PING, {}, { deadlineMs: 2_000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PeerUnavailableError);
    expect(error).toMatchObject({ status: 503, code: 'PEER_UNAVAILABLE' });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('fails with PeerUnavailableError at the deadline when the peer does not answer', async () => {
    const started = performance.now();
    const error = await a.transport.call('b', MONITORING_READ, echo('hang'), { deadlineMs: 200 }).catch((caught: unknown) => caught);
    const elapsedMs = performance.now() - started;
    expect(error).toBeInstanceOf(PeerUnavailableError);
    expect(elapsedMs).toBeGreaterThanOrEqual(190);
    expect(elapsedMs).toBeLessThan(1_500);
  });

  it('refuses a destination not in the node table', async () => {
    await expect(a.transport.call('nobody', PING, {}, CALL)).rejects.toMatchObject({ status: 404, code: 'PEER_UNKNOWN' });
  });
});

describe('peer server - the node table as directory', () => {
  it('answers Ping, and refuses other calls from a node once it is Left', async () => {
    const keys = identity();
    const nodes = new NodeTable('s');
    const row = (name: string, publicKey: string, port: number, state: NodeDocument['state']): NodeDocument => ({
      name,
      zone: 'z',
      publicKey,
      address: HOST,
      port,
      httpPort: 1,
      version: { number: '0', revision: 'x' },
      state,
      available: 'true',
    });
    const silent = pino({ level: 'silent' });
    const server = await startPeerServer(HOST, 0, nodes, {
      identity: keys,
      log: silent,
      replayWindowMs: WINDOW_MS,
      admit: { accepting: () => false, trustedKeys: undefined },
    });
    nodes.upsert(row('s', keys.publicKeyBase64, server.port, 'Joined'));
    nodes.upsert(row('a', a.identity.publicKeyBase64, a.transport.port, 'Joined'));
    a.known.set('s', { publicKey: keys.publicKeyBase64, port: server.port });
    try {
      await expect(a.transport.call('s', PING, {}, CALL)).resolves.toEqual({ name: 's', publicKey: keys.publicKeyBase64, state: 'Joined', zone: 'z', httpPort: 1, address: HOST, port: server.port });
      nodes.upsert(row('a', a.identity.publicKeyBase64, a.transport.port, 'Left'));
      await expect(a.transport.call('s', MONITORING_READ, echo(''), CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
    } finally {
      await server.close(1_000);
    }
  });
});

describe('peer transport - counters (monitoring)', () => {
  it('counts messages and bytes each way per peer, alike on both ends, and refusals by reason', async () => {
    const [x, y] = await Promise.all([startPeer('x'), startPeer('y')]);
    try {
      introduce(x, y);
      introduce(y, x);
      for (let i = 0; i < 5; i++) await x.transport.call('y', MONITORING_READ, echo(`${i} ${'p'.repeat(i * 100)}`), CALL);
      const xy = x.transport.counters.snapshot().find((traffic) => traffic.peer === 'y')!;
      const yx = y.transport.counters.snapshot().find((traffic) => traffic.peer === 'x')!;
      expect(xy.sent.messages).toBe(5);
      expect(xy.received.messages).toBe(5);
      expect(xy.channelsOpened).toBe(1);
      expect(xy.errors).toBe(0);
      // What one end sent is what the other received, byte for byte.
      expect(yx.received).toEqual(xy.sent);
      expect(yx.sent).toEqual(xy.received);
      expect(xy.sent.bytes).toBeGreaterThan(5 * 50);

      const forged = { ...envelopeFrom(x, y, 'MonitoringRead', echoBody('1')), body: echoBody('2') };
      await expect(x.transport.sendRawEnvelope('y', encodeEnvelope(forged), CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
      const replayed = encodeEnvelope(envelopeFrom(x, y, 'MonitoringRead', echoBody('once')));
      await x.transport.sendRawEnvelope('y', replayed, CALL);
      await expect(x.transport.sendRawEnvelope('y', replayed, CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
      expect(y.transport.counters.snapshot().find((traffic) => traffic.peer === 'x')!.refused).toEqual({ bad_signature: 1, replay: 1 });

      // Refusals at the gate, before any body is read, are counted like the others.
      const stranger = await startPeer('z');
      try {
        introduce(stranger, y);
        await expect(stranger.transport.call('y', MONITORING_READ, echo('1'), CALL)).rejects.toMatchObject({ code: 'PEER_AUTH' });
        expect(y.transport.counters.snapshot().find((traffic) => traffic.peer === 'z')!.refused).toEqual({ unknown_sender: 1 });
      } finally {
        await stranger.transport.close(100);
      }

      await y.transport.close(100);
      await expect(x.transport.call('y', PING, {}, { deadlineMs: 500 })).rejects.toBeDefined();
      expect(x.transport.counters.snapshot().find((traffic) => traffic.peer === 'y')!.errors).toBe(1);
    } finally {
      await Promise.all([x.transport.close(100), y.transport.close(100)]);
    }
  });
});
