// The peer port of a node: a PeerTransport whose directory is the node table. It joins the peer
// layer to cluster knowledge (the node table, who may Admit), so it lives with the cluster and
// the peer layer stays free of it. The cluster shell registers its handlers on `transport`;
// this file adds what every node answers (Ping) and the one message a Pending node takes from
// strangers (Admit, see below).

import { assert } from '../lib/assert.js';
import * as grpc from '@grpc/grpc-js';
import type { NodeIdentity } from '../peer/identity.js';
import type { NodeState } from '../protocol/cluster-types.js';
import type { NodeDocument, NodeTable } from './node-table.js';
import type { Logger } from '../lib/log.js';
import type { PeerObserver } from '../metrics/metrics.js';
import { membershipProblem } from './peer-input.js';
import { ADMIT, PING, type Admit, type NodeStatusReply } from './core-messages.js';
import { leftNodesMayCall } from '../peer/kinds.js';
import type { TlsMaterial } from '../config/tls.js';
import { PeerTransport, acceptStrangers, type PeerDirectory } from '../peer/transport.js';
import { fastestPeerDigest } from '../peer/codec.js';

export interface PeerServer {
  port: number;
  transport: PeerTransport;
  close(graceMs: number): Promise<void>;
}

export interface PeerWiring {
  identity: NodeIdentity;
  log: Logger;
  /** config cluster.peerReplayWindowMs */
  replayWindowMs: number;
  /** Metrics of messages, bytes and refusals. */
  observer?: PeerObserver;
  admit: AdmitTrust;
  /**
   * The key of a member of this node's current table (the core's), for senders the node
   * table does not list yet: it follows the core one persist later, and a peer of a table
   * just adopted (the coordinator re-sending its Admit, its first heartbeats) must not be
   * refused as unknown in between. Only keys of our own table: never a sender's claim.
   */
  memberKey?(name: string): string | undefined;
  /** config limits.peerCallsInFlightMax */
  callsInFlightMax?: number;
  tls?: TlsMaterial;
  /** Keepalive ping interval of peer connections (config cluster.heartbeatIntervalMs). */
  keepaliveMs?: number;
  /** How long a ping or a dial may go unanswered (config cluster.failureTimeoutMs). */
  keepaliveTimeoutMs?: number;
}

/** Whom a node that has no cluster yet takes an Admit from. */
export interface AdmitTrust {
  /** True only while the node has no table (epoch 0): a node in a cluster takes no stranger's Admit. */
  accepting(): boolean;
  /** The node keys of --join-token; undefined for bare --join (trust on first Admit, loopback only). */
  trustedKeys: ReadonlySet<string> | undefined;
}

/** Starts the peer port: it serves the signed protocol of proto/peer.proto. */
export async function startPeerServer(host: string, port: number, nodes: NodeTable, wiring: PeerWiring): Promise<PeerServer> {
  routeGrpcLogs(wiring.log);
  // SHA-256 where this CPU has SHA extensions, else SHA-512/256 (codec.ts); peers check either.
  const digest = fastestPeerDigest();
  wiring.log.info({ digest }, 'peer messages signed over this digest');
  const transport = new PeerTransport({
    digest,
    name: nodes.localName,
    identity: wiring.identity,
    directory: nodeTableDirectory(nodes, wiring.memberKey),
    replayWindowMs: wiring.replayWindowMs,
    log: wiring.log,
    observer: wiring.observer,
    host,
    port,
    ...(wiring.callsInFlightMax === undefined ? {} : { callsInFlightMax: wiring.callsInFlightMax }),
    ...(wiring.tls === undefined ? {} : { tls: wiring.tls }),
    ...(wiring.keepaliveMs === undefined ? {} : { keepaliveMs: wiring.keepaliveMs }),
    ...(wiring.keepaliveTimeoutMs === undefined ? {} : { keepaliveTimeoutMs: wiring.keepaliveTimeoutMs }),
    acceptUnknown: acceptStrangers(ADMIT, (sender, admit) => {
      if (!wiring.admit.accepting()) return undefined;
      const verdict = admitSenderKey(sender, admit, wiring.identity.publicKeyBase64, wiring.admit.trustedKeys);
      if ('refusal' in verdict) {
        wiring.log.warn({ peer: sender, reason: verdict.refusal }, 'Admit refused');
        return undefined;
      }
      return verdict.key;
    }),
  });
  transport.handle(PING, async () => nodeStatus(nodes.local()));
  const boundPort = await transport.start();
  // Bound where it was asked to (port 0: any free port).
  assert(boundPort > 0 && (port === 0 || boundPort === port), `peer port ${port} bound at ${boundPort}`);
  return { port: boundPort, transport, close: (graceMs) => transport.close(graceMs) };
}

