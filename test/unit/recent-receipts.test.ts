// A coordinator killed in the middle of a write noted nothing (docs/cluster.md, "Writes of
// unknown outcome"): the owners that stored its records keep their keys a while, and once
// the coordinator is seen unavailable they follow them up among the owners.

import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ownersOf } from '../../src/cluster-core/placement.js';
import { RecentReceipts } from '../../src/cluster/recent-receipts.js';
import { WriteFollowUps } from '../../src/cluster/write-follow-ups.js';
import type { Member, Membership } from '../../src/protocol/cluster-types.js';
import type { PartitionHolder, RepairPartitionRef } from '../../src/repair/partition-sync.js';
import type { StoredRecord } from '../../src/storage/repository.js';

const member = (name: string): Member => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state: 'Joined' });
const TABLE: Membership = { epoch: 3, members: ['a', 'b', 'c'].map(member), change: undefined };
const record = (id: string, partition = 1): StoredRecord => ({ stream: 't/c/s', partition, timestamp: 1, writeId: id, value: `{"id":"${id}"}` });

function receipts(clock: { now: number }, keysMax = 1_000): RecentReceipts {
  return new RecentReceipts({ windowMs: 300, keptMs: 10_000, keysMax, now: () => clock.now, keyOf: (_repo, each) => each.writeId });
}

/**
 * The coordinator (no owner of partition 1) sent x to both owners and died: the first stored
 * it, the second never got it. The first owner's follow-ups, with x received from it.
 */
function coordinatorDiedMidWrite() {
  const [first, second] = ownersOf(TABLE, { partition: 1, replicas: 2 }) as [string, string];
  const coordinator = ['a', 'b', 'c'].find((name) => name !== first && name !== second)!;
  const held = new Map<string, StoredRecord[]>([[first, [record('x')]], [second, []]]);
  const holder = (name: string): PartitionHolder => ({
    name,
    digest: async () => [],
    keys: async () => [],
    records: async (part: RepairPartitionRef, keys) => held.get(name)!.filter((each) => each.partition === part.partition && keys.includes(each.writeId)),
    store: async (_part, _replicas, records) => void held.get(name)!.push(...records),
  });
  let pass: () => void = () => undefined;
  let coordinatorUp = true;
  const clock = { now: 0 };
  const followUps = new WriteFollowUps({
    localName: first, membership: () => TABLE, available: (node) => node !== coordinator || coordinatorUp, holder,
    keyOf: (_repo, each) => each.writeId, storage: { add: () => ({ key: 'k', operations: [] }), remove: () => [] }, committer: { commit: async () => undefined }, stored: [],
    receipts: receipts(clock),
    timers: { now: () => clock.now, setTimeout: () => ({ cancel: () => undefined }), setInterval: (each) => ((pass = each), { cancel: () => undefined }) },
    intervalMs: 1_000, log: pino({ level: 'silent' }),
  });
  followUps.start();
  followUps.received(coordinator, 'ssr', 2, [record('x')]);
  return {
    followUps,
    coordinator,
    pass: () => pass(),
    setCoordinatorUp: (up: boolean) => void (coordinatorUp = up),
    secondHolds: () => held.get(second)!.map((each) => each.writeId),
  };
}

describe('recent receipts - what a dead coordinator may have left on one owner', () => {
  it('keeps the window before a sender’s newest write, one part per partition', () => {
    const clock = { now: 0 };
    const kept = receipts(clock);
    kept.add('a', 'ssr', 2, [record('old')]);
    clock.now = 1_000;
    kept.add('a', 'ssr', 2, [record('x'), record('y', 2)]);
    clock.now = 1_200;
    kept.add('a', 'ssr', 2, [record('z')]);
    kept.add('b', 'tsr', 3, [record('w')]);
    // 'old' is more than a window before a's newest write: no write of it can still be in flight.
    expect(kept.take('a')).toEqual([
      { repo: 'ssr', stream: 't/c/s', partition: 1, replicas: 2, keys: ['x', 'z'] },
      { repo: 'ssr', stream: 't/c/s', partition: 2, replicas: 2, keys: ['y'] },
    ]);
    expect(kept.take('a')).toEqual([]);
    expect(kept.senders()).toEqual(['b']);
    // A sender never seen unavailable is forgotten after keptMs.
    clock.now = 20_000;
    expect(kept.senders()).toEqual([]);
  });

  it('keeps at most keysMax keys, the oldest going first', () => {
    const clock = { now: 0 };
    const kept = receipts(clock, 3);
    kept.add('a', 'ssr', 2, [record('1'), record('2')]);
    clock.now = 10;
    kept.add('b', 'ssr', 2, [record('3'), record('4')]);
    expect(kept.take('a')).toEqual([]);
    expect(kept.take('b').flatMap((part) => part.keys)).toEqual(['3', '4']);
    expect(kept.dropped()).toBe(1);
    expect(kept.dropped()).toBe(0);
  });

  it('an owner that stored a write of a coordinator killed mid-write makes the other owners whole', async () => {
    const scene = coordinatorDiedMidWrite();
    // While the coordinator answers, its writes are its own to follow up: nothing is noted.
    scene.pass();
    expect(scene.followUps.pending()).toBe(0);
    scene.setCoordinatorUp(false);
    scene.pass();
    await vi.waitFor(() => expect(scene.secondHolds()).toEqual(['x']));
    await vi.waitFor(() => expect(scene.followUps.pending()).toBe(0));
  });

  it('a coordinator taken for unavailable and back before the next pass is still followed up', async () => {
    // kill -9 breaks the coordinator's connections, so its owners take it for unavailable at
    // once; restarted within a pass, it answers again before the pass looks.
    const scene = coordinatorDiedMidWrite();
    scene.followUps.writerUnavailable(scene.coordinator);
    expect(scene.followUps.pending()).toBe(1);
    scene.pass();
    await vi.waitFor(() => expect(scene.secondHolds()).toEqual(['x']));
    await vi.waitFor(() => expect(scene.followUps.pending()).toBe(0));
  });
});
