// Where data lives and how a membership change moves it (docs/cluster.md, "Placement"). Pure
// functions of a Membership: no clock, no I/O.
//
// Two rings matter while a change runs:
// - the *data ring*: members in state Joined or Leaving. A Leaving node still holds (and
//   serves) its data until it is Left, so reads and transfer sources use this ring;
// - the *next ring*: the data ring the change leads to (join: plus the joining node;
//   leave: minus the leaving node).
// Writes go to the union of both (while a transfer runs, to old and new owners alike), so
// every write that lands after a transfer read past its key still reaches the new owner
// directly.

import HashRing from 'hashring';
import { assert } from '../lib/assert.js';
import type { Member, Membership, Slot, TransferPlan, TransferRepo } from '../protocol/cluster-types.js';

export type Availability = (name: string) => boolean;

/** A piece of data a node must receive before the change may complete. */
export interface TransferNeed {
  repo: TransferRepo;
  to: string;
  /** Undefined for KV: the whole repository. */
  slot: Slot | undefined;
}

/** Separates an alternative transfer's id from the id of the transfer it stands in for. */
export const ALTERNATIVE_SEPARATOR = '~';
/** Characters a node name may not hold: they delimit change and transfer ids. */
export const NODE_NAME_FORBIDDEN = /[/>~\s]/;

const DATA_REPOS: readonly TransferRepo[] = ['ssr', 'tsr'];

export function slotKey(slot: Slot): string {
  assertSlot(slot);
  const key = `${slot.partition}/${slot.replicas}`;
  assert(key.length <= 32, `slot key ${key.slice(0, 32)}… too long`);
  return key;
}

export function compareSlots(a: Slot, b: Slot): number {
  assertSlot(a);
  assertSlot(b);
  return a.partition - b.partition || a.replicas - b.replicas;
}

/** Sorted, without duplicates: the canonical form every plan and change stores. */
export function normaliseSlots(slots: readonly Slot[]): Slot[] {
  const byKey = new Map<string, Slot>();
  for (const slot of slots) {
    assertSlot(slot);
    byKey.set(slotKey(slot), { partition: slot.partition, replicas: slot.replicas });
  }
  const normalised = [...byKey.values()].sort(compareSlots);
  assert(normalised.length <= slots.length, 'normalising slots added some');
  assert(normalised.every((slot, index) => index === 0 || compareSlots(normalised[index - 1]!, slot) < 0), 'normalised slots not sorted and distinct');
  return normalised;
}

/** A slot names a partition (an integer >= 0) and a replica count (an integer >= 1). */
export function assertSlot(slot: Slot): void {
  assert(Number.isInteger(slot.partition) && slot.partition >= 0, `bad partition ${slot.partition}`);
  assert(Number.isInteger(slot.replicas) && slot.replicas >= 1, `bad replicas ${slot.replicas}`);
}

/** Frozen name arrays found sorted and distinct: they cannot change, so once is enough. */
const sortedRings = new WeakSet<readonly string[]>();

/** Node names on a ring are sorted and distinct: the ring cache is keyed by them. */
function assertSortedNames(names: readonly string[], what: string): void {
  if (sortedRings.has(names)) return;
  assert(names.every((name) => name.length > 0), `${what}: an empty node name`);
  assert(names.every((name, index) => index === 0 || compareText(names[index - 1]!, name) < 0), `${what} not sorted and distinct: ${names.join(',')}`);
  if (Object.isFrozen(names)) sortedRings.add(names);
}

// ---------------------------------------------------------------------------------------
// Rings. Building a HashRing costs ~0.4 ms and a lookup an md5, so both are memoised by the
// sorted member names; the cache is bounded (a limit on everything that grows).

const RING_CACHE_ENTRIES_MAX = 256;

interface CachedRing {
  ring: HashRing;
  /** Owners by replica count, then by partition: a search asks for every partition's. */
  owners: Map<number, Array<readonly string[] | undefined>>;
}

const ringCache = new Map<string, CachedRing>();
/** The same lookup by array identity: the name arrays below are memoised per membership. */
const ringByNames = new WeakMap<readonly string[], CachedRing>();

