// Whether a node may act for clients now: the HTTP front end answers 503
// with Retry-After while it may not (http/serving-gate.ts), and the simulation's clients
// write only through nodes that may.

import { assert } from '../lib/assert.js';
import type { ClusterCore } from '../cluster-core/core.js';

/** Why this node cannot serve data requests now, or undefined when it can. */
export function notServingBecause(core: ClusterCore, localName: string): string | undefined {
  const state = core.membership().members.find((member) => member.name === localName)?.state;
  // A node is in its own table from the start and never leaves it (the core asserts it after every step).
  assert(state !== undefined, `${localName} is not in its own table`);
  switch (state) {
    case 'Pending':
      return `node ${localName} is Pending: it is not part of a cluster yet; ask a Joined node`;
    case 'Joining':
      return `node ${localName} is Joining: its definitions and data are still arriving; ask a Joined node or retry`;
    case 'Left':
      return `node ${localName} has left the cluster; ask a member`;
    default:
      return core.confirmed() ? undefined : `node ${localName} restarted and has not yet confirmed its cluster table with a peer; retry`;
  }
}
