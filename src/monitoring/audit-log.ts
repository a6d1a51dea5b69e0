// The `audit` monitoring service: a bounded, in-memory log of what changed on this node. A
// definition change is logged by the node that made it (the key's coordinator, which assigned
// the version), so across the cluster each change appears once; a membership change (a node's
// state) is logged by every node that sees it, naming the membership coordinator. The oldest
// entries go first once `entriesMax` is reached.

import type { Membership, NodeState } from '../protocol/cluster-types.js';

export type AuditEntry =
  | {
      readonly at: string;
      readonly change: 'definition';
      readonly key: string;
      /** The tenant the key belongs to; undefined for cluster-wide keys (seen by `system` only). */
      readonly tenant: string | undefined;
      readonly by: string;
      readonly fromVersion: string | null;
      readonly toVersion: string;
      readonly deleted: boolean;
    }
  | {
      readonly at: string;
      readonly change: 'membership';
      readonly node: string;
      readonly by: string | null;
      readonly fromState: NodeState | null;
      readonly toState: NodeState;
      readonly fromEpoch: number | null;
      readonly toEpoch: number;
    };

/** Keys under these prefixes hold no tenant's data (the brain interface's accounts and settings). */
const CLUSTER_WIDE_KINDS = new Set(['api']);

export class AuditLog {
  private readonly entries: AuditEntry[] = [];
  /** Entries that fell off the front since start. */
  dropped = 0;
  private lastMembership: Membership | undefined;

  constructor(
    readonly entriesMax: number,
    private readonly localName: string,
    private readonly nowMs: () => number = Date.now,
  ) {}

  definitionChanged(key: string, change: { fromVersion: number | undefined; toVersion: number; coordinated: boolean }, deleted: boolean): void {
    if (!change.coordinated) return;
    this.push({
      at: this.now(),
      change: 'definition',
      key,
      tenant: tenantOfKey(key),
      by: this.localName,
      fromVersion: change.fromVersion === undefined ? null : String(change.fromVersion),
      toVersion: String(change.toVersion),
      deleted,
    });
  }

  /** Logs each member whose state differs from the last membership seen. */
  membershipChanged(membership: Membership, coordinator: string | undefined): void {
    const previous = this.lastMembership;
    this.lastMembership = membership;
    if (previous !== undefined && previous.epoch === membership.epoch) return;
    for (const member of membership.members) {
      const before = previous?.members.find((each) => each.name === member.name)?.state;
      if (before === member.state) continue;
      this.push({
        at: this.now(),
        change: 'membership',
        node: member.name,
        by: coordinator ?? null,
        fromState: before ?? null,
        toState: member.state,
        fromEpoch: previous?.epoch ?? null,
        toEpoch: membership.epoch,
      });
    }
  }

  /** The entries a tenant may see, oldest first: its own definitions; everything for `system`. */
  visibleTo(tenant: string): AuditEntry[] {
    if (tenant === 'system') return this.kept();
    return this.kept().filter((entry) => entry.change === 'definition' && entry.tenant === tenant);
  }

  private push(entry: AuditEntry): void {
    this.entries.push(entry);
    if (this.entries.length > this.entriesMax) this.dropped += 1;
    // Trimmed in steps, not per entry: a shift per push would cost the whole log each time.
    const slack = Math.max(1, Math.floor(this.entriesMax / 4));
    if (this.entries.length >= this.entriesMax + slack) this.entries.splice(0, this.entries.length - this.entriesMax);
  }

  private kept(): AuditEntry[] {
    return this.entries.length > this.entriesMax ? this.entries.slice(-this.entriesMax) : [...this.entries];
  }

  private now(): string {
    return new Date(this.nowMs()).toISOString();
  }
}

/** Definition keys are `<kind>/<tenant>/…` (tenant documents: `tenant/<name>`). */
export function tenantOfKey(key: string): string | undefined {
  const [kind, tenant] = key.split('/');
  if (kind === undefined || tenant === undefined || tenant === '' || CLUSTER_WIDE_KINDS.has(kind)) return undefined;
  return tenant;
}
