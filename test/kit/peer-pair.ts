// Two or more peer transports on loopback in a unit test: a fresh signing identity, and a
// directory that names each peer's key and (possibly moving) port.

import nacl from 'tweetnacl';
import type { NodeIdentity } from '../../src/peer/identity.js';
import type { PeerDirectory } from '../../src/peer/transport.js';

export const PEER_HOST = '127.0.0.1';

export function newIdentity(): NodeIdentity {
  const pair = nacl.sign.keyPair();
  return { ...pair, publicKeyBase64: Buffer.from(pair.publicKey).toString('base64') };
}

export function loopbackDirectory(entries: Record<string, { key: string; port: () => number }>): PeerDirectory {
  return {
    publicKeyOf: (name) => entries[name]?.key,
    addressOf: (name) => (entries[name] === undefined ? undefined : { address: PEER_HOST, port: entries[name]!.port() }),
  };
}
