// Checks of what peers send the cluster core, at the boundary. The codec has checked types
// already (strings are strings, enums are known, integers are safe); this module checks shape
// and invariants: epochs are integers, members sorted and distinct with valid names, keys,
// addresses and ports, at most one change in flight, transfer fields in range, and every size
// bounded. A table is also checked against the one this node holds, with the rules the core
// asserts (a table of the same epoch must be the same table; a newer one keeps every member and
// moves states only forward), so that nothing a peer sends can trip an assertion inside the
// core: the core's assertions guard its own state, and a peer's mistake or malice is refused
// and logged by the shell instead of ending the process.
//
// Pure: no I/O, no clock. Each function returns a problem (a sentence) or undefined.

import { assertMembership, assertSuccessor, QUEUED_COMMANDS_MAX, structuralKey } from '../cluster-core/membership.js';
import { compareSlots, compareText, NODE_NAME_FORBIDDEN } from '../cluster-core/placement.js';
import type { Member, Membership, MembershipChange, NodeState, PeerMessage, QueuedCommand, Slot, TransferPlan } from '../protocol/cluster-types.js';
import { NODE_STATE_EDGES } from '../protocol/cluster-types.js';
import { NAME_LENGTH_MAX } from '../lib/names.js';

/** Members of one table: far above any real cluster, low enough to bound the work of a check. */
export const TABLE_MEMBERS_MAX = 1_024;
/** Transfers of one change: one per repository, source and target. */
export const CHANGE_TRANSFERS_MAX = 16_384;
/** Slots of one change or transfer: every (partition, replicas) pair in use. */
export const CHANGE_SLOTS_MAX = 262_144;
/** ring_size is at most 65,536 and replicas at most 64 (streams/policy). */
export const PARTITION_MAX = 65_535;
export const REPLICAS_MAX = 64;
/** Change ids, transfer ids and cursors are made by nodes from names and keys. */
export const ID_CHARS_MAX = 1_024;
export const CURSOR_CHARS_MAX = 16_384;
export const ADDRESS_CHARS_MAX = 255;
const PUBLIC_KEY_BYTES = 32;
const STATES = new Set(Object.keys(NODE_STATE_EDGES) as NodeState[]);

/** What is wrong with a table taken on its own, or undefined when it is well formed. */
export function membershipProblem(membership: Membership): string | undefined {
  if (!isCount(membership.epoch) || membership.epoch < 1) return `epoch ${membership.epoch} is not a positive integer`;
  const members = membership.members;
  if (members.length === 0 || members.length > TABLE_MEMBERS_MAX) return `${members.length} members (1 to ${TABLE_MEMBERS_MAX} allowed)`;
  for (const [index, member] of members.entries()) {
    const problem = memberProblem(member);
    if (problem !== undefined) return `member ${index}: ${problem}`;
    if (index > 0 && compareText(members[index - 1]!.name, member.name) >= 0) return `members not sorted and distinct at '${member.name}'`;
  }
  const change = membership.change;
  if (change !== undefined) {
    const problem = changeProblem(change, membership);
    if (problem !== undefined) return `change: ${problem}`;
  }
  const queue = queueProblem(membership);
  if (queue !== undefined) return `queue: ${queue}`;
  // The rules every table obeys (one change in flight, its node the only one in motion, no
  // data moved before the node is ready, owners distinct), exactly as the core asserts them.
  return assertionProblem(() => assertMembership(membership));
}

/**
 * What is wrong with a table received while this node holds `current`: its own problems,
 * then those the core would assert when acting on it. An older table is fine (the core
 * answers it with its own); so is any table while this node has none yet (epoch 0).
 */
export function tableProblem(incoming: Membership, current: Membership): string | undefined {
  const own = membershipProblem(incoming);
  if (own !== undefined) return own;
  if (current.epoch === 0 || incoming.epoch < current.epoch) return undefined;
  if (incoming.epoch === current.epoch) {
    if (structuralKey(incoming) !== structuralKey(current)) return `a different table at epoch ${current.epoch}`;
    return sameChangeProblem(incoming, current);
  }
  const successor = assertionProblem(() => assertSuccessor(current, incoming));
  return successor ?? sameChangeProblem(incoming, current);
}

