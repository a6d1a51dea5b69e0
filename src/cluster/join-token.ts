// Join tokens: what a new node is told to trust. An administrator asks a
// cluster for one (`GET /cluster/join-token`) and starts the new node with it
// (`--join-token`); the node then accepts an Admit only when it is signed by one of the
// node keys the token names, so a stranger who read its public key cannot capture it.
// The token carries public keys only: it is a trust anchor, not a secret (like kubeadm's
// CA hash). A checksum catches a token cut short or mistyped.
//
//   tribjoin1.<base64url of JSON { "keys": [ base64 ed25519 public keys ] }>.<checksum>
//
// where the checksum is the first 8 bytes of SHA-256 over the middle part, in hex.

import { createHash } from 'node:crypto';
import { assert } from '../lib/assert.js';
import { isPublicKey } from './peer-input.js';

const PREFIX = 'tribjoin1';
/** Keys one token may name: every member of a large cluster. */
export const JOIN_TOKEN_KEYS_MAX = 1_024;
const TOKEN_CHARS_MAX = 128 * 1_024;

export class JoinTokenError extends Error {
  override name = 'JoinTokenError';
}

export function makeJoinToken(publicKeys: readonly string[]): string {
  const keys = [...new Set(publicKeys)].sort();
  if (keys.length === 0) throw new JoinTokenError('a join token names at least one node key');
  for (const key of keys) if (!isPublicKey(key)) throw new JoinTokenError(`not a node public key: ${key}`);
  const body = Buffer.from(JSON.stringify({ keys }), 'utf8').toString('base64url');
  const token = `${PREFIX}.${body}.${checksum(body)}`;
  // What a node started with the token will trust: exactly these keys.
  assert(parseJoinToken(token).join() === keys.join(), 'a join token that does not read back as its keys');
  return token;
}

/** The keys a token names; throws JoinTokenError saying what is wrong with it. */
export function parseJoinToken(token: string): string[] {
  const text = token.trim();
  if (text.length > TOKEN_CHARS_MAX) throw new JoinTokenError(`a join token is at most ${TOKEN_CHARS_MAX} characters`);
  const parts = text.split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX) throw new JoinTokenError(`a join token looks like ${PREFIX}.<keys>.<checksum> (ask GET /cluster/join-token)`);
  const [, body, sum] = parts as [string, string, string];
  if (checksum(body) !== sum) throw new JoinTokenError('the join token is damaged (its checksum does not match): copy it again');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    throw new JoinTokenError('the join token does not decode');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > JOIN_TOKEN_KEYS_MAX) {
    throw new JoinTokenError(`the join token must name 1 to ${JOIN_TOKEN_KEYS_MAX} node keys`);
  }
  for (const key of keys) {
    if (typeof key !== 'string' || !isPublicKey(key)) throw new JoinTokenError('the join token names something that is not a node public key');
  }
  return keys as string[];
}

function checksum(body: string): string {
  return createHash('sha256').update(body, 'utf8').digest('hex').slice(0, 16);
}
