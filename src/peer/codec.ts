// The envelope and the bodies the transport itself carries, to and from proto/peer.proto:
// envelopes, error replies, transfer chunks and their acks. Every other body is a peer
// message kind its subsystem declares (kinds.ts), with its own codec built from fields.ts.
// Decoding validates as it maps: a field of the wrong type, an int64 beyond 2^53 or a chunk
// whose bytes do not match its digest is refused with a TributaryError, never passed on
// half-checked.

import { createHash } from 'node:crypto';
import type { ChunkData, PeerMessage } from '../protocol/cluster-types.js';
import { BadPeerMessageError, ChunkChecksumError } from './errors.js';
import { EMPTY_CODEC, bool, bytes, enumOf, int, message, optionalStr, refuse, str, type BodyCodec, type ProtoObject } from './fields.js';
import type { PeerBodyType } from './kinds.js';
import protobuf from 'protobufjs';
import { peerEnum, peerType } from './proto.js';

export type { ProtoObject } from './fields.js';

// int64 as JS numbers (checked safe below), enums by name, absent fields as their defaults
// (except message fields: null, and proto3 `optional` scalars: absent).
const TO_OBJECT = { longs: Number, enums: String, defaults: true, arrays: true, oneofs: true } as const;

export interface Envelope {
  sender: string;
  sentAtMs: number;
  nonce: Uint8Array;
  kind: string;
  body: Uint8Array;
  signature: Uint8Array;
  /** Empty on requests; on a reply or ack, the nonce of what it answers. */
  replyTo: Uint8Array;
  /** The digest its signature and content digest were made with; absent: v2's (SHA-512/256). */
  digest?: DigestAlgorithm;
}

export type Empty = Record<string, never>;
export type TransferChunk = Extract<PeerMessage, { type: 'transfer-chunk' }>;
export type TransferAck = Extract<PeerMessage, { type: 'transfer-ack' }>;

/** A remote node's TributaryError, as it travels back. */
export interface ErrorReply {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
}

/**
 * The peer protocol's digests of bytes, 32 bytes each, by their node:crypto names. Each
 * envelope and chunk names the one it was made with (proto/peer.proto `Digest`), and a node
 * checks either: a sender uses the faster on its CPU (fastestPeerDigest).
 * - SHA-512/256 (FIPS 180-4), protocol v2's only one: its 64-bit rounds hash ~1.5× faster than
 *   SHA-256 on CPUs without SHA extensions (1 MiB on 2.5 GHz Xeons, by CPU time in six pairs:
 *   1.1–2.6×, median ~1.45×). Absent from the wire, so a v2 message's bytes are unchanged.
 * - SHA-256, where the CPU has SHA extensions (x86 SHA-NI, Armv8 SHA2): ~2.1× SHA-512/256's speed
 *   on the bench machine (AMD EPYC: 1,771 against 801 MB/s over 500 KB), and every peer body
 *   and transfer chunk is hashed once on each side.
 */
export type DigestAlgorithm = 'sha512-256' | 'sha256';

/** The digest of protocol v2, and of every message that names none. */
export const V2_DIGEST: DigestAlgorithm = 'sha512-256';

/** The proto enum names of the digests. */
export const DIGESTS: Readonly<Record<DigestAlgorithm, string>> = { 'sha512-256': 'DIGEST_SHA512_256', sha256: 'DIGEST_SHA256' };

export function peerDigest(bytes: Uint8Array, algorithm: DigestAlgorithm): Buffer {
  return createHash(algorithm).update(bytes).digest();
}

/** Bytes hashed each way, and rounds (alternating) to choose by: a few ms at start. */
const CHOICE_BYTES = 64 * 1024;
const CHOICE_ROUNDS = 8;

/**
 * The digest that hashes faster on this CPU: each hashes the same bytes in alternating
 * rounds, and the lower best round wins. The two differ ~1.5–2× either way, so a round
 * slowed by another process does not decide it.
 */
