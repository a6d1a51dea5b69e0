// Pure transitions of the replicated node table and the invariants every table obeys
// (issue 3, item 8). Memberships are values: nothing here mutates its arguments, so a
// table handed out in an effect or a message never changes under its holder.
//
// Why the history stays linear without a consensus protocol: from a table with no change in
// flight, only the admin authority (the lowest-named Joined member) makes the next epoch,
// and it plans the change's transfers then, with its own view of who is up; from a table
// with a change in flight, the next epoch is a deterministic function of the table
// (Pending→Joining, then completion), so whoever makes it makes the same one. What may
// differ between nodes at one epoch is only added transfers (alternatives, whose content
// is a function of their id) and progress; those merge as a join-semilattice (union of
// transfers by id, complete = or, percent/bytes/records = max).

import {
  assert,
  compareSlots,
  compareText,
  dataRingNames,
  normaliseSlots,
  ownersOf,
  nextOwnersOf,
  uncoveredNeeds,
} from './placement.js';
import type { AnnouncedAddress, Member, Membership, MembershipChange, NodeState, Slot, TransferPlan } from './types.js';
import { NODE_STATE_EDGES } from './types.js';

/** The states after `from` up to and including `to`, along NODE_STATE_EDGES; throws if `to` is not ahead. */
export function statePath(from: NodeState, to: NodeState): NodeState[] {
  const path: NodeState[] = [];
  let state = from;
  while (state !== to) {
    const next: NodeState | undefined = NODE_STATE_EDGES[state][0];
    assert(next !== undefined, `node state cannot move from ${from} to ${to}`);
    path.push(next);
    state = next;
  }
  return path;
}

export function memberNamed(membership: Membership, name: string): Member | undefined {
  return membership.members.find((member) => member.name === name);
}

/** What must be equal in two tables of the same epoch; transfer details may differ and merge. */
const structuralKeyMemo = new WeakMap<Membership, string>();

export function structuralKey(membership: Membership): string {
  let key = structuralKeyMemo.get(membership);
  if (key === undefined) structuralKeyMemo.set(membership, (key = computeStructuralKey(membership)));
  return key;
}

/**
 * Addresses are left out: a node announces a new address without a new epoch, and tables
 * merge it by incarnation (withMemberAddresses). So are transfer progress and finalSynced,
 * which merge as a semilattice.
 */
function computeStructuralKey(membership: Membership): string {
  const change = membership.change;
  return JSON.stringify([
    membership.epoch,
    membership.members.map((member) => [member.name, member.publicKey, member.zone, member.state]),
    change === undefined ? null : [change.id, change.kind, change.node, change.slots],
  ]);
}

/**
 * `membership` with each member's address taken from `source` where source knows a higher
 * incarnation of it (the member announced itself again). Returns the same object when
 * nothing changes, so callers can tell by identity.
 */
export function withMemberAddresses(membership: Membership, source: Membership): Membership {
  let changed = false;
  const members = membership.members.map((member) => {
    const other = memberNamed(source, member.name);
    if (other === undefined || incarnationOf(other) <= incarnationOf(member)) return member;
    changed = true;
    return { ...member, address: other.address, port: other.port, httpPort: other.httpPort, incarnation: incarnationOf(other) };
  });
  return changed ? { ...membership, members } : membership;
}

/** `membership` with `name`'s address as it announced it, when that is newer than what it holds. */
export function withAnnouncedAddress(membership: Membership, name: string, at: AnnouncedAddress): Membership {
  const member = memberNamed(membership, name);
  if (member === undefined || at.incarnation <= incarnationOf(member)) return membership;
  const members = membership.members.map((each) => (each.name === name ? { ...each, address: at.address, port: at.port, httpPort: at.httpPort, incarnation: at.incarnation } : each));
  return { ...membership, members };
}

/** True when `a` knows some member's address at a higher incarnation than `b`. */
export function knowsNewerAddresses(a: Membership, b: Membership): boolean {
  return withMemberAddresses(b, a) !== b;
}

export function incarnationOf(member: Member): number {
  return member.incarnation ?? 0;
}

/** The table with `name`'s address replaced and its incarnation raised: the node announces itself again. */
export function withReaddressedMember(membership: Membership, name: string, address: Pick<Member, 'address' | 'port' | 'httpPort'>): Membership {
  const members = membership.members.map((member) =>
    member.name === name ? { ...member, ...address, incarnation: incarnationOf(member) + 1 } : member,
  );
  return { ...membership, members };
}

