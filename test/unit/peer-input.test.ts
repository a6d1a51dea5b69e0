// Peer input checks: every table and core message a peer sends is checked at the boundary, so a
// malformed or contradicting one is refused with a reason instead of tripping an assertion
// inside the core (which would end the process).

import { describe, expect, it } from 'vitest';
import { ClusterCore } from '../../src/cluster-core/core.js';
import { withAddedMember, withJoiningMember } from '../../src/cluster-core/membership.js';
import type { Member, Membership, NodeState, PeerMessage } from '../../src/protocol/cluster-types.js';
import { JoinTokenError, makeJoinToken, parseJoinToken } from '../../src/cluster/join-token.js';
import { membershipProblem, peerMessageProblem, tableProblem, TABLE_MEMBERS_MAX } from '../../src/cluster/peer-input.js';

const keyOf = (name: string): string => Buffer.alloc(32, name.charCodeAt(0)).toString('base64');

function member(name: string, state: NodeState = 'Joined'): Member {
  return { name, publicKey: keyOf(name), address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state };
}

const stable: Membership = { epoch: 3, members: [member('a'), member('b')], change: undefined };
const slots = [{ partition: 0, replicas: 2 }, { partition: 1, replicas: 2 }];
const joining = withAddedMember(stable, member('c'), slots, () => []);

describe('peer input - tables on their own', () => {
  it('accepts tables the core makes', () => {
    expect(membershipProblem(stable)).toBeUndefined();
    expect(membershipProblem(joining)).toBeUndefined();
    expect(membershipProblem(withJoiningMember(joining))).toBeUndefined();
  });

  it.each<[string, Membership, RegExp]>([
    ['unsorted members', { ...stable, members: [member('b'), member('a')] }, /not sorted and distinct/],
    ['a member twice', { ...stable, members: [member('a'), member('a')] }, /not sorted and distinct/],
    ['epoch 0', { ...stable, epoch: 0 }, /epoch 0/],
    ['a fractional epoch', { ...stable, epoch: 1.5 }, /epoch 1.5/],
    ['no members', { ...stable, members: [] }, /0 members/],
    ['too many members', { ...stable, members: Array.from({ length: TABLE_MEMBERS_MAX + 1 }, (_, i) => member(`n${String(i).padStart(5, '0')}`)) }, /members/],
    ['an unknown state', { ...stable, members: [member('a'), { ...member('b'), state: 'Sleeping' as NodeState }] }, /state 'Sleeping'/],
    ['a key that is not 32 bytes', { ...stable, members: [member('a'), { ...member('b'), publicKey: 'key-b' }] }, /publicKey/],
    ['a port out of range', { ...stable, members: [member('a'), { ...member('b'), port: 70_000 }] }, /port 70000/],
    ['a name with a slash', { ...stable, members: [member('a'), member('b/c')] }, /forbidden character/],
    ['no Joined member', { ...stable, members: [member('a', 'Left'), member('b', 'Left')] }, /no Joined member/],
    ['a node in motion without a change', { ...stable, members: [member('a'), member('b', 'Pending')] }, /in motion without a change/],
    ['two changes worth of motion', { ...joining, members: [member('a'), member('b', 'Leaving'), member('c', 'Pending')] }, /in motion/],
    ['a change of a non-member', { ...joining, change: { ...joining.change!, node: 'z', id: 'e4-join-z' } }, /not a member/],
    ['transfer progress out of range', withTransfer({ percentComplete: 150 }), /percentComplete 150/],
    ['a complete transfer below 100%', withTransfer({ complete: true, percentComplete: 40 }), /complete at 40%/],
    ['negative bytes', withTransfer({ bytes: -1 }), /bytes -1/],
    ['a transfer from a stranger', withTransfer({ from: 'zz' }), /non-members/],
    ['unsorted slots', { ...joining, change: { ...joining.change!, slots: [...slots].reverse() } }, /slots not sorted/],
    ['a partition beyond any ring', { ...joining, change: { ...joining.change!, slots: [{ partition: 70_000, replicas: 1 }] } }, /partition 70000/],
    ['a malformed queue id', { ...joining, queue: [{ id: 'q4-0', command: { type: 'remove', name: 'a' } }] }, /queue: id 'q4-0'/],
    ['a queued add of a bad name', { ...joining, queue: [{ id: 'q4.0', command: { type: 'add', member: { ...member('d/e') } } }] }, /queue: q4.0: .*forbidden character/],
    ['an overlong queue', { ...joining, queue: Array.from({ length: 65 }, (_, i) => ({ id: `q4.${i}`, command: { type: 'remove' as const, name: 'a' } })) }, /65 queued/],
    ['a queue out of order', { ...joining, queue: [{ id: 'q4.1', command: { type: 'remove', name: 'a' } }, { id: 'q4.0', command: { type: 'remove', name: 'b' } }] }, /queue not in order/],
  ])('refuses %s', (_what, table, reason) => {
    expect(membershipProblem(table)).toMatch(reason);
  });
});

