import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { Member, Membership, PeerMessage, TransferPlan } from '../../src/protocol/cluster-types.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  EMPTY,
  ERROR_REPLY,
  TRANSFER_ACK,
  TRANSFER_CHUNK,
  decodeBody,
  decodeEnvelope,
  decodeProto,
  encodeBody,
  encodeEnvelope,
  encodeEnvelopeWithBody,
  encodeProto,
  transferChunkProto,
  V2_DIGEST,
  type TransferChunk,
} from '../../src/peer/codec.js';
import { PEER_JSON_CHARS_MAX, PEER_JSON_DEPTH_MAX, parsePeerJson } from '../../src/peer/documents.js';
import { BadPeerMessageError, ChunkChecksumError } from '../../src/peer/errors.js';
import { peerKinds, type PeerBodyType } from '../../src/peer/kinds.js';
import { peerRoot } from '../../src/peer/proto.js';
import type { CountTreeJson, LocalSearchRequest, LocalSearchResult } from '../../src/search/local-search.js';
// Every subsystem that declares peer message kinds, so that the registry holds them all.
import '../../src/cluster/core-messages.js';
import '../../src/cluster/write-messages.js';
import { DEFINITION_WRITE } from '../../src/replicated-definitions/definition-messages.js';
import '../../src/repair/repair-messages.js';
import '../../src/sessions/execution-messages.js';
import '../../src/historical/historical-messages.js';
import { SEARCH_READ } from '../../src/search/search-messages.js';
import '../../src/monitoring/monitoring-peer.js';
import '../../src/ops/store-stats-peer.js';
import '../../src/node-history/history-peer.js';
import '../../src/streams/stored-data-peer.js';

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
  { type: 'heartbeat', epoch: 12, damaged: true },
  { type: 'membership', membership, damaged: true },
  {
    type: 'membership',
    membership: {
      ...membership,
      queue: [
        { id: 'q4.0', command: { type: 'remove', name: 'a' } },
        { id: 'q4.1', command: { type: 'add', member: { name: 'f', publicKey: member('f', 'Pending').publicKey, address: '10.0.0.6', port: 9006, httpPort: 8006, zone: 'z' } } },
      ],
      queueDropped: ['q3.0'],
    },
  },
  { type: 'ready', changeId: 'c1' },
  { type: 'transfer-request', transfer: plan, seq: 0, cursor: undefined },
  { type: 'transfer-request', transfer: plan, seq: 5, cursor: '' },
  { type: 'transfer-chunk', transferId: plan.id, seq: 3, chunk, last: false, totalEstimate: 100, fromCursor: 'stream/0001/00fe' },
  { type: 'transfer-chunk', transferId: plan.id, seq: 4, chunk: { bytes: new Uint8Array(0), records: 0, cursor: '' }, last: true, totalEstimate: 0, fromCursor: undefined },
  { type: 'transfer-chunk', transferId: plan.id, seq: 0, chunk, last: false, totalEstimate: 1, fromCursor: '' },
  { type: 'transfer-ack', transferId: plan.id, seq: 3 },
  { type: 'transfer-progress', transferId: plan.id, percentComplete: 99.5, bytes: 123, records: 4, complete: true },
  // Newer than the wire fixture: a field older nodes skip (proto3 ignores unknown fields).
  { type: 'heartbeat', epoch: 12, run: 4_000_000_000 },
];

