// The cluster core, step by step: placement and planning as pure functions, then scripted
// scenarios that read like the operator's and the network's script (`add b`, `settle`, `crash
// b`, `tick 300`, `expect b Joined`), each with the effects it must produce.
// test/unit/cluster-core.sim.test.ts runs the random scenarios.

import { describe, expect, it } from 'vitest';
import {
  coordinatorOf,
  ownersOf,
  ringOwners,
  planAlternatives,
  planChange,
  slotKey,
  transferNeeds,
  writeOwners,
} from '../../src/cluster-core/placement.js';
import { QUEUED_COMMANDS_MAX, withAddedMember, withJoiningMember, withLeavingMember } from '../../src/cluster-core/membership.js';
import type { Member, Membership, NodeState, PeerMessage, Slot } from '../../src/protocol/cluster-types.js';
import { link, ScriptedCluster, type ScriptOptions } from '../sim/script.js';
import { ClusterCore } from '../../src/cluster-core/core.js';

function member(name: string, state: NodeState = 'Joined'): Member {
  return { name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state };
}

function table(members: Member[], epoch = 5): Membership {
  return { epoch, members, change: undefined };
}

const everyone = (): boolean => true;
const slotsOf = (replicas: number, partitions = 8): Slot[] => Array.from({ length: partitions }, (_, partition) => ({ partition, replicas }));

/** Three nodes; b's disk was damaged (its tables and heartbeats say so), then c is removed while down. */
function damagedOwnerLostLeaver(): ScriptedCluster {
  const s = threeJoined({ slots: slotsOf(2, 4), failureTimeoutMs: 200 });
  s.sim.stepNode(s.sim.node('b'), { type: 'damage', damaged: true });
  s.tick(200);
  s.crash('c');
  expect(s.remove('c')).toMatchObject({ ok: true });
  return s;
}

/** a alone, then b and c added through it one after the other: three Joined nodes. */
function threeJoined(options: ScriptOptions): ScriptedCluster {
  const s = new ScriptedCluster(options).lone('a');
  for (const name of ['b', 'c']) {
    s.spawn(name);
    s.add(name);
    s.settle().tick(300);
  }
  return s;
}

/** a alone holds `records` records in each slot, and b is added: b's join, not yet settled. */
function bJoiningA(options: ScriptOptions, records: number): ScriptedCluster {
  const s = new ScriptedCluster(options).lone('a');
  for (const slot of s.slots) s.write('a', slot, records);
  s.spawn('b');
  s.add('b');
  return s;
}

/** b joins a, which holds `records` of one slot moving to b, its chunks delivered one at a time 10 ms apart. */
function bJoinedChunkByChunk(options: ScriptOptions, records: number): ScriptedCluster {
  const s = bJoiningA({ slots: [slotMovingToB()], chunkRecords: 1, transferWindowChunks: 1, heartbeatIntervalMs: 50, ...options }, records);
  const chunks = link('a', 'b', 'transfer-chunk');
  const release = s.hold(chunks);
  s.settle().mark();
  while (s.deliverFirst(chunks)) s.settle().tick(10);
  release();
  s.settle().tick(100);
  return s;
}

/** A slot of one replica that moves from a to b when b joins: b becomes its only owner. */
function slotMovingToB(): Slot {
  const partition = Array.from({ length: 16 }, (_, index) => ringOwners(['a', 'b'], { partition: index, replicas: 1 })).findIndex((owners) => owners[0] === 'b');
  if (partition < 0) throw new Error('no partition of 16 moves from a to b');
  return { partition, replicas: 1 };
}

/** Every acknowledged record is on each owner of its slot under `observer`'s table. */
function missingRecords(script: ScriptedCluster, observer: string): string[] {
  const membership = script.sim.node(observer).core!.membership();
  const missing: string[] = [];
  for (const record of script.sim.acked) {
    for (const owner of ownersOf(membership, record.slot)) {
      if (!script.sim.node(owner).storage.has(record.repo, slotKey(record.slot), record.id)) missing.push(`${record.id}@${owner}`);
    }
  }
  return missing;
}

