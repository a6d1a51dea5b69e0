// Where a question about a session goes: to its host, which is this node or another one
// (session-placement.ts). How its queries run is asked of the host; a change answers once
// the host runs the session as stored; and sessions move when the hosts that may run them
// change.

import type { Logger } from '../lib/log.js';
import type { Membership } from '../protocol/cluster-types.js';
import type { RunStatus, SessionHost } from './session-host.js';
import { sessionKey } from './session-model.js';

type RemoteStatuses = (node: string, tenant: string, sessionId: string, settle?: boolean) => Promise<Map<string, RunStatus>>;

export interface SessionRouting {
  localName: string;
  hostOf(sessionId: string): string | undefined;
  sessionHost: Pick<SessionHost, 'statuses' | 'reconcile'>;
  /** The host's answer over the peer port (execution-peer.ts, remoteExecutionStatuses). */
  remoteStatuses: RemoteStatuses;
  log: Logger;
}

/**
 * How a session's queries run, as its host reports them. A session with no host, or a host
 * that cannot be asked (down or cut off), shows none: the queries response lists the
 * session's stored queries without a run status rather than fail.
 */
export function sessionStatuses(routing: SessionRouting): (tenant: string, sessionId: string) => Promise<Map<string, RunStatus>> {
  return async (tenant, sessionId) => {
    const host = routing.hostOf(sessionId);
    if (host === undefined) return new Map();
    if (host === routing.localName) return new Map(routing.sessionHost.statuses(sessionKey(tenant, sessionId)) ?? []);
    try {
      return await routing.remoteStatuses(host, tenant, sessionId);
    } catch {
      return new Map();
    }
  };
}

/**
 * A change answers once the session's host runs it as stored, wherever the host is: a
 * stopped or deleted query writes nothing after the answer. A host that cannot be asked is
 * down or cut off; the change is stored and it follows when it is back.
 */
export function settleOnHost(routing: SessionRouting): (tenant: string, sessionId: string) => Promise<void> {
  return async (tenant, sessionId) => {
    const host = routing.hostOf(sessionId);
    if (host === undefined) return;
    if (host === routing.localName) return routing.sessionHost.reconcile(sessionKey(tenant, sessionId));
    try {
      await routing.remoteStatuses(host, tenant, sessionId, true);
    } catch (error) {
      routing.log.warn({ host, session: sessionId, err: (error as Error).message }, 'the session host did not confirm a change');
    }
  };
}

/** Sessions move when the set of Joined, available nodes changes (and only then). */
export function hostingFollower(sessionHost: Pick<SessionHost, 'reconcile'>, available: (name: string) => boolean): (membership: Membership) => void {
  let hostingSignature = '';
  return (membership) => {
    const signature = membership.members.filter((member) => member.state === 'Joined' && available(member.name)).map((member) => member.name).sort().join(',');
    if (signature === hostingSignature) return;
    hostingSignature = signature;
    void sessionHost.reconcile();
  };
}