function cachedRing(sortedNames: readonly string[]): CachedRing {
  assert(sortedNames.length > 0, 'a ring of no nodes');
  const known = ringByNames.get(sortedNames);
  if (known !== undefined) return known;
  const cacheKey = sortedNames.join('\n');
  let entry = ringCache.get(cacheKey);
  if (entry === undefined) {
    if (ringCache.size >= RING_CACHE_ENTRIES_MAX) ringCache.delete(ringCache.keys().next().value as string);
    entry = { ring: newRing(sortedNames), owners: new Map() };
    ringCache.set(cacheKey, entry);
  }
  ringByNames.set(sortedNames, entry);
  assert(ringCache.size <= RING_CACHE_ENTRIES_MAX, `ring cache holds ${ringCache.size} rings`);
  return entry;
}

/**
 * Ring points per node: hashring's default of 40 hashes (160 points), set per server.
 * Left to itself, hashring gives each server `Math.floor(weight / total * 40 * servers)`
 * hashes: 40 in exact arithmetic, but the floating-point product falls just under 40 for
 * some member counts (7, 14, 28, 49, 56, … of the first 256), so every node lost a point
 * and owners other than a joining node changed. A count per node that does not depend on
 * the member count keeps a change's moves to the node in motion (docs/cluster.md,
 * "Where data lives"), and gives the same ring as before at every other member count.
 */
export const RING_HASHES_PER_NODE = 40;

function newRing(sortedNames: readonly string[]): HashRing {
  const servers: Record<string, { vnodes: number }> = Object.create(null) as Record<string, { vnodes: number }>;
  for (const name of sortedNames) servers[name] = { vnodes: RING_HASHES_PER_NODE };
  // hashring uses a server's own `vnodes` only when it differs from the ring-wide count,
  // so the ring-wide count is set to one no server has (0: never used).
  const ring = new HashRing(servers, 'md5', { 'vnode count': 0 });
  // Four points per hash (ketama); `size` is the point count, which the typings leave out.
  const points = (ring as unknown as { size: number }).size;
  assert(points === sortedNames.length * RING_HASHES_PER_NODE * 4, `a ring of ${sortedNames.length} nodes has ${points} points`);
  return ring;
}

// Memberships are immutable values (membership.ts), so what derives from one is computed
// once per table object. These caches hold no table alive (WeakMap).
const dataRingMemo = new WeakMap<Membership, readonly string[]>();
const nextRingMemo = new WeakMap<Membership, readonly string[]>();
const needsMemo = new WeakMap<Membership, readonly TransferNeed[]>();
const uncoveredMemo = new WeakMap<Membership, TransferNeed[]>();

function memoised<T>(memo: WeakMap<Membership, T>, membership: Membership, compute: () => T): T {
  let value = memo.get(membership);
  if (value === undefined) memo.set(membership, (value = compute()));
  assert(value !== undefined, 'a memoised value computed as undefined');
  assert(memo.get(membership) === value, 'a memoised value not kept');
  return value;
}

/**
 * The one placement function: the first `count` distinct nodes of the ring of `sortedNames`,
 * walking clockwise from `key` (hashring's `range`). Slot owners, definition coordinators and
 * session hosts all come from here.
 */
export function preferenceList(sortedNames: readonly string[], key: string, count: number): string[] {
  assert(Number.isSafeInteger(count) && count >= 0, `a preference list of ${count} nodes`);
  if (sortedNames.length === 0 || count === 0) return [];
  assertSortedNames(sortedNames, 'ring');
  const copies = Math.min(count, sortedNames.length);
  const names = cachedRing(sortedNames).ring.range(key, copies);
  // Invariant, asserted where the owners are made: `copies` distinct owners.
  assert(names.length === copies && new Set(names).size === copies, `key ${key} got ${names.join(',')}, wanted ${copies} distinct`);
  return names;
}

/**
 * Owners of a slot on the ring of `sortedNames`: the preference list of
 * `partition-${p}`, replicas capped by the number of nodes; memoised per ring.
 */
