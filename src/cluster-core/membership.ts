// Pure transitions of the replicated node table and the invariants every table obeys.
// Memberships are values: nothing here mutates its arguments, so a table handed out in an
// effect or a message never changes under its holder.
//
// Why the history stays linear without a consensus protocol: from a table with no change in
// flight, only the admin authority (the lowest-named Joined member) makes the next epoch,
// and it plans the change's transfers then, with its own view of who is up; from a table
// with a change in flight, the next epoch is a deterministic function of the table
// (Pending→Joining, then completion), so whoever makes it makes the same one. What may
// differ between nodes at one epoch is only added transfers (alternatives, whose content
// is a function of their id) and progress; those merge as a join-semilattice (union of
// transfers by id, complete = or, percent/bytes/records = max).

import { assert } from '../lib/assert.js';
import {
  compareSlots,
  compareText,
  dataRingNames,
  normaliseSlots,
  ownersOf,
  nextOwnersOf,
  nextRingNames,
  uncoveredNeeds,
} from './placement.js';
import type { AdminCommand, AnnouncedAddress, Member, Membership, MembershipChange, NodeState, QueuedCommand, Slot, TransferPlan } from '../protocol/cluster-types.js';
import { NODE_STATE_EDGES } from '../protocol/cluster-types.js';

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
  // A member moves only forward, Pending→Joining→Joined→Leaving→Left: never more than four steps.
  assert(path.length <= 4 && path[path.length - 1] === (path.length === 0 ? undefined : to), `path ${from}→${to} is ${path.join('→')}`);
  return path;
}

export function memberNamed(membership: Membership, name: string): Member | undefined {
  assert(name.length > 0, 'looking up an empty node name');
  const member = membership.members.find((each) => each.name === name);
  assert(member === undefined || member.name === name, `found ${member?.name} for ${name}`);
  return member;
}

/** What must be equal in two tables of the same epoch; transfer details may differ and merge. */
const structuralKeyMemo = new WeakMap<Membership, string>();

export function structuralKey(membership: Membership): string {
  assert(membership.members.length > 0, `epoch ${membership.epoch} has no members`);
  let key = structuralKeyMemo.get(membership);
  if (key === undefined) structuralKeyMemo.set(membership, (key = computeStructuralKey(membership)));
  assert(key.startsWith(`[${membership.epoch},`), `structural key of epoch ${membership.epoch} is ${key.slice(0, 40)}`);
  return key;
}

/**
 * Addresses are left out: a node announces a new address without a new epoch, and tables
 * merge it by incarnation (withMemberAddresses). So are transfer progress and finalSynced,
 * which merge as a semilattice.
 */
function computeStructuralKey(membership: Membership): string {
  assert(Number.isSafeInteger(membership.epoch), `epoch ${membership.epoch}`);
  assert(membership.members.every((member) => member.name.length > 0), `epoch ${membership.epoch} has a member without a name`);
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
  // Addresses merge by incarnation: no member's incarnation falls, the table keeps its members.
  assert(members.length === membership.members.length, 'merging addresses changed the members');
  assert(members.every((member, index) => incarnationOf(member) >= incarnationOf(membership.members[index]!)), 'an incarnation fell');
  return changed ? { ...membership, members } : membership;
}

/** `membership` with `name`'s address as it announced it, when that is newer than what it holds. */
export function withAnnouncedAddress(membership: Membership, name: string, at: AnnouncedAddress): Membership {
  assert(Number.isSafeInteger(at.incarnation) && at.incarnation >= 0, `${name} announced incarnation ${at.incarnation}`);
  const member = memberNamed(membership, name);
  if (member === undefined || at.incarnation <= incarnationOf(member)) return membership;
  const members = membership.members.map((each) => (each.name === name ? { ...each, address: at.address, port: at.port, httpPort: at.httpPort, incarnation: at.incarnation } : each));
  assert(members.length === membership.members.length, 'announcing an address changed the members');
  return { ...membership, members };
}

