import { createHash, randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import type { NodeIdentity } from '../../src/peer/identity.js';
import { TRANSFER_CHUNK, decodeBody, decodeProto, encodeBody, encodeProto } from '../../src/peer/codec.js';
import { ChunkChecksumError } from '../../src/peer/errors.js';
import { peerType } from '../../src/peer/proto.js';
import { ReplayGuard } from '../../src/peer/replay.js';
import {
  CHUNK_SIGNED_FIELDS,
  envelopeDigest,
  sealEnvelope,
  signBytes,
  signingKeyOf,
  verifyBytes,
  verifyEnvelope,
  verifyingKeyOf,
  type UnsignedEnvelope,
} from '../../src/peer/signing.js';

function identity(): NodeIdentity {
  const pair = nacl.sign.keyPair();
  return { ...pair, publicKeyBase64: Buffer.from(pair.publicKey).toString('base64') };
}

describe('peer signing - node:crypto and tweetnacl agree', () => {
  it('makes signatures byte-identical to nacl.sign.detached', () => {
    for (let round = 0; round < 20; round += 1) {
      const keys = identity();
      const message = randomBytes(round * 37);
      const ours = signBytes(signingKeyOf(keys), message);
      expect(Buffer.from(ours).equals(Buffer.from(nacl.sign.detached(message, keys.secretKey)))).toBe(true);
      expect(nacl.sign.detached.verify(message, ours, keys.publicKey)).toBe(true);
    }
  });

  it('verifies tweetnacl signatures and refuses them on another message or key', () => {
    const keys = identity();
    const message = randomBytes(100);
    const signature = nacl.sign.detached(message, keys.secretKey);
    expect(verifyBytes(verifyingKeyOf(keys.publicKey), message, signature)).toBe(true);
    expect(verifyBytes(verifyingKeyOf(keys.publicKeyBase64), randomBytes(100), signature)).toBe(false);
    expect(verifyBytes(verifyingKeyOf(identity().publicKey), message, signature)).toBe(false);
    expect(verifyBytes(verifyingKeyOf(keys.publicKey), message, signature.subarray(1))).toBe(false);
  });
});

describe('peer signing - envelopes', () => {
  const sender = identity();
  const recipient = identity();
  const fields: UnsignedEnvelope = {
    sender: 'a',
    sentAtMs: 1_700_000_000_000,
    nonce: randomBytes(16),
    kind: 'Ping',
    body: Buffer.from('body'),
    replyTo: new Uint8Array(0),
  };

  it('verifies a sealed envelope with the sender key for its recipient', () => {
    const envelope = sealEnvelope({ signingKey: signingKeyOf(sender), ...fields, recipientPublicKey: recipient.publicKey });
    expect(verifyEnvelope(envelope, verifyingKeyOf(sender.publicKey), recipient.publicKey)).toBe(true);
    expect(Buffer.from(envelope.nonce).equals(fields.nonce)).toBe(true);
  });

  it('refuses an envelope with any signed field changed, or meant for another node', () => {
    const envelope = sealEnvelope({ signingKey: signingKeyOf(sender), ...fields, recipientPublicKey: recipient.publicKey });
    const key = verifyingKeyOf(sender.publicKey);
    const changes: UnsignedEnvelope[] = [
      { ...fields, sender: 'b' },
      { ...fields, kind: 'ScanRead' },
      { ...fields, sentAtMs: fields.sentAtMs + 1 },
      { ...fields, nonce: randomBytes(16) },
      { ...fields, body: Buffer.from('bodY') },
      { ...fields, replyTo: randomBytes(16) },
    ];
    for (const changed of changes) {
      expect(verifyEnvelope({ ...changed, signature: envelope.signature }, key, recipient.publicKey)).toBe(false);
    }
    expect(verifyEnvelope(envelope, key, identity().publicKey)).toBe(false);
    expect(verifyEnvelope(envelope, key, undefined)).toBe(false);
  });

  it('signs by SHA-256 when told, names it in the envelope, and does not check under the other digest', () => {
    const envelope = sealEnvelope({ signingKey: signingKeyOf(sender), ...fields, recipientPublicKey: recipient.publicKey, digest: 'sha256' });
    const key = verifyingKeyOf(sender.publicKey);
    expect(envelope.digest).toBe('sha256');
    expect(verifyEnvelope(envelope, key, recipient.publicKey)).toBe(true);
    const { digest: _named, ...unnamed } = envelope;
    expect(verifyEnvelope(unnamed, key, recipient.publicKey)).toBe(false);
    const v2 = sealEnvelope({ signingKey: signingKeyOf(sender), ...fields, recipientPublicKey: recipient.publicKey });
    expect(v2.digest).toBeUndefined();
    expect(verifyEnvelope({ ...v2, digest: 'sha256' }, key, recipient.publicKey)).toBe(false);
    // The same fields give another digest under each: the domains and hashes differ.
    expect(envelopeDigest({ ...fields, digest: 'sha256' }, undefined).equals(envelopeDigest(fields, undefined))).toBe(false);
  });

  it('keeps length-prefixed fields apart (sender "ab" + kind "c" is not sender "a" + kind "bc")', () => {
    const one = envelopeDigest({ ...fields, sender: 'ab', kind: 'c' }, undefined);
    const two = envelopeDigest({ ...fields, sender: 'a', kind: 'bc' }, undefined);
    expect(one.equals(two)).toBe(false);
  });
});

describe('peer signing - transfer chunks', () => {
  const sender = identity();
  const recipient = identity();
  const chunkBody = encodeBody(TRANSFER_CHUNK, {
    type: 'transfer-chunk',
    transferId: 'c1/ssr/a>b',
    seq: 4,
    chunk: { bytes: randomBytes(4096), records: 10, cursor: 'k' },
    last: false,
    totalEstimate: 40,
    fromCursor: 'j',
  });
  const sealing = (body: Uint8Array) => ({
    signingKey: signingKeyOf(sender),
    sender: 'a',
    sentAtMs: 1,
    nonce: randomBytes(16),
    kind: 'TransferChunk',
    body,
    replyTo: new Uint8Array(0),
    recipientPublicKey: recipient.publicKey,
  });
  const seal = (body: Uint8Array) => sealEnvelope(sealing(body));
  const withChunk = (change: Record<string, unknown>, top: Record<string, unknown> = {}) => {
    const proto = decodeProto('TransferChunk', chunkBody);
    return encodeProto('TransferChunk', { ...proto, ...top, chunk: { ...(proto.chunk as object), ...change } });
  };

  it('signs every field of the chunk but its bytes, which its signed digest covers', () => {
    const fields = (name: string) => peerType(name).fieldsArray.map((field) => field.name).sort();
    expect(fields('TransferChunk')).toEqual([...CHUNK_SIGNED_FIELDS.TransferChunk].sort());
    expect(fields('ChunkData')).toEqual([...CHUNK_SIGNED_FIELDS.ChunkData, 'bytes'].sort());
  });

  it('refuses a chunk whose metadata or digest changed after signing, and one whose bytes changed at decoding', () => {
    const envelope = seal(chunkBody);
    const key = verifyingKeyOf(sender.publicKey);
    expect(verifyEnvelope(envelope, key, recipient.publicKey)).toBe(true);
    const changed = [withChunk({ digest: randomBytes(32) }), withChunk({ records: 11 }), withChunk({ cursor: 'j' }), withChunk({}, { seq: 5 }), withChunk({}, { last: true }), withChunk({}, { fromCursor: undefined }), withChunk({}, { fromCursor: '' })];
    for (const body of changed) expect(verifyEnvelope({ ...envelope, body }, key, recipient.publicKey)).toBe(false);
    const otherBytes = withChunk({ bytes: randomBytes(4096) });
    expect(verifyEnvelope({ ...envelope, body: otherBytes }, key, recipient.publicKey)).toBe(true);
    expect(() => decodeBody(TRANSFER_CHUNK, otherBytes)).toThrow(ChunkChecksumError);
  });

  it("signs a SHA-256 chunk's digest name too: naming the other digest breaks the signature", () => {
    const proto = decodeProto('TransferChunk', chunkBody);
    const data = (proto.chunk as { bytes: Uint8Array }).bytes;
    const sha256Body = encodeProto('TransferChunk', { ...proto, chunk: { ...(proto.chunk as object), digest: createHash('sha256').update(data).digest(), digestAlgorithm: 'DIGEST_SHA256' } });
    const envelope = sealEnvelope({ ...sealing(sha256Body), digest: 'sha256' });
    const key = verifyingKeyOf(sender.publicKey);
    expect(verifyEnvelope(envelope, key, recipient.publicKey)).toBe(true);
    expect(decodeBody(TRANSFER_CHUNK, sha256Body).chunk.bytes).toEqual(data);
    const renamed = encodeProto('TransferChunk', { ...decodeProto('TransferChunk', sha256Body), chunk: { ...(decodeProto('TransferChunk', sha256Body).chunk as object), digestAlgorithm: 'DIGEST_SHA512_256' } });
    expect(verifyEnvelope({ ...envelope, body: renamed }, key, recipient.publicKey)).toBe(false);
  });
});

describe('peer replay guard - window and nonces', () => {
  const nonce = (n: number) => Buffer.alloc(16, n);

  it('refuses a timestamp outside the window both ways, and a nonce seen before', () => {
    const guard = new ReplayGuard(1_000, 10);
    expect(guard.admit(nonce(1), 5_000, 6_001)).toBe('stale');
    expect(guard.admit(nonce(1), 7_001, 6_000)).toBe('stale');
    expect(guard.admit(nonce(1), 5_000, 6_000)).toBe('fresh');
    expect(guard.admit(nonce(1), 5_000, 6_000)).toBe('replayed');
  });

  it('forgets a nonce once its timestamp has left the window', () => {
    const guard = new ReplayGuard(1_000, 10);
    guard.admit(nonce(1), 5_000, 5_000);
    guard.admit(nonce(2), 5_500, 5_500);
    guard.admit(nonce(3), 5_900, 6_001);
    expect(guard.size).toBe(2);
  });

  it('refuses rather than forgets when full of live nonces, and takes new ones once they expire', () => {
    const guard = new ReplayGuard(1_000, 3);
    for (let n = 0; n < 3; n += 1) expect(guard.admit(nonce(n), 5_000, 5_000)).toBe('fresh');
    expect(guard.admit(nonce(9), 5_000, 5_000)).toBe('full');
    expect(guard.admit(nonce(9), 6_100, 6_100)).toBe('fresh');
    expect(guard.size).toBe(1);
  });
});
