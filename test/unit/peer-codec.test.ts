import { describe, expect, it } from 'vitest';
import type { Member, Membership, PeerMessage, TransferPlan } from '../../src/protocol/cluster-types.js';
import {
  decodeBody,
  decodeEnvelope,
  decodeProto,
  encodeBody,
  encodeEnvelope,
  encodeEnvelopeWithBody,
  encodeProto,
  isPeerKind,
  transferChunkProto,
} from '../../src/peer/codec.js';
import { BadPeerMessageError, ChunkChecksumError } from '../../src/peer/errors.js';
import { REPLY_KIND, type PeerBodies, type PeerKind } from '../../src/peer/messages.js';
import { peerRoot } from '../../src/peer/proto.js';

const member = (name: string, state: Member['state']): Member => ({
  name,
  publicKey: Buffer.alloc(32, name.charCodeAt(0)).toString('base64'),
  address: '127.0.0.1',
  port: 8889,
  httpPort: 8888,
  zone: 'zone-1',
  state,
});

const plan: TransferPlan = {
  id: 'c1/ssr/a>d',
  repo: 'ssr',
  from: 'a',
  to: 'd',
  slots: [
    { partition: 0, replicas: 3 },
    { partition: 127, replicas: 1 },
  ],
  complete: false,
  percentComplete: 42.5,
  bytes: 2 ** 40,
  records: 12,
};

const membership: Membership = {
  epoch: 9,
  members: [member('a', 'Joined'), member('b', 'Leaving'), member('d', 'Joining'), member('e', 'Pending'), member('f', 'Left')],
  change: { id: 'c1', kind: 'join', node: 'd', slots: [{ partition: 3, replicas: 2 }], transfers: [plan, { ...plan, repo: 'KV', slots: [] }] },
};

const chunk = { bytes: new Uint8Array([0, 1, 2, 255]), records: 2, cursor: 'stream/0001/00ff' };

const CORE: PeerMessage[] = [
  { type: 'membership', membership },
  { type: 'membership', membership: { epoch: 1, members: [member('a', 'Joined')], change: undefined } },
  { type: 'membership', membership: { ...membership, change: { ...membership.change!, kind: 'leave', transfers: [{ ...plan, repo: 'tsr', complete: true }] } } },
  { type: 'membership', membership: { ...membership, members: [{ ...member('a', 'Joined'), incarnation: 3 }], change: { ...membership.change!, kind: 'leave', finalSynced: true } } },
  { type: 'final-synced', changeId: 'e4-leave-b' },
  { type: 'heartbeat', epoch: 0 },
  { type: 'heartbeat', epoch: 12, at: { address: '10.0.0.9', port: 9100, httpPort: 8100, incarnation: 2 } },
  { type: 'ready', changeId: 'c1' },
  { type: 'transfer-request', transfer: plan, seq: 0, cursor: undefined },
  { type: 'transfer-request', transfer: plan, seq: 5, cursor: '' },
  { type: 'transfer-chunk', transferId: plan.id, seq: 3, chunk, last: false, totalEstimate: 100, fromCursor: 'stream/0001/00fe' },
  { type: 'transfer-chunk', transferId: plan.id, seq: 4, chunk: { bytes: new Uint8Array(0), records: 0, cursor: '' }, last: true, totalEstimate: 0, fromCursor: undefined },
  { type: 'transfer-chunk', transferId: plan.id, seq: 0, chunk, last: false, totalEstimate: 1, fromCursor: '' },
  { type: 'transfer-ack', transferId: plan.id, seq: 3 },
  { type: 'transfer-progress', transferId: plan.id, percentComplete: 99.5, bytes: 123, records: 4, complete: true },
];