export function ringOwners(sortedNames: readonly string[], slot: Slot): readonly string[] {
  assertSlot(slot);
  if (sortedNames.length === 0) return [];
  assertSortedNames(sortedNames, 'ring');
  const entry = cachedRing(sortedNames);
  let byPartition = entry.owners.get(slot.replicas);
  if (byPartition === undefined) entry.owners.set(slot.replicas, (byPartition = []));
  let owners = byPartition[slot.partition];
  if (owners === undefined) {
    owners = Object.freeze(preferenceList(sortedNames, `partition-${slot.partition}`, slot.replicas));
    // Owners count <= replicas, and each owner is on the ring (checked once: the list is frozen).
    assert(owners.length <= slot.replicas && owners.every((owner) => sortedNames.includes(owner)), `slot ${slotKey(slot)}: owners ${owners.join(',')} off the ring`);
    byPartition[slot.partition] = owners;
  }
  return owners;
}

function namesIn(members: readonly Member[], keep: (member: Member) => boolean): string[] {
  const names = members.filter(keep).map((member) => member.name).sort();
  assertSortedNames(names, 'member names');
  return names;
}

/** Members whose data is current: Joined, and Leaving until they are Left. */
export function dataRingNames(membership: Membership): readonly string[] {
  assertEpoch(membership);
  const names = memoised(dataRingMemo, membership, () =>
    Object.freeze(namesIn(membership.members, (member) => member.state === 'Joined' || member.state === 'Leaving')),
  );
  assert(names.length <= membership.members.length, `data ring of epoch ${membership.epoch} larger than its table`);
  return names;
}

/** Epochs are integers from 0 (a node that has not joined) upwards. */
export function assertEpoch(membership: Membership): void {
  assert(Number.isSafeInteger(membership.epoch) && membership.epoch >= 0, `epoch ${membership.epoch}`);
  // Every table holds at least the node that holds it.
  assert(membership.members.length > 0, `epoch ${membership.epoch} has no members`);
}

/** The data ring the change in flight leads to; the data ring itself when none is. */
export function nextRingNames(membership: Membership): readonly string[] {
  assertEpoch(membership);
  const names = memoised(nextRingMemo, membership, () => {
    const change = membership.change;
    const current = dataRingNames(membership);
    if (change === undefined) return current;
    if (change.kind === 'leave') return Object.freeze(current.filter((name) => name !== change.node));
    return Object.freeze([...new Set([...current, change.node])].sort());
  });
  // A change moves one node: the next ring differs from the data ring by at most one name.
  assert(Math.abs(names.length - dataRingNames(membership).length) <= 1, `next ring of epoch ${membership.epoch} differs by more than one node`);
  return names;
}

/** Current owners of a slot: the data ring (Joined + Leaving), replicas capped by its size. */
export function ownersOf(membership: Membership, slot: Slot): readonly string[] {
  const owners = ringOwners(dataRingNames(membership), slot);
  assert(owners.length <= slot.replicas, `slot ${slotKey(slot)} has ${owners.length} owners`);
  assert(owners.length > 0 || dataRingNames(membership).length === 0, `slot ${slotKey(slot)} has no owner`);
  return owners;
}

/** Owners once the change in flight completes. */
export function nextOwnersOf(membership: Membership, slot: Slot): readonly string[] {
  const owners = ringOwners(nextRingNames(membership), slot);
  assert(owners.length <= slot.replicas, `slot ${slotKey(slot)} has ${owners.length} next owners`);
  assert(membership.change !== undefined || owners === ownersOf(membership, slot), `slot ${slotKey(slot)}: next owners differ without a change`);
  return owners;
}

/** Where a write of this slot goes: current owners first, then the owners the change adds. */
export function writeOwners(membership: Membership, slot: Slot): string[] {
  const owners = [...ownersOf(membership, slot)];
  if (membership.change === undefined) return owners;
  for (const name of nextOwnersOf(membership, slot)) if (!owners.includes(name)) owners.push(name);
  // Old and new owners alike, each once.
  assert(new Set(owners).size === owners.length, `slot ${slotKey(slot)}: a write owner twice`);
  assert(owners.length <= 2 * slot.replicas, `slot ${slotKey(slot)}: ${owners.length} write owners`);
  return owners;
}

