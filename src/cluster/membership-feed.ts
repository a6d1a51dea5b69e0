// Membership changes as one event: every part that follows the table (the node table, the
// membership service's transfer history, sessions' hosting, the audit log, the operators'
// views) subscribes once, and the shell publishes each table it adopts to all of them, in
// the order they subscribed.

import type { Membership } from '../protocol/cluster-types.js';

export type MembershipListener = (membership: Membership) => void;

export class MembershipFeed {
  private readonly listeners: MembershipListener[] = [];

  subscribe(listener: MembershipListener): void {
    this.listeners.push(listener);
  }

  publish(membership: Membership): void {
    for (const listener of this.listeners) listener(membership);
  }
}
