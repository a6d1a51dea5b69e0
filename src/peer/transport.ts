// The peer transport: signed envelopes over gRPC (proto/peer.proto), both ways. Every message
// is signed by its sender and checked by its receiver against the sender's key in the node
// table (docs/cluster.md, "Trust"): an unknown sender, a bad signature, a timestamp outside
// ±replayWindowMs or a nonce seen before is refused with 401 PEER_AUTH and logged. Replies are
// signed too, and bound to their request's nonce. The one exception is Admit while this node is
// Pending (acceptUnknown): the coordinator is not yet in the table, and the Admit itself
// carries its key. Before any of that, the gate (inbound-gate.ts) checks each call's signed
// caller header and bounds the calls in flight, before the body is read; with TLS (tls.ts) the
// port speaks mutual TLS.

import { randomBytes, type KeyObject } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { NodeIdentity } from './identity.js';
import type { Logger } from '../lib/log.js';
import type { PeerObserver, PeerRefusalReason } from '../metrics/metrics.js';
import { StartupError, TributaryError } from '../lib/errors.js';
import {
  ERROR_REPLY,
  EMPTY,
  TRANSFER_ACK,
  TRANSFER_CHUNK,
  decodeBody,
  decodeEnvelope,
  encodeBody,
  encodeEnvelope,
  encodeEnvelopeWithBody,
  namesDigest,
  transferChunkProto,
  V2_DIGEST,
  type DigestAlgorithm,
  type Envelope,
  type ErrorReply,
  type TransferChunk,
} from './codec.js';
import { BadPeerMessageError, PeerAuthError, PeerBusyError, UnknownPeerError } from './errors.js';
import { PeerCounters } from './peer-counters.js';
import { answersAnyone, peerKindNamed, sentOneWay, type PeerBodyType, type PeerMessageKind } from './kinds.js';
import { InboundNotices, OutboundNotices } from './notice-streams.js';
import type { CallHandler, CallOptions, PeerEndpoint, TransferHandler } from './endpoint.js';
import { peerMethodPath, peerServiceDefinition } from './proto.js';
import { ReplayGuard } from './replay.js';
import {
  NONCE_BYTES,
  SIGNATURE_BYTES,
  chunkContentDigest,
  digestOf,
  sealEnvelope,
  signBytes,
  signingKeyOf,
  verifyEnvelope,
  verifyingKeyOf,
  contentDigest,
} from './signing.js';
import { serveTransferStream, type ChunkAnswer } from './transfer-inbound.js';
import { callerClaim, callerMetadata, inboundGate, type GateCounts } from './inbound-gate.js';
import type { TlsMaterial } from '../config/tls.js';
import { TransferStream, type TransferStreamHandlers } from './transfer-stream.js';
import { CHANNEL_OPTIONS, KEEPALIVE_MS_DEFAULT, RemotePeerError, asBuffer, fromGrpcError, keepaliveOptions, sameBytes, toErrorReply } from './wire.js';
import { assert } from '../lib/assert.js';

export interface PeerAddress {
  address: string;
  port: number;
}

/** The node table as the transport sees it. */
export interface PeerDirectory {
  /** Base64 of the node's ed25519 public key; undefined when the node is not in the table. */
  publicKeyOf(name: string): string | undefined;
  addressOf(name: string): PeerAddress | undefined;
  /** Whether requests of this kind from this node are taken (default: every node with a key). */
  acceptsRequestsFrom?(name: string, kind: string): boolean;
}

/**
 * The one kind a sender not in the directory may send signed by a key the message itself
 * names (gate class `admitted-stranger`, kinds.ts): asked only for such a message, it
 * returns the key that must have signed it, or undefined to refuse. Made by acceptStrangers.
 */
export interface AcceptUnknown {
  readonly kind: string;
  keyOf(sender: string, body: Uint8Array): string | undefined;
}

/** Takes messages of `kind` from strangers whose key `keyOf` gives from the (decoded, checked) body. */
export function acceptStrangers<Req, Res>(kind: PeerMessageKind<Req, Res>, keyOf: (sender: string, body: Req) => string | undefined): AcceptUnknown {
  assert(kind.gate === 'admitted-stranger', `${kind.name} is not a kind strangers may send with their own key`);
  return {
    kind: kind.name,
    keyOf: (sender, body) => {
      let decoded: Req;
      try {
        decoded = decodeBody(kind.request, body);
      } catch {
        return undefined;
      }
      return keyOf(sender, decoded);
    },
  };
}

