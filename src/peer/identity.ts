// The node's ed25519 identity. Made on first start, kept in the data folder, and never
// changed: peers recognise the node by its public key (docs/cluster.md, "Trust").

import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import nacl from 'tweetnacl';
import { writeFileDurably } from '../storage/files.js';

export interface NodeIdentity {
  publicKey: Uint8Array;
  secretKey: Uint8Array;
  /** Base64 of the 32-byte public key, as the node document shows it. */
  publicKeyBase64: string;
}

const KEY_FILE = 'node-key.json';

export function loadOrCreateIdentity(dataDir: string): NodeIdentity {
  const path = join(dataDir, KEY_FILE);
  if (existsSync(path)) return readIdentity(path);
  mkdirSync(dataDir, { recursive: true });
  const pair = nacl.sign.keyPair();
  const file = {
    publicKey: Buffer.from(pair.publicKey).toString('base64'),
    secretKey: Buffer.from(pair.secretKey).toString('base64'),
  };
  // The key must be on disk before the node ever shows it: a crash after showing a key
  // that was not kept would change the node's identity on restart.
  writeFileDurably(path, JSON.stringify(file, null, 2) + '\n', 0o600);
  return readIdentity(path);
}

function readIdentity(path: string): NodeIdentity {
  let parsed: { publicKey?: unknown; secretKey?: unknown };
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`key file ${path} is unreadable: ${(error as Error).message}`);
  }
  if (typeof parsed.publicKey !== 'string' || typeof parsed.secretKey !== 'string') {
    throw new Error(`key file ${path} lacks publicKey or secretKey`);
  }
  const publicKey = new Uint8Array(Buffer.from(parsed.publicKey, 'base64'));
  const secretKey = new Uint8Array(Buffer.from(parsed.secretKey, 'base64'));
  if (publicKey.length !== nacl.sign.publicKeyLength || secretKey.length !== nacl.sign.secretKeyLength) {
    throw new Error(`key file ${path} holds keys of the wrong length`);
  }
  // The secret key embeds the public key in its last 32 bytes; a mismatch is a corrupt file.
  if (!Buffer.from(secretKey.subarray(32)).equals(Buffer.from(publicKey))) {
    throw new Error(`key file ${path}: public key does not match secret key`);
  }
  return { publicKey, secretKey, publicKeyBase64: parsed.publicKey };
}
