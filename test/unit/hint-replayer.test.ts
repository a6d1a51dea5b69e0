// A hint delivered while a change is in flight also goes to the owners the change gives its
// partition: the transfers and final sync that bring them the partition may already have run
// (the shell simulation found a hint delivered to a leaving node after its final hand-off, so
// the partition's next owner never got the record).

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { nextOwnersOf, ownersOf, planChange, writeOwners } from '../../src/cluster-core/placement.js';
import type { HintEntry, HintKeeper, HintStorage } from '../../src/cluster/hint-keeper.js';
import { HintReplayer } from '../../src/cluster/hint-replayer.js';
import type { Member, Membership, NodeState, Slot } from '../../src/protocol/cluster-types.js';
import type { Hint } from '../../src/storage/hints.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import type { Timers } from '../../src/lib/timers.js';

const member = (name: string, state: NodeState = 'Joined'): Member => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state });
const SLOTS: Slot[] = Array.from({ length: 16 }, (_, partition) => ({ partition, replicas: 2 }));
const STREAM = 't/c/s';

/** c leaves a, b, c and d (replicas 2); `change: false` is the table once it is done. */
function leaving(change: boolean): Membership {
  const draft: Membership = { epoch: 7, members: [member('a'), member('b'), member('c', 'Leaving'), member('d')], change: { id: 'e7-leave-c', kind: 'leave', node: 'c', slots: SLOTS, transfers: [] } };
  const transfers = planChange({ membership: draft, available: () => true, kvSource: 'a' });
  const during: Membership = { ...draft, change: { ...draft.change!, transfers } };
  if (change) return during;
  return { epoch: 8, members: [member('a'), member('b'), member('d')], change: undefined };
}

/** A partition c owns whose next owners include a node that does not own it now. */
function gainedSlot(membership: Membership): { slot: Slot; gainers: string[] } {
  for (const slot of SLOTS) {
    const owners = ownersOf(membership, slot);
    const gainers = nextOwnersOf(membership, slot).filter((name) => !owners.includes(name));
    if (owners.includes('c') && gainers.some((name) => name !== 'a')) return { slot, gainers };
  }
  throw new Error('no slot of c is gained by another node');
}

function replayer(membership: Membership | (() => Membership), hinted: Hint[], localName = 'a', available: (node: string) => boolean = () => true, onCall: () => void = () => undefined) {
  const delivered: Array<{ to: string; writeIds: string[] }> = [];
  const stored: string[] = [];
  const kept: HintEntry[] = [];
  const hints: HintStorage = {
    add: () => [],
    remove: (gone) => gone.map((hint) => hint.key),
    targets: () => [...new Set(hinted.map((hint) => hint.target))],
    oldest: async (target) => hinted.splice(0).filter((hint) => hint.target === target),
  };
  const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: () => ({ cancel: () => undefined }) };
  const replay = new HintReplayer({
    localName, hints, committer: { commit: async () => undefined }, timers, log: pino({ level: 'silent' }),
    transport: {
      call: (async (to: string, _kind: unknown, body: { records: StoredRecord[] }) => {
        delivered.push({ to, writeIds: body.records.map((record) => record.writeId) });
        onCall();
        return {};
      }) as never,
    },
    keeper: {
      keepHere: async (entries: HintEntry[]) => void kept.push(...entries),
      delegates: () => ['a', 'b'],
      sendTo: async () => {
        throw new Error('refused: unknown sender');
      },
    } as unknown as HintKeeper,
    replica: { store: async (_repository: unknown, records: readonly StoredRecord[]) => void stored.push(...records.map((record) => record.writeId)) },
    membership: typeof membership === 'function' ? membership : () => membership,
    available,
    replicasOf: () => 2,
    adopt: async () => undefined,
    peerDeadlineMs: 1_000,
    intervalMs: 1_000,
  });
  return { replay, delivered, kept, stored };
}

const record = (partition: number, writeId: string): StoredRecord => ({ stream: STREAM, partition, timestamp: 1, writeId, value: '{}' });