export interface PeerTransportOptions {
  name: string;
  identity: NodeIdentity;
  directory: PeerDirectory;
  replayWindowMs: number;
  log: Logger;
  host: string;
  /** 0: any free port (tests); the bound one is `port` after start(). */
  port: number;
  acceptUnknown?: AcceptUnknown;
  /** Epoch ms for envelope timestamps and the replay window (not gRPC deadlines). */
  clock?: () => number;
  /** Bound of the replay guard's memory. */
  nonceEntriesMax?: number;
  /** Told of every envelope sent and received and of every refusal (metrics). */
  observer?: PeerObserver;
  /** Inbound calls and transfer streams served at once (inbound-gate.ts); default 256. */
  callsInFlightMax?: number;
  /** Mutual TLS with the cluster CA (tls.ts); undefined: plain TCP. */
  tls?: TlsMaterial;
  /**
   * Keepalive ping interval of every peer connection, both ways (wire.ts keepaliveOptions;
   * the node passes its heartbeat interval). Default KEEPALIVE_MS_DEFAULT.
   */
  keepaliveMs?: number;
  /**
   * How long a ping may go unanswered before its connection is closed, and a dial may go on
   * before it is given up and dialled afresh (the node passes its failure timeout): a
   * connection whose packets are dropped is closed within `keepaliveMs` + this. Default
   * three keepalive intervals.
   */
  keepaliveTimeoutMs?: number;
  /**
   * The digest this node signs by (codec.ts; the node passes fastestPeerDigest()). Default
   * v2's, SHA-512/256. Envelopes and chunks by either are checked, whatever this is.
   */
  digest?: DigestAlgorithm;
}

export type { CallHandler, CallOptions, TransferHandler } from './endpoint.js';

/** What the caller of a Call or the writer of a stream expects of the answer. */
export interface AnswerExpectation {
  /** For messages and logs. */
  node: string;
  /** undefined: any sender name (callUnknown does not know it), as long as the key matches. */
  sender: string | undefined;
  key: KeyObject;
}

interface InboundStream {
  /** Pinned by the first chunk: one stream, one sender. */
  sender: string | undefined;
}

type RawHandler = (sender: string, body: Uint8Array) => Promise<{ kind: string; body: Uint8Array }>;

/** One gRPC client per peer address, when it was made, and since when its channel has been dialling (dialStuck). */
interface PeerClient {
  client: grpc.Client;
  openedAtMs: number;
  connectingSinceMs: number | undefined;
}

const NONCE_ENTRIES_MAX = 100_000;
const CALLS_IN_FLIGHT_MAX = 256;
const NO_BYTES = new Uint8Array(0);

export class PeerTransport implements PeerEndpoint {
  private readonly server: grpc.Server;
  /** Counts of the gate in front of every inbound call (inbound-gate.ts). */
  readonly gate: GateCounts;
  private readonly clients = new Map<string, PeerClient>();
  private readonly channelOptions: grpc.ChannelOptions;
  private readonly keepaliveMs: number;
  private readonly keepaliveTimeoutMs: number;
  private readonly handlers = new Map<string, RawHandler>();
  private transferHandler: TransferHandler | undefined;
  private readonly replay: ReplayGuard;
  private readonly signingKey: KeyObject;
  private readonly digest: DigestAlgorithm;
  private readonly clock: () => number;
  private readonly log: Logger;
  private boundPort: number | undefined;
  /** Traffic per peer, for the `transport` monitoring service. */
  readonly counters = new PeerCounters();
  /** One-way notices (heartbeats): a stream to each peer, one from each (notice-streams.ts). */
  private readonly noticesOut = new OutboundNotices();
  private readonly noticesIn: InboundNotices;

