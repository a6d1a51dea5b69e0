// The registry of peer message kinds. The peer layer is a transport: it frames, signs, gates
// and bounds envelopes, and knows no subsystem's messages. Each subsystem declares the kinds
// it sends and answers next to its code (a `*-messages.ts` or `*-peer.ts` file), with
// definePeerKind: the proto messages of the request and its reply (proto/peer.proto), their
// codecs, and the gate class that says who may send it. A new peer message touches that
// subsystem and proto/peer.proto only (docs/architecture.md).
//
// A kind's name is the name of its request's proto message and travels as the envelope's
// `kind`; its reply travels under the reply message's name. Both names are the wire format:
// renaming one breaks mixed versions.

import { assert } from '../lib/assert.js';
import type { BodyCodec } from './fields.js';

/**
 * Who may send a kind, as the inbound gate and the transport decide it before and after the
 * body is read (inbound-gate.ts, transport.ts):
 * - `members`: a node of the node table that is not Left;
 * - `members-and-left`: any node of the table, Left ones too (what a node removed while it
 *   was down still sends: docs/cluster.md, "A node removed while it was down");
 * - `anyone`: strangers too, answered even when the sender's key is not known (Ping: its
 *   purpose is the signed reply);
 * - `admitted-stranger`: strangers too, when the message itself names the key that signed it
 *   and the node takes it (Admit to a node with no cluster yet: the transport's acceptUnknown).
 */
export type PeerGate = 'members' | 'members-and-left' | 'anyone' | 'admitted-stranger';

/** A proto message of proto/peer.proto, and the codec of the value it carries. */
export interface PeerBodyType<T> {
  readonly type: string;
  readonly codec: BodyCodec<T>;
}

/** One request of the Call RPC: its name, request and reply bodies, and who may send it. */
export interface PeerMessageKind<Req, Res> {
  readonly name: string;
  readonly request: PeerBodyType<Req>;
  readonly reply: PeerBodyType<Res>;
  readonly gate: PeerGate;
  /** May also be sent one way, on the sender's notice stream (transport.ts `notify`): no reply. */
  readonly oneWay: boolean;
}

export interface PeerKindDeclaration<Req, Res> {
  /** The request's proto message, and the envelope kind. */
  name: string;
  request: BodyCodec<Req>;
  reply: PeerBodyType<Res>;
  /** Default `members`. */
  gate?: PeerGate;
  /**
   * Default false. True: the kind may also travel one way on a long-lived stream per peer,
   * each message still signed and checked, its reply dropped (heartbeats: a unary call cost
   * four times the CPU, and that cost is what limited a 2-core machine to ~23 nodes).
   */
  oneWay?: boolean;
}

// Kinds are declared at module level, so the registry is complete once the modules that send
// or answer them are loaded; nothing is ever removed. Bounded by the kinds the code declares.
const KINDS = new Map<string, PeerMessageKind<unknown, unknown>>();

/** Declares and registers a kind; a name declared twice is a bug. */
export function definePeerKind<Req, Res>(declaration: PeerKindDeclaration<Req, Res>): PeerMessageKind<Req, Res> {
  const { name, request, reply, gate = 'members', oneWay = false } = declaration;
  assert(!KINDS.has(name), `peer message kind '${name}' declared twice`);
  assert(!oneWay || gate === 'members' || gate === 'members-and-left', `one-way kind '${name}' open to strangers`);
  const kind: PeerMessageKind<Req, Res> = { name, request: { type: name, codec: request }, reply, gate, oneWay };
  KINDS.set(name, kind as PeerMessageKind<unknown, unknown>);
  return kind;
}

/** The kind registered under `name`, if any module declared it. */
export function peerKindNamed(name: string): PeerMessageKind<unknown, unknown> | undefined {
  return KINDS.get(name);
}

/** Every kind declared so far (tests check each against proto/peer.proto). */
export function peerKinds(): ReadonlyArray<PeerMessageKind<unknown, unknown>> {
  return [...KINDS.values()];
}

/** Whether a sender the node table does not list may call `kind` at all (the gate's stranger kinds). */
export function strangersMayCall(kind: string): boolean {
  const gate = KINDS.get(kind)?.gate;
  return gate === 'anyone' || gate === 'admitted-stranger';
}

/** Whether `kind` may arrive one way, on a notice stream. */
export function sentOneWay(kind: string): boolean {
  return KINDS.get(kind)?.oneWay === true;
}

/** Whether a Left node may still call `kind`. */
export function leftNodesMayCall(kind: string): boolean {
  return KINDS.get(kind)?.gate === 'members-and-left';
}

/** Whether `kind` is answered to a sender whose key is not known (unverified). */
export function answersAnyone(kind: string): boolean {
  return KINDS.get(kind)?.gate === 'anyone';
}