/** True when `a` knows some member's address at a higher incarnation than `b`. */
export function knowsNewerAddresses(a: Membership, b: Membership): boolean {
  assert(a.members.length > 0 && b.members.length > 0, 'comparing addresses of an empty table');
  return withMemberAddresses(b, a) !== b;
}

export function incarnationOf(member: Member): number {
  const incarnation = member.incarnation ?? 0;
  assert(Number.isSafeInteger(incarnation) && incarnation >= 0, `${member.name} has incarnation ${incarnation}`);
  return incarnation;
}

/** The table with `name`'s address replaced and its incarnation raised: the node announces itself again. */
export function withReaddressedMember(membership: Membership, name: string, address: Pick<Member, 'address' | 'port' | 'httpPort'>): Membership {
  assert(memberNamed(membership, name) !== undefined, `readdressing ${name}, who is not in the table`);
  assert(Number.isInteger(address.port) && address.port > 0 && Number.isInteger(address.httpPort) && address.httpPort > 0, `${name} readdressed to ports ${address.port}/${address.httpPort}`);
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
  const queue = queuedCommands(membership);
  assert(queue.every((entry, index) => index === 0 || compareQueueIds(queue[index - 1]!.id, entry.id) < 0), `epoch ${membership.epoch}: queue not in order`);
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
  // Epochs only rise, by one per change.
  assert(epoch === membership.epoch + 1, `epoch ${membership.epoch} followed by ${epoch}`);
  assert(members.length >= membership.members.length, `epoch ${epoch} dropped a member`);
  const next: Membership = { epoch, members: [...members].sort((a, b) => compareText(a.name, b.name)), change };
  // The queue goes on to the next epoch, less what the new members made obsolete (a
  // queued command that just started is: its node is now Pending, or Leaving).
  return withMergedQueue(next, membership);
}

function withState(members: readonly Member[], name: string, state: NodeState): Member[] {
  const member = members.find((each) => each.name === name);
  assert(member !== undefined, `${name} is not in the table`);
  // One step along the allowed edges (NODE_STATE_EDGES), never back.
  assert(NODE_STATE_EDGES[member.state].includes(state), `${name} cannot move from ${member.state} to ${state}`);
  return members.map((each) => (each.name === name ? { ...each, state } : each));
}

/**
 * POST /cluster/nodes: the node enters Pending and a join change starts. `plan` computes
 * its transfers now, while the admin authority is the only writer; they run once the node
 * is ready (Joining).
 */
export function withAddedMember(membership: Membership, member: Omit<Member, 'state'>, slots: readonly Slot[], plan: (draft: Membership) => TransferPlan[]): Membership {
  assert(membership.change === undefined, 'add while a change is in flight');
  assert(memberNamed(membership, member.name) === undefined, `adding ${member.name}, who is in the table`);
  const epoch = membership.epoch + 1;
  const change: MembershipChange = { id: `e${epoch}-join-${member.name}`, kind: 'join', node: member.name, slots: normaliseSlots(slots), transfers: [] };
  const draft = withMembers(membership, [...membership.members, { ...member, state: 'Pending' }], change, epoch);
  const next = { ...draft, change: { ...change, transfers: plan(draft) } };
  // Data moves only to nodes of the ring the change leads to.
  assert(next.change.transfers.every((transfer) => nextRingNames(next).includes(transfer.to)), `join of ${member.name} plans a transfer off the next ring`);
  return next;
}

/** DELETE /cluster/nodes/:name: the node turns Leaving; `plan` computes its transfers. */
export function withLeavingMember(membership: Membership, name: string, slots: readonly Slot[], plan: (draft: Membership) => TransferPlan[]): Membership {
  assert(membership.change === undefined, 'remove while a change is in flight');
  assert(memberNamed(membership, name)?.state === 'Joined', `removing ${name}, who is not Joined`);
  const epoch = membership.epoch + 1;
  const change: MembershipChange = { id: `e${epoch}-leave-${name}`, kind: 'leave', node: name, slots: normaliseSlots(slots), transfers: [] };
  const draft = withMembers(membership, withState(membership.members, name, 'Leaving'), change, epoch);
  const next = { ...draft, change: { ...change, transfers: plan(draft) } };
  assert(next.change.transfers.every((transfer) => transfer.to !== name && transfer.repo !== 'KV'), `leave of ${name} plans a transfer to it`);
  return next;
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
  assert(change.transfers.every((transfer) => transfer.percentComplete >= 0 && transfer.percentComplete <= 100), `completing ${change.id} with progress outside 0..100`);
  return withMembers(membership, withState(membership.members, change.node, state), undefined, membership.epoch + 1);
}

