// The peer layer's errors. A remote node's TributaryError travels back as an ErrorReply and
// is rethrown here with the same status, code and message (transport.ts).

import { TributaryError, type ErrorOptions } from '../lib/errors.js';

/** A message (or reply) refused: unknown sender, bad signature, stale timestamp or replay. */
export class PeerAuthError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(401, 'PEER_AUTH', message, options);
  }
}

/** The peer could not be reached in time: network error, refused connection, deadline. */
export class PeerUnavailableError extends TributaryError {
  readonly node: string;

  constructor(node: string, message: string, options?: ErrorOptions) {
    super(503, 'PEER_UNAVAILABLE', message, options);
    this.node = node;
  }
}

/** The node named as a destination is not in the node table (or has no address). */
export class UnknownPeerError extends TributaryError {
  constructor(node: string) {
    super(404, 'PEER_UNKNOWN', `node '${node}' is not in the node table`);
  }
}

/** A message that does not decode, or whose content breaks the protocol. */
export class BadPeerMessageError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(400, 'BAD_PEER_MESSAGE', message, options);
  }
}

/** A transfer chunk whose bytes do not match its digest. */
export class ChunkChecksumError extends TributaryError {
  constructor(message: string) {
    super(400, 'CHUNK_CHECKSUM', message);
  }
}

/** The replay guard is full of unexpired nonces: refuse rather than forget one. */
export class PeerBusyError extends TributaryError {
  constructor(message: string) {
    super(503, 'PEER_BUSY', message);
  }
}