/**
 * The membership coordinator: the lowest-named available Joined member, else the
 * lowest-named Joined one. Used to route `ready`, progress and admin commands; it is
 * *not* what authorises an admin command (see adminAuthorityOf).
 */
export function coordinatorOf(membership: Membership, available: Availability): string | undefined {
  const joined = namesIn(membership.members, (member) => member.state === 'Joined');
  const coordinator = joined.find((name) => available(name)) ?? joined[0];
  assert(coordinator === undefined || joined.includes(coordinator), `coordinator ${coordinator} is not Joined`);
  assert(coordinator !== undefined || joined.length === 0, `epoch ${membership.epoch}: Joined members but no coordinator`);
  return coordinator;
}

/**
 * The only node that may accept add/remove at this membership: the lowest-named Joined
 * member, whatever anyone's failure detector says. A single writer per epoch is what keeps
 * the membership history linear without a consensus protocol (Riak's claimant works the
 * same way); every other step of a change is a deterministic function of the membership,
 * so any node may take it and a dead coordinator never strands a change.
 */
export function adminAuthorityOf(membership: Membership): string | undefined {
  const authority = coordinatorOf(membership, () => false);
  assert(authority === undefined || membership.members.every((member) => member.state !== 'Joined' || compareText(authority, member.name) <= 0), `admin authority ${authority} is not the lowest-named Joined member`);
  return authority;
}

// ---------------------------------------------------------------------------------------
// Planning.

/** What must move for the change in flight: each slot a node gains, per data repo; KV for a join. */
export function transferNeeds(membership: Membership): readonly TransferNeed[] {
  const needs = memoised(needsMemo, membership, () => computeNeeds(membership));
  assert(membership.change !== undefined || needs.length === 0, `epoch ${membership.epoch}: transfer needs without a change`);
  return needs;
}

function computeNeeds(membership: Membership): TransferNeed[] {
  const change = membership.change;
  if (change === undefined) return [];
  const needs: TransferNeed[] = [];
  for (const slot of change.slots) {
    const current = ownersOf(membership, slot);
    for (const to of nextOwnersOf(membership, slot)) {
      if (current.includes(to)) continue;
      // Whoever gains a slot receives it. With a fixed number of ring points per node only
      // the joining node gains on a join, and on a leave the next node along the ring; the
      // plan does not rely on it. The leaving node never gains.
      assert(change.kind === 'join' || to !== change.node, `change ${change.id}: the leaving ${to} gains slot ${slotKey(slot)}`);
      for (const repo of DATA_REPOS) needs.push({ repo, to, slot });
    }
  }
  if (change.kind === 'join') needs.push({ repo: 'KV', to: change.node, slot: undefined });
  assert(needs.every((need) => (need.repo === 'KV') === (need.slot === undefined)), `change ${change.id}: a KV need with a slot or a data need without`);
  return needs;
}

export function transferCovers(transfer: TransferPlan, need: TransferNeed): boolean {
  assert((need.repo === 'KV') === (need.slot === undefined), `a ${need.repo} need ${need.slot === undefined ? 'without' : 'with'} a slot`);
  assert(transfer.repo !== 'KV' || transfer.slots.length === 0, `KV transfer ${transfer.id} with slots`);
  if (transfer.repo !== need.repo || transfer.to !== need.to) return false;
  if (need.slot === undefined) return true;
  const key = slotKey(need.slot);
  return transfer.slots.some((slot) => slotKey(slot) === key);
}

/** Needs that no *complete* transfer covers yet: the change may complete when this is empty. */
export function uncoveredNeeds(membership: Membership): readonly TransferNeed[] {
  const uncovered = memoised(uncoveredMemo, membership, () => {
    const complete = (membership.change?.transfers ?? []).filter((transfer) => transfer.complete);
    return transferNeeds(membership).filter((need) => !complete.some((transfer) => transferCovers(transfer, need)));
  });
  assert(uncovered.length <= transferNeeds(membership).length, 'more needs uncovered than there are');
  return uncovered;
}

