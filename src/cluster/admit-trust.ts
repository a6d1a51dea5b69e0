// Whom a node with no cluster yet takes an Admit from.

import { assert } from '../lib/assert.js';
import { isLoopbackHost } from '../config/config.js';
import type { Logger } from '../lib/log.js';
import { parseJoinToken } from './join-token.js';
import type { AdmitTrust } from './peer-server.js';

/**
 * Whom a node with no cluster yet takes an Admit from: the keys of its join token, or with
 * bare --join the first well-formed Admit naming its key (said in the log, since that is
 * trust on first use).
 */
export function admitTrust(start: { join: boolean; joinToken: string | null; host: string }, accepting: () => boolean, log: Logger): AdmitTrust {
  // Beyond loopback bare --join is refused at start (config.ts); a node that lost its table
  // (core-state-store.ts) gets there without it, and then trusts no one until given a token.
  const trustedKeys = start.joinToken !== null ? new Set(parseJoinToken(start.joinToken)) : isLoopbackHost(start.host) ? undefined : new Set<string>();
  // A token names one key at least (parseJoinToken refuses one that names none): an empty set means no token.
  assert(start.joinToken === null || (trustedKeys !== undefined && trustedKeys.size >= 1), 'a join token that names no key');
  if (start.join && accepting()) {
    if (trustedKeys === undefined) {
      log.warn('started with bare --join: this node will trust the first well-formed Admit that names its key (trust on first use; development on loopback only, use --join-token otherwise)');
    } else if (trustedKeys.size === 0) {
      log.error(`host ${start.host} is beyond loopback and this node has no join token: it takes no Admit; restart it with --join-token (GET /cluster/join-token on a member)`);
    } else {
      log.info({ trustedKeys: trustedKeys.size }, 'waiting to be admitted by a node the join token names');
    }
  }
  return { accepting, trustedKeys };
}