/** What Ping and Admit answer: what GET /cluster/localNode shows anyone, signed. */
export function nodeStatus(local: NodeDocument): NodeStatusReply {
  const { name, publicKey, state, zone, httpPort, address, port } = local;
  return { name, publicKey, state, zone, httpPort, address, port };
}

/**
 * grpc-js writes its own error lines to stderr (a bind failure, a closed channel); every
 * one of them also reaches us as an error we handle and log. They go to the node's log
 * at debug level instead, so a start-up failure stays one line.
 */
function routeGrpcLogs(log: Logger): void {
  const write = (...args: unknown[]) => log.debug({ grpc: args.map(String).join(' ') }, 'grpc');
  grpc.setLogger({ error: write, info: write, debug: write });
}

/**
 * Whether a sender in `state` may make a call of `kind` (the simulation's network asks too).
 * A Left node may still send the kinds of gate class `members-and-left` (kinds.ts): core
 * messages, which the core answers with the table that tells it it has left (a node removed
 * while it was down learns it this way), and the hints it could not deliver before it left
 * (a leaver whose hand-off was waived while it was unreachable still holds some). A hint is
 * stored only by a node that owns its partition, as any write.
 */
export function acceptsKindFrom(state: NodeState | undefined, kind: string): boolean {
  return state !== 'Left' || leftNodesMayCall(kind);
}

/**
 * The node table as a peer directory. A Left node is not a peer any more: it serves nothing
 * (docs/cluster.md, "A node removed while it was down"), so of what it sends only
 * the kinds acceptsKindFrom allows are accepted; and it can still be reached.
 */
export function nodeTableDirectory(nodes: NodeTable, memberKey?: (name: string) => string | undefined): PeerDirectory {
  const find = (name: string) => nodes.list().find((node) => node.name === name);
  return {
    publicKeyOf: (name) => find(name)?.publicKey ?? memberKey?.(name),
    acceptsRequestsFrom: (name, kind) => acceptsKindFrom(find(name)?.state, kind),
    addressOf: (name) => {
      const node = find(name);
      return node === undefined ? undefined : { address: node.address, port: node.port };
    },
  };
}

/**
 * The key that must have signed an Admit from a sender this node does not know, or why it
 * is refused. The Admit must name this node's key as its target (docs/cluster.md, "Trust"), its
 * table must be well formed (peer-input.ts: a malformed one is never adopted), and the
 * sender's key is the one that table gives the sender. With a join token that key must be
 * one the token names; without one (bare --join) the first well-formed Admit is trusted.
 */
export function admitSenderKey(
  sender: string,
  admit: Admit,
  ownPublicKey: string,
  trustedKeys: ReadonlySet<string> | undefined,
): { key: string } | { refusal: string } {
  if (admit.targetPublicKey !== ownPublicKey) return { refusal: 'the Admit is meant for another key' };
  const problem = membershipProblem(admit.membership);
  if (problem !== undefined) return { refusal: `malformed table: ${problem}` };
  const member = admit.membership.members.find((candidate) => candidate.name === sender);
  if (member === undefined) return { refusal: `the table does not name its sender '${sender}'` };
  if (member.publicKey === ownPublicKey) return { refusal: "the sender claims this node's own key" };
  if (member.state !== 'Joined') return { refusal: `the sender is ${member.state} in its own table` };
  if (trustedKeys !== undefined && !trustedKeys.has(member.publicKey)) {
    return { refusal: `the sender's key is not one the join token names` };
  }
  return { key: member.publicKey };
}