const SEARCH_REQUEST: LocalSearchRequest = {
  parts: [
    {
      stream: 'demo/c/s',
      partitions: [0, 5],
      analyzer: 'standard',
      base: 'title:fox',
      drilldowns: [{ levels: ['country', 'city'], values: ['uk'] }],
      taxonomyFacets: [{ dimension: 'place', levels: ['country'] }],
      rangeFacets: [{ type: 'range', field: 'n', ranges: [{ label: 'low', from: 0, fromInclusive: true, to: 10, toInclusive: false }] }],
      tsField: undefined,
      contributorFields: [{ path: 'user.id', ids: ['friends'] }],
    },
  ],
  range: { start: 0, end: 1_700_000_000_000 },
  hitsMax: 20,
  histogram: { start: 0, end: 86_400_000, frequency: 'HOUR' },
  // Parsed, so that `__proto__` is an own field (as a peer's JSON makes it), not the prototype.
  contributorIds: JSON.parse('{"friends": ["u1", "u2"], "__proto__": ["u3"]}') as Record<string, readonly string[]>,
};

const SEARCH_RESULT: LocalSearchResult = {
  streams: [
    {
      stream: 'demo/c/s',
      total: 2,
      hits: [{ score: 1.25, writeId: 'w1', data: { title: 'fox', id: 855448618232418304n } }],
      facets: [{ dimension: 'place', tree: JSON.parse('{"count": 2, "children": {"uk": {"count": 2, "children": {}}, "__proto__": {"count": 0, "children": {}}}}') as CountTreeJson }],
      ranges: [{ name: 'n', count: 2, children: [{ value: 'low', count: 1, children: [] }] }],
    },
  ],
  histogram: { start: '1970-01-01T00:00:00.000Z', end: '1970-01-02T00:00:00.000Z', frequency: 'HOUR', buckets: [0, 2] },
};

