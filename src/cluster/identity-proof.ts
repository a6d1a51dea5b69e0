// Why the identity proof of POST /cluster/nodes failed, in words an administrator can act on
// (docs/security.md, "Membership authority"). The route needs the membership authority (the
// admin secret, or `admin` on `system`; open on a loopback node without a secret), so its
// caller owns the hosts it names: the answer names the cause, as soon as it is known,
// instead of one answer after the peer deadline for every failure. Pure: an error of the
// peer transport in, a cause and a sentence out.

import { PeerAuthError, BadPeerMessageError } from '../peer/errors.js';

export type IdentityProofCause = 'connection refused' | 'not a Tributary peer port' | 'another key' | 'timed out' | 'address not found' | 'refused the call' | 'unreachable';

export interface IdentityProofFailure {
  cause: IdentityProofCause;
  /** The 400's message: what happened at the address, and what to check. */
  message: string;
}

export interface ProofAttempt {
  name: string;
  publicKey: string;
  /** `address:port` as given. */
  where: string;
  deadlineMs: number;
}

/** gRPC's status code and details of the failed call, when the transport kept them as the cause. */
function grpcFailure(error: unknown): { code: number | undefined; details: string } {
  const cause = (error as { cause?: { code?: unknown; details?: unknown } } | null)?.cause;
  const code = typeof cause?.code === 'number' ? cause.code : undefined;
  const details = typeof cause?.details === 'string' ? cause.details : error instanceof Error ? error.message : String(error);
  return { code, details };
}

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNIMPLEMENTED = 12;

/** What a gRPC failure says about the address: nothing there, something else there, or no answer. */
function causeOf(error: unknown): IdentityProofCause {
  if (error instanceof PeerAuthError) return /^reply from .* refused: bad signature/.test(error.message) ? 'another key' : 'refused the call';
  if (error instanceof BadPeerMessageError) return 'not a Tributary peer port';
  const { code, details } = grpcFailure(error);
  if (/ECONNREFUSED/.test(details)) return 'connection refused';
  if (/ENOTFOUND|EAI_AGAIN|Name resolution failed|DNS resolution failed/i.test(details)) return 'address not found';
  if (code === GRPC_UNIMPLEMENTED || /Protocol error|Received HTTP status code|Received RST_STREAM|Unexpected HTTP|unexpected content-type|Response message parsing error/i.test(details)) {
    return 'not a Tributary peer port';
  }
  if (code === GRPC_DEADLINE_EXCEEDED || /Deadline exceeded/i.test(details)) return 'timed out';
  return 'unreachable';
}

/** The cause of a failed identity proof, and the sentence the administrator gets. */
export function identityProofFailure(error: unknown, attempt: ProofAttempt): IdentityProofFailure {
  const { where, publicKey, name, deadlineMs } = attempt;
  const cause = causeOf(error);
  const messages: Record<IdentityProofCause, string> = {
    'connection refused': `connection refused at ${where}: nothing listens there; start node '${name}' with --join, or give its peer port (\`port\` of its GET /cluster/localNode)`,
    'not a Tributary peer port': `${where} is not a Tributary peer port: something else answers there (an HTTP port?); give the peer port of node '${name}' (\`port\` of its GET /cluster/localNode)`,
    'another key': `the node at ${where} answered with another key than ${publicKey}: it is not node '${name}', or that is not its key (\`publicKey\` of its GET /cluster/localNode)`,
    'timed out': `no answer from ${where} within ${deadlineMs} ms: a firewall, a paused process, or a service that accepts connections and says nothing`,
    'address not found': `the address of ${where} does not resolve`,
    'refused the call': `the node at ${where} refused the call: ${grpcFailure(error).details}`,
    unreachable: `${where} could not be reached: ${grpcFailure(error).details}`,
  };
  return { cause, message: messages[cause] };
}
