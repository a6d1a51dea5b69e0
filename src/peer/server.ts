// The gRPC peer port.

import * as grpc from '@grpc/grpc-js';
import type { NodeTable } from '../cluster/node-table.js';
import { loadPeerService } from './proto.js';

export interface PeerServer {
  port: number;
  close(graceMs: number): Promise<void>;
}

export async function startPeerServer(host: string, port: number, nodes: NodeTable): Promise<PeerServer> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': 8 * 1024 * 1024 });
  const Peer = loadPeerService();
  server.addService(Peer.service, {
    ping(_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) {
      const local = nodes.local();
      callback(null, { name: local.name, publicKey: local.publicKey, state: local.state });
    },
  });
  const boundPort = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(new Error(`cannot listen for peers on ${host}:${port}: ${error.message}`)) : resolve(bound),
    );
  });
  return {
    port: boundPort,
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