/** Checks a table on its own: run before a table is applied, persisted or sent. */
export function assertMembership(membership: Membership): void {
  const names = membership.members.map((member) => member.name);
  assert(names.every((name, index) => index === 0 || compareText(names[index - 1]!, name) < 0), `members not sorted and distinct: ${names.join(',')}`);
  assert(membership.members.some((member) => member.state === 'Joined'), `epoch ${membership.epoch} has no Joined member`);
  const change = membership.change;
  const inMotion = membership.members.filter((member) => member.state === 'Pending' || member.state === 'Joining' || member.state === 'Leaving');
  if (change === undefined) {
    assert(inMotion.length === 0, `epoch ${membership.epoch}: ${inMotion.map((member) => member.name).join(',')} in motion without a change`);
    return;
  }
  // At most one change in flight: exactly the change's node is in motion.
  assert(inMotion.length === 1 && inMotion[0]!.name === change.node, `epoch ${membership.epoch}: change ${change.id} but in motion: ${inMotion.map((member) => member.name).join(',')}`);
  const state = inMotion[0]!.state;
  assert(change.kind === 'join' ? state === 'Pending' || state === 'Joining' : state === 'Leaving', `change ${change.id} (${change.kind}) with ${change.node} ${state}`);
  // Data moves only once the joining node is ready (Joining).
  assert(state !== 'Pending' || change.transfers.every((transfer) => !transfer.complete && transfer.percentComplete === 0), `change ${change.id} moved data before its node was ready`);
  assert(dataRingNames(membership).length > 0, `change ${change.id} leaves no data ring`);
  for (const slot of change.slots) {
    const owners = ownersOf(membership, slot);
    const next = nextOwnersOf(membership, slot);
    assert(new Set(owners).size === owners.length && new Set(next).size === next.length, `slot ${slot.partition}/${slot.replicas} owners not distinct`);
  }
  for (const transfer of change.transfers) {
    assert(transfer.id.startsWith(`${change.id}/`), `transfer ${transfer.id} outside change ${change.id}`);
    assert(transfer.percentComplete >= 0 && transfer.percentComplete <= 100, `transfer ${transfer.id} at ${transfer.percentComplete}%`);
    assert(!transfer.complete || transfer.percentComplete === 100, `transfer ${transfer.id} complete at ${transfer.percentComplete}%`);
  }
}

/** Checks that `next` may follow `previous`: nobody disappears, states only move forward. */
export function assertSuccessor(previous: Membership, next: Membership): void {
  assert(next.epoch >= previous.epoch, `epoch went back from ${previous.epoch} to ${next.epoch}`);
  for (const member of previous.members) {
    const later = memberNamed(next, member.name);
    assert(later !== undefined, `member ${member.name} vanished at epoch ${next.epoch}`);
    statePath(member.state, later.state); // throws on a backward move
  }
}

function withMembers(membership: Membership, members: Member[], change: MembershipChange | undefined, epoch: number): Membership {
  return { epoch, members: [...members].sort((a, b) => compareText(a.name, b.name)), change };
}

function withState(members: readonly Member[], name: string, state: NodeState): Member[] {
  return members.map((member) => (member.name === name ? { ...member, state } : member));
}

/**
 * POST /cluster/nodes: the node enters Pending and a join change starts. `plan` computes
 * its transfers now, while the admin authority is the only writer; they run once the node
 * is ready (Joining).
 */
export function withAddedMember(membership: Membership, member: Omit<Member, 'state'>, slots: readonly Slot[], plan: (draft: Membership) => TransferPlan[]): Membership {
  assert(membership.change === undefined, 'add while a change is in flight');
  const epoch = membership.epoch + 1;
  const change: MembershipChange = { id: `e${epoch}-join-${member.name}`, kind: 'join', node: member.name, slots: normaliseSlots(slots), transfers: [] };
  const draft = withMembers(membership, [...membership.members, { ...member, state: 'Pending' }], change, epoch);
  return { ...draft, change: { ...change, transfers: plan(draft) } };
}

