// Which node hosts a session (docs/platform-decisions.md, "Execution sessions, queries and
// daemons"): the first available node of its id's preference list on the ring of Joined nodes.
// Pure: the membership and the availability test are passed in. A Leaving node hosts nothing,
// so sessions move off it before it goes; a node that cannot be reached is skipped, so they
// move off a dead one.

import { ringOwners } from '../cluster-core/placement.js';
import type { Membership } from '../protocol/cluster-types.js';
import { fnv1a32 } from '../streams/partitioner.js';

/** The ring size used to place sessions; independent of any stream's. */
const SESSION_RING_SIZE = 1024;

export function sessionHostOf(membership: Membership, available: (node: string) => boolean, sessionId: string): string | undefined {
  const joined = membership.members.filter((member) => member.state === 'Joined').map((member) => member.name).sort();
  if (joined.length === 0) return undefined;
  const partition = fnv1a32(Buffer.from(sessionId, 'utf8')) % SESSION_RING_SIZE;
  return ringOwners(joined, { partition, replicas: joined.length }).find(available);
}
