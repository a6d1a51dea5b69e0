// The peer port of a node: a PeerTransport whose directory is the node table. The cluster
// shell registers its handlers on `transport`; this file adds what every node answers
// (Ping) and the one message a Pending node takes from strangers (Admit, see below).

import * as grpc from '@grpc/grpc-js';
import type { NodeIdentity } from '../cluster/identity.js';
import type { NodeTable } from '../cluster/node-table.js';
import type { Logger } from '../log.js';
import type { PeerObserver } from '../metrics/metrics.js';
import type { Admit } from './messages.js';
import { PeerTransport, type PeerDirectory } from './transport.js';

export interface PeerServer {
  port: number;
  /** undefined only while node.ts starts the server without wiring (before issue 3). */
  transport: PeerTransport | undefined;
  close(graceMs: number): Promise<void>;
}

export interface PeerWiring {
  identity: NodeIdentity;
  log: Logger;
  /** config cluster.peerReplayWindowMs */
  replayWindowMs: number;
  /** Metrics of messages, bytes and refusals. */
  observer?: PeerObserver;
}

/**
 * Starts the peer port. With `wiring` it serves the signed protocol of proto/peer.proto;
 * without it (node.ts before issue 3 passes the identity) it only holds the port: every
 * call is answered UNIMPLEMENTED, since nothing could be signed.
 */
export async function startPeerServer(host: string, port: number, nodes: NodeTable, wiring?: PeerWiring): Promise<PeerServer> {
  if (wiring === undefined) return startBarePort(host, port);
  routeGrpcLogs(wiring.log);
  const transport = new PeerTransport({
    name: nodes.localName,
    identity: wiring.identity,
    directory: nodeTableDirectory(nodes),
    replayWindowMs: wiring.replayWindowMs,
    log: wiring.log,
    observer: wiring.observer,
    host,
    port,
    acceptUnknown: (_kind, sender, admit) =>
      nodes.local().state === 'Pending' ? admitSenderKey(sender, admit, wiring.identity.publicKeyBase64) : undefined,
  });
  transport.handle('Ping', async () => {
    const local = nodes.local();
    return { name: local.name, publicKey: local.publicKey, state: local.state, zone: local.zone, httpPort: local.httpPort };
  });
  const boundPort = await transport.start();
  return { port: boundPort, transport, close: (graceMs) => transport.close(graceMs) };
}

/**
 * grpc-js writes its own error lines to stderr (a bind failure, a closed channel); every
 * one of them also reaches us as an error we handle and log. They go to the node's log
 * at debug level instead, so a start-up failure stays one line (issue 14).
 */
function routeGrpcLogs(log: Logger): void {
  const write = (...args: unknown[]) => log.debug({ grpc: args.map(String).join(' ') }, 'grpc');
  grpc.setLogger({ error: write, info: write, debug: write });
}

/**
 * The node table as a peer directory. A Left node is not a peer any more: it serves
 * nothing (DESIGN.md, "Cluster"), so nothing it sends is accepted; but it can still be
 * reached, to receive the table that tells it it has left (and so drop its data).
 */
export function nodeTableDirectory(nodes: NodeTable): PeerDirectory {
  const find = (name: string) => nodes.list().find((node) => node.name === name);
  return {
    publicKeyOf: (name) => find(name)?.publicKey,
    acceptsRequestsFrom: (name) => find(name)?.state !== 'Left',
    addressOf: (name) => {
      const node = find(name);
      return node === undefined ? undefined : { address: node.address, port: node.port };
    },
  };
}

/**
 * The key that must have signed an Admit from a sender this node does not know: the
 * sender's own key in the membership it sends, and only when that Admit names this node's
 * key as its target (DESIGN.md, "Trust": a Pending node accepts the first cluster whose
 * request carries its own key). The shell asks only while it is Pending.
 */
export function admitSenderKey(sender: string, admit: Admit, ownPublicKey: string): string | undefined {
  if (admit.targetPublicKey !== ownPublicKey) return undefined;
  const member = admit.membership.members.find((candidate) => candidate.name === sender);
  if (member === undefined || member.publicKey === ownPublicKey) return undefined;
  return member.publicKey;
}

async function startBarePort(host: string, port: number): Promise<PeerServer> {
  const server = new grpc.Server();
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(new Error(`cannot listen for peers on ${host}:${port}: ${error.message}`)) : resolve(bound),
    );
  });
  return {
    port: boundPort,
    transport: undefined,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
