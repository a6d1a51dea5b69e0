// The cluster's peer messages (proto/peer.proto, "Membership"): the core's messages as
// src/protocol/cluster-types.ts declares them (CoreMessage), the membership table a
// coordinator sends a node it admits (Admit), Ping, and an admin command forwarded to the
// coordinator (AdminCommand). The handlers are the cluster shell's (cluster-shell.ts) and the
// peer server's (peer-server.ts). A table is untrusted even when signed: peer-input.ts checks
// it before the core sees it.

import { assert } from '../lib/assert.js';
import type {
  AdminCommand,
  AdminResult,
  Member,
  Membership,
  MembershipChange,
  NodeState,
  PeerMessage,
  QueuedCommand,
  Slot,
  TransferPlan,
  TransferRepo,
} from '../protocol/cluster-types.js';
import { EMPTY, transferAckCodec, transferChunkCodec } from '../peer/codec.js';
import { EMPTY_CODEC, bool, enumOf, field, int, list, message, num, optionalMessage, optionalStr, refuse, str, strings, type BodyCodec, type ProtoObject } from '../peer/fields.js';
import { definePeerKind, type PeerBodyType } from '../peer/kinds.js';

export interface Admit {
  /** The cluster's table, including the sender (whose key verifies this message). */
  membership: Membership;
  /** The Pending node's own key: it accepts only an Admit meant for it. */
  targetPublicKey: string;
}

/** The reply to Ping and to Admit. */
export interface NodeStatusReply {
  name: string;
  publicKey: string;
  state: NodeState;
  zone: string;
  httpPort: number;
  /** The node's advertised address and peer port: the identity proof binds them to its key. */
  address: string;
  port: number;
}

// ---- Enums

const NODE_STATES: Readonly<Record<NodeState, string>> = {
  Pending: 'NODE_STATE_PENDING',
  Joining: 'NODE_STATE_JOINING',
  Joined: 'NODE_STATE_JOINED',
  Leaving: 'NODE_STATE_LEAVING',
  Left: 'NODE_STATE_LEFT',
};
export const TRANSFER_REPOS: Readonly<Record<TransferRepo, string>> = { KV: 'REPO_KV', ssr: 'REPO_SSR', tsr: 'REPO_TSR' };
const CHANGE_KINDS: Readonly<Record<MembershipChange['kind'], string>> = { join: 'CHANGE_KIND_JOIN', leave: 'CHANGE_KIND_LEAVE' };

// ---- Shared shapes

const slot: BodyCodec<Slot> = {
  toProto: (value) => ({ partition: value.partition, replicas: value.replicas }),
  fromProto: (object) => ({ partition: int(object, 'partition'), replicas: int(object, 'replicas') }),
};

const member: BodyCodec<Member> = {
  toProto: (value) => ({ ...memberFields(value), state: NODE_STATES[value.state], incarnation: value.incarnation ?? 0 }),
  fromProto: (object) => {
    const incarnation = int(object, 'incarnation');
    return { ...memberFieldsFrom(object), state: enumOf(object, 'state', NODE_STATES), ...(incarnation > 0 ? { incarnation } : {}) };
  },
};

function memberFields(value: Omit<Member, 'state'>): ProtoObject {
  const { name, publicKey, address, port, httpPort, zone } = value;
  return { name, publicKey, address, port, httpPort, zone };
}

function memberFieldsFrom(object: ProtoObject): Omit<Member, 'state'> {
  return {
    name: str(object, 'name'),
    publicKey: str(object, 'publicKey'),
    address: str(object, 'address'),
    port: int(object, 'port'),
    httpPort: int(object, 'httpPort'),
    zone: str(object, 'zone'),
  };
}

const transferPlan: BodyCodec<TransferPlan> = {
  toProto: (value) => ({
    ...value,
    repo: TRANSFER_REPOS[value.repo],
    slots: value.slots.map(slot.toProto),
  }),
  fromProto: (object) => ({
    id: str(object, 'id'),
    repo: enumOf(object, 'repo', TRANSFER_REPOS),
    from: str(object, 'from'),
    to: str(object, 'to'),
    slots: list(object, 'slots', slot.fromProto),
    complete: bool(object, 'complete'),
    percentComplete: num(object, 'percentComplete'),
    bytes: int(object, 'bytes'),
    records: int(object, 'records'),
  }),
};

