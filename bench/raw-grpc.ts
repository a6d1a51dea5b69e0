// gRPC methods that move raw bytes, no protobuf: the benches' raw lines and floors. Nothing
// here is used by the product.

import type * as grpc from '@grpc/grpc-js';

export const passBytes = (bytes: Buffer): Buffer => bytes;

/** A method at `path` whose messages are the bytes as given: unary, or a bidi stream. */
export function rawBytesMethod(path: string, stream: boolean): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path,
    requestStream: stream,
    responseStream: stream,
    requestSerialize: passBytes,
    requestDeserialize: passBytes,
    responseSerialize: passBytes,
    responseDeserialize: passBytes,
  };
}
