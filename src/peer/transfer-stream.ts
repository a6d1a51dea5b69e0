// The sending side of a Transfer stream: signed chunks out, signed acks back in order. Each
// ack must answer the oldest chunk not yet acked (its reply_to is that chunk's nonce), come
// from the target and be signed by the target's key; anything else breaks the stream.

import type * as grpc from '@grpc/grpc-js';
import { TributaryError } from '../lib/errors.js';
import { decodeEnvelope, type TransferAck, type TransferChunk } from './codec.js';
import { BadPeerMessageError } from './errors.js';
import { RemotePeerError, asBuffer, fromGrpcError } from './wire.js';

export interface TransferStreamHandlers {
  onAck(ack: TransferAck): void;
  /** Called once: undefined when the stream ended cleanly, else why it broke. */
  onClose(error: TributaryError | undefined): void;
}

export interface TransferStreamWiring {
  /** The target's name, for errors. */
  node: string;
  /** The chunk as a signed envelope, and that envelope's nonce (its ack answers it). */
  seal(chunk: TransferChunk): { nonce: Uint8Array; bytes: Uint8Array };
  /** Checks and decodes an ack of the chunk whose nonce is given (throws the remote error). */
  openAnswer(data: Buffer, nonce: Uint8Array): TransferAck;
}

export class TransferStream {
  /** Nonces of the chunks sent and not yet acked, oldest first. */
  private readonly awaiting: Uint8Array[] = [];
  private failure: TributaryError | undefined;
  private closed = false;

  constructor(
    private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>,
    private readonly handlers: TransferStreamHandlers,
    private readonly wiring: TransferStreamWiring,
  ) {
    call.on('data', (data: Buffer) => this.receive(data));
    call.on('error', (error: grpc.ServiceError) => this.finish(this.failure ?? fromGrpcError(wiring.node, error)));
    call.on('end', () => this.finish(this.failure));
  }

  /** Chunks sent and not acked yet: the source keeps this under its window. */
  get unacked(): number {
    return this.awaiting.length;
  }

  /** false: the stream is closed, or gRPC asks to wait for 'drain' (the window bounds this). */
  send(chunk: TransferChunk): boolean {
    const sealed = this.wiring.seal(chunk);
    return this.write(sealed.nonce, sealed.bytes);
  }

  /** Sends envelope bytes as they are (tests: tampered chunks). */
  sendRawEnvelope(envelope: Uint8Array): boolean {
    return this.write(decodeEnvelope(envelope).nonce, envelope);
  }

  /** No more chunks: the target acks what it has and ends the stream (onClose(undefined)). */
  close(): void {
    if (!this.closed) this.call.end();
  }

  cancel(): void {
    this.call.cancel();
  }

  private write(nonce: Uint8Array, bytes: Uint8Array): boolean {
    if (this.closed || this.failure !== undefined) return false;
    this.awaiting.push(nonce);
    return this.call.write(asBuffer(bytes));
  }

  private receive(data: Buffer): void {
    if (this.failure !== undefined) return;
    let ack: TransferAck;
    try {
      const nonce = this.awaiting.shift();
      if (nonce === undefined) throw new BadPeerMessageError(`${this.wiring.node} sent an ack with no chunk awaiting one`);
      ack = this.wiring.openAnswer(data, nonce);
    } catch (error) {
      this.failure = error instanceof TributaryError ? error : new BadPeerMessageError(String(error), { cause: error });
      // After an ErrorReply the target ends the stream itself; any other bad ack, we end it.
      if (!(error instanceof RemotePeerError)) this.call.cancel();
      return;
    }
    this.handlers.onAck(ack);
  }

  private finish(error: TributaryError | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.handlers.onClose(error);
  }
}