export interface ChangePlanInput {
  /** The membership with the change set and its node already Pending (join) or Leaving (leave). */
  membership: Membership;
  available: Availability;
  /**
   * Whether a node's data is whole: false while it refills damaged data, when it serves no
   * transfer until the refill ends (a join waited 4.9 s for one so, in the chaos suite's
   * partition-join-leave-r3 seed 1). Absent: every node's is.
   */
  intact?: Availability;
  /** The node that sends KV to a joining node: the planner, which is Joined and up. */
  kvSource: string;
}

/**
 * One TransferPlan per (repo, from, to): each slot a node gains comes from one current
 * owner: the leaving node when it is up and its data whole (it is the one going away), else
 * the first available owner in ring order whose data is whole, else the first available
 * one, else the first owner (planAlternatives re-plans a transfer whose source stays
 * away). Only the admin authority plans (membership.ts), so a transfer id names one content
 * everywhere.
 */
export function planChange(input: ChangePlanInput): TransferPlan[] {
  const { membership, available } = input;
  const intact = input.intact ?? (() => true);
  const change = membership.change;
  assert(change !== undefined, 'planChange needs a change in flight');
  const nodeState = membership.members.find((member) => member.name === change.node)?.state;
  assert(nodeState === (change.kind === 'join' ? 'Pending' : 'Leaving'), `planChange: ${change.node} is ${nodeState}`);
  const slotsBySource = new Map<string, Slot[]>(); // key: `${from}>${to}`
  for (const need of transferNeeds(membership)) {
    if (need.slot === undefined || need.repo !== 'ssr') continue; // tsr mirrors ssr; KV below
    const current = ownersOf(membership, need.slot);
    const leaving = change.kind === 'leave' && current.includes(change.node) && available(change.node) && intact(change.node) ? change.node : undefined;
    const usable = (name: string): boolean => name !== change.node && available(name);
    const from = leaving ?? current.find((name) => usable(name) && intact(name)) ?? current.find(usable) ?? current[0];
    assert(from !== undefined, `slot ${slotKey(need.slot)} has no current owner`);
    const key = `${from}>${need.to}`;
    slotsBySource.set(key, [...(slotsBySource.get(key) ?? []), need.slot]);
  }
  const plans: TransferPlan[] = [];
  for (const [pair, slots] of slotsBySource) {
    const [from, to] = pair.split('>') as [string, string];
    for (const repo of DATA_REPOS) plans.push(newTransfer(`${change.id}/${repo}/${from}>${to}`, repo, from, to, slots));
  }
  if (change.kind === 'join') plans.push(newTransfer(`${change.id}/KV/${input.kvSource}>${change.node}`, 'KV', input.kvSource, change.node, []));
  plans.sort((a, b) => compareText(a.id, b.id));
  // Every need has a planned transfer, and transfer ids name one content each.
  assert(transferNeeds(membership).every((need) => plans.some((plan) => transferCovers(plan, need))), `change ${change.id}: a need without a transfer`);
  assert(new Set(plans.map((plan) => plan.id)).size === plans.length, `change ${change.id}: two transfers under one id`);
  return plans;
}

function newTransfer(id: string, repo: TransferRepo, from: string, to: string, slots: readonly Slot[]): TransferPlan {
  assert(from !== to, `transfer ${id} from a node to itself`);
  assert((repo === 'KV') === (slots.length === 0), `transfer ${id}: ${repo} with ${slots.length} slots`);
  // The id names the content (`${changeId}/${repo}/${from}>${to}`, an alternative `${root}~${from}`).
  assert(id.includes(`/${repo}/`) && rootTransferId(id).endsWith(`>${to}`), `transfer ${id} does not name its repo and target`);
  assert(rootTransferId(id) === id ? id.endsWith(`/${repo}/${from}>${to}`) : id.endsWith(`${ALTERNATIVE_SEPARATOR}${from}`), `transfer ${id} does not name its source ${from}`);
  return { id, repo, from, to, slots: normaliseSlots(slots), complete: false, percentComplete: 0, bytes: 0, records: 0 };
}

/** The plan transfer an alternative stands in for (itself for a plan transfer). */
export function rootTransferId(transferId: string): string {
  assert(transferId.length > 0, 'an empty transfer id');
  const at = transferId.indexOf(ALTERNATIVE_SEPARATOR);
  const root = at < 0 ? transferId : transferId.slice(0, at);
  assert(root.length > 0 && !root.includes(ALTERNATIVE_SEPARATOR), `transfer ${transferId} has no root`);
  return root;
}