describe('cluster core - placement', () => {
  it('owns slots exactly as the ring of the Joined members does', () => {
    const membership = table([member('a'), member('b'), member('c'), member('d', 'Pending')]);
    for (const slot of slotsOf(2, 16)) expect(ownersOf(membership, slot)).toEqual(ringOwners(['a', 'b', 'c'], slot));
  });

  it('caps replicas by the number of data members', () => {
    expect(ownersOf(table([member('a')]), { partition: 3, replicas: 3 })).toEqual(['a']);
  });

  it('writes to old and new owners alike while a join runs, current owners first', () => {
    const joining = withAddedMember(table([member('a'), member('b')]), member('c'), slotsOf(1), () => []);
    for (const slot of slotsOf(1)) {
      const current = ownersOf(joining, slot);
      const next = ringOwners(['a', 'b', 'c'], slot);
      expect(writeOwners(joining, slot)).toEqual([...new Set([...current, ...next])]);
    }
  });

  it('keeps the leaving node an owner until it is Left', () => {
    const base = table([member('a'), member('b'), member('c')]);
    const leaving = withLeavingMember(base, 'c', slotsOf(1), () => []);
    for (const slot of slotsOf(1)) expect(ownersOf(leaving, slot)).toEqual(ownersOf(base, slot));
  });

  it('names the lowest available Joined member coordinator', () => {
    const membership = table([member('a'), member('b'), member('c', 'Pending')]);
    expect(coordinatorOf(membership, everyone)).toBe('a');
    expect(coordinatorOf(membership, (name) => name !== 'a')).toBe('b');
    expect(coordinatorOf(membership, () => false)).toBe('a');
  });

  it('plans one transfer per (repo, from, to) for every slot a node gains, and KV for a join', () => {
    const added = withAddedMember(table([member('a'), member('b')]), member('c'), slotsOf(1), (draft) => planChange({ membership: draft, available: everyone, kvSource: 'a' }));
    const joining = withJoiningMember(added);
    expect(joining.change!.transfers).toEqual(added.change!.transfers); // planned by the authority at add, started at ready
    const transfers = joining.change!.transfers;
    const gained = slotsOf(1).filter((slot) => ownersOf({ ...joining, change: undefined, members: joining.members.map((m) => ({ ...m, state: 'Joined' as const })) }, slot)[0] === 'c');
    expect(gained.length).toBeGreaterThan(0);
    expect(transfers.find((transfer) => transfer.repo === 'KV')).toMatchObject({ from: 'a', to: 'c', slots: [] });
    for (const repo of ['ssr', 'tsr'] as const) {
      const ofRepo = transfers.filter((transfer) => transfer.repo === repo);
      expect(new Set(ofRepo.map((transfer) => `${transfer.from}>${transfer.to}`)).size).toBe(ofRepo.length);
      expect(ofRepo.flatMap((transfer) => transfer.slots).map(slotKey).sort()).toEqual(gained.map(slotKey).sort());
      for (const transfer of ofRepo) for (const slot of transfer.slots) expect(ownersOf(joining, slot)).toContain(transfer.from);
    }
    expect(transfers.every((transfer) => transfer.id.startsWith(`${joining.change!.id}/`) && !transfer.complete && transfer.percentComplete === 0)).toBe(true);
  });

  it('takes a leaving node’s data from the node itself while it is up, else from another owner', () => {
    const base = table([member('a'), member('b'), member('c')]);
    const fromLeaver = withLeavingMember(base, 'c', slotsOf(2), (draft) => planChange({ membership: draft, available: everyone, kvSource: 'a' }));
    expect(fromLeaver.change!.transfers.length).toBeGreaterThan(0);
    expect(fromLeaver.change!.transfers.every((transfer) => transfer.from === 'c')).toBe(true);
    const leaverDown = withLeavingMember(base, 'c', slotsOf(2), (draft) => planChange({ membership: draft, available: (name) => name !== 'c', kvSource: 'a' }));
    expect(leaverDown.change!.transfers.every((transfer) => transfer.from !== 'c')).toBe(true);
    expect(transferNeeds(leaverDown).every((need) => need.repo !== 'KV')).toBe(true);
  });

  it('takes data from an owner whose data is whole, not one refilling damaged data, while there is one', () => {
    const base = table([member('a'), member('b'), member('c')]);
    const refilling = (name: string): boolean => name !== 'a';
    const joined = withAddedMember(base, member('d'), slotsOf(2), (draft) => planChange({ membership: draft, available: everyone, intact: refilling, kvSource: 'b' }));
    const data = joined.change!.transfers.filter((transfer) => transfer.repo !== 'KV');
    expect(data.length).toBeGreaterThan(0);
    expect(data.every((transfer) => transfer.from !== 'a')).toBe(true);
    const left = withLeavingMember(base, 'c', slotsOf(2), (draft) => planChange({ membership: draft, available: everyone, intact: (name) => name !== 'c', kvSource: 'a' }));
    expect(left.change!.transfers.every((transfer) => transfer.from !== 'c')).toBe(true);
    // Every owner refilling: the first available one still serves, once its refill ends.
    const allRefilling = withAddedMember(base, member('d'), slotsOf(2), (draft) => planChange({ membership: draft, available: everyone, intact: () => false, kvSource: 'a' }));
    expect(allRefilling.change!.transfers.filter((transfer) => transfer.repo !== 'KV').length).toBe(data.length);
  });

  it('re-plans a transfer whose source is long gone from another current owner, with a derived id', () => {
    const base = table([member('a'), member('b'), member('c')]);
    const leaving = withLeavingMember(base, 'c', slotsOf(2), (draft) => planChange({ membership: draft, available: everyone, kvSource: 'a' }));
    const gone = (name: string): boolean => name === 'c';
    const alternatives = planAlternatives(leaving, (name) => !gone(name), gone);
    expect(alternatives.length).toBeGreaterThan(0);
    for (const alternative of alternatives) {
      expect(alternative.id).toMatch(/~[ab]$/);
      expect(alternative.from).not.toBe('c');
      for (const slot of alternative.slots) expect(ownersOf(leaving, slot)).toContain(alternative.from);
    }
    expect(planAlternatives(leaving, (name) => !gone(name), gone)).toEqual(alternatives); // deterministic
    expect(planAlternatives(leaving, everyone, () => false)).toEqual([]);
  });
});

