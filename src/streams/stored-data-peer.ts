// Whether a stream has stored payloads anywhere in the cluster: a change
// of a stream's repository or placement that would hide stored data is refused. Each node
// answers a HoldsDataRead for its own repositories.

import type { ClusterCore } from '../cluster-core/core.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import { bool, str } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';

type LocalHoldsData = (stream: string) => Promise<boolean>;

export const HOLDS_DATA_READ = definePeerKind<{ stream: string }, { holds: boolean }>({
  name: 'HoldsDataRead',
  request: { toProto: (value) => ({ stream: value.stream }), fromProto: (object) => ({ stream: str(object, 'stream') }) },
  reply: {
    type: 'HoldsDataReply',
    codec: { toProto: (value) => ({ holds: value.holds }), fromProto: (object) => ({ holds: bool(object, 'holds') }) },
  },
});

export function serveHoldsData(endpoint: PeerEndpoint, localHoldsData: LocalHoldsData): void {
  endpoint.handle(HOLDS_DATA_READ, async (_sender, read) => ({ holds: await localHoldsData(read.stream) }));
}

/**
 * Whether any member stores payloads of the stream. A member that does not answer counts
 * as holding some: a change that would hide stored data is refused rather than risked.
 */
export async function clusterHoldsData(
  stream: string,
  parts: { localHoldsData: LocalHoldsData; core: Pick<ClusterCore, 'membership'>; transport: PeerEndpoint; deadlineMs: number },
): Promise<boolean> {
  if (await parts.localHoldsData(stream)) return true;
  const others = parts.core.membership().members.filter((member) => member.state !== 'Left' && member.name !== parts.transport.name);
  const answers = await Promise.all(
    others.map(async (member) => {
      try {
        return (await parts.transport.call(member.name, HOLDS_DATA_READ, { stream }, { deadlineMs: parts.deadlineMs })).holds;
      } catch {
        return true;
      }
    }),
  );
  return answers.some((holds) => holds);
}