export function fastestPeerDigest(): DigestAlgorithm {
  const bytes = Buffer.alloc(CHOICE_BYTES, 0x5a);
  const best: Record<DigestAlgorithm, number> = { 'sha512-256': Infinity, sha256: Infinity };
  for (let round = 0; round < CHOICE_ROUNDS; round += 1) {
    for (const algorithm of [V2_DIGEST, 'sha256'] as const) {
      const start = process.hrtime.bigint();
      peerDigest(bytes, algorithm);
      best[algorithm] = Math.min(best[algorithm], Number(process.hrtime.bigint() - start));
    }
  }
  return best.sha256 < best[V2_DIGEST] ? 'sha256' : V2_DIGEST;
}

/** The digest a message names (the proto enum's default is v2's). */
export function digestFrom(object: ProtoObject, key: string): DigestAlgorithm {
  return enumOf(object, key, DIGESTS);
}

/**
 * Whether a message made with this digest names it on the wire: v2's is left out wherever it
 * would go (an envelope, a chunk, the signed layouts), so a v2 message is byte for byte what
 * a node of protocol v2 sends and reads.
 */
export function namesDigest(algorithm: DigestAlgorithm | undefined): algorithm is Exclude<DigestAlgorithm, typeof V2_DIGEST> {
  return algorithm !== undefined && algorithm !== V2_DIGEST;
}

// ---- Transfer chunks (the Transfer RPC) and their acks

/**
 * A chunk's bytes and their digest. The digest is computed here, from the bytes that go out,
 * so no caller can forget it; with `algorithm` (the sender's, fastestPeerDigest), else v2's.
 */
function chunkDataProto(value: ChunkData, algorithm: DigestAlgorithm): ProtoObject {
  const proto: ProtoObject = { bytes: value.bytes, records: value.records, cursor: value.cursor, digest: peerDigest(value.bytes, algorithm) };
  if (namesDigest(algorithm)) proto.digestAlgorithm = DIGESTS[algorithm];
  return proto;
}

const chunkData: Pick<BodyCodec<ChunkData>, 'fromProto'> = {
  fromProto: (object) => {
    const data = bytes(object, 'bytes');
    if (!peerDigest(data, digestFrom(object, 'digestAlgorithm')).equals(bytes(object, 'digest'))) {
      throw new ChunkChecksumError(`chunk of ${data.length} bytes does not match its digest`);
    }
    return { bytes: data, records: int(object, 'records'), cursor: str(object, 'cursor') };
  },
};

/** The proto object of a TransferChunk body, with its chunk's digest computed by `algorithm`. */
export function transferChunkProto(value: TransferChunk, algorithm: DigestAlgorithm): ProtoObject {
  return {
    transferId: value.transferId,
    seq: value.seq,
    chunk: chunkDataProto(value.chunk, algorithm),
    last: value.last,
    totalEstimate: value.totalEstimate,
    fromCursor: value.fromCursor,
  };
}

/** Also the core message's transferChunk payload (cluster/core-messages.ts): its digest is v2's. */
export const transferChunkCodec: BodyCodec<TransferChunk> = {
  toProto: (value) => transferChunkProto(value, V2_DIGEST),
  fromProto: (object) => ({
    type: 'transfer-chunk',
    transferId: str(object, 'transferId'),
    seq: int(object, 'seq'),
    chunk: chunkData.fromProto(message(object, 'chunk')),
    last: bool(object, 'last'),
    totalEstimate: int(object, 'totalEstimate'),
    fromCursor: optionalStr(object, 'fromCursor'),
  }),
};

/** Also the core message's transferAck payload. */
export const transferAckCodec: BodyCodec<TransferAck> = {
  toProto: (value) => ({ transferId: value.transferId, seq: value.seq }),
  fromProto: (object) => ({ type: 'transfer-ack', transferId: str(object, 'transferId'), seq: int(object, 'seq') }),
};

export const TRANSFER_CHUNK: PeerBodyType<TransferChunk> = { type: 'TransferChunk', codec: transferChunkCodec };
export const TRANSFER_ACK: PeerBodyType<TransferAck> = { type: 'TransferAck', codec: transferAckCodec };

// ---- Replies every kind may get

/** The reply of a kind that answers nothing but success. */
export const EMPTY: PeerBodyType<Empty> = { type: 'Empty', codec: EMPTY_CODEC };

