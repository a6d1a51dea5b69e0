// Writes of unknown outcome (docs/cluster.md): a record whose write failed but that one owner
// may hold is noted by the router, and once every owner answers the owners are made to
// agree, without the repair sweep. Nothing that no owner stored is ever created.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ownersOf } from '../../src/cluster-core/placement.js';
import { PartitionRouter, type HintKeeping, type ReplicaWrites } from '../../src/cluster/partition-router.js';
import { ReplicaWriteError } from '../../src/cluster/replica-writer.js';
import { WriteFollowUps, type UncertainWrites } from '../../src/cluster/write-follow-ups.js';
import type { Member, Membership } from '../../src/protocol/cluster-types.js';
import { exchangeBetween, type PartitionHolder, type RepairPartitionRef } from '../../src/repair/partition-sync.js';
import { digestKeys, segmentOf } from '../../src/repair/key-digest.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import type { Timers } from '../../src/lib/timers.js';

const POLICY = { replicas: 2, ring_size: 8, hash_payload: { bytes: 128 } };
const member = (name: string): Member => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state: 'Joined' });
const TABLE: Membership = { epoch: 3, members: ['a', 'b', 'c'].map(member), change: undefined };
const record = (id: string, partition = 1): StoredRecord => ({ stream: 't/c/s', partition, timestamp: 1, writeId: id, value: `{"id":"${id}"}` });

/** A node's records of one stream, as a holder an exchange reads and fills. */
function memoryHolder(name: string, records: StoredRecord[]): PartitionHolder & { ids(): string[] } {
  const keyOf = (each: StoredRecord) => each.writeId;
  const inPart = (part: RepairPartitionRef) => records.filter((each) => each.stream === part.stream && each.partition === part.partition);
  return {
    name,
    ids: () => records.map(keyOf).sort(),
    digest: async (part) => digestKeys(inPart(part).map(keyOf)),
    keys: async (part, segments) => inPart(part).map(keyOf).filter((key) => segments.includes(segmentOf(key))),
    records: async (part, keys) => inPart(part).filter((each) => keys.includes(keyOf(each))),
    store: async (_part, _replicas, stored) => void records.push(...stored.filter((each) => !records.some((known) => known.writeId === each.writeId))),
  };
}

describe('write follow-ups - writes of unknown outcome', () => {
  it('the router notes a failed record whose owner write was sent and not answered, not one never sent', async () => {
    const noted: string[] = [];
    const uncertain: UncertainWrites = { note: (_repo, stream, partition) => noted.push(`${stream}/${partition}`) };
    const [first, second] = ownersOf(TABLE, { partition: 1, replicas: 2 }) as [string, string];
    // The first owner's write timed out (it may have landed); the second is known down (never sent).
    const writer: ReplicaWrites = {
      write: async (node) => {
        throw new ReplicaWriteError(node, `${node} failed`, { sent: node === first });
      },
    };
    const hints: HintKeeping = { keep: async () => new Map() };
    const router = new PartitionRouter(() => [first, second], writer, hints, uncertain);
    const failures = await router.write('ssr', POLICY, [record('x')]);
    expect(failures.get(0)).toMatch(/no owner of its partition stored it/);
    expect(noted).toEqual(['t/c/s/1']);
    // Both never sent: nothing may sit anywhere, nothing is noted.
    const neverSent = new PartitionRouter(() => [first, second], { write: async (node) => { throw new ReplicaWriteError(node, 'down', { sent: false }); } }, hints, uncertain);
    await neverSent.write('ssr', POLICY, [record('y')]);
    expect(noted).toEqual(['t/c/s/1']);
  });

  it('makes the owners agree once every one answers, and creates nothing no owner stored', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    // The record reached one owner only (its write to the other timed out before it was sent on).
    holders.get(owners[1]!)!.store({ repo: 'ssr', stream: 't/c/s', partition: 1 }, 2, [record('x')]);
    let tick: () => void = () => undefined;
    const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: (run) => ((tick = run), { cancel: () => undefined }) };
    let reachable = false;
    const followUps = new WriteFollowUps({
      localName: 'c', membership: () => TABLE, available: (node) => reachable || !owners.includes(node), timers, intervalMs: 1_000, log: pino({ level: 'silent' }),
      holder: (node) => holders.get(node)!,
    });
    followUps.start();
    followUps.note('ssr', 't/c/s', 1, 2);
    followUps.note('ssr', 't/c/s', 2, 2);
    expect(followUps.pending()).toBe(2);
    tick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // An owner does not answer yet: nothing moves, both wait.
    expect(holders.get(owners[0]!)!.ids()).toEqual([]);
    expect(followUps.pending()).toBe(2);
    reachable = true;
    tick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(owners.map((owner) => holders.get(owner)!.ids())).toEqual([['x'], ['x']]);
    // Partition 2 had nothing anywhere: nothing was created, and it is done too.
    expect([...holders.values()].flatMap((holder) => holder.ids())).toEqual(['x', 'x']);
    expect(followUps.pending()).toBe(0);
  });

  it('makes several partitions whole at once', async () => {
    let inFlight = 0;
    let most = 0;
    const holder = (name: string): PartitionHolder => {
      const inner = memoryHolder(name, []);
      return {
        ...inner,
        digest: async (part) => {
          inFlight += 1;
          most = Math.max(most, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 2));
          inFlight -= 1;
          return inner.digest(part);
        },
      };
    };
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, holder(name)]));
    let tick: () => void = () => undefined;
    const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: (run) => ((tick = run), { cancel: () => undefined }) };
    const followUps = new WriteFollowUps({
      localName: 'c', membership: () => TABLE, available: () => true, timers, intervalMs: 1_000, log: pino({ level: 'silent' }),
      holder: (node) => holders.get(node)!,
    });
    followUps.start();
    for (let partition = 0; partition < 8; partition += 1) followUps.note('ssr', 't/c/s', partition, 2);
    tick();
    const deadline = Date.now() + 2_000;
    while (followUps.pending() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(followUps.pending()).toBe(0);
    // Two digests per exchange (one per holder), several exchanges at once.
    expect(most).toBeGreaterThan(2);
  });

  it('an exchange gives each holder what only the other has', async () => {
    const a = memoryHolder('a', [record('1'), record('2')]);
    const b = memoryHolder('b', [record('2'), record('3')]);
    const moved = await exchangeBetween(a, b, { repo: 'ssr', stream: 't/c/s', partition: 1 }, 2);
    expect(moved).toBe(2);
    expect(a.ids()).toEqual(['1', '2', '3']);
    expect(b.ids()).toEqual(['1', '2', '3']);
  });
});