describe('hint replayer - hints delivered during a change', () => {
  it('delivers a hint to its target and hints the owners the change gives the partition', async () => {
    const membership = leaving(true);
    const { slot, gainers } = gainedSlot(membership);
    const hint: Hint = { key: 'h1', target: 'c', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w1')] };
    const { replay, delivered, kept } = replayer(membership, [hint]);
    expect(await replay.round()).toBe(1);
    // To c, then once to the partition's other owners that answer (not a, which replays it).
    expect(delivered[0]).toEqual({ to: 'c', writeIds: ['w1'] });
    expect(delivered.slice(1).map((each) => each.to).sort()).toEqual(writeOwners(membership, slot).filter((name) => name !== 'c' && name !== 'a').sort());
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.map((entry) => entry.target).sort()).toEqual(gainers.filter((name) => name !== 'a').sort());
    expect(kept.every((entry) => (entry.records as StoredRecord[]).map((each) => each.writeId).join() === 'w1')).toBe(true);
  });

  it('a node that has left delivers hints whose partition moved to its owners itself, handing none to a member', async () => {
    // c left while cut off (its hand-off waived) holding a hint for d, whose partition is now a's and b's.
    const membership: Membership = { epoch: 8, members: [member('a'), member('b'), member('c', 'Left'), member('d', 'Left')], change: undefined };
    const slot = SLOTS[5]!;
    const hint: Hint = { key: 'h1', target: 'd', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w3')] };
    const { replay, delivered, kept } = replayer(membership, [hint], 'c');
    expect(await replay.round()).toBe(1);
    expect(delivered.map((each) => each.to).sort()).toEqual([...ownersOf(membership, slot)].sort());
    expect(delivered.every((each) => each.writeIds.join() === 'w3')).toBe(true);
    expect(kept).toEqual([]);
  });

  it('a node that has left tries its hints on a target it last saw unavailable', async () => {
    // Members do not heartbeat a node that has left: c's view of d stays as it was when c
    // left (d Pending, unavailable), and the shell simulation found c holding d's hint forever.
    const membership: Membership = { epoch: 9, members: [member('a'), member('b'), member('c', 'Left'), member('d')], change: undefined };
    const slot = SLOTS.find((each) => ownersOf(membership, each).includes('d'))!;
    const hint: Hint = { key: 'h1', target: 'd', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w4')] };
    const { replay, delivered, kept } = replayer(membership, [hint], 'c', (node) => node !== 'd');
    expect(await replay.round()).toBe(1);
    expect(delivered).toEqual([{ to: 'd', writeIds: ['w4'] }]);
    expect(kept).toEqual([]);
  });

  it("stores here only what this node still owns when the round's hints are rehomed", async () => {
    // The round sorts b's hints by the table of its start: one record's partition is a's then.
    // Delivering the next hint takes a while, and meanwhile a has left (its hand-off dropped
    // that partition): the record goes to the partition's owners, not into a's store (the
    // shell simulation's seed 4510 left a Left node holding it).
    const before: Membership = { epoch: 9, members: [member('a'), member('b'), member('c'), member('d')], change: undefined };
    const after: Membership = { epoch: 10, members: [member('a', 'Left'), member('b'), member('c'), member('d')], change: undefined };
    const slotOf = (partition: number) => ({ partition, replicas: 2 });
    const moved = SLOTS.find((slot) => ownersOf(before, slot).includes('a') && !ownersOf(before, slot).includes('b'))!;
    const owned = SLOTS.find((slot) => ownersOf(before, slot).includes('b') && ownersOf(after, slot).includes('b'))!;
    const hints: Hint[] = [
      { key: 'h1', target: 'b', bytes: 10, repository: 'ssr', records: [record(moved.partition, 'w5')] },
      { key: 'h2', target: 'b', bytes: 10, repository: 'ssr', records: [record(owned.partition, 'w6')] },
    ];
    let table = before;
    const { replay, delivered, stored } = replayer(() => table, hints, 'a', () => true, () => (table = after));
    expect(await replay.round()).toBe(2);
    expect(stored).toEqual([]);
    // Every owner by the new table gets it (c also by the hint the old table gave it: twice, harmlessly).
    const w5 = new Set(delivered.filter((each) => each.writeIds.includes('w5')).map((each) => each.to));
    expect([...w5].sort()).toEqual([...ownersOf(after, slotOf(moved.partition))].sort());
  });

  it('keeps its hints while its table is lost, and delivers them once it has one again', async () => {
    // Damage took the table and its copy: the node knows only itself, Pending, at epoch 0, and
    // sorted every hint to no owner, ending it (the shell simulation, seeds of 1 to 1,000).
    const lost: Membership = { epoch: 0, members: [member('a', 'Pending')], change: undefined };
    const found = leaving(false);
    const slot = SLOTS.find((each) => ownersOf(found, each).includes('b') && !ownersOf(found, each).includes('a'))!;
    const hint: Hint = { key: 'h1', target: 'b', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w7')] };
    const hinted = [hint];
    let table = lost;
    const { replay, delivered } = replayer(() => table, hinted, 'a');
    expect(await replay.round()).toBe(0);
    expect(delivered).toEqual([]);
    expect(hinted).toEqual([hint]);
    table = found;
    expect(await replay.round()).toBe(1);
    expect(delivered[0]).toEqual({ to: 'b', writeIds: ['w7'] });
  });

  it('hints no one else once no change is in flight', async () => {
    const membership = leaving(false);
    const slot = SLOTS.find((each) => ownersOf(membership, each).includes('b') && !ownersOf(membership, each).includes('a'))!;
    const hint: Hint = { key: 'h1', target: 'b', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w2')] };
    const { replay, delivered, kept } = replayer(membership, [hint]);
    expect(await replay.round()).toBe(1);
    expect(delivered[0]).toEqual({ to: 'b', writeIds: ['w2'] });
    expect(kept).toEqual([]);
  });
});

describe('hint replayer - the other owners of a hinted record', () => {
  // b's copy was the hint; d's storage was damaged since, and d refilled from b before the
  // hint reached b: delivered to b only, the record would reach d through anti-entropy alone.
  it('gives a delivered hint once to the other owner of its partition that answers, and not to one that does not', async () => {
    const membership = leaving(false);
    const slot = SLOTS.find((each) => ownersOf(membership, each).includes('b') && ownersOf(membership, each).includes('d'))!;
    for (const answers of [true, false]) {
      const hint: Hint = { key: 'h1', target: 'b', bytes: 10, repository: 'ssr', records: [record(slot.partition, 'w4')] };
      const { replay, delivered, kept } = replayer(membership, [hint], 'a', (node) => answers || node !== 'd');
      expect(await replay.round()).toBe(1);
      expect(delivered).toEqual([{ to: 'b', writeIds: ['w4'] }, ...(answers ? [{ to: 'd', writeIds: ['w4'] }] : [])]);
      expect(kept).toEqual([]);
    }
  });
});
