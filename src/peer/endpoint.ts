// The peer port as the parts above it use it: calls to a named node, handlers for what other
// nodes call, and streams of transfer chunks. PeerTransport is the one over gRPC with signed
// envelopes; the simulation (test/sim) has its own over a virtual network, so the same cluster
// code runs in both.

import type { TransferAck, TransferChunk } from './codec.js';
import type { PeerMessageKind } from './kinds.js';
import type { TransferStreamHandlers } from './transfer-stream.js';

export interface CallOptions {
  /** Relative to now; the call fails with PeerUnavailableError when it passes. */
  deadlineMs: number;
}

export type CallHandler<Req, Res> = (sender: string, body: Req) => Promise<Res>;
export type TransferHandler = (sender: string, chunk: TransferChunk) => Promise<TransferAck>;

/** The sending end of a transfer stream: chunks out, acks back through its handlers. */
export interface TransferSender {
  /** False when the stream is closing and the chunk was not sent. */
  send(chunk: TransferChunk): boolean;
  cancel(): void;
}

export interface PeerEndpoint {
  /** This node's name. */
  readonly name: string;
  call<Req, Res>(to: string, kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Promise<Res>;
  /**
   * The same call to each of `to`, answered one by one: the body is encoded and digested
   * once for all (a replicated write sends the same records to every owner), each envelope
   * still signed for its own recipient.
   */
  callEach<Req, Res>(to: readonly string[], kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Array<Promise<Res>>;
  /**
   * Sends a message of a one-way kind (kinds.ts `oneWay`) with no reply, on a long-lived
   * stream to `to`: false when it was dropped (the stream is backed up). A stream that
   * breaks or is refused reports its error to `onError` once; the next notice opens another.
   */
  notify<Req>(to: string, kind: PeerMessageKind<Req, unknown>, body: Req, onError: (error: Error) => void): boolean;
  /** Answers calls of `kind`; the kind's codec has checked the body (kinds.ts). */
  handle<Req, Res>(kind: PeerMessageKind<Req, Res>, handler: CallHandler<Req, Res>): void;
  handleTransfer(handler: TransferHandler): void;
  openTransferStream(to: string, handlers: TransferStreamHandlers, options: CallOptions): TransferSender;
}