/** The joining table with one data transfer, its fields overridden (the node is Joining, so data may move). */
function withTransfer(fields: Record<string, unknown>): Membership {
  const moving = withJoiningMember(joining);
  const transfer = { id: `${moving.change!.id}/ssr/a>c`, repo: 'ssr' as const, from: 'a', to: 'c', slots, complete: false, percentComplete: 10, bytes: 1, records: 1, ...fields };
  return { ...moving, change: { ...moving.change!, transfers: [transfer] } };
}

describe('peer input - tables against ours', () => {
  it('refuses another table at our epoch, and a newer one that drops a member or moves a state back', () => {
    expect(tableProblem(stable, stable)).toBeUndefined();
    expect(tableProblem({ ...stable, members: [member('a'), { ...member('b'), zone: 'other' }] }, stable)).toMatch(/different table at epoch 3/);
    expect(tableProblem({ ...stable, epoch: 4, members: [member('a')] }, stable)).toMatch(/vanished/);
    const ahead = withJoiningMember(joining);
    expect(tableProblem({ ...joining, epoch: ahead.epoch + 1 }, ahead)).toMatch(/cannot move from Joining to Pending/);
  });

  it('takes an older table (the core answers it with ours) and any well-formed one before we have a table', () => {
    expect(tableProblem(stable, joining)).toBeUndefined();
    expect(tableProblem(joining, { epoch: 0, members: [member('c', 'Pending')], change: undefined })).toBeUndefined();
  });

  it('refuses a table of our change whose transfer has other content under the same id', () => {
    const ours = withTransfer({});
    const theirs = withTransfer({ from: 'b' });
    expect(tableProblem(theirs, ours)).toMatch(/other content/);
  });

  it('checks the fields of the other core messages', () => {
    const bad: PeerMessage[] = [
      { type: 'heartbeat', epoch: -1 },
      { type: 'ready', changeId: '' },
      { type: 'transfer-ack', transferId: 't', seq: -2 },
      { type: 'transfer-progress', transferId: 't', percentComplete: Number.NaN, bytes: 0, records: 0, complete: false },
      { type: 'transfer-chunk', transferId: 't', seq: 0, chunk: { bytes: new Uint8Array(), records: -5, cursor: '' }, last: false, totalEstimate: 1, fromCursor: undefined },
    ];
    for (const message of bad) expect(peerMessageProblem(message, stable), message.type).toBeDefined();
    expect(peerMessageProblem({ type: 'heartbeat', epoch: 7 }, stable)).toBeUndefined();
    expect(peerMessageProblem({ type: 'transfer-ack', transferId: 't', seq: -1 }, stable)).toBeUndefined();
  });

  it('every table a refusal names would have made the core throw: the checks stand in for its assertions', () => {
    const core = new ClusterCore(
      { name: 'a', heartbeatIntervalMs: 100, failureTimeoutMs: 1_000, transferStallMs: 1_000, transferWindowChunks: 2 },
      { membership: stable, incoming: [] },
      { self: member('a'), lone: false },
    );
    core.step({ type: 'slots', slots });
    const unsorted = { ...joining, members: [...joining.members].reverse() };
    expect(peerMessageProblem({ type: 'membership', membership: unsorted }, core.membership())).toMatch(/not sorted/);
    expect(() => core.step({ type: 'receive', from: 'b', message: { type: 'membership', membership: unsorted } })).toThrow(/not sorted/);
  });
});

describe('join token - what a new node trusts', () => {
  it('names the keys it was made from, in any order, and survives a round trip', () => {
    const token = makeJoinToken([keyOf('b'), keyOf('a'), keyOf('a')]);
    expect(token).toMatch(/^tribjoin1\.[A-Za-z0-9_-]+\.[0-9a-f]{16}$/);
    expect(parseJoinToken(`  ${token}\n`)).toEqual([keyOf('a'), keyOf('b')].sort());
  });

  it('refuses a damaged, truncated or foreign token, saying what is wrong', () => {
    const token = makeJoinToken([keyOf('a')]);
    expect(() => parseJoinToken(token.slice(0, -1))).toThrow(JoinTokenError);
    expect(() => parseJoinToken(token.replace('tribjoin1', 'tribjoin2'))).toThrow(/looks like/);
    const [prefix, body, sum] = token.split('.');
    const flipped = `${prefix}.${body!.slice(0, -2)}AA.${sum}`;
    expect(() => parseJoinToken(flipped)).toThrow(/checksum/);
    expect(() => makeJoinToken(['not-a-key'])).toThrow(/not a node public key/);
    expect(() => makeJoinToken([])).toThrow(/at least one/);
  });
});