/** Samples of every body proto/peer.proto defines, by its message name. */
const SAMPLES: Record<string, unknown[]> = {
  CoreMessage: CORE,
  Empty: [{}],
  WriteRecords: [
    {
      repo: 'tsr',
      epoch: 7,
      replicas: 2,
      records: [
        { stream: 't/c/s', partition: 7, timestamp: -86_400_000, writeId: 'w1', value: '{"a":1}' },
        { stream: 't/c/s', partition: 0, timestamp: 1_700_000_000_123, writeId: 'w2', value: '{}' },
      ],
    },
    { repo: 'ssr', records: [], epoch: 3, replicas: 1 },
  ],
  WriteReply: [{}],
  HintStore: [
    {
      hints: [
        { target: 'b', repository: 'ssr', records: [{ stream: 't/c/s', partition: 3, timestamp: 5, writeId: 'w9', value: '{"a":2}' }] },
        { target: 'c', repository: 'KV', records: [{ key: 'k', version: 2, valueJson: '{"v":1}', deleted: false }] },
      ],
    },
    { hints: [] },
  ],
  DefinitionRead: [{ after: '', limit: 500 }, { after: 'stream/t/c/s', limit: 1 }],
  RepairDigest: [{ repo: 'tsr', stream: 't/c/s', partition: 12 }],
  RepairDigestReply: [{ segments: [0, 0, 0, 3, 4_294_967_295, 17] }, { segments: [] }],
  FollowUpsTake: [{ parts: [{ repo: 'tsr', stream: 't/c/s', partition: 12, replicas: 3 }, { repo: 'ssr', stream: 'x/y/z', partition: 0, replicas: 1, keys: ['0001.n1', '0002.n1'] }] }, { parts: [] }],
  RepairDigests: [{ repo: 'ssr', stream: 't/c/s', partitions: [0, 12, 4095] }],
  RepairDigestsReply: [{ digests: [{ segments: [1, 2, 3] }, { segments: [] }] }, { digests: [] }],
  RepairKeys: [{ repo: 'ssr', stream: 't/c/s', partition: 0, segments: [1, 63] }],
  RepairKeysReply: [{ keys: ['000a/w1', 'w2'] }, { keys: [] }],
  RepairFetch: [{ repo: 'ssr', stream: 't/c/s', partition: 4, keys: ['w1'] }],
  RepairFetchReply: [{ records: [{ stream: 't/c/s', partition: 4, timestamp: 1, writeId: 'w1', value: '{}' }] }],
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
  SearchRead: [SEARCH_REQUEST, { parts: [], range: undefined, hitsMax: 0, histogram: undefined }],
  SearchReply: [SEARCH_RESULT, { streams: [], histogram: undefined }],
  OutputPoll: [{ outputId: 'o1', waitMs: 2_000 }, { outputId: 'o1', cursor: { epoch: 'e1', seq: 41 }, waitMs: 0 }],
  OutputPollReply: [
    {
      epoch: 'e1',
      seq: 44,
      reset: true,
      entries: [
        { message: { type: 'sos', schema: { type: 'record', properties: {} } }, retention: 'table' },
        { message: { type: 'increment', items: [{ action: 'add', data: { n: 1, id: 855448618232418304n } }, { action: 'remove', data: {} }] } },
        { message: { type: 'eos' } },
      ],
    },
    { epoch: 'e2', seq: 0, reset: false, entries: [] },
    { epoch: 'e3', seq: 7, reset: false, entries: [{ end: 'stopped' }] },
  ],
  ScanRead: [
    { repo: 'tsr', stream: 't/c/s', partition: 3, limit: 500 },
    { repo: 'ssr', stream: 't/c/s', partition: 0, limit: 1, fromMs: -5, toMs: 1_700_000_000_000, after: { timestamp: 7, writeId: 'w7' } },
  ],
  ScanReply: [
    { records: [{ timestamp: -86_400_000, writeId: 'w1', payload: { a: 1, nested: { list: [1, 'x', null] }, big: 855448618232418304n } }], done: false },
    { records: [], done: true },
  ],
  BlockRead: [
    { stream: 't/c/s', partition: 3, charsMax: 1_048_576 },
    { stream: 't/c/s', partition: 0, charsMax: 1, fromMs: -5, toMs: 1_700_000_000_000, after: '0010000000000000/0010000000000005/0002/w1.0' },
  ],
  BlockReply: [
    { blocks: [{ writeId: 'w1.0', value: 'tsb1 1 5 5\n{"t":[5],"c":{"a":{"n":[1]}}}' }, { writeId: 'kAbc.2', value: '' }], after: 'x', done: false },
    { blocks: [], after: '', done: true },
  ],
  LatestRead: [{ stream: 't/c/s', partition: 4, key: 'host', fields: ['at', 'cpu'] }],
  LatestReply: [
    { entries: [{ key: 'h1', slots: [{ timestamp: -5, writeId: 'w1:0000003', value: '2024-01-01T00:00:00.000Z' }, null] }, { key: null, slots: [null, { timestamp: 7, writeId: 'k:1', value: { a: [1, 855448618232418304n] } }] }] },
    { entries: [] },
  ],
  ExecutionStatusRead: [{ tenant: 'demo', sessionId: 's1', settle: false }, { tenant: 'demo', sessionId: 's1', settle: true }],
  ExecutionStatusReply: [
    {
      queries: [
        { queryId: 'q1', status: { runToken: 3, state: 'running', errors: [] } },
        { queryId: 'q2', status: { runToken: 1, state: 'failed', errors: [{ type: 'RUNTIME_ERROR', message: 'boom' }, { type: 'UNKNOWN_FUNCTION', name: 'f' }] } },
      ],
    },
    { queries: [] },
  ],
  StoreStatsRead: [{}],
  StoreStatsReply: [
    { records: 12, bytes: 2 ** 40, partitions: { 't/c/s': { '0': 5, '7': 7 }, '__proto__/c/s': { '1': 0 } }, countedAtMs: 1_700_000_000_123 },
    { records: 0, bytes: 0, partitions: {}, countedAtMs: 0 },
    { records: 1, bytes: 2, partitions: {}, countedAtMs: 3, disk: { freeBytes: 2 ** 33, totalBytes: 2 ** 34, writable: false, reason: 'n2 takes no writes: a write failed' } },
    { records: 1, bytes: 2, partitions: {}, countedAtMs: 3, disk: { freeBytes: null, totalBytes: null, writable: true, reason: null } },
  ],
  MonitoringRead: [{ service: 'streams', tenant: 'demo', uri: '/streams/demo/c/s' }, { service: 'system', tenant: 'system', uri: undefined }],
  MonitoringReply: [{ node: 'b', details: { streams: [{ uri: '/streams/demo/c/s', accepted: 3 }], error: null } }],
  ConsoleHistoryRead: [{}],
  ConsoleHistoryReply: [
    {
      node: 'b',
      intervalMs: 5_000,
      samples: { atMs: [1_700_000_000_000, 1_700_000_005_000], ingestPayloadsPerSecond: [0, 1_250.5], latencyP50Ms: [null, 0.75], latencyP99Ms: [null, 12.5], transferBytesPerSecond: [0, 0], diskUsedBytes: [4_096, null] },
      ready: false,
      reasons: ['node b is stopping'],
    },
  ],
  HoldsDataRead: [{ stream: 'demo/c/s' }],
  HoldsDataReply: [{ holds: true }, { holds: false }],
  LivePayloads: [{ stream: 'demo/c/s', payloadsJson: '[{"a":1}]' }],
  ErrorReply: [
    { status: 409, code: 'VERSION_CONFLICT', message: 'version conflict', details: { currentVersion: '3' } },
    { status: 503, code: 'PEER_UNAVAILABLE', message: 'down', details: undefined },
  ],
  TransferChunk: CORE.filter((message) => message.type === 'transfer-chunk'),
  TransferAck: [{ type: 'transfer-ack', transferId: 'x', seq: 0 }],
};