/**
 * New transfers standing in for those whose source has been unreachable for long
 * (`isLongUnavailable`): each uncovered slot of such a transfer gets another current owner
 * that is available. An alternative's id is `${root id}~${source}` and its slots are the
 * root's slots that source owns, so two nodes that re-plan the same thing produce the same
 * transfer and merging memberships stays a plain union by id.
 */
export function planAlternatives(membership: Membership, available: Availability, isLongUnavailable: Availability): TransferPlan[] {
  const change = membership.change;
  if (change === undefined) return [];
  const transfers = change.transfers;
  const byId = new Map(transfers.map((transfer) => [transfer.id, transfer]));
  const uncovered = uncoveredNeeds(membership);
  const added: TransferPlan[] = [];
  for (const stalled of transfers) {
    if (stalled.complete || !isLongUnavailable(stalled.from)) continue;
    const root = byId.get(rootTransferId(stalled.id));
    assert(root !== undefined, `transfer ${stalled.id} has no root in the plan`);
    // Needs of this transfer that nothing complete covers and no live transfer pursues.
    const open = uncovered.filter(
      (need) =>
        transferCovers(stalled, need) &&
        ![...transfers, ...added].some((other) => !other.complete && !isLongUnavailable(other.from) && transferCovers(other, need)),
    );
    for (const alternative of alternativesFor(membership, root, open, available, isLongUnavailable)) {
      if (byId.has(alternative.id) || added.some((other) => other.id === alternative.id)) continue;
      added.push(alternative);
    }
  }
  // An alternative stands in for a plan transfer of this change and never duplicates an id.
  assert(added.every((alternative) => byId.has(rootTransferId(alternative.id)) && !byId.has(alternative.id)), `change ${change.id}: an alternative without a root`);
  assert(added.every((alternative) => !alternative.complete && alternative.percentComplete === 0), `change ${change.id}: an alternative born with progress`);
  return added;
}

function alternativesFor(
  membership: Membership,
  root: TransferPlan,
  open: readonly TransferNeed[],
  available: Availability,
  isLongUnavailable: Availability,
): TransferPlan[] {
  assert(rootTransferId(root.id) === root.id, `alternative ${root.id} used as a root`);
  assert(open.every((need) => need.to === root.to && need.repo === root.repo), `needs of another transfer than ${root.id}`);
  const usable = (name: string): boolean => name !== root.to && available(name) && !isLongUnavailable(name);
  if (root.repo === 'KV') {
    if (open.length === 0) return [];
    const source = namesIn(membership.members, (member) => member.state === 'Joined').find((name) => name !== root.from && usable(name));
    return source === undefined ? [] : [newTransfer(`${root.id}${ALTERNATIVE_SEPARATOR}${source}`, 'KV', source, root.to, [])];
  }
  let remaining = open.flatMap((need) => (need.slot === undefined ? [] : [need.slot]));
  const result: TransferPlan[] = [];
  while (remaining.length > 0) {
    const candidates = new Map<string, number>();
    for (const slot of remaining) for (const name of ownersOf(membership, slot)) if (usable(name)) candidates.set(name, (candidates.get(name) ?? 0) + 1);
    const best = [...candidates].sort((a, b) => b[1] - a[1] || compareText(a[0], b[0]))[0];
    if (best === undefined) break; // no live owner holds these slots: wait for one to come back
    const source = best[0];
    const slots = root.slots.filter((slot) => ownersOf(membership, slot).includes(source));
    result.push(newTransfer(`${root.id}${ALTERNATIVE_SEPARATOR}${source}`, root.repo, source, root.to, slots));
    remaining = remaining.filter((slot) => !ownersOf(membership, slot).includes(source));
  }
  assert(result.every((alternative) => alternative.from !== root.to), `an alternative of ${root.id} from its own target`);
  return result;
}

// ---------------------------------------------------------------------------------------

export function compareText(a: string, b: string): number {
  assert(typeof a === 'string' && typeof b === 'string', 'comparing other than text');
  return a < b ? -1 : a > b ? 1 : 0;
}