/**
 * Every need is covered by a complete transfer, and the node in motion made its final sync (a
 * change completes only when the new owners hold everything acknowledged, and a node never
 * reaches Left holding hints or the only copy of anything).
 */
export function isReadyToComplete(membership: Membership): boolean {
  const change = membership.change;
  if (change === undefined) return false;
  assert(change.transfers.every((transfer) => transfer.id.startsWith(`${change.id}/`)), `change ${change.id} holds another change's transfer`);
  const state = memberNamed(membership, change.node)?.state;
  if (state !== (change.kind === 'join' ? 'Joining' : 'Leaving')) return false;
  if (change.finalSynced !== true) return false;
  return uncoveredNeeds(membership).length === 0;
}

/** The node in motion made its final sync (merged as an or); the same object when it already said so. */
export function withFinalSynced(membership: Membership, changeId: string): Membership {
  const change = membership.change;
  if (change === undefined || change.id !== changeId || change.finalSynced === true) return membership;
  // The hand-off belongs to the data phase: a joining node is ready (Joining) before it makes it.
  assert(memberNamed(membership, change.node)?.state !== 'Pending', `${change.node} final-synced while Pending`);
  assert(changeId.length > 0, 'final sync of an empty change id');
  return { ...membership, change: { ...change, finalSynced: true } };
}

function mergeTransfer(a: TransferPlan, b: TransferPlan): TransferPlan {
  assert(a.id === b.id, `merging transfer ${a.id} with ${b.id}`);
  const complete = a.complete || b.complete;
  const merged = {
    ...a,
    complete,
    percentComplete: complete ? 100 : Math.max(a.percentComplete, b.percentComplete),
    bytes: Math.max(a.bytes, b.bytes),
    records: Math.max(a.records, b.records),
  };
  // A semilattice join: progress only rises and stays within 0..100.
  assert(merged.percentComplete >= a.percentComplete && merged.percentComplete >= b.percentComplete && merged.percentComplete <= 100, `transfer ${a.id} merged to ${merged.percentComplete}%`);
  return merged;
}

function sameContent(a: TransferPlan, b: TransferPlan): boolean {
  assert(a.id === b.id, `comparing the content of ${a.id} with ${b.id}`);
  return a.repo === b.repo && a.from === b.from && a.to === b.to && a.slots.length === b.slots.length && a.slots.every((slot, index) => compareSlots(slot, b.slots[index]!) === 0);
}

/** True when `news` tells something `known` does not already say. */
function adds(known: TransferPlan, news: TransferPlan): boolean {
  assert(known.id === news.id, `news of ${news.id} about ${known.id}`);
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
  // Merging only adds transfers and news: none is lost, none goes back from complete.
  assert(merged.length >= change.transfers.length, `change ${change.id} lost a transfer in a merge`);
  assert(change.transfers.every((transfer) => !transfer.complete || byId.get(transfer.id)!.complete), `change ${change.id}: a complete transfer went back`);
  return { ...membership, change: { ...change, transfers: merged } };
}

// ---------------------------------------------------------------------------------------
// The queue of membership commands (docs/cluster.md, "Several changes").
//
// Only the admin authority adds to the queue, at the epoch it holds, and only it starts the
// head once no change is in flight (a new epoch, like any command). Tables of one epoch may
// differ in their queues, so queues merge as a union by id, less the entries that are
// obsolete in the merged table (an add whose node is in it; a remove whose node is Leaving
// or Left) or were refused when their turn came (`queueDropped`). Commands are idempotent by
// node name (members never vanish from a table), so an entry a stale table brings back
// cannot start twice.

