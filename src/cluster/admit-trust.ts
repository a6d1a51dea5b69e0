// Whom a node with no cluster yet takes an Admit from (issue 15, item 1).

import type { Logger } from '../log.js';
import { parseJoinToken } from './join-token.js';
import type { AdmitTrust } from './peer-server.js';

/**
 * Whom a node with no cluster yet takes an Admit from: the keys of its join token, or with
 * bare --join the first well-formed Admit naming its key (said in the log, since that is
 * trust on first use).
 */
export function admitTrust(start: { join: boolean; joinToken: string | null }, accepting: () => boolean, log: Logger): AdmitTrust {
  const trustedKeys = start.joinToken === null ? undefined : new Set(parseJoinToken(start.joinToken));
  if (start.join && accepting()) {
    if (trustedKeys === undefined) {
      log.warn('started with bare --join: this node will trust the first well-formed Admit that names its key (trust on first use; development on loopback only, use --join-token otherwise)');
    } else {
      log.info({ trustedKeys: trustedKeys.size }, 'waiting to be admitted by a node the join token names');
    }
  }
  return { accepting, trustedKeys };
}
