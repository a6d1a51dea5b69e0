// Notice streams: messages of one-way kinds (kinds.ts `oneWay`: the cluster core's
// heartbeats) on one long-lived client stream per peer (proto/peer.proto `Notify`), instead
// of one unary call each. Each message is still a sealed envelope, checked on arrival like a
// call's (signature, recipient, nonce, sender, kind); what goes is the per-call cost: the
// HTTP/2 stream, the signed caller header, and the signed reply. A heartbeat cost ~1.3 ms of
// CPU for both ends as a call and ~0.3 ms as a notice; heartbeats to every member every
// second were what saturated a 2-core machine at ~24 nodes (docs/cluster.md, "Sizes").
//
// Notices may be dropped, as heartbeats may: a stream whose peer reads slower than it is
// written (a paused process) stops taking notices until it drains, and the failure
// detector sees the silence. A broken or refused stream reports its error once; the next
// notice opens another.

import * as grpc from '@grpc/grpc-js';
import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';

/** Notices of one stream waiting, to be sent or to be handled: more are dropped. */
export const NOTICES_QUEUED_MAX = 64;

interface Outbound {
  call: grpc.ClientWritableStream<Buffer>;
  /** The peer's address when the stream opened: a peer that moved gets a new stream. */
  address: string;
}

/** The sending side: one stream per peer, opened on the first notice to it. */
export class OutboundNotices {
  private readonly streams = new Map<string, Outbound>();

  /**
   * Writes `bytes` to `to`'s stream, opening it with `open` when there is none (or the
   * peer's address changed); false when the stream is backed up and the notice dropped.
   */
  send(to: string, address: string, bytes: Buffer, open: (onEnd: (error: grpc.ServiceError | null) => void) => grpc.ClientWritableStream<Buffer>, onError: (error: grpc.ServiceError) => void): boolean {
    let stream = this.streams.get(to);
    if (stream !== undefined && stream.address !== address) {
      this.end(to);
      stream = undefined;
    }
    if (stream === undefined) {
      const opened: Outbound = {
        address,
        call: open((error) => {
          if (this.streams.get(to) === opened) this.streams.delete(to);
          if (error !== null) onError(error);
        }),
      };
      this.streams.set(to, opened);
      stream = opened;
    }
    // Notices not yet on the wire (still connecting, or the peer reads slowly): bounded.
    if (stream.call.writableLength >= NOTICES_QUEUED_MAX) return false;
    stream.call.write(bytes);
    return true;
  }

  /** Ends the stream to `to`, if any (its peer moved, or this node stops). */
  end(to: string): void {
    const stream = this.streams.get(to);
    if (stream === undefined) return;
    this.streams.delete(to);
    stream.call.end();
  }

  endAll(): void {
    for (const to of [...this.streams.keys()]) this.end(to);
  }

}

/** Ends an inbound stream: null for a clean end, or the status that refuses it. */
type Finish = (status: { code: grpc.status; details: string } | null) => void;

/**
 * The receiving side: one stream per sender (a newer one replaces the older, so a member
 * holds at most one), each notice handled in order, at most NOTICES_QUEUED_MAX waiting.
 * `receive` checks and handles one notice; the status it returns refuses the stream.
 */
export class InboundNotices {
  private readonly streams = new Map<string, Finish>();

  constructor(private readonly log: Logger) {}

  serve(call: grpc.ServerReadableStream<Buffer, Buffer>, sender: string, finish: Finish, receive: (data: Buffer) => Promise<{ code: grpc.status; details: string } | undefined>, dropped: () => void): void {
    let ended = false;
    const end: Finish = (status) => {
      if (ended) return;
      ended = true;
      if (this.streams.get(sender) === end) this.streams.delete(sender);
      finish(status);
    };
    this.streams.get(sender)?.({ code: grpc.status.CANCELLED, details: `replaced by a newer notice stream from ${sender}` });
    this.streams.set(sender, end);
    let queued = 0;
    let chain: Promise<void> = Promise.resolve();
    call.on('data', (data: Buffer) => {
      if (ended) return;
      if (queued >= NOTICES_QUEUED_MAX) {
        dropped();
        return;
      }
      queued += 1;
      chain = chain.then(async () => {
        try {
          if (ended) return;
          const refusal = await receive(data);
          if (refusal !== undefined) end(refusal);
        } catch (error) {
          this.log.error({ err: error, peer: sender }, 'notice failed');
        } finally {
          queued -= 1;
          assert(queued >= 0, () => `notice queue of ${sender} below zero`);
        }
      });
    });
    call.on('end', () => void chain.then(() => end(null)));
    call.on('error', () => end(null));
    call.on('cancelled', () => end(null));
  }

}