/** DELETE /cluster/nodes/:name: the node turns Leaving; `plan` computes its transfers. */
export function withLeavingMember(membership: Membership, name: string, slots: readonly Slot[], plan: (draft: Membership) => TransferPlan[]): Membership {
  assert(membership.change === undefined, 'remove while a change is in flight');
  const epoch = membership.epoch + 1;
  const change: MembershipChange = { id: `e${epoch}-leave-${name}`, kind: 'leave', node: name, slots: normaliseSlots(slots), transfers: [] };
  const draft = withMembers(membership, withState(membership.members, name, 'Leaving'), change, epoch);
  return { ...draft, change: { ...change, transfers: plan(draft) } };
}

/** The Pending node is ready: it turns Joining and its transfers start. Deterministic: any node may take this step. */
export function withJoiningMember(membership: Membership): Membership {
  const change = membership.change;
  assert(change !== undefined && change.kind === 'join', 'joining without a join in flight');
  assert(memberNamed(membership, change.node)?.state === 'Pending', `${change.node} is not Pending`);
  return withMembers(membership, withState(membership.members, change.node, 'Joining'), change, membership.epoch + 1);
}

/** Every need is covered by a complete transfer: the node turns Joined (or Left), the change ends. */
export function withCompletedChange(membership: Membership): Membership {
  const change = membership.change;
  assert(change !== undefined, 'completing without a change');
  assert(uncoveredNeeds(membership).length === 0, `completing ${change.id} with transfers outstanding`);
  const state: NodeState = change.kind === 'join' ? 'Joined' : 'Left';
  return withMembers(membership, withState(membership.members, change.node, state), undefined, membership.epoch + 1);
}

/**
 * Every need is covered by a complete transfer, and the node in motion made its final sync
 * (issue 12, item 5: a change completes only when the new owners hold everything
 * acknowledged, and a node never reaches Left holding hints or the only copy of anything).
 */
export function isReadyToComplete(membership: Membership): boolean {
  const change = membership.change;
  if (change === undefined) return false;
  const state = memberNamed(membership, change.node)?.state;
  if (state !== (change.kind === 'join' ? 'Joining' : 'Leaving')) return false;
  if (change.finalSynced !== true) return false;
  return uncoveredNeeds(membership).length === 0;
}

/** The node in motion made its final sync (merged as an or); the same object when it already said so. */
export function withFinalSynced(membership: Membership, changeId: string): Membership {
  const change = membership.change;
  if (change === undefined || change.id !== changeId || change.finalSynced === true) return membership;
  return { ...membership, change: { ...change, finalSynced: true } };
}

function mergeTransfer(a: TransferPlan, b: TransferPlan): TransferPlan {
  const complete = a.complete || b.complete;
  return {
    ...a,
    complete,
    percentComplete: complete ? 100 : Math.max(a.percentComplete, b.percentComplete),
    bytes: Math.max(a.bytes, b.bytes),
    records: Math.max(a.records, b.records),
  };
}

function sameContent(a: TransferPlan, b: TransferPlan): boolean {
  return a.repo === b.repo && a.from === b.from && a.to === b.to && a.slots.length === b.slots.length && a.slots.every((slot, index) => compareSlots(slot, b.slots[index]!) === 0);
}

/** True when `news` tells something `known` does not already say. */
function adds(known: TransferPlan, news: TransferPlan): boolean {
  return (news.complete && !known.complete) || news.percentComplete > known.percentComplete || news.bytes > known.bytes || news.records > known.records;
}

/**
 * Adds `transfers` (new ids, or news about known ones) to the change of `membership`.
 * Returns the same object when nothing changes, so callers can tell by identity.
 */
export function withMergedTransfers(membership: Membership, transfers: readonly TransferPlan[]): Membership {
  const change = membership.change;
  if (change === undefined || transfers.length === 0) return membership;
  const byId = new Map(change.transfers.map((transfer) => [transfer.id, transfer]));
  let changed = false;
  for (const incoming of transfers) {
    if (!incoming.id.startsWith(`${change.id}/`)) continue;
    const known = byId.get(incoming.id);
    // A transfer id names one content: two plans under one id would let a completion of
    // one vouch for the other's data.
    assert(known === undefined || sameContent(known, incoming), `transfer ${incoming.id} has two contents`);
    if (known !== undefined && !adds(known, incoming)) continue;
    byId.set(incoming.id, known === undefined ? incoming : mergeTransfer(known, incoming));
    changed = true;
  }
  if (!changed) return membership;
  const merged = [...byId.values()].sort((a, b) => compareText(a.id, b.id));
  return { ...membership, change: { ...change, transfers: merged } };
}