/** What is wrong with a core message from a peer, given this node's table. */
export function peerMessageProblem(message: PeerMessage, current: Membership): string | undefined {
  switch (message.type) {
    case 'membership':
      return tableProblem(message.membership, current);
    case 'heartbeat':
      if (!isCount(message.epoch)) return `heartbeat epoch ${message.epoch} is not an integer >= 0`;
      return countProblem('news', message.news ?? 0) ?? countProblem('newsDigest', message.newsDigest ?? 0) ?? unreachableProblem(message.unreachable ?? []);
    case 'ready':
      return idProblem('changeId', message.changeId);
    case 'transfer-request':
      return (
        transferProblem(message.transfer) ??
        seqProblem(message.seq, 0) ??
        (message.cursor === undefined ? undefined : textProblem('cursor', message.cursor, CURSOR_CHARS_MAX))
      );
    case 'transfer-chunk':
      return (
        idProblem('transferId', message.transferId) ??
        seqProblem(message.seq, 0) ??
        countProblem('totalEstimate', message.totalEstimate) ??
        countProblem('chunk.records', message.chunk.records) ??
        textProblem('chunk.cursor', message.chunk.cursor, CURSOR_CHARS_MAX) ??
        (message.fromCursor === undefined ? undefined : textProblem('fromCursor', message.fromCursor, CURSOR_CHARS_MAX))
      );
    case 'transfer-ack':
      return idProblem('transferId', message.transferId) ?? seqProblem(message.seq, -1);
    case 'transfer-progress':
      return (
        idProblem('transferId', message.transferId) ??
        percentProblem(message.percentComplete) ??
        countProblem('bytes', message.bytes) ??
        countProblem('records', message.records)
      );
  }
}

/** A node name as the core and the HTTP interface accept it. */
export function nodeNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > NAME_LENGTH_MAX) return `name of ${name.length} characters`;
  if (NODE_NAME_FORBIDDEN.test(name) || /[\u0000-\u001f\u007f]/.test(name) || name.includes('..')) return `name '${name.slice(0, 40)}' holds a forbidden character`;
  return undefined;
}

/** Base64 of exactly 32 bytes (an ed25519 public key), in its canonical spelling. */
export function isPublicKey(text: string): boolean {
  if (text.length !== 44) return false;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === PUBLIC_KEY_BYTES && bytes.toString('base64') === text;
}

function memberProblem(member: Member): string | undefined {
  return (
    nodeNameProblem(member.name) ??
    (isPublicKey(member.publicKey) ? undefined : `publicKey of '${member.name}' is not base64 of 32 bytes`) ??
    textProblem('address', member.address, ADDRESS_CHARS_MAX) ??
    (member.address === '' ? 'empty address' : undefined) ??
    portProblem('port', member.port) ??
    portProblem('httpPort', member.httpPort) ??
    textProblem('zone', member.zone, NAME_LENGTH_MAX) ??
    (STATES.has(member.state) ? undefined : `state '${String(member.state)}'`)
  );
}

function changeProblem(change: MembershipChange, membership: Membership): string | undefined {
  const idProblemText = idProblem('id', change.id);
  if (idProblemText !== undefined) return idProblemText;
  if (change.kind !== 'join' && change.kind !== 'leave') return `kind '${String(change.kind)}'`;
  if (!membership.members.some((member) => member.name === change.node)) return `node '${change.node}' is not a member`;
  if (!new RegExp(`^e\\d+-${change.kind}-`).test(change.id) || !change.id.endsWith(`-${change.node}`)) {
    return `id '${change.id.slice(0, 60)}' does not name a ${change.kind} of ${change.node}`;
  }
  const slots = slotsProblem(change.slots);
  if (slots !== undefined) return slots;
  if (change.transfers.length > CHANGE_TRANSFERS_MAX) return `${change.transfers.length} transfers (at most ${CHANGE_TRANSFERS_MAX})`;
  const names = new Set(membership.members.map((member) => member.name));
  const ids = new Set<string>();
  for (const transfer of change.transfers) {
    const problem = transferProblem(transfer);
    if (problem !== undefined) return `transfer ${transfer.id.slice(0, 60)}: ${problem}`;
    if (!names.has(transfer.from) || !names.has(transfer.to)) return `transfer ${transfer.id.slice(0, 60)} between non-members`;
    if (ids.has(transfer.id)) return `transfer ${transfer.id.slice(0, 60)} listed twice`;
    ids.add(transfer.id);
  }
  return undefined;
}

const QUEUE_ID = /^q\d{1,15}\.\d{1,6}$/;

/** Queued commands: bounded, well-formed ids, and members as the add command would admit them. */
function queueProblem(membership: Membership): string | undefined {
  const queue = membership.queue ?? [];
  const dropped = membership.queueDropped ?? [];
  if (queue.length > QUEUED_COMMANDS_MAX || dropped.length > QUEUED_COMMANDS_MAX) return `${queue.length} queued and ${dropped.length} dropped (at most ${QUEUED_COMMANDS_MAX} each)`;
  const badId = [...queue.map((entry) => entry.id), ...dropped].find((id) => !QUEUE_ID.test(id));
  if (badId !== undefined) return `id '${badId.slice(0, 40)}' is not q<epoch>.<n>`;
  for (const entry of queue) {
    const problem = queuedCommandProblem(entry);
    if (problem !== undefined) return `${entry.id}: ${problem}`;
  }
  return undefined;
}