/** Commands waiting at most; a full queue refuses more with 409. */
export const QUEUED_COMMANDS_MAX = 64;
/** Refused entries remembered at most (the newest). */
const QUEUE_DROPPED_IDS_MAX = 64;

export function queuedCommands(membership: Membership): readonly QueuedCommand[] {
  const queue = membership.queue ?? [];
  assert(queue.length <= QUEUED_COMMANDS_MAX, `epoch ${membership.epoch} queues ${queue.length} commands`);
  return queue;
}

/** The node a membership command adds or removes. */
export function commandNode(command: AdminCommand): string {
  const name = command.type === 'add' ? command.member.name : command.name;
  assert(name.length > 0, `a ${command.type} of no node`);
  return name;
}

function queueIdParts(id: string): [number, number] {
  const match = /^q(\d+)\.(\d+)$/.exec(id);
  assert(match !== null, `queue id ${id}`);
  return [Number(match[1]), Number(match[2])];
}

export function compareQueueIds(a: string, b: string): number {
  const [epochA, placeA] = queueIdParts(a);
  const [epochB, placeB] = queueIdParts(b);
  return epochA - epochB || placeA - placeB;
}

function isObsolete(entry: QueuedCommand, membership: Membership, dropped: ReadonlySet<string>): boolean {
  if (dropped.has(entry.id)) return true;
  const member = memberNamed(membership, commandNode(entry.command));
  if (entry.command.type === 'add') return member !== undefined;
  return member === undefined || member.state === 'Leaving' || member.state === 'Left';
}

/**
 * `membership` with the queue entries of `other` added and the obsolete ones left out.
 * Returns the same object when its queue does not change, so callers can tell by identity.
 */
export function withMergedQueue(membership: Membership, other: Membership): Membership {
  const droppedIds = [...new Set([...(membership.queueDropped ?? []), ...(other.queueDropped ?? [])])].sort(compareQueueIds).slice(-QUEUE_DROPPED_IDS_MAX);
  const dropped = new Set(droppedIds);
  const byId = new Map<string, QueuedCommand>();
  for (const entry of [...queuedCommands(membership), ...queuedCommands(other)]) byId.set(entry.id, entry);
  const queue = [...byId.values()].filter((entry) => !isObsolete(entry, membership, dropped)).sort((a, b) => compareQueueIds(a.id, b.id));
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((id, index) => id === b[index]);
  if (same(queue.map((entry) => entry.id), queuedCommands(membership).map((entry) => entry.id)) && same(droppedIds, membership.queueDropped ?? [])) return membership;
  const { queue: _queue, queueDropped: _dropped, ...rest } = membership;
  const merged: Membership = { ...rest, ...(queue.length > 0 ? { queue: queue.slice(0, QUEUED_COMMANDS_MAX) } : {}), ...(droppedIds.length > 0 ? { queueDropped: droppedIds } : {}) };
  // A merge keeps the epoch, the members and the change: only the queue moves.
  assert(merged.epoch === membership.epoch && merged.change === membership.change, `merging queues moved epoch ${membership.epoch}`);
  return merged;
}

/**
 * Why `command` cannot wait in the queue, judged against the table as it will be once every
 * command before it has run; undefined when it may.
 */
export function queueRefusal(membership: Membership, command: AdminCommand): { status: 404 | 409; message: string } | undefined {
  const queue = queuedCommands(membership);
  if (queue.length >= QUEUED_COMMANDS_MAX) return { status: 409, message: `${QUEUED_COMMANDS_MAX} membership changes are queued already` };
  const name = commandNode(command);
  const member = memberNamed(membership, name);
  const queuedFor = queue.filter((entry) => commandNode(entry.command) === name).map((entry) => entry.command.type);
  if (command.type === 'add') {
    if (member !== undefined) return { status: 409, message: `node '${name}' exists` };
    if (queuedFor.includes('add')) return { status: 409, message: `node '${name}' is queued to be added already` };
    return undefined;
  }
  if (member === undefined) return queuedFor.includes('add') ? { status: 409, message: `node '${name}' is queued to be added: remove it once it has joined` } : { status: 404, message: `node '${name}' is not in the cluster` };
  if (member.state === 'Leaving' || member.state === 'Left') return { status: 409, message: `node '${name}' is ${member.state}` };
  if (queuedFor.includes('remove')) return { status: 409, message: `node '${name}' is queued to be removed already` };
  const staying = membership.members.filter((each) => each.state !== 'Leaving' && each.state !== 'Left').length;
  const queuedAdds = queue.filter((entry) => entry.command.type === 'add').length;
  const queuedRemoves = queue.length - queuedAdds;
  if (staying + queuedAdds - queuedRemoves - 1 < 1) return { status: 409, message: 'the cluster needs one Joined node' };
  return undefined;
}

