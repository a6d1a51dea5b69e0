// The node's HTTP server with its connection limits, and its stop.

import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { StartupError } from '../lib/errors.js';
import type { TlsMaterial } from '../config/tls.js';

export interface HttpLimits {
  connectionsMax: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/**
 * The HTTP server with its connection limits: at most connectionsMax open connections (more are
 * closed as they arrive), a connection that sends no complete request head within
 * headersTimeoutMs is closed (Node 20 leaves a silent one open for good), and a request must be
 * received whole within requestTimeoutMs (408). Node checks those two every
 * connectionsCheckingInterval, 30 s unless told: once a second here.
 */
export async function listen(handler: Parameters<typeof createServer>[1], host: string, port: number, limits: HttpLimits, tls: TlsMaterial | undefined): Promise<Server> {
  // With TLS the port speaks HTTPS only: a plaintext request fails the handshake.
  const server: Server =
    tls === undefined
      ? createServer({ connectionsCheckingInterval: 1_000 }, handler)
      : createHttpsServer({ connectionsCheckingInterval: 1_000, handshakeTimeout: limits.headersTimeoutMs, cert: tls.cert, key: tls.key, ca: tls.ca }, handler);
  server.maxConnections = limits.connectionsMax;
  // Keep idle connections for 30 s (Node's 5 s races clients that pause between requests:
  // they reuse a socket the server is closing).
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.on(tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => socket.setTimeout(limits.headersTimeoutMs, () => socket.destroy()));
  // Once a request arrives its timeouts are Node's (and SSE sets none); keep-alive sets its own.
  server.on('request', (request) => request.socket.setTimeout(0));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new StartupError(`cannot listen for HTTP on ${host}:${port}: ${error.message}`, { cause: error })));
    server.listen(port, host, () => resolve());
  });
  return server;
}

export function closeHttp(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