function queuedCommandProblem(entry: QueuedCommand): string | undefined {
  const command = entry.command;
  if (command.type === 'remove') return nodeNameProblem(command.name);
  if (command.type !== 'add') return `command '${String((command as { type: unknown }).type)}'`;
  return memberProblem({ ...command.member, state: 'Pending' });
}

function transferProblem(transfer: TransferPlan): string | undefined {
  if (!['KV', 'ssr', 'tsr'].includes(transfer.repo)) return `repo '${String(transfer.repo)}'`;
  return (
    idProblem('id', transfer.id) ??
    nodeNameProblem(transfer.from) ??
    nodeNameProblem(transfer.to) ??
    (transfer.from === transfer.to ? 'from and to are the same node' : undefined) ??
    slotsProblem(transfer.slots) ??
    percentProblem(transfer.percentComplete) ??
    (transfer.complete && transfer.percentComplete !== 100 ? `complete at ${transfer.percentComplete}%` : undefined) ??
    countProblem('bytes', transfer.bytes) ??
    countProblem('records', transfer.records)
  );
}

/** Two tables of one change must agree on what each transfer moves (the core merges them). */
function sameChangeProblem(incoming: Membership, current: Membership): string | undefined {
  const mine = current.change;
  if (mine === undefined || incoming.change?.id !== mine.id) return undefined;
  const known = new Map(mine.transfers.map((transfer) => [transfer.id, transfer]));
  for (const transfer of incoming.change.transfers) {
    const other = known.get(transfer.id);
    if (other === undefined) continue;
    const same =
      other.repo === transfer.repo &&
      other.from === transfer.from &&
      other.to === transfer.to &&
      other.slots.length === transfer.slots.length &&
      other.slots.every((slot, index) => compareSlots(slot, transfer.slots[index]!) === 0);
    if (!same) return `transfer ${transfer.id.slice(0, 60)} has other content than ours`;
  }
  return undefined;
}

function slotsProblem(slots: readonly Slot[]): string | undefined {
  if (slots.length > CHANGE_SLOTS_MAX) return `${slots.length} slots (at most ${CHANGE_SLOTS_MAX})`;
  for (const [index, slot] of slots.entries()) {
    if (!isCount(slot.partition) || slot.partition > PARTITION_MAX) return `slot partition ${slot.partition}`;
    if (!isCount(slot.replicas) || slot.replicas < 1 || slot.replicas > REPLICAS_MAX) return `slot replicas ${slot.replicas}`;
    if (index > 0 && compareSlots(slots[index - 1]!, slot) >= 0) return 'slots not sorted and distinct';
  }
  return undefined;
}

function assertionProblem(check: () => void): string | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A heartbeat's unreachable members: at most as many as a table has members, each a name and a count. */
function unreachableProblem(unreachable: readonly { node: string; forMs: number }[]): string | undefined {
  if (unreachable.length > TABLE_MEMBERS_MAX) return `${unreachable.length} unreachable members (at most ${TABLE_MEMBERS_MAX})`;
  for (const peer of unreachable) {
    const problem = textProblem('unreachable node', peer.node, NAME_LENGTH_MAX) ?? countProblem('unreachable forMs', peer.forMs);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

function countProblem(field: string, value: number): string | undefined {
  return isCount(value) ? undefined : `${field} ${value} is not an integer >= 0`;
}

function seqProblem(seq: number, min: number): string | undefined {
  return Number.isSafeInteger(seq) && seq >= min ? undefined : `seq ${seq} is not an integer >= ${min}`;
}

function percentProblem(percent: number): string | undefined {
  return Number.isFinite(percent) && percent >= 0 && percent <= 100 ? undefined : `percentComplete ${percent} outside 0..100`;
}

function portProblem(field: string, port: number): string | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65_535 ? undefined : `${field} ${port} outside 1..65535`;
}

function idProblem(field: string, id: string): string | undefined {
  if (id.length === 0) return `empty ${field}`;
  return textProblem(field, id, ID_CHARS_MAX);
}

function textProblem(field: string, text: string, charsMax: number): string | undefined {
  return text.length > charsMax ? `${field} of ${text.length} characters (at most ${charsMax})` : undefined;
}