const membershipChange: BodyCodec<MembershipChange> = {
  toProto: (value) => ({
    id: value.id,
    kind: CHANGE_KINDS[value.kind],
    node: value.node,
    slots: value.slots.map(slot.toProto),
    transfers: value.transfers.map(transferPlan.toProto),
    finalSynced: value.finalSynced === true,
  }),
  fromProto: (object) => ({
    id: str(object, 'id'),
    kind: enumOf(object, 'kind', CHANGE_KINDS),
    node: str(object, 'node'),
    slots: list(object, 'slots', slot.fromProto),
    transfers: list(object, 'transfers', transferPlan.fromProto),
    ...(bool(object, 'finalSynced') ? { finalSynced: true } : {}),
  }),
};

const queuedCommand: BodyCodec<QueuedCommand> = {
  toProto: (value) => ({ id: value.id, command: adminCommand.toProto(value.command) }),
  fromProto: (object) => ({ id: str(object, 'id'), command: adminCommand.fromProto(message(object, 'command')) }),
};

const membership: BodyCodec<Membership> = {
  toProto: (value) => ({
    epoch: value.epoch,
    members: value.members.map(member.toProto),
    change: value.change === undefined ? undefined : membershipChange.toProto(value.change),
    queue: (value.queue ?? []).map(queuedCommand.toProto),
    queueDropped: value.queueDropped ?? [],
  }),
  fromProto: (object) => {
    const change = optionalMessage(object, 'change');
    const queue = list(object, 'queue', queuedCommand.fromProto);
    const queueDropped = strings(object, 'queueDropped');
    return {
      epoch: int(object, 'epoch'),
      members: list(object, 'members', member.fromProto),
      change: change === undefined ? undefined : membershipChange.fromProto(change),
      ...(queue.length > 0 ? { queue } : {}),
      ...(queueDropped.length > 0 ? { queueDropped } : {}),
    };
  },
};

// ---- The core's messages

const coreMessage: BodyCodec<PeerMessage> = {
  toProto: coreToProto,
  fromProto: coreFromProto,
};

function coreToProto(value: PeerMessage): ProtoObject {
  switch (value.type) {
    case 'membership':
      return { membership: membership.toProto(value.membership), damaged: value.damaged === true };
    case 'heartbeat':
      return { heartbeat: { epoch: value.epoch, at: value.at, news: value.news ?? 0, newsDigest: value.newsDigest ?? 0, unreachable: value.unreachable ?? [], ...(value.run === undefined ? {} : { run: value.run }) }, damaged: value.damaged === true };
    case 'ready':
      return { ready: { changeId: value.changeId } };
    case 'transfer-request':
      return { transferRequest: { transfer: transferPlan.toProto(value.transfer), seq: value.seq, cursor: value.cursor, ...(value.repeat === true ? { repeat: true } : {}) } };
    case 'transfer-chunk':
      return { transferChunk: transferChunkCodec.toProto(value) };
    case 'transfer-ack':
      return { transferAck: transferAckCodec.toProto(value) };
    case 'transfer-progress': {
      const { type: _type, ...progress } = value;
      return { transferProgress: progress };
    }
    case 'final-synced':
      return { finalSynced: { changeId: value.changeId } };
    default:
      assert(false, `a core message of no known type: ${(value as PeerMessage).type}`);
  }
}

function coreFromProto(object: ProtoObject): PeerMessage {
  switch (field(object, 'payload')) {
    case 'membership':
      return { type: 'membership', membership: membership.fromProto(message(object, 'membership')), ...damagedFromProto(object) };
    case 'heartbeat':
      return { ...heartbeatFromProto(message(object, 'heartbeat')), ...damagedFromProto(object) };
    case 'ready':
      return { type: 'ready', changeId: str(message(object, 'ready'), 'changeId') };
    case 'transferRequest':
      return transferRequestFromProto(message(object, 'transferRequest'));
    case 'transferChunk':
      return transferChunkCodec.fromProto(message(object, 'transferChunk'));
    case 'transferAck':
      return transferAckCodec.fromProto(message(object, 'transferAck'));
    case 'transferProgress':
      return transferProgressFromProto(message(object, 'transferProgress'));
    case 'finalSynced':
      return { type: 'final-synced', changeId: str(message(object, 'finalSynced'), 'changeId') };
    default:
      return refuse('payload', 'one of the core messages');
  }
}

/** The sender's damage mark, present only when set (the proto default is false). */
function damagedFromProto(object: ProtoObject): { damaged?: true } {
  return object.damaged === true ? { damaged: true } : {};
}