export const ERROR_REPLY: PeerBodyType<ErrorReply> = {
  type: 'ErrorReply',
  codec: {
    toProto: (value) => ({
      status: value.status,
      code: value.code,
      message: value.message,
      detailsJson: value.details === undefined ? '' : JSON.stringify(value.details),
    }),
    fromProto: (object) => ({
      status: int(object, 'status'),
      code: str(object, 'code'),
      message: str(object, 'message'),
      details: parseDetails(str(object, 'detailsJson')),
    }),
  },
};

function parseDetails(text: string): Record<string, unknown> | undefined {
  if (text === '') return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // Falls through to the refusal below: details that do not parse are a broken message.
  }
  return refuse('detailsJson', 'a JSON object');
}

// ---- Bodies and envelopes

export function encodeBody<T>(body: PeerBodyType<T>, value: T): Uint8Array {
  const type = peerType(body.type);
  return type.encode(type.fromObject(body.codec.toProto(value))).finish();
}

export function decodeBody<T>(body: PeerBodyType<T>, data: Uint8Array): T {
  return body.codec.fromProto(decodeProto(body.type, data));
}

export function encodeEnvelope(envelope: Envelope): Uint8Array {
  const type = peerType('Envelope');
  const { digest, ...fields } = envelope;
  return type.encode(type.fromObject(namesDigest(digest) ? { ...fields, digest: DIGESTS[digest] } : fields)).finish();
}


/**
 * Encodes an envelope whose body is written straight from a proto object, so that a
 * chunk's bytes are copied once (into the envelope) instead of twice (into a body, then
 * the envelope): a 256 KiB copy per chunk costs a third of loopback transfer throughput.
 */
export function encodeEnvelopeWithBody(envelope: Omit<Envelope, 'body'>, bodyType: string, body: ProtoObject): Uint8Array {
  const fields = peerType('Envelope').fields;
  const tag = (name: string, wireType: number) => ((fields[name]?.id ?? refuse(name, 'an Envelope field')) << 3) | wireType;
  const type = peerType(bodyType);
  const writer = protobuf.Writer.create();
  writer.uint32(tag('sender', 2)).string(envelope.sender);
  writer.uint32(tag('sentAtMs', 0)).int64(envelope.sentAtMs);
  writer.uint32(tag('nonce', 2)).bytes(envelope.nonce);
  writer.uint32(tag('kind', 2)).string(envelope.kind);
  type.encode(type.fromObject(body), writer.uint32(tag('body', 2)).fork()).ldelim();
  writer.uint32(tag('signature', 2)).bytes(envelope.signature);
  writer.uint32(tag('replyTo', 2)).bytes(envelope.replyTo);
  if (namesDigest(envelope.digest)) writer.uint32(tag('digest', 0)).int32(digestNumber(envelope.digest));
  return writer.finish();
}

export function decodeEnvelope(data: Uint8Array): Envelope {
  const object = decodeProto('Envelope', data);
  const digest = digestFrom(object, 'digest');
  return {
    sender: str(object, 'sender'),
    sentAtMs: int(object, 'sentAtMs'),
    nonce: bytes(object, 'nonce'),
    kind: str(object, 'kind'),
    body: bytes(object, 'body'),
    signature: bytes(object, 'signature'),
    replyTo: bytes(object, 'replyTo'),
    ...(namesDigest(digest) ? { digest } : {}),
  };
}

/** The proto enum's number of a digest. */
function digestNumber(algorithm: DigestAlgorithm): number {
  const number = peerEnum('Digest').values[DIGESTS[algorithm]];
  return number ?? refuse('digest', `a value of ${DIGESTS[algorithm]}`);
}

/** The plain object of a proto message, for tests that tamper with a field. */
export function decodeProto(typeName: string, data: Uint8Array): ProtoObject {
  const type = peerType(typeName);
  try {
    return type.toObject(type.decode(data), TO_OBJECT);
  } catch (error) {
    throw new BadPeerMessageError(`${typeName} does not decode: ${(error as Error).message}`, { cause: error });
  }
}

/** Encodes a plain object as the named proto message, for tests that tamper with a field. */
export function encodeProto(typeName: string, object: ProtoObject): Uint8Array {
  const type = peerType(typeName);
  return type.encode(type.fromObject(object)).finish();
}
