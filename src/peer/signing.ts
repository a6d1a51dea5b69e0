// Envelope signatures. The keys are tweetnacl's (peer/identity.ts) and the signatures are
// byte-identical to tweetnacl's `nacl.sign.detached` (ed25519 is deterministic; see
// test/unit/peer-signing.test.ts), but node:crypto computes them 30–100× faster
// (tweetnacl signs in pure JavaScript). What is signed is a digest (codec.ts `peerDigest`:
// SHA-512/256, or SHA-256 where the sender's CPU hashes it faster, as the envelope names) of
// the envelope's metadata and of its body's digest, never the body itself (the layout is in
// peer.proto). A TransferChunk's body is not hashed whole: its signed
// content is the chunk's metadata and the digest of its bytes (docs/cluster.md, "Transfers"), so
// the bytes are hashed once on each side (to make and to check chunk.digest) rather than
// twice.

import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import type { NodeIdentity } from './identity.js';
import { decodeProto, digestFrom, namesDigest, peerDigest, V2_DIGEST, type DigestAlgorithm, type Envelope } from './codec.js';

export const NONCE_BYTES = 16;
export const SIGNATURE_BYTES = 64;
export const PUBLIC_KEY_BYTES = 32;
/** Each digest signs in a domain of its own. */
const DOMAINS: Readonly<Record<DigestAlgorithm, Buffer>> = {
  'sha512-256': Buffer.from('tributary.peer.v2\n', 'utf8'),
  sha256: Buffer.from('tributary.peer.v2+sha256\n', 'utf8'),
};
/** Verifying keys of peers, by base64; a cluster has far fewer members than this. */
const VERIFYING_KEYS_MAX = 4096;
const verifyingKeys = new Map<string, KeyObject>();

export type UnsignedEnvelope = Omit<Envelope, 'signature'>;

/** The node's secret key as a node:crypto key (tweetnacl's secret key = seed ‖ public key). */
export function signingKeyOf(identity: NodeIdentity): KeyObject {
  const seed = identity.secretKey.subarray(0, 32);
  return createPrivateKey({
    key: { kty: 'OKP', crv: 'Ed25519', d: base64Url(seed), x: base64Url(identity.publicKey) },
    format: 'jwk',
  });
}

/** A peer's public key (raw bytes or the node table's base64) as a node:crypto key; cached. */
export function verifyingKeyOf(publicKey: Uint8Array | string): KeyObject {
  const base64 = typeof publicKey === 'string' ? publicKey : Buffer.from(publicKey).toString('base64');
  const cached = verifyingKeys.get(base64);
  if (cached !== undefined) return cached;
  const raw = Buffer.from(base64, 'base64');
  if (raw.length !== PUBLIC_KEY_BYTES) throw new Error(`an ed25519 public key has ${PUBLIC_KEY_BYTES} bytes, not ${raw.length}`);
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: base64Url(raw) }, format: 'jwk' });
  if (verifyingKeys.size >= VERIFYING_KEYS_MAX) verifyingKeys.clear();
  verifyingKeys.set(base64, key);
  return key;
}

export function signBytes(signingKey: KeyObject, message: Uint8Array): Uint8Array {
  return sign(null, message, signingKey);
}

export function verifyBytes(verifyingKey: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
  // node:crypto throws on a signature of the wrong length; that is simply a bad signature.
  if (signature.length !== SIGNATURE_BYTES) return false;
  return verify(null, message, verifyingKey, signature);
}

/**
 * The digest that is signed. `recipientPublicKey` binds a request to the node it was meant
 * for (so it cannot be replayed to another node); replies pass undefined and are bound to
 * their request by `replyTo`.
 */
export function envelopeDigest(envelope: UnsignedEnvelope, recipientPublicKey: Uint8Array | undefined): Buffer {
  return digestOf(envelope, contentDigest(envelope.kind, envelope.body, envelope.digest ?? V2_DIGEST), recipientPublicKey);
}

/** The envelope's metadata and the digest of its content, in the layout of peer.proto, by the envelope's digest. */
export function digestOf(
  envelope: Omit<UnsignedEnvelope, 'body'>,
  content: Uint8Array,
  recipientPublicKey: Uint8Array | undefined,
): Buffer {
  const algorithm = envelope.digest ?? V2_DIGEST;
  const sentAt = Buffer.alloc(8);
  sentAt.writeBigInt64BE(BigInt(envelope.sentAtMs));
  return hashOf(algorithm, [
    DOMAINS[algorithm],
    lengthPrefixed16(Buffer.from(envelope.kind, 'utf8')),
    lengthPrefixed16(Buffer.from(envelope.sender, 'utf8')),
    sentAt,
    lengthPrefixed8(envelope.nonce),
    lengthPrefixed8(envelope.replyTo),
    lengthPrefixed8(recipientPublicKey ?? new Uint8Array(0)),
    content,
  ]);
}