const SAMPLES: { [K in PeerKind]: Array<PeerBodies[K]> } = {
  CoreMessage: CORE,
  Empty: [{}],
  WriteRecords: [
    {
      repo: 'tsr',
      epoch: 7,
      replicas: 2,
      records: [
        { stream: 't/c/s', partition: 7, timestamp: -86_400_000, writeId: 'w1', payloadJson: '{"a":1}' },
        { stream: 't/c/s', partition: 0, timestamp: 1_700_000_000_123, writeId: 'w2', payloadJson: '{}' },
      ],
    },
    { repo: 'ssr', records: [], epoch: 3, replicas: 1 },
  ],
  WriteReply: [{}],
  HintStore: [
    {
      hints: [
        { target: 'b', repository: 'ssr', records: [{ stream: 't/c/s', partition: 3, timestamp: 5, writeId: 'w9', payloadJson: '{"a":2}' }] },
        { target: 'c', repository: 'KV', records: [{ key: 'k', version: 2, valueJson: '{"v":1}', deleted: false }] },
      ],
    },
    { hints: [] },
  ],
  DefinitionRead: [{ after: '', limit: 500 }, { after: 'stream/t/c/s', limit: 1 }],
  RepairDigest: [{ repo: 'tsr', stream: 't/c/s', partition: 12 }],
  RepairDigestReply: [{ segments: [0, 0, 0, 3, 4_294_967_295, 17] }, { segments: [] }],
  RepairKeys: [{ repo: 'ssr', stream: 't/c/s', partition: 0, segments: [1, 63] }],
  RepairKeysReply: [{ keys: ['000a/w1', 'w2'] }, { keys: [] }],
  RepairFetch: [{ repo: 'ssr', stream: 't/c/s', partition: 4, keys: ['w1'] }],
  RepairFetchReply: [{ records: [{ stream: 't/c/s', partition: 4, timestamp: 1, writeId: 'w1', payloadJson: '{}' }] }],
  RepairSweep: [{ runId: 'r1', stream: 't/c/s' }, { runId: 'r2', stream: undefined }],
  RepairStatus: [{ runId: 'r1' }],
  RepairStatusReply: [{ known: true, complete: false, partitionsTotal: 64, partitionsDone: 10, partitionsCompared: 9, recordsSent: 3, recordsReceived: 0, failures: 1 }],
  DefinitionWrite: [
    { key: 'streams/t/c/s', valueJson: '{"x":1}', expectedVersion: '4', delete: false },
    { key: 'k', valueJson: '', expectedVersion: undefined, delete: true },
    { key: 'k', valueJson: '', expectedVersion: '', delete: false },
  ],
  DefinitionWriteReply: [{ version: '5' }, { version: undefined }, { version: '' }],
  DefinitionPush: [
    {
      records: [
        { key: 'a', version: 3, valueJson: '{"v":true}', deleted: false },
        { key: 'b', version: 9, valueJson: '', deleted: true },
      ],
    },
  ],
  AdminCommand: [
    { type: 'add', member: { name: 'd', publicKey: 'AAAA', address: '10.0.0.4', port: 9001, httpPort: 9000, zone: 'z' } },
    { type: 'remove', name: 'b' },
  ],
  AdminReply: [
    { ok: true, membership },
    { ok: false, status: 404, message: "node 'x' is not in the cluster" },
    { ok: false, status: 409, message: 'a change is in progress' },
  ],
  Admit: [{ membership, targetPublicKey: member('e', 'Pending').publicKey }],
  AdmitReply: [{ name: 'e', publicKey: 'key', state: 'Pending', zone: 'z1', httpPort: 18080, address: '10.0.0.5', port: 18081 }],
  Ping: [{}],
  PingReply: [{ name: 'a', publicKey: 'key', state: 'Joined', zone: 'local', httpPort: 8888, address: '127.0.0.1', port: 8889 }],
  Read: [{ json: '{"search":"x"}' }],
  ReadReply: [{ json: '[]' }],
  LivePayloads: [{ stream: 'demo/c/s', payloadsJson: '[{"a":1}]' }],
  ErrorReply: [
    { status: 409, code: 'VERSION_CONFLICT', message: 'version conflict', details: { currentVersion: '3' } },
    { status: 503, code: 'PEER_UNAVAILABLE', message: 'down', details: undefined },
  ],
  TransferChunk: CORE.filter((message) => message.type === 'transfer-chunk'),
  TransferAck: [{ type: 'transfer-ack', transferId: 'x', seq: 0 }],
};

function roundTrip<K extends PeerKind>(kind: K, value: PeerBodies[K]): PeerBodies[K] {
  return plain(decodeBody(kind, encodeBody(kind, value)));
}

/** Decoded bytes are Buffers (a Uint8Array subclass); compare them as plain Uint8Arrays. */
function plain<T>(value: T): T {
  if (value instanceof Uint8Array) return new Uint8Array(value) as T;
  if (Array.isArray(value)) return value.map(plain) as T;
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)])) as T;
  }
  return value;
}