/** Every body a kind or the transport carries: requests, replies, errors, chunks and acks. */
const BODIES: ReadonlyArray<PeerBodyType<unknown>> = [
  ...peerKinds().flatMap((kind) => [kind.request, kind.reply]),
  EMPTY,
  ERROR_REPLY,
  TRANSFER_CHUNK,
  TRANSFER_ACK,
] as ReadonlyArray<PeerBodyType<unknown>>;

/** The body type of the proto message `type` (the first that carries it). */
function body(type: string): PeerBodyType<unknown> {
  const found = BODIES.find((candidate) => candidate.type === type);
  if (found === undefined) throw new Error(`no kind carries ${type}`);
  return found;
}

function roundTrip<T>(type: PeerBodyType<T>, value: T): T {
  return plain(decodeBody(type, encodeBody(type, value)));
}

/** Decodes bytes as the proto message `type`. */
function decode(type: string, data: Uint8Array): unknown {
  return decodeBody(body(type), data);
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
  for (const type of BODIES) {
    it(`maps every ${type.type} sample to the proto and back unchanged`, () => {
      const samples = SAMPLES[type.type];
      expect(samples, `samples of ${type.type}`).toBeDefined();
      for (const sample of samples!) expect(roundTrip(type, sample)).toStrictEqual(sample);
    });
  }

  it('gives optional fields back as undefined, never as a default', () => {
    const decoded = roundTrip(DEFINITION_WRITE.request, { key: 'k', valueJson: '', expectedVersion: undefined, delete: false });
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
    const chunkMessage = SAMPLES.TransferChunk![0] as TransferChunk;
    const meta = { sender: 'a', sentAtMs: 1_700_000_000_123, nonce: new Uint8Array(16).fill(7), kind: 'TransferChunk', signature: new Uint8Array(64).fill(9) };
    for (const replyTo of [new Uint8Array(0), new Uint8Array(16).fill(3)]) {
      const twoPass = encodeEnvelope({ ...meta, replyTo, body: encodeBody(TRANSFER_CHUNK, chunkMessage) });
      const onePass = encodeEnvelopeWithBody({ ...meta, replyTo }, 'TransferChunk', transferChunkProto(chunkMessage, V2_DIGEST));
      expect(Buffer.from(onePass).equals(Buffer.from(twoPass))).toBe(true);
    }
  });

  it('names SHA-256 where it is used, and leaves v2 envelopes and chunks as they were', () => {
    const chunkMessage = SAMPLES.TransferChunk![0] as TransferChunk;
    const meta = { sender: 'a', sentAtMs: 1_700_000_000_123, nonce: new Uint8Array(16).fill(7), kind: 'TransferChunk', signature: new Uint8Array(64).fill(9), replyTo: new Uint8Array(0) };
    const v2 = encodeEnvelopeWithBody(meta, 'TransferChunk', transferChunkProto(chunkMessage, V2_DIGEST));
    expect(Buffer.from(v2).equals(Buffer.from(encodeEnvelopeWithBody({ ...meta, digest: 'sha512-256' }, 'TransferChunk', transferChunkProto(chunkMessage, V2_DIGEST))))).toBe(true);
    const sha256 = decodeEnvelope(encodeEnvelopeWithBody({ ...meta, digest: 'sha256' }, 'TransferChunk', transferChunkProto(chunkMessage, 'sha256')));
    expect(sha256.digest).toBe('sha256');
    expect(decodeEnvelope(v2).digest).toBeUndefined();
    const chunk = decodeProto('TransferChunk', sha256.body).chunk as { bytes: Uint8Array; digest: Uint8Array; digestAlgorithm: string };
    expect(chunk.digestAlgorithm).toBe('DIGEST_SHA256');
    expect(Buffer.from(chunk.digest)).toEqual(createHash('sha256').update(chunk.bytes).digest());
    expect(decodeBody(TRANSFER_CHUNK, sha256.body)).toStrictEqual(decodeBody(TRANSFER_CHUNK, decodeEnvelope(v2).body));
    // A chunk whose digest is named as the other one's does not check.
    const renamed = encodeProto('TransferChunk', { ...decodeProto('TransferChunk', sha256.body), chunk: { ...chunk, digestAlgorithm: 'DIGEST_SHA512_256' } });
    expect(() => decodeBody(TRANSFER_CHUNK, renamed)).toThrow(ChunkChecksumError);
    const envelope = { ...meta, kind: 'Ping', body: new Uint8Array([1, 2]), digest: 'sha256' as const };
    expect(plain(decodeEnvelope(encodeEnvelope(envelope)))).toStrictEqual(envelope);
  });
});