  constructor(private readonly options: PeerTransportOptions) {
    this.replay = new ReplayGuard(options.replayWindowMs, options.nonceEntriesMax ?? NONCE_ENTRIES_MAX);
    this.signingKey = signingKeyOf(options.identity);
    this.digest = options.digest ?? V2_DIGEST;
    this.clock = options.clock ?? Date.now;
    this.log = options.log;
    this.noticesIn = new InboundNotices(options.log);
    const gate = inboundGate({
      // A notice stream lives as long as its connection, one per sender: it holds none of
      // the slots of calls in flight, and strangers get none.
      longLivedPaths: new Set([peerMethodPath('Notify')]),
      // Any member's key, Left ones included: what a Left node may still send (a core
      // message, to be told it has left) is decided per kind once the envelope is read.
      publicKeyOf: (sender) => options.directory.publicKeyOf(sender),
      replayWindowMs: options.replayWindowMs,
      callsInFlightMax: options.callsInFlightMax ?? CALLS_IN_FLIGHT_MAX,
      clock: this.clock,
      log: this.log,
      onRefused: (sender, reason) => {
        this.counters.refused(sender ?? '(no caller header)', reason);
        this.options.observer?.refused(reason);
      },
    });
    this.gate = gate.counts;
    this.keepaliveMs = options.keepaliveMs ?? KEEPALIVE_MS_DEFAULT;
    this.keepaliveTimeoutMs = options.keepaliveTimeoutMs ?? 3 * this.keepaliveMs;
    assert(Number.isInteger(this.keepaliveMs) && this.keepaliveMs > 0, `keepalive every ${this.keepaliveMs} ms`);
    this.channelOptions = { ...CHANNEL_OPTIONS, ...keepaliveOptions(this.keepaliveMs, this.keepaliveTimeoutMs) };
    // The server pings too: an inbound transfer stream from a peer cut off holds one of the
    // gate's slots (callsInFlightMax) until its connection is known dead.
    this.server = new grpc.Server({ ...this.channelOptions, interceptors: [gate.interceptor] });
    this.server.addService(peerServiceDefinition(), {
      Call: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => this.serveCall(call, callback),
      Transfer: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => this.serveTransfer(call),
      Notify: (call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => this.serveNotify(call, callback),
    });
  }

  get name(): string {
    return this.options.name;
  }

  /** The bound peer port (after start). */
  get port(): number {
    if (this.boundPort === undefined) throw new Error('PeerTransport.port read before start()');
    return this.boundPort;
  }

  async start(): Promise<number> {
    const { host, port } = this.options;
    this.boundPort = await new Promise<number>((resolve, reject) => {
      this.server.bindAsync(`${host}:${port}`, this.serverCredentials(), (error, bound) =>
        error ? reject(new StartupError(`cannot listen for peers on ${host}:${port} (is the port taken?): ${error.message}`, { cause: error })) : resolve(bound),
      );
    });
    return this.boundPort;
  }

  /** With TLS, only clients whose certificate the cluster CA signed get a connection. */
  private serverCredentials(): grpc.ServerCredentials {
    const tls = this.options.tls;
    if (tls === undefined) return grpc.ServerCredentials.createInsecure();
    return grpc.ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], true);
  }

  /** With TLS, peers are dialled with this node's certificate, and theirs is checked against the CA and the address. */
  private channelCredentials(): grpc.ChannelCredentials {
    const tls = this.options.tls;
    return tls === undefined ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(tls.ca, tls.key, tls.cert);
  }

  async close(graceMs: number): Promise<void> {
    this.noticesOut.endAll();
    for (const peer of this.clients.values()) peer.client.close();
    this.clients.clear();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  // ---- Receiving ---------------------------------------------------------------------

  handle<Req, Res>(kind: PeerMessageKind<Req, Res>, handler: CallHandler<Req, Res>): void {
    assert(peerKindNamed(kind.name) === kind, `peer message kind ${kind.name} is not the one registered under its name`);
    this.handlers.set(kind.name, async (sender, body) => {
      const reply = await handler(sender, decodeBody(kind.request, body));
      return { kind: kind.reply.type, body: encodeBody(kind.reply, reply) };
    });
  }

  /** Chunks of one stream are handled one at a time, in order; each handler's ack goes back. */
  handleTransfer(handler: TransferHandler): void {
    this.transferHandler = handler;
  }

  private serveCall(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>): void {
    const peer = call.getPeer();
    const envelope = this.decodeIncoming(call.request, peer);
    if (envelope === undefined) {
      this.counters.refused(peer, 'malformed');
      callback({ code: grpc.status.INVALID_ARGUMENT, details: 'malformed envelope' });
      return;
    }
    this.options.observer?.message('in', envelope.kind, call.request.length);
    this.counters.received(envelope.sender, call.request.length);
    const claim = callerClaim(call.metadata);
    if (claim === undefined || claim.sender !== envelope.sender || !sameBytes(claim.nonce, envelope.nonce)) {
      // The gate let the call in on its header; the envelope must be the one the header announced.
      // Counted as a bad signature: the header's signature does not cover this envelope.
      this.refuse({ peer: envelope.sender, kind: envelope.kind, address: peer }, 'bad_signature', 'envelope differs from its caller header');
      callback({ code: grpc.status.UNAUTHENTICATED, details: 'envelope differs from its caller header' });
      return;
    }
    this.answer(envelope, peer).then(
      (reply) => {
        this.options.observer?.message('out', 'Reply', reply.length);
        this.counters.sent(envelope.sender, reply.length);
        callback(null, reply);
      },
      (error: unknown) => {
        this.log.error({ err: error, address: peer }, 'peer call failed to answer');
        callback({ code: grpc.status.INTERNAL, details: 'internal error' });
      },
    );
  }

  private async answer(request: Envelope, peer: string): Promise<Buffer> {
    try {
      const sender = this.authenticate(request, peer);
      this.heardFrom(sender);
      const handler = this.handlers.get(request.kind);
      if (handler === undefined) {
        throw new BadPeerMessageError(`no handler for kind '${request.kind}' on ${this.name}`);
      }
      const reply = await handler(sender, request.body);
      return this.replyBytes(request, reply.kind, reply.body);
    } catch (error) {
      this.logHandlerError(error, request, peer);
      return this.replyBytes(request, ERROR_REPLY.type, encodeBody(ERROR_REPLY, toErrorReply(error)));
    }
  }

  /** An envelope too malformed to answer (no valid nonce to bind a reply to) is undefined. */
  private decodeIncoming(data: Buffer, peer: string): Envelope | undefined {
    try {
      const envelope = decodeEnvelope(data);
      if (envelope.nonce.length === NONCE_BYTES && envelope.signature.length === SIGNATURE_BYTES) return envelope;
      this.log.warn({ address: peer, reason: 'nonce or signature of the wrong length' }, 'peer message refused');
    } catch (error) {
      this.log.warn({ address: peer, reason: (error as Error).message }, 'peer message refused');
    }
    this.options.observer?.refused('malformed');
    return undefined;
  }

  /**
   * Checks timestamp, sender, signature and nonce, in that order; returns the sender or
   * throws (and logs) PEER_AUTH. Cheap checks first so that junk costs no verification, but
   * the nonce is remembered only once the signature holds, so forgeries cannot fill the guard.
   */
  private authenticate(envelope: Envelope, peer: string): string {
    const context = { peer: envelope.sender, kind: envelope.kind, sentAtMs: envelope.sentAtMs, address: peer };
    const now = this.clock();
    if (Math.abs(now - envelope.sentAtMs) > this.options.replayWindowMs) {
      throw this.refuse(context, 'stale', `timestamp ${envelope.sentAtMs} outside ±${this.options.replayWindowMs} ms of ${now}`);
    }
    const key = this.senderKey(envelope);
    // A kind of gate class `anyone` (Ping) answers only what a node shows anyone, and its
    // purpose is the signed reply: an operator adding a node proves the node holds the key
    // they were given.
    if (key === undefined && answersAnyone(envelope.kind)) return envelope.sender;
    if (key === undefined) throw this.refuse(context, 'unknown_sender', `unknown sender '${envelope.sender}'`);
    if (!verifyEnvelope(envelope, key, this.options.identity.publicKey)) {
      throw this.refuse(context, 'bad_signature', `bad signature (not by ${envelope.sender}'s key, altered, or not meant for ${this.name})`);
    }
    const verdict = this.replay.admit(envelope.nonce, envelope.sentAtMs, now);
    if (verdict === 'replayed') throw this.refuse(context, 'replay', 'nonce already seen: a replay');
    if (verdict === 'stale') throw this.refuse(context, 'stale', 'timestamp outside the replay window');
    if (verdict === 'full') {
      this.counters.refused(envelope.sender, 'busy');
      this.log.warn({ ...context, reason: 'replay guard full' }, 'peer message refused');
      this.options.observer?.refused('busy');
      throw new PeerBusyError(`${this.name} has ${this.replay.size} unexpired nonces; retry later`);
    }
    return envelope.sender;
  }

  private senderKey(envelope: Envelope): KeyObject | undefined {
    const directory = this.options.directory;
    const known = directory.publicKeyOf(envelope.sender);
    if (known !== undefined && (directory.acceptsRequestsFrom?.(envelope.sender, envelope.kind) ?? true)) return verifyingKeyOf(known);
    if (known !== undefined) return undefined;
    const acceptUnknown = this.options.acceptUnknown;
    if (acceptUnknown === undefined || envelope.kind !== acceptUnknown.kind) return undefined;
    const key = acceptUnknown.keyOf(envelope.sender, envelope.body);
    return key === undefined ? undefined : verifyingKeyOf(key);
  }

  private refuse(context: Record<string, unknown>, code: PeerRefusalReason, reason: string): PeerAuthError {
    this.counters.refused(String(context.peer), code);
    this.log.warn({ ...context, reason }, 'peer message refused');
    this.options.observer?.refused(code);
    return new PeerAuthError(`${this.name} refused ${String(context.kind)} from ${String(context.peer)}: ${reason}`);
  }

  private logHandlerError(error: unknown, request: Envelope, peer: string): void {
    if (error instanceof PeerAuthError || error instanceof PeerBusyError) return; // logged at refusal
    const context = { peer: request.sender, kind: request.kind, address: peer };
    if (error instanceof TributaryError && error.status < 500) this.log.debug({ ...context, code: error.code }, error.message);
    else this.log.error({ ...context, err: error }, 'peer request failed');
  }

  private replyBytes(request: Envelope, kind: string, body: Uint8Array): Buffer {
    return asBuffer(encodeEnvelope(this.seal(kind, body, undefined, request.nonce)));
  }

  // ---- Notice streams, receiving side -------------------------------------------------

  private serveNotify(call: grpc.ServerReadableStream<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>): void {
    // The gate admitted the stream on its caller header (a known sender): every notice must come from it.
    const sender = callerClaim(call.metadata)?.sender;
    if (sender === undefined) {
      callback({ code: grpc.status.UNAUTHENTICATED, details: 'no caller header' });
      return;
    }
    const peer = call.getPeer();
    this.noticesIn.serve(
      call,
      sender,
      (status) => (status === null ? callback(null, Buffer.alloc(0)) : callback(status)),
      (data) => this.receiveNotice(data, peer, sender),
      () => {
        this.counters.refused(sender, 'busy');
        this.options.observer?.refused('busy');
      },
    );
  }

  /** Checks and handles one notice; a refusal ends its stream with the status returned. */
  private async receiveNotice(data: Buffer, peer: string, streamSender: string): Promise<{ code: grpc.status; details: string } | undefined> {
    const envelope = this.decodeIncoming(data, peer);
    if (envelope === undefined) {
      this.counters.refused(peer, 'malformed');
      return { code: grpc.status.INVALID_ARGUMENT, details: 'malformed envelope' };
    }
    this.options.observer?.message('in', envelope.kind, data.length);
    this.counters.received(envelope.sender, data.length);
    try {
      const context = { peer: envelope.sender, kind: envelope.kind, address: peer };
      if (envelope.sender !== streamSender) throw this.refuse(context, 'bad_signature', `a notice from ${envelope.sender} on a stream of ${streamSender}`);
      if (!sentOneWay(envelope.kind)) throw new BadPeerMessageError(`'${envelope.kind}' is not sent one way`);
      const sender = this.authenticate(envelope, peer);
      this.heardFrom(sender);
      const handler = this.handlers.get(envelope.kind);
      if (handler === undefined) throw new BadPeerMessageError(`no handler for kind '${envelope.kind}' on ${this.name}`);
      await handler(sender, envelope.body);
      return undefined;
    } catch (error) {
      this.logHandlerError(error, envelope, peer);
      if (error instanceof PeerAuthError) return { code: grpc.status.UNAUTHENTICATED, details: error.message };
      if (error instanceof TributaryError && error.status < 500 && !(error instanceof PeerBusyError)) return { code: grpc.status.INVALID_ARGUMENT, details: error.message };
      // Busy, or the handler failed: this notice is lost, as a dropped heartbeat is.
      return undefined;
    }
  }

  // ---- Transfer streams, receiving side -----------------------------------------------

  /** A refused chunk ends the stream with an ErrorReply; the source resumes from its last ack. */
  private serveTransfer(call: grpc.ServerDuplexStream<Buffer, Buffer>): void {
    const peer = call.getPeer();
    // The gate admitted the stream on its caller header: every chunk must come from that caller.
    const stream: InboundStream = { sender: callerClaim(call.metadata)?.sender };
    serveTransferStream(call, (data) => this.receiveChunk(data, peer, stream), this.log);
  }

  /** The signed ack of one chunk, or the ErrorReply that ends the stream (last). */
  private async receiveChunk(data: Buffer, peer: string, stream: InboundStream): Promise<ChunkAnswer> {
    const envelope = this.decodeIncoming(data, peer);
    if (envelope === undefined) {
      this.counters.refused(peer, 'malformed');
      return undefined;
    }
    this.options.observer?.message('in', envelope.kind, data.length);
    this.counters.received(envelope.sender, data.length);
    try {
      if (envelope.kind !== TRANSFER_CHUNK.type) throw new BadPeerMessageError(`a transfer stream carries TransferChunk, not '${envelope.kind}'`);
      if (stream.sender !== undefined && envelope.sender !== stream.sender) {
        throw this.refuse({ peer: envelope.sender, kind: envelope.kind, address: peer }, 'bad_chunk', `chunk on a stream of ${stream.sender}`);
      }
      stream.sender = this.authenticate(envelope, peer);
      this.heardFrom(stream.sender);
      const handler = this.transferHandler;
      if (handler === undefined) throw new BadPeerMessageError(`${this.name} takes no transfers`);
      const ack = await handler(stream.sender, this.decodeChunk(envelope, peer));
      const bytes = this.replyBytes(envelope, TRANSFER_ACK.type, encodeBody(TRANSFER_ACK, ack));
      this.counters.sent(envelope.sender, bytes.length);
      return { bytes, last: false };
    } catch (error) {
      this.logHandlerError(error, envelope, peer);
      return { bytes: this.replyBytes(envelope, ERROR_REPLY.type, encodeBody(ERROR_REPLY, toErrorReply(error))), last: true };
    }
  }

  private decodeChunk(envelope: Envelope, peer: string): TransferChunk {
    try {
      return decodeBody(TRANSFER_CHUNK, envelope.body);
    } catch (error) {
      // A checksum mismatch under a valid signature: the sender read or encoded bad data.
      this.log.warn({ peer: envelope.sender, kind: envelope.kind, address: peer, reason: (error as Error).message }, 'peer chunk refused');
      this.options.observer?.refused('bad_chunk');
      this.counters.refused(envelope.sender, 'bad_chunk');
      throw error;
    }
  }

  // ---- Sending ------------------------------------------------------------------------

  async call<Req, Res>(to: string, kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Promise<Res> {
    return this.callEach([to], kind, body, options)[0]!;
  }

  callEach<Req, Res>(to: readonly string[], kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Array<Promise<Res>> {
    let bytes: Uint8Array;
    let content: Uint8Array;
    try {
      bytes = encodeBody(kind.request, body);
      content = contentDigest(kind.name, bytes, this.digest);
    } catch (error) {
      // A body that does not encode fails each call, as a call's own failure would: never a throw.
      return to.map(() => Promise.reject(error));
    }
    return to.map(async (node) => {
      const { key, target } = this.peer(node);
      const request = this.seal(kind.name, bytes, key.raw, NO_BYTES, content);
      const reply = await this.exchange(node, target, request, encodeEnvelope(request), options);
      return this.openAnswer(reply, request.nonce, { node, sender: node, key: key.object }, kind.reply);
    });
  }

  notify<Req>(to: string, kind: PeerMessageKind<Req, unknown>, body: Req, onError: (error: Error) => void): boolean {
    assert(kind.oneWay, () => `${kind.name} is not a one-way kind`);
    let peer: ReturnType<PeerTransport['peer']>;
    try {
      peer = this.peer(to);
    } catch (error) {
      onError(error as Error);
      return false;
    }
    const { key, target } = peer;
    const bytes = asBuffer(encodeEnvelope(this.seal(kind.name, encodeBody(kind.request, body), key.raw, NO_BYTES)));
    const open = (onEnd: (error: grpc.ServiceError | null) => void) =>
      this.client(target, to).makeClientStreamRequest<Buffer, Buffer>(peerMethodPath('Notify'), asBuffer, asBuffer, callerMetadata(this.signingKey, this.name, kind.name, this.clock()), {}, (error) => onEnd(error ?? null));
    const broken = (error: grpc.ServiceError) => {
      this.counters.error(to);
      onError(fromGrpcError(to, error));
    };
    const sent = this.noticesOut.send(to, `${target.address}:${target.port}`, bytes, open, broken);
    if (sent) {
      this.options.observer?.message('out', kind.name, bytes.length);
      this.counters.sent(to, bytes.length);
    }
    return sent;
  }

  /**
   * A call to a node that is not in the directory yet (the join handshake): the request is
   * meant for `expectedPublicKey`, and the reply must be signed by it.
   */
  async callUnknown<Req, Res>(target: PeerAddress, expectedPublicKey: string, kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Promise<Res> {
    const node = `${target.address}:${target.port}`;
    const request = this.seal(kind.name, encodeBody(kind.request, body), Buffer.from(expectedPublicKey, 'base64'), NO_BYTES);
    const reply = await this.exchange(node, target, request, encodeEnvelope(request), options);
    const expectation = { node, sender: undefined, key: verifyingKeyOf(expectedPublicKey) };
    return this.openAnswer(reply, request.nonce, expectation, kind.reply);
  }

  /** Sends envelope bytes as they are (tests: replays, forgeries); the reply is checked as call's. */
  async sendRawEnvelope(to: string, envelope: Uint8Array, options: CallOptions): Promise<unknown> {
    const { key, target } = this.peer(to);
    const request = decodeEnvelope(envelope);
    const replyType: PeerBodyType<unknown> = peerKindNamed(request.kind)?.reply ?? EMPTY;
    const reply = await this.exchange(to, target, request, envelope, options);
    return this.openAnswer(reply, request.nonce, { node: to, sender: to, key: key.object }, replyType);
  }

  /** A stream of transfer chunks to `to`; its acks (checked like replies) come to `handlers`. */
  openTransferStream(to: string, handlers: TransferStreamHandlers, options: CallOptions): TransferStream {
    const { key, target } = this.peer(to);
    const call = this.client(target, to).makeBidiStreamRequest<Buffer, Buffer>(
      peerMethodPath('Transfer'),
      asBuffer,
      asBuffer,
      callerMetadata(this.signingKey, this.name, TRANSFER_CHUNK.type, this.clock()),
      { deadline: Date.now() + options.deadlineMs },
    );
    return new TransferStream(call, handlers, {
      node: to,
      seal: (chunk) => {
        const sealed = this.sealChunk(chunk, key.raw);
        this.counters.sent(to, sealed.bytes.length);
        return sealed;
      },
      openAnswer: (data, nonce) => {
        this.counters.received(to, data.length);
        return this.openAnswer(data, nonce, { node: to, sender: to, key: key.object }, TRANSFER_ACK);
      },
    });
  }

  /** A signed envelope from this node; `recipient` on requests, `replyTo` on replies. */
  private seal(kind: string, body: Uint8Array, recipient: Uint8Array | undefined, replyTo: Uint8Array, content?: Uint8Array): Envelope {
    return sealEnvelope({
      signingKey: this.signingKey,
      sender: this.name,
      kind,
      body,
      sentAtMs: this.clock(),
      recipientPublicKey: recipient,
      replyTo,
      digest: this.digest,
      contentDigest: content,
    });
  }

  /** Signs the chunk's metadata and digest, and writes its bytes once (codec.ts). */
  private sealChunk(chunk: TransferChunk, recipient: Uint8Array): { nonce: Uint8Array; bytes: Uint8Array } {
    const body = transferChunkProto(chunk, this.digest);
    const meta = {
      sender: this.name, sentAtMs: this.clock(), nonce: randomBytes(NONCE_BYTES), kind: TRANSFER_CHUNK.type, replyTo: NO_BYTES,
      ...(namesDigest(this.digest) ? { digest: this.digest } : {}),
    };
    const signature = signBytes(this.signingKey, digestOf(meta, chunkContentDigest(body, this.digest), recipient));
    const bytes = encodeEnvelopeWithBody({ ...meta, signature }, TRANSFER_CHUNK.type, body);
    this.options.observer?.message('out', TRANSFER_CHUNK.type, bytes.length);
    return { nonce: meta.nonce, bytes };
  }

  private peer(to: string): { key: { raw: Buffer; object: KeyObject }; target: PeerAddress } {
    const publicKey = this.options.directory.publicKeyOf(to);
    const target = this.options.directory.addressOf(to);
    if (publicKey === undefined || target === undefined) throw new UnknownPeerError(to);
    return { key: { raw: Buffer.from(publicKey, 'base64'), object: verifyingKeyOf(publicKey) }, target };
  }

  /** One client (one HTTP/2 channel) per peer address, reused by every call and stream. */
  private client(target: PeerAddress, node: string): grpc.Client {
    const address = `${target.address}:${target.port}`;
    let peer = this.clients.get(address);
    if (peer !== undefined && this.dialStuck(peer)) {
      this.log.debug({ peer: node, address, dialMs: this.keepaliveTimeoutMs }, 'peer connection still dialling after the keepalive timeout: dialling afresh');
      peer.client.close();
      this.clients.delete(address);
      peer = undefined;
    }
    if (peer === undefined) {
      peer = { client: new grpc.Client(address, this.channelCredentials(), this.channelOptions), openedAtMs: performance.now(), connectingSinceMs: undefined };
      this.clients.set(address, peer);
      this.counters.channelOpened(node);
    }
    return peer.client;
  }

  /**
   * `sender` just called this node, so it is up and reachable. A channel to it that failed
   * while it was down (a restart) stays in TRANSIENT_FAILURE until gRPC's reconnect backoff
   * (up to max_reconnect_backoff_ms, wire.ts) ends, and every call on it fails at once
   * meanwhile ("No connection established"), although the failure detector, which hears
   * the sender's heartbeats, already takes it for available: a write to it is then
   * hinted, and reads sent to it miss that write until the hint is replayed (docs/cluster.md,
   * "Hints"). Such a channel is dropped, so the next call dials at once; at most once per
   * keepalive interval per peer, so a peer that calls in but cannot be dialled (a one-way
   * partition) costs a dial per interval, as the backoff would.
   */
  private heardFrom(sender: string): void {
    const target = this.options.directory.addressOf(sender);
    if (target === undefined) return;
    const address = `${target.address}:${target.port}`;
    const peer = this.clients.get(address);
    if (peer === undefined || performance.now() - peer.openedAtMs < this.keepaliveMs) return;
    if (peer.client.getChannel().getConnectivityState(false) !== grpc.connectivityState.TRANSIENT_FAILURE) return;
    this.log.debug({ peer: sender, address }, 'peer called in while its connection waits to redial: dialling afresh');
    peer.client.close();
    this.clients.delete(address);
  }

  /**
   * grpc-js gives a TCP connect no deadline of its own: a dial sent while packets to the peer
   * are dropped waits for the kernel's SYN retries (1, 3, 7, 15, 31 s…), so a peer back from a
   * partition stayed unreachable for up to half a minute, and every call meanwhile waited out
   * its deadline queued behind the dial. A channel dialling for longer than the keepalive
   * timeout is replaced: the new one dials at once (the old dial ends with the kernel's
   * retries). Not sooner: a loaded peer may take a few intervals to accept.
   */
  private dialStuck(peer: PeerClient): boolean {
    const state = peer.client.getChannel().getConnectivityState(false);
    if (state !== grpc.connectivityState.CONNECTING) {
      peer.connectingSinceMs = undefined;
      return false;
    }
    const now = performance.now();
    peer.connectingSinceMs ??= now;
    return now - peer.connectingSinceMs > this.keepaliveTimeoutMs;
  }

  /** Sends the request's bytes with a caller header announcing it (its sender, time, nonce and kind). */
  private exchange(node: string, target: PeerAddress, envelope: Envelope, request: Uint8Array, options: CallOptions): Promise<Buffer> {
    this.options.observer?.message('out', envelope.kind, request.length);
    this.counters.sent(node, request.length);
    return new Promise<Buffer>((resolve, reject) => {
      this.client(target, node).makeUnaryRequest<Buffer, Buffer>(
        peerMethodPath('Call'),
        asBuffer,
        asBuffer,
        asBuffer(request),
        callerMetadata(this.signingKey, envelope.sender, envelope.kind, envelope.sentAtMs, envelope.nonce),
        { deadline: Date.now() + options.deadlineMs },
        (error, reply) => {
          if (error || reply === undefined) {
            this.counters.error(node);
            reject(fromGrpcError(node, error as grpc.ServiceError));
            return;
          }
          this.options.observer?.message('in', 'Reply', reply.length);
          this.counters.received(node, reply.length);
          resolve(reply);
        },
      );
    });
  }

  /**
   * Checks a reply (or ack) and decodes it: it must answer `nonce`, come from the expected
   * sender and be signed by its key. An ErrorReply is rethrown as the remote error.
   */
  private openAnswer<T>(data: Buffer, nonce: Uint8Array, expect: AnswerExpectation, body: PeerBodyType<T>): T {
    const reply = decodeEnvelope(data);
    const problem = this.answerProblem(reply, nonce, expect);
    if (problem !== undefined) {
      this.log.warn({ peer: expect.node, sender: reply.sender, kind: reply.kind, reason: problem }, 'peer reply refused');
      this.options.observer?.refused('bad_reply');
      throw new PeerAuthError(`reply from ${expect.node} refused: ${problem}`);
    }
    if (reply.kind === ERROR_REPLY.type) throw remoteError(expect.node, decodeBody(ERROR_REPLY, reply.body));
    if (reply.kind !== body.type) throw new BadPeerMessageError(`${expect.node} answered ${reply.kind}, not ${body.type}`);
    return decodeBody(body, reply.body);
  }

  private answerProblem(reply: Envelope, nonce: Uint8Array, expect: AnswerExpectation): string | undefined {
    if (expect.sender !== undefined && reply.sender !== expect.sender) return `sent by '${reply.sender}'`;
    if (!sameBytes(reply.replyTo, nonce)) return 'answers another message';
    if (!verifyEnvelope(reply, expect.key, undefined)) return `bad signature (not by ${expect.node}'s key)`;
    return undefined;
  }
}

function remoteError(node: string, reply: ErrorReply): TributaryError {
  return new RemotePeerError(node, reply);
}
