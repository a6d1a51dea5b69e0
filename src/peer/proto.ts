// Loads proto/peer.proto once; both the server and (later) the client are built from it.

import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { defaultConfigPath } from '../config.js';

export function loadPeerService(): grpc.ServiceClientConstructor {
  const root = dirname(dirname(defaultConfigPath()));
  const definition = protoLoader.loadSync(join(root, 'proto', 'peer.proto'), {
    keepCase: false,
    longs: String,
    defaults: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    tributary: { peer: { Peer: grpc.ServiceClientConstructor } };
  };
  return loaded.tributary.peer.Peer;
}