describe('peer codec - the proto is the whole protocol', () => {
  it('has a proto message for the request and the reply of every kind declared', () => {
    expect(peerKinds().length).toBeGreaterThanOrEqual(25);
    for (const type of BODIES) expect(() => peerRoot().lookupType(`tributary.peer.${type.type}`)).not.toThrow();
  });
});

describe('peer codec - refusals', () => {
  it("carries a chunk's digest as peer.proto says: SHA-512/256 of its bytes", () => {
    const body = encodeBody(TRANSFER_CHUNK, { type: 'transfer-chunk', transferId: 't', seq: 0, chunk, last: false, totalEstimate: 1, fromCursor: undefined });
    const sent = decodeProto('TransferChunk', body).chunk as { bytes: Uint8Array; digest: Uint8Array };
    expect(Buffer.from(sent.digest)).toEqual(createHash('sha512-256').update(sent.bytes).digest());
  });

  it('refuses a chunk whose bytes do not match its digest', () => {
    const body = encodeBody(TRANSFER_CHUNK, { type: 'transfer-chunk', transferId: 't', seq: 0, chunk, last: false, totalEstimate: 1, fromCursor: undefined });
    const proto = decodeProto('TransferChunk', body);
    const tampered = { ...proto, chunk: { ...(proto.chunk as object), bytes: Buffer.from([0, 1, 2, 254]) } };
    expect(() => decodeBody(TRANSFER_CHUNK, encodeProto('TransferChunk', tampered))).toThrow(ChunkChecksumError);
  });

  it('refuses an unknown enum value, a missing message and an int64 beyond 2^53', () => {
    expect(() => decode('PingReply', encodeProto('PingReply', { name: 'a', publicKey: 'k', state: 9 }))).toThrow(BadPeerMessageError);
    expect(() => decode('PingReply', encodeProto('PingReply', { name: 'a', publicKey: 'k' }))).toThrow(/state/);
    expect(() => decode('Admit', encodeProto('Admit', { targetPublicKey: 'k' }))).toThrow(/membership/);
    expect(() => decode('CoreMessage', encodeProto('CoreMessage', { heartbeat: { epoch: '9007199254740993' } }))).toThrow(/safe integer/);
    expect(() => decode('CoreMessage', encodeProto('CoreMessage', {}))).toThrow(/payload/);
  });

  it('refuses a block page that stops a read half-way, and a block read asking for nothing', () => {
    expect(() => decode('BlockReply', encodeProto('BlockReply', { blocks: [], after: 'x', done: false }))).toThrow(/at least one block/);
    expect(() => decode('BlockReply', encodeProto('BlockReply', { blocks: [{ writeId: '', value: 'v' }], after: 'x', done: true }))).toThrow(/writeId/);
    expect(() => decode('BlockRead', encodeProto('BlockRead', { stream: 's', partition: 1, charsMax: 0 }))).toThrow(/charsMax/);
  });

  it('refuses a JSON document that is not JSON, nests too deep or is larger than a message, naming its field', () => {
    expect(() => decode('SearchRead', encodeProto('SearchRead', { requestJson: '{"parts": [' }))).toThrow(/field requestJson: not JSON/);
    const deep = `${'['.repeat(PEER_JSON_DEPTH_MAX + 1)}${']'.repeat(PEER_JSON_DEPTH_MAX + 1)}`;
    expect(() => decode('MonitoringReply', encodeProto('MonitoringReply', { node: 'b', detailsJson: `{"a":${deep}}` }))).toThrow(/field detailsJson: JSON nested deeper than 1100 levels/);
    expect(() => parsePeerJson('resultJson', ' '.repeat(PEER_JSON_CHARS_MAX + 1))).toThrow(/field resultJson: \d+ characters of JSON; the limit is/);
    expect(() => parsePeerJson('resultJson', ' '.repeat(PEER_JSON_CHARS_MAX + 1))).toThrow(BadPeerMessageError);
  });

  it("keeps a facet value or id set named __proto__ as an own field, as the sender's JSON had it", () => {
    const request = roundTrip(SEARCH_READ.request, SEARCH_REQUEST);
    expect(Object.hasOwn(request.contributorIds!, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(request.contributorIds)).toBe(Object.prototype);
    const tree = decodeBody(SEARCH_READ.reply, encodeBody(SEARCH_READ.reply, SEARCH_RESULT)).streams[0]!.facets[0]!.tree;
    expect(Object.keys(tree.children)).toEqual(['uk', '__proto__']);
  });

  it('refuses a document of the wrong shape, naming the path of the problem', () => {
    const request = (value: unknown) => encodeProto('SearchRead', { requestJson: JSON.stringify(value) });
    expect(() => decode('SearchRead', request({ ...SEARCH_REQUEST, hitsMax: -1 }))).toThrow(/requestJson\.hitsMax: /);
    expect(() => decode('SearchRead', request({ ...SEARCH_REQUEST, parts: [{ ...SEARCH_REQUEST.parts[0], analyzer: 'klingon' }] }))).toThrow(/requestJson\.parts\[0\]\.analyzer: expected 'standard' or 'keyword'/);
    expect(() => decode('SearchRead', request([1, 2]))).toThrow(BadPeerMessageError);
    const result = (value: unknown) => encodeProto('SearchReply', { resultJson: JSON.stringify(value) });
    const stream = { ...SEARCH_RESULT.streams[0]!, hits: [] };
    expect(() => decode('SearchReply', result({ streams: [{ ...stream, hits: [{ score: 1, writeId: 'w', data: 'text' }] }] }))).toThrow(/resultJson\.streams\[0\]\.hits\[0\]\.data: expected an object, got string/);
    expect(() => decode('SearchReply', result({ streams: [{ ...stream, facets: [{ dimension: 'd', tree: { count: 1, children: { x: { count: -1, children: {} } } } }] }] }))).toThrow(/facets\[0\]\.tree: expected a count tree/);
    const poll = (entries: unknown) => encodeProto('OutputPollReply', { epoch: 'e', seq: 1, reset: false, entriesJson: JSON.stringify(entries) });
    expect(() => decode('OutputPollReply', poll([{ message: { type: 'explode' } }]))).toThrow(/entriesJson\[0\]\.message\.type: expected 'sos' or 'increment' or 'eos'/);
    expect(() => decode('OutputPollReply', poll([{ message: { type: 'increment', items: [{ action: 'add', data: [1] }] } }]))).toThrow(/items\[0\]\.data: expected an object, got array/);
    expect(() => decode('ScanReply', encodeProto('ScanReply', { records: [{ timestamp: 1, writeId: 'w', payloadJson: '[1]' }], done: true }))).toThrow(/records\.payloadJson: expected an object, got array/);
    const statuses = (state: string, errorsJson: string) => encodeProto('ExecutionStatusReply', { queries: [{ queryId: 'q', runToken: 1, state, errorsJson }] });
    expect(() => decode('ExecutionStatusReply', statuses('exploded', '[]'))).toThrow(/field state: expected running, completed, failed, stopped/);
    expect(() => decode('ExecutionStatusReply', statuses('failed', '[{"message":"no type"}]'))).toThrow(/errorsJson\[0\]: expected an error object with a type/);
    expect(() => decode('MonitoringReply', encodeProto('MonitoringReply', { node: 'b', detailsJson: 'null' }))).toThrow(/detailsJson: expected an object, got null/);
    const history = (atMs: number[], ingest: number[]) =>
      encodeProto('ConsoleHistoryReply', {
        historyJson: JSON.stringify({ node: 'b', intervalMs: 5_000, ready: true, reasons: [], samples: { atMs, ingestPayloadsPerSecond: ingest, latencyP50Ms: [], latencyP99Ms: [], transferBytesPerSecond: [], diskUsedBytes: [] } }),
      });
    expect(() => decode('ConsoleHistoryReply', history([1], []))).toThrow(/historyJson: every column of samples must have one value per time/);
    const long = Array.from({ length: 181 }, (_, index) => index);
    expect(() => decode('ConsoleHistoryReply', history(long, long))).toThrow(/historyJson\.samples\.atMs/);
  });

  it('refuses bytes that are not a message', () => {
    expect(() => decodeEnvelope(Buffer.from([0xff, 0xff, 0xff]))).toThrow(BadPeerMessageError);
  });
});

describe('peer codec - the wire format', () => {
  // Bytes of the samples above as the release before peer messages moved to their subsystems
  // encoded them: a codec that writes other bytes for the same value breaks mixed versions.
  const golden = JSON.parse(readFileSync(join(import.meta.dirname, 'fixtures', 'peer-wire.json'), 'utf8')) as Record<string, string[]>;

  it('encodes every sample to the bytes nodes of the previous release send and read', () => {
    expect(Object.keys(golden).length).toBeGreaterThanOrEqual(48);
    for (const [type, encodings] of Object.entries(golden)) {
      const samples = SAMPLES[type]!;
      encodings.forEach((hex, index) => expect(Buffer.from(encodeBody(body(type), samples[index])).toString('hex'), `${type} sample ${index}`).toBe(hex));
    }
  });
});
