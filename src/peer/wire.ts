// Small helpers shared by the transport and its transfer streams: gRPC errors to
// TributaryErrors and back, error replies, byte comparisons.

import * as grpc from '@grpc/grpc-js';
import { assert } from '../lib/assert.js';
import { TributaryError } from '../lib/errors.js';
import { BadPeerMessageError, PeerAuthError, PeerBusyError, PeerUnavailableError } from './errors.js';
import type { ErrorReply } from './codec.js';

/** Max bytes of one gRPC message, both ways (a transfer chunk plus its envelope fits). */
export const MESSAGE_BYTES_MAX = 16 * 1024 * 1024;

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': MESSAGE_BYTES_MAX,
  'grpc.max_send_message_length': MESSAGE_BYTES_MAX,
  // grpc-js backs off up to 120 s between reconnects by default, and a call without
  // waitForReady fails at once meanwhile: a peer that came back would stay "unreachable"
  // for minutes. Heartbeats need to see it again within seconds.
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2_000,
};

/** How often a quiet connection is pinged when the transport is given no keepalive interval. */
export const KEEPALIVE_MS_DEFAULT = 1_000;

/**
 * Keepalive pings on every peer connection, both ways (docs/cluster.md, "Transfers"). Packets
 * that are silently dropped (a partition, a cable pulled, a firewall) leave a TCP connection
 * looking open: without pings a long-lived transfer stream, and every call queued behind it
 * on the same HTTP/2 connection, waits until TCP's own retransmissions give up (minutes).
 * A ping every `keepaliveMs`, unanswered within `timeoutMs`, closes the connection: its calls
 * and streams fail and the next call dials again. The node passes its heartbeat interval and
 * its failure timeout: a peer that answers no ping for that long is one the failure detector
 * calls unavailable too, and a timeout of one interval dropped healthy connections (failing
 * every call on them) whenever a loaded peer's event loop stalled for an interval.
 */
export function keepaliveOptions(keepaliveMs: number, timeoutMs: number): grpc.ChannelOptions {
  assert(timeoutMs >= keepaliveMs, `a keepalive timeout of ${timeoutMs} ms below its interval of ${keepaliveMs} ms`);
  return {
    'grpc.keepalive_time_ms': keepaliveMs,
    'grpc.keepalive_timeout_ms': timeoutMs,
    'grpc.keepalive_permit_without_calls': 1,
  };
}

/** The remote node's own TributaryError, rethrown by the caller with the same fields. */
export class RemotePeerError extends TributaryError {
  readonly node: string;

  constructor(node: string, reply: ErrorReply) {
    super(reply.status, reply.code, reply.message, { details: reply.details });
    this.node = node;
  }
}

export function toErrorReply(error: unknown): ErrorReply {
  if (error instanceof TributaryError) {
    return { status: error.status, code: error.code, message: error.message, details: error.details };
  }
  // Never the message of an unexpected error: it may carry internals; the log has it.
  return { status: 500, code: 'INTERNAL', message: 'internal error', details: undefined };
}

/** A gRPC failure of a call to `node`, as the error the caller sees. */
export function fromGrpcError(node: string, error: grpc.ServiceError): TributaryError {
  switch (error.code) {
    case grpc.status.INVALID_ARGUMENT:
      return new BadPeerMessageError(`${node} refused the message: ${error.details}`, { cause: error });
    case grpc.status.RESOURCE_EXHAUSTED:
      if (error.details.startsWith('busy')) return new PeerBusyError(`${node} is busy: ${error.details}`);
      return new TributaryError(413, 'PEER_MESSAGE_TOO_LARGE', `message to ${node} too large: ${error.details}`, { cause: error });
    case grpc.status.UNAUTHENTICATED:
      return new PeerAuthError(`${node} refused the call: ${error.details}`, { cause: error });
    default:
      return new PeerUnavailableError(node, `${node} unreachable: ${error.details || grpc.status[error.code]}`, { cause: error });
  }
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/** A protobufjs encoding as a Buffer without copying (gRPC wants Buffers). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
}