/** The digest of the body, except for TransferChunk (see the top of this file). */
export function contentDigest(kind: string, body: Uint8Array, algorithm: DigestAlgorithm): Buffer {
  return kind === 'TransferChunk' ? chunkContentDigest(decodeProto('TransferChunk', body), algorithm) : peerDigest(body, algorithm);
}

/**
 * Every field of TransferChunk and ChunkData except the chunk's bytes, which the receiver
 * checks against the signed `digest`. A field added to either message must be added here
 * (test/unit/peer-signing.test.ts fails until it is).
 */
export const CHUNK_SIGNED_FIELDS = {
  TransferChunk: ['transferId', 'seq', 'chunk', 'last', 'totalEstimate', 'fromCursor'],
  ChunkData: ['records', 'cursor', 'digest', 'digestAlgorithm'],
} as const;

/** Of a TransferChunk proto object: as decoded by the receiver, or as built by the sender. */
export function chunkContentDigest(message: Record<string, unknown>, algorithm: DigestAlgorithm): Buffer {
  const chunk = (message.chunk ?? {}) as Record<string, unknown>;
  const digest = chunk.digest instanceof Uint8Array ? chunk.digest : new Uint8Array(0);
  // The digest of the chunk's bytes: named after it when it names one (namesDigest), so v2's layout stands.
  const chunkDigest = chunk.digestAlgorithm === undefined ? V2_DIGEST : digestFrom(chunk, 'digestAlgorithm');
  return hashOf(algorithm, [
    lengthPrefixed16(Buffer.from(String(message.transferId ?? ''), 'utf8')),
    int64(message.seq),
    Buffer.from([message.last === true ? 1 : 0]),
    int64(message.totalEstimate),
    optionalString(message.fromCursor),
    int64(chunk.records ?? 0),
    lengthPrefixed16(Buffer.from(String(chunk.cursor ?? ''), 'utf8')),
    lengthPrefixed8(digest),
    namesDigest(chunkDigest) ? Buffer.from([DIGEST_BYTES[chunkDigest]]) : new Uint8Array(0),
  ]);
}

/** The byte that names a chunk's digest in its signed layout (v2's is named by none). */
const DIGEST_BYTES = { sha256: 1 } as const;

/** A presence byte, so that an absent cursor and an empty one sign differently. */
function optionalString(value: unknown): Buffer {
  if (value === undefined) return Buffer.from([0]);
  return Buffer.concat([Buffer.from([1]), lengthPrefixed16(Buffer.from(String(value), 'utf8'))]);
}

function int64(value: unknown): Buffer {
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new Error('a signed int64 field is not a safe integer');
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(BigInt(value));
  return bytes;
}

export interface SealOptions {
  signingKey: KeyObject;
  sender: string;
  kind: string;
  body: Uint8Array;
  sentAtMs: number;
  /** The recipient's public key on requests; undefined on replies. */
  recipientPublicKey: Uint8Array | undefined;
  /** Empty on requests. */
  replyTo: Uint8Array;
  /** A fresh random nonce unless given (tests replay one). */
  nonce?: Uint8Array;
  /** The digest to sign by (the sender's, codec.ts fastestPeerDigest); default v2's. */
  digest?: DigestAlgorithm;
  /** contentDigest(kind, body, digest), when the caller has it already (one body sent to several nodes). */
  contentDigest?: Uint8Array;
}

export function sealEnvelope(options: SealOptions): Envelope {
  const unsigned: UnsignedEnvelope = {
    sender: options.sender,
    sentAtMs: options.sentAtMs,
    nonce: options.nonce ?? randomBytes(NONCE_BYTES),
    kind: options.kind,
    body: options.body,
    replyTo: options.replyTo,
    ...(namesDigest(options.digest) ? { digest: options.digest } : {}),
  };
  const content = options.contentDigest ?? contentDigest(unsigned.kind, unsigned.body, unsigned.digest ?? V2_DIGEST);
  const signature = signBytes(options.signingKey, digestOf(unsigned, content, options.recipientPublicKey));
  return { ...unsigned, signature };
}

export function verifyEnvelope(envelope: Envelope, verifyingKey: KeyObject, recipientPublicKey: Uint8Array | undefined): boolean {
  let digest: Buffer;
  try {
    digest = envelopeDigest(envelope, recipientPublicKey);
  } catch {
    // A field too long to sign or a chunk that does not decode: nobody signed that.
    return false;
  }
  return verifyBytes(verifyingKey, digest, envelope.signature);
}

function hashOf(algorithm: DigestAlgorithm, parts: Uint8Array[]): Buffer {
  return peerDigest(Buffer.concat(parts), algorithm);
}

function lengthPrefixed16(bytes: Uint8Array): Buffer {
  if (bytes.length > 0xffff) throw new Error(`a signed field of ${bytes.length} bytes is over 65535`);
  const prefix = Buffer.alloc(2);
  prefix.writeUInt16BE(bytes.length);
  return Buffer.concat([prefix, bytes]);
}

function lengthPrefixed8(bytes: Uint8Array): Buffer {
  if (bytes.length > 0xff) throw new Error(`a signed field of ${bytes.length} bytes is over 255`);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

function base64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url');
}