/** The admin authority accepts `command` behind the change in flight and the queue: same epoch, one more entry. */
export function withQueuedCommand(membership: Membership, command: AdminCommand): Membership {
  assert(membership.change !== undefined || queuedCommands(membership).length > 0, 'queueing a command with nothing to wait for');
  assert(queueRefusal(membership, command) === undefined, `queueing a ${command.type} of ${commandNode(command)} that cannot wait`);
  const queue = queuedCommands(membership);
  const places = queue.map((entry) => queueIdParts(entry.id)).filter(([epoch]) => epoch === membership.epoch).map(([, place]) => place);
  const id = `q${membership.epoch}.${places.length === 0 ? 0 : Math.max(...places) + 1}`;
  const next: Membership = { ...membership, queue: [...queue, { id, command }] };
  assert(queuedCommands(next).length === queue.length + 1 && next.epoch === membership.epoch, `command ${id} not queued`);
  return next;
}

/** The head of the queue could not start when its turn came: it leaves the queue for good. */
export function withDroppedQueueEntry(membership: Membership, id: string): Membership {
  assert(queuedCommands(membership).some((entry) => entry.id === id), `dropping ${id}, which is not queued`);
  const next = withMergedQueue(membership, { ...membership, queueDropped: [...(membership.queueDropped ?? []), id] });
  assert(queuedCommands(next).every((entry) => entry.id !== id), `${id} still queued after it was dropped`);
  return next;
}

/**
 * What a table says of its epoch's change and queue: `count`, how much (transfers known and
 * complete, the hand-off, queued and refused commands), and `digest`, a hash of which. Merging
 * two tables of one epoch never lowers the count, and a merge that adds any of these raises
 * it; two tables with equal counts and different digests each know something the other does
 * not. A peer whose heartbeat shows a higher count, or the same count and another digest,
 * is asked for its table (progress percentages are left out: they spread with the tables
 * and decide nothing).
 */
export interface TableNews {
  count: number;
  digest: number;
}

const newsMemo = new WeakMap<Membership, TableNews>();

export function tableNews(membership: Membership): TableNews {
  let news = newsMemo.get(membership);
  if (news === undefined) newsMemo.set(membership, (news = computeNews(membership)));
  assert(Number.isSafeInteger(news.count) && news.count >= 0 && Number.isInteger(news.digest), `epoch ${membership.epoch}: news ${news.count}/${news.digest}`);
  return news;
}

function computeNews(membership: Membership): TableNews {
  const change = membership.change;
  const items: string[] = [];
  for (const transfer of change?.transfers ?? []) items.push(transfer.complete ? `${transfer.id} complete` : transfer.id);
  if (change?.finalSynced === true) items.push(`${change.id} synced`);
  for (const entry of queuedCommands(membership)) items.push(entry.id);
  for (const id of membership.queueDropped ?? []) items.push(`${id} dropped`);
  items.sort();
  const transfers = change?.transfers ?? [];
  const count = transfers.length + transfers.filter((transfer) => transfer.complete).length + (change?.finalSynced === true ? 1 : 0) + queuedCommands(membership).length + 2 * (membership.queueDropped ?? []).length;
  return { count, digest: fnv1a(items.join('\n')) };
}

/** 32-bit FNV-1a of the text's UTF-16 code units: a digest, not a security check. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
