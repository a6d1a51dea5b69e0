// Loads proto/peer.proto once, two ways: protobufjs types encode and decode envelope bodies
// (codec.ts), and proto-loader gives the gRPC service definition (method paths, streaming).
// gRPC itself moves raw bytes: the transport decodes envelopes with the protobufjs types so
// that a signature is checked against exactly the bytes that were signed.


import { join } from 'node:path';
import { packageRoot } from '../lib/package-root.js';
import type * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

export const PEER_PACKAGE = 'tributary.peer';
const SERVICE = `${PEER_PACKAGE}.Peer`;

let root: protobuf.Root | undefined;
let service: grpc.ServiceDefinition | undefined;

export function peerProtoPath(): string {
  return join(packageRoot(), 'proto', 'peer.proto');
}

/** The protobufjs types of proto/peer.proto. */
export function peerRoot(): protobuf.Root {
  root ??= protobuf.loadSync(peerProtoPath());
  return root;
}

const types = new Map<string, protobuf.Type>();

/** A message type of proto/peer.proto; looked up once (a lookup splits and walks the path). */
export function peerType(name: string): protobuf.Type {
  let type = types.get(name);
  if (type === undefined) {
    type = peerRoot().lookupType(`${PEER_PACKAGE}.${name}`);
    types.set(name, type);
  }
  return type;
}

/** An enum of proto/peer.proto. */
export function peerEnum(name: string): protobuf.Enum {
  return peerRoot().lookupEnum(`${PEER_PACKAGE}.${name}`);
}

/**
 * The Peer service with byte-passing (de)serialisers: handlers and clients see the raw
 * envelope bytes.
 */
export function peerServiceDefinition(): grpc.ServiceDefinition {
  if (service !== undefined) return service;
  const definition = protoLoader.loadSync(peerProtoPath(), { keepCase: false, longs: Number, defaults: true });
  const loaded = definition[SERVICE] as protoLoader.ServiceDefinition | undefined;
  if (loaded === undefined) throw new Error(`${SERVICE} missing from ${peerProtoPath()}`);
  const raw: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, method] of Object.entries(loaded)) {
    raw[name] = {
      ...method,
      requestSerialize: passBytes,
      requestDeserialize: passBytes,
      responseSerialize: passBytes,
      responseDeserialize: passBytes,
    };
  }
  service = raw;
  return service;
}

export function peerMethodPath(method: 'Call' | 'Transfer' | 'Notify'): string {
  const definition = peerServiceDefinition()[method];
  if (definition === undefined) throw new Error(`${SERVICE}.${method} missing from ${peerProtoPath()}`);
  return definition.path;
}

function passBytes(value: Buffer): Buffer {
  return value;
}