describe('peer codec - round trips', () => {
  for (const kind of Object.keys(SAMPLES) as PeerKind[]) {
    it(`maps every ${kind} sample to the proto and back unchanged`, () => {
      for (const sample of SAMPLES[kind]) expect(roundTrip(kind, sample)).toStrictEqual(sample);
    });
  }

  it('gives optional fields back as undefined, never as a default', () => {
    const decoded = roundTrip('DefinitionWrite', { key: 'k', valueJson: '', expectedVersion: undefined, delete: false });
    expect(decoded.expectedVersion).toBeUndefined();
    expect(Object.hasOwn(decoded, 'expectedVersion')).toBe(true);
  });

  it('carries an envelope unchanged', () => {
    const envelope = {
      sender: 'a',
      sentAtMs: 1_700_000_000_123,
      nonce: new Uint8Array(16).fill(7),
      kind: 'Ping',
      body: new Uint8Array([1, 2]),
      signature: new Uint8Array(64).fill(9),
      replyTo: new Uint8Array(0),
    };
    expect(plain(decodeEnvelope(encodeEnvelope(envelope)))).toStrictEqual(envelope);
  });
});

describe('peer codec - chunk envelopes written in one pass', () => {
  it('gives the same bytes as encoding the body, then the envelope', () => {
    const chunkMessage = SAMPLES.TransferChunk[0]!;
    const meta = { sender: 'a', sentAtMs: 1_700_000_000_123, nonce: new Uint8Array(16).fill(7), kind: 'TransferChunk', signature: new Uint8Array(64).fill(9) };
    for (const replyTo of [new Uint8Array(0), new Uint8Array(16).fill(3)]) {
      const twoPass = encodeEnvelope({ ...meta, replyTo, body: encodeBody('TransferChunk', chunkMessage) });
      const onePass = encodeEnvelopeWithBody({ ...meta, replyTo }, 'TransferChunk', transferChunkProto(chunkMessage));
      expect(Buffer.from(onePass).equals(Buffer.from(twoPass))).toBe(true);
    }
  });
});

describe('peer codec - the proto is the whole protocol', () => {
  it('has a proto message for every kind and a codec for every message kind a reply names', () => {
    for (const kind of Object.keys(SAMPLES)) expect(() => peerRoot().lookupType(`tributary.peer.${kind}`)).not.toThrow();
    for (const replyKind of Object.values(REPLY_KIND)) expect(isPeerKind(replyKind)).toBe(true);
    expect(isPeerKind('Envelope')).toBe(false);
  });
});

describe('peer codec - refusals', () => {
  it('refuses a chunk whose bytes do not match its SHA-256', () => {
    const body = encodeBody('TransferChunk', { type: 'transfer-chunk', transferId: 't', seq: 0, chunk, last: false, totalEstimate: 1, fromCursor: undefined });
    const proto = decodeProto('TransferChunk', body);
    const tampered = { ...proto, chunk: { ...(proto.chunk as object), bytes: Buffer.from([0, 1, 2, 254]) } };
    expect(() => decodeBody('TransferChunk', encodeProto('TransferChunk', tampered))).toThrow(ChunkChecksumError);
  });

  it('refuses an unknown enum value, a missing message and an int64 beyond 2^53', () => {
    expect(() => decodeBody('PingReply', encodeProto('PingReply', { name: 'a', publicKey: 'k', state: 9 }))).toThrow(BadPeerMessageError);
    expect(() => decodeBody('PingReply', encodeProto('PingReply', { name: 'a', publicKey: 'k' }))).toThrow(/state/);
    expect(() => decodeBody('Admit', encodeProto('Admit', { targetPublicKey: 'k' }))).toThrow(/membership/);
    expect(() => decodeBody('CoreMessage', encodeProto('CoreMessage', { heartbeat: { epoch: '9007199254740993' } }))).toThrow(/safe integer/);
    expect(() => decodeBody('CoreMessage', encodeProto('CoreMessage', {}))).toThrow(/payload/);
  });

  it('refuses bytes that are not a message', () => {
    expect(() => decodeEnvelope(Buffer.from([0xff, 0xff, 0xff]))).toThrow(BadPeerMessageError);
  });
});