describe('cluster core - scripted scenarios', () => {
  it('join - Pending → Joining → Joined, only after every transfer to the node is complete', () => {
    const s = new ScriptedCluster({ slots: slotsOf(1, 4) }).lone('a');
    for (const slot of s.slots) s.write('a', slot, 3);
    s.spawn('b');
    expect(s.add('b')).toMatchObject({ ok: true }); //                         add b
    expect(s.stateOf('b', 'a')).toBe('Pending'); //                            expect b Pending
    const releaseChunks = s.hold(link('a', 'b', 'transfer-chunk'));
    s.settle(); //                                                             deliver a→b, b→a: table, ready
    expect(s.stateOf('b', 'a')).toBe('Joining'); //                            expect b Joining
    s.tick(1_000); //                                                          chunks held: no completion
    expect(s.stateOf('b', 'a')).toBe('Joining');
    expect(s.effects('a', 'drop')).toEqual([]);
    releaseChunks();
    s.settle().tick(100); //                                                   deliver a→b chunks; acks, progress
    expect(s.stateOf('b', 'a')).toBe('Joined'); //                             expect b Joined
    expect(s.stateOf('b', 'b')).toBe('Joined');
    const seenByA = s.effects('a', 'node-state').filter((effect) => effect.node === 'b').map((effect) => effect.state);
    expect(seenByA).toEqual(['Pending', 'Joining', 'Joined']);
    expect(missingRecords(s, 'a')).toEqual([]);
    expect(s.sim.node('b').storage.kv.has('kv/streams/s1')).toBe(true);
    expect(s.failures()).toEqual([]);
  });

  it('join - a cluster grows one node at a time to nine, the seventh member included, and keeps every record', () => {
    // Before ring points were fixed per node, planning the seventh member's join broke an
    // invariant on the coordinator ("n5 gains slot 4/3"): every node had lost a ring point.
    const names = Array.from({ length: 9 }, (_, index) => `n${index}`);
    const s = new ScriptedCluster({ slots: [...slotsOf(3, 16), ...slotsOf(1, 16)], chunkRecords: 4 }).lone(names[0]!);
    for (const slot of s.slots) s.write(names[0]!, slot, 2);
    for (const name of names.slice(1)) {
      s.spawn(name);
      const added = s.add(name, names[0]);
      expect(added).toMatchObject({ ok: true });
      // Only the joining node gains data: every transfer goes to it.
      const targets = added.ok ? new Set(added.membership.change?.transfers.map((transfer) => transfer.to)) : new Set();
      expect([...targets]).toEqual([name]);
      s.settle().tick(400);
      expect(s.stateOf(name, names[0])).toBe('Joined');
      for (const slot of s.slots.slice(0, 4)) s.write(name, slot, 1);
    }
    expect(s.failures()).toEqual([]);
    expect(missingRecords(s, names[0]!)).toEqual([]);
  });

  it('admin - commands that arrive while a change is in flight wait in the queue and start in turn', () => {
    const s = new ScriptedCluster().lone('a').spawn('b').spawn('c');
    expect(s.add('b')).toMatchObject({ ok: true, membership: { epoch: 2 } });
    const queued = s.add('c');
    // Accepted at the same epoch, behind the join of b: the table says so.
    expect(queued).toMatchObject({ ok: true, membership: { epoch: 2, change: { node: 'b' } } });
    expect(queued.ok && queued.membership.queue?.map((entry) => [entry.id, entry.command.type])).toEqual([['q2.0', 'add']]);
    expect(s.remove('b')).toMatchObject({ ok: true, membership: { epoch: 2 } });
    expect(s.add('c')).toMatchObject({ ok: false, status: 409, message: "node 'c' is queued to be added already" });
    expect(s.remove('b')).toMatchObject({ ok: false, status: 409, message: "node 'b' is queued to be removed already" });
    s.settle().tick(200);
    // b joined, c joined after it, then b left: every node's table agrees, the queue is empty.
    for (const observer of ['a', 'c']) {
      expect([s.stateOf('b', observer), s.stateOf('c', observer)]).toEqual(['Left', 'Joined']);
      expect(s.sim.node(observer).core!.membership().queue).toBeUndefined();
    }
    const joinedOrder = s.effects('a', 'node-state').filter((effect) => effect.state === 'Joined' || effect.state === 'Left').map((effect) => `${effect.node} ${effect.state}`);
    expect(joinedOrder).toEqual(['a Joined', 'b Joined', 'c Joined', 'b Left']);
    expect(s.failures()).toEqual([]);
  });

  it('admin - the queue is refused what could never start: the last Joined node, an unknown node', () => {
    const s = new ScriptedCluster().lone('a').spawn('b');
    expect(s.add('b')).toMatchObject({ ok: true });
    // a and b will both be there: removing one may wait, removing both may not.
    expect(s.remove('a')).toMatchObject({ ok: true });
    expect(s.remove('b')).toMatchObject({ ok: false, status: 409, message: 'the cluster needs one Joined node' });
    expect(s.remove('zed')).toMatchObject({ ok: false, status: 404 });
    s.settle().tick(300);
    expect([s.stateOf('a', 'b'), s.stateOf('b', 'b')]).toEqual(['Left', 'Joined']);
    expect(s.failures()).toEqual([]);
  });

  it('admin - the queue holds at most QUEUED_COMMANDS_MAX commands', () => {
    const s = new ScriptedCluster().lone('a').spawn('b');
    expect(s.add('b')).toMatchObject({ ok: true });
    const template = s.sim.node('b').member;
    const addOf = (name: string) => s.sim.admin('a', `add-${name}`, { type: 'add', member: { ...template, name } });
    for (let index = 0; index < QUEUED_COMMANDS_MAX; index += 1) expect(addOf(`x${index}`)).toMatchObject({ ok: true });
    expect(addOf('one-more')).toEqual({ ok: false, status: 409, message: `${QUEUED_COMMANDS_MAX} membership changes are queued already` });
  });

  it('admin - a queued command survives the restart of the admin authority and starts when it is back', () => {
    const s = new ScriptedCluster().lone('a').spawn('b').spawn('c');
    expect(s.add('b')).toMatchObject({ ok: true });
    const releaseReady = s.hold(link('b', 'a', 'ready'));
    s.settle();
    expect(s.add('c')).toMatchObject({ ok: true, membership: { queue: [{ id: 'q2.0' }] } });
    s.crash('a');
    releaseReady();
    s.restart('a');
    s.settle().tick(400);
    expect([s.stateOf('b', 'a'), s.stateOf('c', 'a')]).toEqual(['Joined', 'Joined']);
    expect(s.failures()).toEqual([]);
  });

  it('admin - refusals: not the coordinator, unknown node, last Joined node, bad or taken name', () => {
    const s = new ScriptedCluster().lone('a').spawn('b');
    expect(s.remove('zed')).toMatchObject({ ok: false, status: 404 });
    expect(s.remove('a')).toMatchObject({ ok: false, status: 409, message: 'the cluster needs one Joined node' });
    expect(s.add('a')).toMatchObject({ ok: false, status: 409, message: "node 'a' exists" });
    s.add('b');
    s.settle().tick(100);
    expect(s.add('b', 'b')).toEqual({ ok: false, status: 409, message: 'not the coordinator' });
    const bad = s.sim.admin('a', 'bad-name', { type: 'add', member: { ...s.sim.node('b').member, name: 'x/y' } });
    expect(bad).toMatchObject({ ok: false, status: 400 });
  });

  it('join - a --join node accepts only a table that carries its own key', () => {
    const s = new ScriptedCluster().lone('a').spawn('b');
    const forged = { ...s.sim.node('b').member, publicKey: 'someone-else' };
    const { state: _state, ...withoutState } = forged;
    s.sim.admin('a', 'forged', { type: 'add', member: withoutState });
    s.settle().tick(200);
    expect(s.sim.node('b').core!.membership().epoch).toBe(0); // still waiting
    expect(s.stateOf('b', 'a')).toBe('Pending');
  });

  it('transfer - a killed target resumes from its last acknowledged chunk; chunks before it are not stored again', () => {
    const slot = slotMovingToB();
    const s = bJoiningA({ slots: [slot], chunkRecords: 1, transferWindowChunks: 1 }, 6);
    const ssrChunk = (waiting: { message: { type: string } & Record<string, unknown> }): boolean =>
      waiting.message.type === 'transfer-chunk' && String(waiting.message.transferId).includes('/ssr/');
    const release = s.hold(ssrChunk);
    s.settle();
    const transfer = s.sim.node('b').core!.membership().change!.transfers.find((plan) => plan.repo === 'ssr')!;
    expect(transfer).toMatchObject({ from: 'a', to: 'b', slots: [slot] });
    for (let chunk = 0; chunk < 3; chunk += 1) {
      expect(s.deliverFirst(ssrChunk)).toBe(true); //                          deliver a→b one chunk
      s.settle(); //                                                           store (records + progress), ack
    }
    expect(s.effects('b', 'store-chunk').filter((effect) => effect.transfer.repo === 'ssr').map((effect) => effect.seq)).toEqual([1, 2, 3]);
    s.crash('b'); //                                                           crash b
    expect(s.sim.node('b').storedProgress.get(transfer.id)).toMatchObject({ seqAcked: 3 });
    release();
    s.restart('b').settle().tick(100); //                                       restart b
    const storedAfterRestart = s.effects('b', 'store-chunk').filter((effect) => effect.transfer.repo === 'ssr').map((effect) => effect.seq);
    expect(storedAfterRestart[0]).toBe(4);
    expect(storedAfterRestart.every((seq) => seq > 3)).toBe(true);
    expect(s.sent('b', 'transfer-request').find((sent) => sent.message.transfer.id === transfer.id)?.message.seq).toBe(4);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(missingRecords(s, 'a')).toEqual([]);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - a killed source resumes from the target’s cursor once it is back', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), chunkRecords: 1, transferWindowChunks: 1, transferStallMs: 300 }, 4);
    const chunks = link('a', 'b', 'transfer-chunk');
    const release = s.hold(chunks);
    s.settle();
    expect(s.deliverFirst(chunks)).toBe(true);
    expect(s.deliverFirst(chunks)).toBe(true);
    s.settle();
    s.crash('a'); //                                                           crash a (source and coordinator)
    release(); //                                                              chunks already on the wire still arrive
    s.tick(500); //                                                            b re-requests into the void
    expect(s.stateOf('b', 'b')).toBe('Joining');
    const acked = s.sim.node('b').core!.persistedState().incoming.filter((entry) => entry.seqAcked > 0);
    expect(acked.length).toBeGreaterThan(0);
    s.restart('a').mark().tick(400); //                                        a back, b re-requests after the stall
    // Transfers still running resume where b's durable state says; done ones only await the coordinator.
    const resumed = acked.filter((entry) => s.sent('b', 'transfer-request').some((sent) => sent.message.transfer.id === entry.transferId));
    expect(resumed.length).toBeGreaterThan(0);
    for (const entry of resumed) {
      const firstRead = s.effects('a', 'read-chunk').find((effect) => effect.transfer.id === entry.transferId);
      expect(firstRead).toMatchObject({ seq: entry.seqAcked + 1, cursor: entry.cursor });
    }
    s.tick(1_000);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(missingRecords(s, 'a')).toEqual([]);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - a source starts reading the next chunk before it sends the one just read', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), chunkRecords: 1, transferWindowChunks: 4 }, 8);
    s.settle().tick(200);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    // In a's effects, a chunk the window lets a read follow comes after that read, never before it.
    const effects = s.sim.node('a').effects.map((entry) => entry.effect);
    const isReadAfter = (effect: (typeof effects)[number] | undefined, message: { transferId: string; seq: number }) =>
      effect?.type === 'read-chunk' && effect.transfer.id === message.transferId && effect.seq === message.seq + 1;
    const sends = effects.flatMap((effect, index) => (effect.type === 'send' && effect.message.type === 'transfer-chunk' ? [{ index, message: effect.message }] : []));
    expect(sends.filter(({ index, message }) => isReadAfter(effects[index - 1], message)).length).toBeGreaterThanOrEqual(4);
    expect(sends.filter(({ index, message }) => isReadAfter(effects[index + 1], message))).toEqual([]);
    expect(s.failures()).toEqual([]);
  });

  /** b joins a with ssr chunks held on the wire; b takes a for unavailable and hears it again: its repeat goes out. */
  function repeatWhileChunksOnTheirWay(chunksLost: boolean) {
    const slot = slotMovingToB();
    const s = bJoiningA({ slots: [slot], chunkRecords: 1, transferWindowChunks: 2, heartbeatIntervalMs: 50, transferStallMs: 3_000 }, 4);
    const ssrChunks = (waiting: { from: string; to: string; message: PeerMessage }): boolean => link('a', 'b', 'transfer-chunk')(waiting) && waiting.message.type === 'transfer-chunk' && waiting.message.transferId.includes('/ssr/');
    const stop = chunksLost ? s.lose(ssrChunks) : s.hold(ssrChunks);
    s.settle().tick(50);
    expect(s.sim.pending.filter(ssrChunks).length).toBe(chunksLost ? 0 : 2); //  a window of chunks on its way, or lost
    if (chunksLost) stop(); //                                                  the stream broke; the next one carries
    s.mark();
    s.sim.stepNode(s.sim.node('b'), { type: 'unreachable', node: 'a' }); //   b, busy, takes a for unavailable
    s.tick(200); //                                                             hears it again; nothing came for an interval
    const repeats = s.sent('b', 'transfer-request').filter((sent) => sent.message.transfer.repo === 'ssr');
    expect(repeats.map((sent) => sent.message.repeat)).toEqual([true]);
    const reads = s.effects('a', 'read-chunk').filter((effect) => effect.transfer.repo === 'ssr');
    if (!chunksLost) stop();
    s.settle().tick(300);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(s.failures()).toEqual([]);
    return { reads, chunksSent: s.sent('a', 'transfer-chunk').filter((sent) => sent.message.transferId.includes('/ssr/')).map((sent) => sent.message.seq) };
  }

  it('transfer - a repeat request is let be while the chunks it asks for are on their way on an intact stream', () => {
    const { reads, chunksSent } = repeatWhileChunksOnTheirWay(false);
    expect(reads).toEqual([]); //                                              nothing read again
    expect(chunksSent).toEqual([3, 4]); //                                      after the held two: the rest, once each
  });

  it('transfer - a repeat request is honoured once the stream that carried the chunks closed', () => {
    const { reads } = repeatWhileChunksOnTheirWay(true);
    expect(reads.map((effect) => effect.seq)).toEqual([1, 2, 3, 4]); //        sent again from the last ack
  });

  it('transfer - a stalled transfer is requested again from its last ack after transferStallMs', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), transferStallMs: 300, tickMs: 10 }, 2);
    const restore = s.lose(link('a', 'b', 'transfer-chunk')); //              the network loses every chunk
    s.settle();
    expect(s.stateOf('b', 'a')).toBe('Joining');
    const firstRequests = s.sent('b', 'transfer-request').length;
    expect(firstRequests).toBeGreaterThan(0);
    s.mark().tick(290); //                                                     tick 290: not yet
    expect(s.sent('b', 'transfer-request')).toEqual([]);
    s.tick(10); //                                                             tick 10: stalled for 300 ms
    const again = s.sent('b', 'transfer-request');
    expect(again.length).toBe(firstRequests);
    expect(again.every((sent) => sent.to === 'a' && sent.message.seq === 1 && sent.message.cursor === undefined)).toBe(true);
    restore();
    s.tick(700);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(s.failures()).toEqual([]);
  });

  it('transfer - a source whose refill ends is asked again a heartbeat interval later, not after transferStallMs', () => {
    const s = new ScriptedCluster({ slots: slotsOf(1, 4), heartbeatIntervalMs: 50, transferStallMs: 3_000, tickMs: 10 }).lone('a');
    for (const slot of s.slots) s.write('a', slot, 2);
    s.sim.stepNode(s.sim.node('a'), { type: 'damage', damaged: true }); //   a refills damaged data
    s.spawn('b');
    s.add('b');
    const restore = s.lose(link('a', 'b', 'transfer-chunk')); //              a refilling serves no chunk
    s.settle().tick(200);
    expect(s.stateOf('b', 'a')).toBe('Joining');
    s.sim.stepNode(s.sim.node('a'), { type: 'damage', damaged: false }); //  a's refill is done
    restore();
    s.mark().tick(200); //                                                     its heartbeats say so
    const again = s.sent('b', 'transfer-request');
    expect(again.length).toBeGreaterThan(0);
    expect(again.every((sent) => sent.to === 'a' && sent.message.seq === 1)).toBe(true);
    s.tick(300);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(s.failures()).toEqual([]);
  });

  it('restart - a peer back within the failure timeout is known restarted by the new run its heartbeats carry', () => {
    const s = new ScriptedCluster({ slots: slotsOf(1, 4), failureTimeoutMs: 1_000 }).lone('a');
    s.spawn('b');
    s.add('b');
    s.settle().tick(300);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    s.mark().tick(200); //                                                     heartbeats of b's first run
    expect(s.effects('a', 'restarted')).toEqual([]);
    s.crash('b').tick(100).restart('b').tick(200); //                          back well within a's failure timeout
    expect(s.effects('a', 'availability')).toEqual([]); //                     never taken for unavailable
    expect(s.effects('a', 'restarted')).toEqual([{ type: 'restarted', node: 'b' }]);
    s.mark().tick(200); //                                                     the same run again: nothing more
    expect(s.effects('a', 'restarted')).toEqual([]);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - percentComplete rises from 0 to 100 and reaches 100 only with the last chunk durable', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), chunkRecords: 1 }, 5);
    s.settle().tick(200);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    const reports = s.sent('b', 'transfer-progress').map((sent) => sent.message);
    const byTransfer = new Map<string, typeof reports>();
    for (const report of reports) byTransfer.set(report.transferId, [...(byTransfer.get(report.transferId) ?? []), report]);
    expect(byTransfer.size).toBeGreaterThan(0);
    for (const series of byTransfer.values()) {
      const percents = series.map((report) => report.percentComplete);
      expect(percents).toEqual([...percents].sort((x, y) => x - y));
      expect(series.at(-1)).toMatchObject({ percentComplete: 100, complete: true });
      expect(series.filter((report) => report.percentComplete === 100).every((report) => report.complete)).toBe(true);
    }
  });

  it('transfer - a source that has not counted yet (an estimate of 0) leaves percentComplete at 0, not at 99', () => {
    const s = bJoinedChunkByChunk({ uncountedChunks: 8 }, 16);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    const ssr = s.sent('b', 'transfer-progress').map((sent) => sent.message).filter((report) => report.transferId.includes('/ssr/'));
    const percents = ssr.map((report) => report.percentComplete);
    // Reported while uncounted (8 chunks of 16, ~90 ms): 0; once counted, the share of 16.
    const uncounted = ssr.filter((report) => !report.complete && report.records <= 8);
    expect(uncounted.length).toBeGreaterThan(0);
    expect(uncounted.every((report) => report.percentComplete === 0)).toBe(true);
    expect(ssr.filter((report) => report.records > 8 && !report.complete).every((report) => report.percentComplete === Math.floor((100 * report.records) / 16))).toBe(true);
    expect(percents).toEqual([...percents].sort((x, y) => x - y));
    expect(percents.at(-1)).toBe(100);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - progress goes to the coordinator at most once per heartbeat interval, then once at the end', () => {
    const s = bJoinedChunkByChunk({}, 12);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    const ssr = (message: PeerMessage): boolean => message.type === 'transfer-progress' && message.transferId.includes('/ssr/');
    const reports = s.sim.node('b').effects.filter((entry) => entry.effect.type === 'send' && ssr(entry.effect.message));
    const running = reports.filter((entry) => entry.effect.type === 'send' && entry.effect.message.type === 'transfer-progress' && !entry.effect.message.complete);
    // 12 chunks over ~130 ms: two or three reports on the way (not 12), then completion.
    expect(running.length).toBeGreaterThanOrEqual(1);
    expect(running.length).toBeLessThanOrEqual(3);
    expect(running.every((entry, index) => index === 0 || entry.at - running[index - 1]!.at >= 50)).toBe(true);
    expect(reports.length).toBeGreaterThan(running.length);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - the target\'s own table shows the progress it reports, not completion, before the coordinator\'s reaches it', () => {
    const slot = slotMovingToB();
    const s = bJoiningA({ slots: [slot], chunkRecords: 1, transferWindowChunks: 1, heartbeatIntervalMs: 50 }, 12);
    const chunks = link('a', 'b', 'transfer-chunk');
    const release = s.hold(chunks);
    s.settle();
    const tables = s.hold(link('a', 'b', 'membership')); //                          no table of a's reaches b meanwhile
    const ssrOf = (name: string) => s.sim.node(name).core!.membership().change?.transfers.find((transfer) => transfer.id.includes('/ssr/'));
    for (let delivered = 0; delivered < 8 && s.deliverFirst(chunks); delivered += 1) s.settle().tick(10);
    const seenByB = ssrOf('b')!;
    expect(seenByB.records).toBeGreaterThan(0); //                                 b is not the coordinator: its own reports
    expect(seenByB.percentComplete).toBeGreaterThan(0);
    expect(seenByB.complete).toBe(false);
    expect(ssrOf('a')!.records).toBe(seenByB.records); //                           what the coordinator merged
    tables();
    release();
    s.settle().tick(100);
    expect(s.stateOf('b', 'b')).toBe('Joined');
    expect(s.failures()).toEqual([]);
  });

  it('transfer - the coordinator sends its table to the target when it marks a transfer complete, not at a heartbeat', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), chunkRecords: 1 }, 3);
    const reports = link('b', 'a', 'transfer-progress');
    const release = s.hold(reports);
    s.settle().tick(300); //                                                         every chunk stored; b's reports wait
    expect(s.sim.node('a').core!.membership().change?.transfers.some((transfer) => !transfer.complete)).toBe(true);
    // One report per transfer: a repeat of a report already merged gets the table anyway.
    const seen = new Set<string>();
    const firstReports = s.sim.pending.filter((waiting) => {
      if (!reports(waiting) || waiting.message.type !== 'transfer-progress') return true;
      const first = !seen.has(waiting.message.transferId);
      seen.add(waiting.message.transferId);
      return first;
    });
    s.sim.pending.splice(0, s.sim.pending.length, ...firstReports);
    s.mark();
    while (s.deliverFirst(reports)) s.settle(); //                                  no tick: no heartbeat goes meanwhile
    expect(s.sim.node('a').core!.membership().change?.transfers.every((transfer) => transfer.complete)).toBe(true);
    expect(s.sent('a', 'membership').map((sent) => sent.to)).toContain('b');
    release();
    s.settle().tick(300);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(s.failures()).toEqual([]);
  });

  it('transfer - a chunk read after another cursor than the target holds is not stored', () => {
    const s = bJoiningA({ slots: slotsOf(1, 4), chunkRecords: 1 }, 3);
    const chunks = link('a', 'b', 'transfer-chunk');
    const release = s.hold(chunks);
    s.settle();
    const waiting = s.sim.pending.find(chunks)!;
    expect(waiting.message).toMatchObject({ seq: 1, fromCursor: undefined });
    s.mark();
    s.sim.deliver('a', 'b', { ...waiting.message, fromCursor: 'a later key' } as typeof waiting.message);
    s.settle();
    expect(s.effects('b', 'store-chunk')).toEqual([]);
    release();
    s.settle().tick(200);
    expect(s.stateOf('b', 'a')).toBe('Joined');
  });

  it('drop - a node drops the slots it lost only once the change is complete', () => {
    const s = bJoiningA({ slots: slotsOf(1, 8) }, 2);
    const release = s.hold(link('a', 'b', 'transfer-chunk'));
    s.settle().tick(500);
    expect(s.stateOf('b', 'a')).toBe('Joining');
    expect(s.effects('a', 'drop')).toEqual([]); //                            nothing dropped mid-transfer
    release();
    s.settle().tick(100);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    const final = s.sim.node('a').core!.membership();
    const lost = s.slots.filter((slot) => !ownersOf(final, slot).includes('a')).map(slotKey);
    expect(lost.length).toBeGreaterThan(0);
    const drops = s.effects('a', 'drop');
    expect(drops.map((effect) => effect.repo).sort()).toEqual(['ssr', 'tsr']);
    for (const drop of drops) expect(drop.slots.map(slotKey)).toEqual(lost);
    // The table that says so was durable before the first drop ran.
    const effects = s.sim.node('a').effects.map((entry) => entry.effect.type);
    expect(effects.indexOf('persist')).toBeLessThan(effects.indexOf('drop'));
    expect(missingRecords(s, 'a')).toEqual([]);
  });

  it('leave - Leaving → Left after another source takes over from the killed leaving node', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 8), failureTimeoutMs: 200 }).lone('a');
    s.spawn('b');
    s.add('b');
    s.settle().tick(100);
    s.spawn('c');
    s.add('c');
    s.settle().tick(100);
    expect(s.stateOf('c', 'a')).toBe('Joined');
    for (const slot of s.slots) s.write('a', slot, 3);
    expect(s.remove('c')).toMatchObject({ ok: true }); //                      remove c
    expect(s.stateOf('c', 'a')).toBe('Leaving');
    const plan = s.sim.node('a').core!.membership().change!.transfers;
    expect(plan.length).toBeGreaterThan(0);
    expect(plan.every((transfer) => transfer.from === 'c')).toBe(true);
    s.hold(link('c', '*', 'transfer-chunk'));
    s.settle();
    s.crash('c'); //                                                           crash c mid-transfer
    s.tick(1_200); //                                                          c unheard for > 3 × failureTimeoutMs
    const after = s.sim.node('a').core!.membership();
    expect(after.members.find((candidate) => candidate.name === 'c')?.state).toBe('Left'); // expect c Left
    expect(s.effects('a', 'membership-changed').some((effect) => effect.membership.change?.transfers.some((transfer) => transfer.id.includes('~')))).toBe(true);
    expect(missingRecords(s, 'a')).toEqual([]);
    s.restart('c').tick(200); //                                                c comes back, learns it is Left, drops all
    expect(s.stateOf('c', 'c')).toBe('Left');
    expect(s.sim.node('c').storage.recordCount()).toBe(0);
    expect(s.failures()).toEqual([]);
  });

  it('failover - a change goes on when the coordinator dies; add/remove wait for it', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 8), failureTimeoutMs: 200 }).lone('a');
    s.spawn('b');
    s.add('b');
    s.settle().tick(100);
    for (const slot of s.slots) s.write('a', slot, 2);
    s.spawn('c');
    s.add('c');
    const release = s.hold(link('*', 'c', 'transfer-chunk'));
    s.settle();
    expect(s.stateOf('c', 'b')).toBe('Joining');
    s.crash('a'); //                                                           crash a, the coordinator
    release();
    s.tick(1_500);
    expect(s.stateOf('c', 'b')).toBe('Joined'); //                             b finished the change
    expect(s.stateOf('c', 'c')).toBe('Joined');
    expect(missingRecords(s, 'b')).toEqual([]);
    s.spawn('d');
    // Only the lowest-named Joined node may accept a change (one writer per epoch).
    expect(s.add('d', 'b')).toEqual({ ok: false, status: 409, message: 'not the coordinator' });
    s.restart('a').tick(200);
    expect(s.stateOf('c', 'a')).toBe('Joined');
    expect(s.add('d')).toMatchObject({ ok: true });
    expect(s.failures()).toEqual([]);
  });

  it('address - a node restarted on another port announces it; peers take it without a new epoch, from any epoch', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 4) }).lone('a');
    s.spawn('b');
    s.add('b');
    s.settle().tick(200);
    const epoch = s.sim.node('a').core!.membership().epoch;
    s.crash('b');
    s.sim.node('b').member.port = 9100; //                                         b restarts on port 9100
    s.restart('b').tick(200);
    const seenByA = s.sim.node('a').core!.membership().members.find((member) => member.name === 'b')!;
    expect(seenByA).toMatchObject({ port: 9100, incarnation: 1 });
    expect(s.sim.node('a').core!.membership().epoch).toBe(epoch); //               no new epoch for an address
    expect(s.effects('a', 'persist').length).toBeGreaterThan(0); //                the new address is durable
    // A node that missed it learns it from b's own table even when that table is older.
    s.spawn('c');
    s.add('c');
    s.settle().tick(300);
    expect(s.sim.node('c').core!.membership().members.find((member) => member.name === 'b')?.port).toBe(9100);
    expect(s.failures()).toEqual([]);
  });

  it('address - the address of a moved node is taken from its own table even at an older epoch', () => {
    const config = { name: 'a', heartbeatIntervalMs: 50, failureTimeoutMs: 200, transferStallMs: 300, transferWindowChunks: 2 };
    const current = table([member('a'), member('b'), member('c')], 9);
    const core = new ClusterCore(config, { membership: current, incoming: [] }, { self: member('a'), lone: false });
    core.step({ type: 'resume', incoming: [] });
    const older = table([member('a'), { ...member('b'), port: 9100, incarnation: 1 }, member('c')], 4);
    const effects = core.step({ type: 'receive', from: 'b', message: { type: 'membership', membership: older } });
    expect(core.membership().members.find((each) => each.name === 'b')).toMatchObject({ port: 9100, incarnation: 1 });
    expect(core.membership().epoch).toBe(9);
    expect(effects.map((effect) => effect.type)).toEqual(expect.arrayContaining(['persist', 'membership-changed', 'send']));
  });

  it('pause - a node whose process stood still longer than the failure timeout does not take its peers for dead', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 4), failureTimeoutMs: 200 }).lone('a');
    s.spawn('b');
    s.add('b');
    s.settle().tick(200);
    s.sim.now += 5_000; //                                                          a and b were both SIGSTOPped for 5 s
    s.sim.stepNode(s.sim.node('a'), { type: 'tick', now: s.sim.now });
    expect(s.sim.node('a').core!.available('b')).toBe(true);
    expect(s.effects('a', 'availability').filter((effect) => !effect.available)).toEqual([]);
    // A peer that really stays silent is still found out, one failure timeout later.
    s.crash('b').tick(400);
    expect(s.sim.node('a').core!.available('b')).toBe(false);
  });

  it('left - a node removed while it was down learns it is Left from the first peer it speaks to, and is not confirmed before', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 4), failureTimeoutMs: 200 }).lone('a');
    s.spawn('b');
    s.add('b');
    s.spawn('c');
    s.settle().tick(200);
    s.add('c');
    s.settle().tick(300);
    expect(s.stateOf('c', 'a')).toBe('Joined');
    s.crash('c');
    expect(s.remove('c')).toMatchObject({ ok: true }); //                           remove c while it is down
    s.tick(1_500); //                                                               its transfers are replaced, hand-off waived
    expect(s.stateOf('c', 'a')).toBe('Left');
    const release = s.hold(link('*', 'c'));
    s.restart('c').tick(50); //                                                     c comes back believing it is Joined
    expect(s.stateOf('c', 'c')).toBe('Joined');
    expect(s.sim.node('c').core!.confirmed()).toBe(false); //                       so it acts for no client yet
    release();
    s.tick(200);
    expect(s.stateOf('c', 'c')).toBe('Left');
    expect(s.failures()).toEqual([]);
  });

  it('confirmed - a node serving alone keeps serving as it adds a member, before it hears from it', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 4), failureTimeoutMs: 200 }).lone('a');
    s.tick(50);
    expect(s.sim.node('a').core!.confirmed()).toBe(true); //                        alone: nobody else can change its table
    s.spawn('b');
    const release = s.hold(link('b', 'a')); //                                      b's heartbeats do not reach a yet
    s.add('b');
    expect(s.sim.node('a').core!.membership().members.map((each) => each.name)).toEqual(['a', 'b']);
    expect(s.sim.node('a').core!.confirmed()).toBe(true); //                        a made the table: it is current
    release();
    s.settle().tick(300);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    // Restarted, a has a peer in its table: it waits to hear that its table is current.
    s.crash('a');
    const cut = s.hold(link('*', 'a'));
    s.restart('a').tick(50);
    expect(s.sim.node('a').core!.confirmed()).toBe(false);
    cut();
    s.tick(300);
    expect(s.sim.node('a').core!.confirmed()).toBe(true);
    expect(s.failures()).toEqual([]);
  });

  it('left - no hand-off is waived while another owner refills damaged data: the leaver may hold the only intact copy', () => {
    const s = damagedOwnerLostLeaver();
    s.tick(1_500);
    expect(s.stateOf('c', 'a')).toBe('Leaving'); //                                 not waived: b is refilling
    s.sim.stepNode(s.sim.node('b'), { type: 'damage', damaged: false }); //          b's refill is done
    s.tick(1_500);
    expect(s.stateOf('c', 'a')).toBe('Left');
    expect(s.failures()).toEqual([]);
  });

  it('left - a leaver gone for good is waived after a longer wait even while an owner stays damaged', () => {
    const s = damagedOwnerLostLeaver(); //                                          b cannot refill without c
    s.tick(2_000);
    expect(s.stateOf('c', 'a')).toBe('Leaving');
    s.tick(3_000); //                                                               past 20 failure timeouts
    expect(s.stateOf('c', 'a')).toBe('Left');
    expect(s.failures()).toEqual([]);
  });

  it('left - a node removed while it was down and restarted on another port still learns it is Left', () => {
    const s = threeJoined({ slots: slotsOf(2, 4), failureTimeoutMs: 200 });
    s.crash('c');
    expect(s.remove('c')).toMatchObject({ ok: true });
    s.tick(1_500);
    expect(s.stateOf('c', 'a')).toBe('Left');
    s.sim.node('c').member.port = 9300; //                                             c comes back on another port
    s.restart('c').tick(300);
    expect(s.stateOf('c', 'c')).toBe('Left');
    expect(s.sim.node('c').storage.recordCount()).toBe(0);
    expect(s.failures()).toEqual([]);
  });

  it('leave - the change completes only once the leaving node handed off', () => {
    const s = threeJoined({ slots: slotsOf(2, 4) });
    for (const slot of s.slots) s.write('a', slot, 2);
    const held = s.hold(link('c', '*', 'final-synced'));
    expect(s.remove('c')).toMatchObject({ ok: true });
    s.tick(600);
    const change = s.sim.node('a').core!.membership().change!;
    expect(change.transfers.every((transfer) => transfer.complete)).toBe(true); //  data moved,
    expect(s.stateOf('c', 'a')).toBe('Leaving'); //                                  but c has not said it handed off
    held();
    s.tick(200);
    expect(s.stateOf('c', 'a')).toBe('Left');
    expect(missingRecords(s, 'a')).toEqual([]);
    expect(s.failures()).toEqual([]);
  });

  it('transfer - a chunk that could not be stored or read is asked for again, and the join completes', () => {
    const s = new ScriptedCluster({ slots: slotsOf(2, 4), transferStallMs: 300 }).lone('a');
    for (const slot of s.slots) s.write('a', slot, 3);
    s.spawn('b');
    let storeFailures = 1;
    let readFailures = 1;
    s.sim.ioFails = (node, io) => (io === 'store' && node === 'b' && storeFailures-- > 0) || (io === 'read' && node === 'a' && readFailures-- > 0);
    s.add('b');
    s.settle().tick(2_000);
    expect(storeFailures).toBeLessThan(0);
    expect(readFailures).toBeLessThan(0);
    expect(s.stateOf('b', 'a')).toBe('Joined');
    expect(missingRecords(s, 'a')).toEqual([]);
    expect(s.failures()).toEqual([]);
  });
});

describe('cluster core - who cannot reach whom', () => {
  it('a node outside a partition learns from heartbeats which members the others cannot reach, and for how long', () => {
    const s = threeJoined({ slots: slotsOf(2, 4), failureTimeoutMs: 200 });
    const a = s.sim.node('a').core!;
    expect(a.unreachableFor('b', 'c')).toBeUndefined();
    // b and c cannot reach each other; a reaches both (a bridge).
    const restore = [s.lose(link('b', 'c')), s.lose(link('c', 'b'))];
    s.tick(400);
    const seen = a.unreachableFor('b', 'c');
    expect(seen).toBeGreaterThanOrEqual(200);
    expect(seen).toBeLessThanOrEqual(500);
    expect(a.unreachableFor('c', 'b')).toBeGreaterThanOrEqual(200);
    expect(a.unreachableFor('a', 'b')).toBeUndefined();
    // b's own failure detector says as much.
    expect(s.sim.node('b').core!.unreachableFor('b', 'c')).toBeGreaterThanOrEqual(seen!);
    for (const undo of restore) undo();
    s.tick(200);
    expect(a.unreachableFor('b', 'c')).toBeUndefined();
    expect(s.sim.node('b').core!.unreachableFor('b', 'c')).toBeUndefined();
  });
});