function heartbeatFromProto(object: ProtoObject): PeerMessage {
  const at = optionalMessage(object, 'at');
  const epoch = int(object, 'epoch');
  const news = int(object, 'news');
  const newsDigest = int(object, 'newsDigest');
  const unreachable = list(object, 'unreachable', (peer) => ({ node: str(peer, 'node'), forMs: int(peer, 'forMs') }));
  const run = int(object, 'run');
  return {
    type: 'heartbeat',
    epoch,
    ...(at === undefined ? {} : { at: { address: str(at, 'address'), port: int(at, 'port'), httpPort: int(at, 'httpPort'), incarnation: int(at, 'incarnation') } }),
    ...(news > 0 ? { news, newsDigest } : {}),
    ...(unreachable.length > 0 ? { unreachable } : {}),
    ...(run > 0 ? { run } : {}),
  };
}

function transferRequestFromProto(object: ProtoObject): PeerMessage {
  return {
    type: 'transfer-request',
    transfer: transferPlan.fromProto(message(object, 'transfer')),
    seq: int(object, 'seq'),
    cursor: optionalStr(object, 'cursor'),
    ...(object.repeat === true ? { repeat: true } : {}),
  };
}

function transferProgressFromProto(object: ProtoObject): PeerMessage {
  return {
    type: 'transfer-progress',
    transferId: str(object, 'transferId'),
    percentComplete: num(object, 'percentComplete'),
    bytes: int(object, 'bytes'),
    records: int(object, 'records'),
    complete: bool(object, 'complete'),
  };
}

// ---- Admin commands and node status

const adminCommand: BodyCodec<AdminCommand> = {
  toProto: (value) => (value.type === 'add' ? { add: memberFields(value.member) } : { remove: { name: value.name } }),
  fromProto: (object) => {
    switch (field(object, 'command')) {
      case 'add':
        return { type: 'add', member: memberFieldsFrom(message(object, 'add')) };
      case 'remove':
        return { type: 'remove', name: str(message(object, 'remove'), 'name') };
      default:
        return refuse('command', 'add or remove');
    }
  },
};

const ADMIN_FAILURE_STATUSES = [400, 404, 409] as const;

const adminReply: BodyCodec<AdminResult> = {
  toProto: (value) =>
    value.ok
      ? { ok: true, membership: membership.toProto(value.membership) }
      : { ok: false, status: value.status, message: value.message },
  fromProto: (object) => {
    if (bool(object, 'ok')) return { ok: true, membership: membership.fromProto(message(object, 'membership')) };
    const status = ADMIN_FAILURE_STATUSES.find((allowed) => allowed === int(object, 'status'));
    return status === undefined ? refuse('status', '400, 404 or 409') : { ok: false, status, message: str(object, 'message') };
  },
};

const nodeStatusReply: BodyCodec<NodeStatusReply> = {
  toProto: (value) => ({ ...value, state: NODE_STATES[value.state] }),
  fromProto: (object) => ({
    name: str(object, 'name'),
    publicKey: str(object, 'publicKey'),
    state: enumOf(object, 'state', NODE_STATES),
    zone: str(object, 'zone'),
    httpPort: int(object, 'httpPort'),
    address: str(object, 'address'),
    port: int(object, 'port'),
  }),
};

// ---- The kinds

/** What a Left node still sends: the core answers it with the table that tells it it has left. */
// One way too: heartbeats go on each peer's notice stream (cluster-shell.ts send).
export const CORE_MESSAGE = definePeerKind({ name: 'CoreMessage', request: coreMessage, reply: EMPTY, gate: 'members-and-left', oneWay: true });

/** Sent to a node that is not in the table yet: the Admit itself names the key that signed it. */
export const ADMIT = definePeerKind<Admit, NodeStatusReply>({
  name: 'Admit',
  request: {
    toProto: (value) => ({ membership: membership.toProto(value.membership), targetPublicKey: value.targetPublicKey }),
    fromProto: (object) => ({
      membership: membership.fromProto(message(object, 'membership')),
      targetPublicKey: str(object, 'targetPublicKey'),
    }),
  },
  reply: { type: 'AdmitReply', codec: nodeStatusReply },
  gate: 'admitted-stranger',
});

/** Answered to anyone: an operator adding a node checks that it holds the key they were given. */
export const PING = definePeerKind({ name: 'Ping', request: EMPTY_CODEC, reply: { type: 'PingReply', codec: nodeStatusReply }, gate: 'anyone' });

const ADMIN_REPLY: PeerBodyType<AdminResult> = { type: 'AdminReply', codec: adminReply };

export const ADMIN_COMMAND = definePeerKind({ name: 'AdminCommand', request: adminCommand, reply: ADMIN_REPLY });
