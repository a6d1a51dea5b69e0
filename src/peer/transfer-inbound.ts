// The receiving side of one Transfer stream: chunks are checked and handled one at a time,
// in arrival order, so acks go back in order. Chunks that arrive meanwhile wait in a
// bounded queue; the stream is paused only when the queue is full. (Pausing after every
// chunk stops gRPC reading, and so HTTP/2 window updates: the sender then idles for a round
// trip per 64 KiB, which cut loopback throughput by a third.)

import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../lib/log.js';

/** Chunks waiting for the handler; the source's window (≤ 64 chunks) stays below it. */
export const TRANSFER_QUEUE_CHUNKS_MAX = 64;
export const TRANSFER_QUEUE_BYTES_MAX = 64 * 1024 * 1024;

/** An ack (or, with `last`, the ErrorReply that ends the stream); undefined: malformed. */
export type ChunkAnswer = { bytes: Buffer; last: boolean } | undefined;

export function serveTransferStream(
  call: grpc.ServerDuplexStream<Buffer, Buffer>,
  receive: (data: Buffer) => Promise<ChunkAnswer>,
  log: Logger,
): void {
  const peer = call.getPeer();
  const queue: Buffer[] = [];
  const state = { queuedBytes: 0, busy: false, inputEnded: false, ended: false };

  const end = (status?: { code: grpc.status; details: string }): void => {
    if (state.ended) return;
    state.ended = true;
    queue.length = 0;
    // grpc-js turns an 'error' on a server stream into that status and ends the call.
    if (status === undefined) call.end();
    else call.emit('error', status);
  };

  const drain = async (): Promise<void> => {
    state.busy = true;
    while (queue.length > 0 && !state.ended) {
      const data = queue.shift() as Buffer;
      state.queuedBytes -= data.length;
      if (call.isPaused() && queue.length < TRANSFER_QUEUE_CHUNKS_MAX / 2) call.resume();
      const answer = await receive(data);
      if (answer === undefined) return end({ code: grpc.status.INVALID_ARGUMENT, details: 'malformed envelope' });
      call.write(answer.bytes);
      if (answer.last) return end();
    }
    state.busy = false;
    if (state.inputEnded) end();
  };

  call.on('error', (error) => log.debug({ address: peer, err: error }, 'transfer stream error'));
  call.on('end', () => {
    state.inputEnded = true;
    if (!state.busy) end();
  });
  call.on('data', (data: Buffer) => {
    if (state.ended) return;
    queue.push(data);
    state.queuedBytes += data.length;
    if (queue.length >= TRANSFER_QUEUE_CHUNKS_MAX || state.queuedBytes >= TRANSFER_QUEUE_BYTES_MAX) call.pause();
    if (state.busy) return;
    drain().catch((error: unknown) => {
      log.error({ address: peer, err: error }, 'transfer chunk failed to answer');
      end({ code: grpc.status.INTERNAL, details: 'internal error' });
    });
  });
}
