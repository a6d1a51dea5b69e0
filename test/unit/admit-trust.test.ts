// Whom a node with no table takes an Admit from: the token's keys, anyone on
// loopback with bare --join, and no one beyond loopback without a token, which only a node
// that lost its table reaches, since config refuses bare --join there.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { admitTrust } from '../../src/cluster/admit-trust.js';
import { makeJoinToken } from '../../src/cluster/join-token.js';

const silent = pino({ level: 'silent' });
const KEY = Buffer.alloc(32, 7).toString('base64');

describe('admit trust - whom a node without a table takes an Admit from', () => {
  it('trusts the first Admit on loopback without a token', () => {
    expect(admitTrust({ join: true, joinToken: null, host: '127.0.0.1' }, () => true, silent).trustedKeys).toBeUndefined();
  });

  it("trusts only the token's keys when given one", () => {
    const trust = admitTrust({ join: true, joinToken: makeJoinToken([KEY]), host: '10.0.0.5' }, () => true, silent);
    expect([...trust.trustedKeys!]).toEqual([KEY]);
  });

  it('trusts no one beyond loopback without a token', () => {
    const trust = admitTrust({ join: true, joinToken: null, host: '10.0.0.5' }, () => true, silent);
    expect(trust.trustedKeys?.size).toBe(0);
  });
});
