// The causes POST /cluster/nodes names when a node's identity cannot be proved
// (src/cluster/identity-proof.ts), from errors shaped as the peer transport throws them for
// each case (the details are what @grpc/grpc-js reported in a run against real ports).

import { describe, expect, it } from 'vitest';
import { identityProofFailure } from '../../src/cluster/identity-proof.js';
import { BadPeerMessageError, PeerAuthError, PeerUnavailableError } from '../../src/peer/errors.js';

const attempt = { name: 'node-2', publicKey: 'KEY=', where: '10.0.0.2:8891', deadlineMs: 5_000 };
const unavailable = (code: number, details: string) => new PeerUnavailableError(attempt.where, `${attempt.where} unreachable: ${details}`, { cause: Object.assign(new Error(details), { code, details }) });

describe('identity proof - the cause of a failed POST /cluster/nodes', () => {
  it('names each cause with what to check', () => {
    const cases: Array<[Error, string, RegExp]> = [
      [unavailable(14, 'No connection established. Last error: Error: connect ECONNREFUSED 10.0.0.2:8891. Resolution note: '), 'connection refused', /^connection refused at 10\.0\.0\.2:8891: nothing listens there/],
      [unavailable(14, 'No connection established. Last error: Protocol error (2026-11-27T11:32:37.281Z). Resolution note: '), 'not a Tributary peer port', /^10\.0\.0\.2:8891 is not a Tributary peer port/],
      [unavailable(12, 'The server does not implement the method /tributary.Peer/Call'), 'not a Tributary peer port', /not a Tributary peer port/],
      [new BadPeerMessageError('envelope does not decode'), 'not a Tributary peer port', /not a Tributary peer port/],
      [new PeerAuthError("reply from 10.0.0.2:8891 refused: bad signature (not by 10.0.0.2:8891's key)"), 'another key', /^the node at 10\.0\.0\.2:8891 answered with another key than KEY=/],
      [unavailable(4, 'Deadline exceeded after 5.000s,name resolution: 0.001s,Waiting for LB pick'), 'timed out', /^no answer from 10\.0\.0\.2:8891 within 5000 ms/],
      [unavailable(14, 'Name resolution failed for target dns:nowhere.invalid:8891'), 'address not found', /does not resolve/],
      [new PeerAuthError('10.0.0.2:8891 refused the call: stale caller header'), 'refused the call', /refused the call: stale caller header$/],
      [unavailable(14, 'Connection dropped'), 'unreachable', /could not be reached: Connection dropped$/],
    ];
    for (const [error, cause, message] of cases) {
      const failure = identityProofFailure(error, attempt);
      expect(failure.cause, String(error.message)).toBe(cause);
      expect(failure.message).toMatch(message);
    }
  });
});
