// Writes of unknown outcome (docs/cluster.md): a record whose write failed but that one owner
// may hold is noted by the router, durably before the failure is answered, and once every
// owner answers the owners are made to agree on the records noted, without the repair sweep.
// Nothing that no owner stored is ever created, and a node killed before its follow-ups ran
// runs them after its restart.

import { pino } from 'pino';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ownersOf } from '../../src/cluster-core/placement.js';
import { PartitionRouter, type HintKeeping, type ReplicaWrites } from '../../src/cluster/partition-router.js';
import { ReplicaWriteError } from '../../src/cluster/replica-writer.js';
import { FollowUpStore } from '../../src/cluster/follow-up-store.js';
import type { Committer } from '../../src/cluster/hint-keeper.js';
import { FOLLOW_UP_KEYS_MAX, WriteFollowUps, type FollowUpStorage, type StoredFollowUp, type UncertainWrites, type WriteFollowUpsDeps } from '../../src/cluster/write-follow-ups.js';
import type { FollowUpPart } from '../../src/cluster/write-messages.js';
import { Database } from '../../src/storage/database.js';
import { GroupCommitter } from '../../src/storage/group-commit.js';
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

/** A node's database as far as follow-ups go: what survives a kill is what was committed. */
function memoryDisk(): { storage: FollowUpStorage; committer: Committer; entries: Map<string, FollowUpPart>; stored(): StoredFollowUp[]; commits: number } {
  const entries = new Map<string, FollowUpPart>();
  let sequence = 0;
  const disk = {
    entries,
    commits: 0,
    storage: {
      add: (part: FollowUpPart) => {
        const key = `follow-up/${sequence++}`;
        return { key, operations: [() => void entries.set(key, structuredClone(part))] };
      },
      remove: (keys: readonly string[]) => keys.map((key) => () => void entries.delete(key)),
    },
    committer: {
      commit: async (operations: readonly unknown[]) => {
        disk.commits += 1;
        for (const apply of operations as Array<() => void>) apply();
      },
    },
    stored: () => [...entries].map(([key, part]) => ({ key, part: structuredClone(part) })),
  };
  return disk;
}

/** Timers whose interval runs only when the test ticks. */
function manualTimers(): { timers: Timers; tick(): void } {
  let run: () => void = () => undefined;
  return {
    timers: { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: (each) => ((run = each), { cancel: () => undefined }) },
    tick: () => run(),
  };
}

function followUpsOver(holders: Map<string, PartitionHolder>, disk: ReturnType<typeof memoryDisk>, timers: Timers, overrides: Partial<WriteFollowUpsDeps> = {}): WriteFollowUps {
  return new WriteFollowUps({
    localName: 'c', membership: () => TABLE, available: () => true, timers, intervalMs: 1_000, log: pino({ level: 'silent' }),
    holder: (node) => holders.get(node)!,
    keyOf: (_repo, each) => each.writeId,
    storage: disk.storage, committer: disk.committer, stored: disk.stored(),
    ...overrides,
  });
}

async function settle(followUps: WriteFollowUps, tick: () => void): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (followUps.pending() > 0 && Date.now() < deadline) {
    tick();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const SSR_PART = { repo: 'ssr' as const, stream: 't/c/s', partition: 1 };

describe('write follow-ups - writes of unknown outcome', () => {
  it('the router notes a failed record whose owner write was sent and not answered, not one never sent', async () => {
    const noted: string[] = [];
    const uncertain: UncertainWrites = { note: async (_repo, _replicas, records) => void noted.push(...records.map((each) => `${each.stream}/${each.partition}/${each.writeId}`)) };
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
    expect(noted).toEqual(['t/c/s/1/x']);
    // Both never sent: nothing may sit anywhere, nothing is noted.
    const neverSent = new PartitionRouter(() => [first, second], { write: async (node) => { throw new ReplicaWriteError(node, 'down', { sent: false }); } }, hints, uncertain);
    await neverSent.write('ssr', POLICY, [record('y')]);
    expect(noted).toEqual(['t/c/s/1/x']);
  });

  it('the failure is answered only once its note is durable, and a write that succeeds writes no note', async () => {
    const disk = memoryDisk();
    const { timers } = manualTimers();
    const followUps = followUpsOver(new Map(), disk, timers);
    const [first, second] = ownersOf(TABLE, { partition: 1, replicas: 2 }) as [string, string];
    // The first owner stored it, the second timed out, and no node could keep its hint.
    const writer: ReplicaWrites = { write: async (node) => { if (node === second) throw new ReplicaWriteError(node, 'timed out', { sent: true }); } };
    const noHint: HintKeeping = { keep: async (_repo, wanted) => new Map(wanted.map((want) => [want.position, 'no other node could keep a hint'])) };
    const failures = await new PartitionRouter(() => [first, second], writer, noHint, followUps).write('ssr', POLICY, [record('x'), record('y', 2)]);
    expect(failures.size).toBe(2);
    // Answered after one commit holding both partitions' notes, each with the key of its record.
    expect(disk.commits).toBe(1);
    expect([...disk.entries.values()].map((part) => `${part.partition}:${part.keys!.join(',')}`).sort()).toEqual(['1:x', '2:y']);
    const ok: ReplicaWrites = { write: async () => undefined };
    await new PartitionRouter(() => [first, second], ok, noHint, followUps).write('ssr', POLICY, [record('z')]);
    expect(disk.commits).toBe(1);
  });

  it('a node killed between the note and the exchange makes the owners whole after its restart', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    holders.get(owners[1]!)!.store(SSR_PART, 2, [record('x')]);
    const disk = memoryDisk();
    const before = manualTimers();
    // An owner is down: nothing can be exchanged before the kill.
    const noting = followUpsOver(holders, disk, before.timers, { available: (node) => !owners.includes(node) });
    noting.start();
    await noting.note('ssr', 2, [record('x')]);
    before.tick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(holders.get(owners[0]!)!.ids()).toEqual([]);
    // kill -9: the instance is gone, its memory with it; the database keeps the note.
    noting.stop();
    expect(disk.entries.size).toBe(1);
    const after = manualTimers();
    const restarted = followUpsOver(holders, disk, after.timers);
    expect(restarted.pending()).toBe(1);
    restarted.start();
    await settle(restarted, after.tick);
    expect(owners.map((owner) => holders.get(owner)!.ids())).toEqual([['x'], ['x']]);
    // Done: the note is deleted, and a later restart has nothing to follow up.
    await vi.waitFor(() => expect(disk.entries.size).toBe(0));
    expect(followUpsOver(holders, disk, manualTimers().timers).pending()).toBe(0);
  });

  it('a note whose commit failed is written again at the next pass, so a kill after the disk recovers keeps it', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    holders.get(owners[1]!)!.store(SSR_PART, 2, [record('x')]);
    const disk = memoryDisk();
    let failing = true;
    const committer: Committer = {
      commit: async (operations) => {
        if (failing) throw new Error('EIO: simulated write failure');
        await disk.committer.commit(operations);
      },
    };
    const timers = manualTimers();
    // An owner is down: the note waits, and nothing is exchanged.
    const noting = followUpsOver(holders, disk, timers.timers, { committer, available: (node) => !owners.includes(node) });
    noting.start();
    await noting.note('ssr', 2, [record('x')]);
    expect(disk.entries.size).toBe(0);
    failing = false;
    timers.tick();
    await vi.waitFor(() => expect(disk.entries.size).toBe(1));
    // kill -9: the restarted node follows the write up.
    noting.stop();
    expect(followUpsOver(holders, disk, manualTimers().timers).pending()).toBe(1);
  });

  it('a record this node stores while its other owner is down is noted before it is stored, and the note dropped once acknowledged', async () => {
    const [first, second] = ownersOf(TABLE, { partition: 1, replicas: 2 }) as [string, string];
    const disk = memoryDisk();
    const { timers } = manualTimers();
    let secondUp = false;
    const followUps = followUpsOver(new Map(), disk, timers, { localName: first, available: (node) => node !== second || secondUp });
    const notesAtStore: number[] = [];
    const writer: ReplicaWrites = {
      write: async (node) => {
        if (node === second && !secondUp) throw new ReplicaWriteError(node, `${node} is down`, { sent: false });
        if (node === first) notesAtStore.push(disk.entries.size);
      },
    };
    const hinted: HintKeeping = { keep: async () => new Map() };
    const router = new PartitionRouter(() => [first, second], writer, hinted, followUps);
    expect(await router.write('ssr', POLICY, [record('x')])).toEqual(new Map());
    // Durable before the store; dropped once the record is acknowledged (its hint kept).
    expect(notesAtStore).toEqual([1]);
    await vi.waitFor(() => expect(disk.entries.size).toBe(0));
    expect(followUps.pending()).toBe(0);
    // Every owner up: nothing is written beside the records.
    secondUp = true;
    const commits = disk.commits;
    await router.write('ssr', POLICY, [record('y')]);
    expect(disk.commits).toBe(commits);
  });

  it('a node killed after storing a record its other owner is down for, before its hint, makes the owners whole after its restart', async () => {
    const [first, second] = ownersOf(TABLE, { partition: 1, replicas: 2 }) as [string, string];
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    const disk = memoryDisk();
    const noting = followUpsOver(holders, disk, manualTimers().timers, { localName: first, available: (node) => node !== second });
    const writer: ReplicaWrites = {
      write: async (node, _repo, _replicas, records) => {
        if (node === second) throw new ReplicaWriteError(node, `${node} is down`, { sent: false });
        await holders.get(node)!.store(SSR_PART, 2, records);
      },
    };
    // kill -9 while its hints are being kept: the write never returns.
    const killed: HintKeeping = { keep: () => new Promise(() => undefined) };
    void new PartitionRouter(() => [first, second], writer, killed, noting).write('ssr', POLICY, [record('x')]);
    await vi.waitFor(() => expect(holders.get(first)!.ids()).toEqual(['x']));
    noting.stop();
    const after = manualTimers();
    const restarted = followUpsOver(holders, disk, after.timers, { localName: first });
    restarted.start();
    await settle(restarted, after.tick);
    expect([first, second].map((owner) => holders.get(owner)!.ids())).toEqual([['x'], ['x']]);
  });

  it('makes the owners agree on the keys noted once every one answers, and creates nothing no owner stored', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    // x reached one owner only (its write to the other timed out before it was sent on); h is
    // there too, with a hint for the other owner that its replay will bring: not noted, it stays put.
    holders.get(owners[1]!)!.store(SSR_PART, 2, [record('x'), record('h')]);
    const { timers, tick } = manualTimers();
    let reachable = false;
    const followUps = followUpsOver(holders, memoryDisk(), timers, { available: (node) => reachable || !owners.includes(node) });
    followUps.start();
    await followUps.note('ssr', 2, [record('x'), record('gone'), record('nowhere', 2)]);
    expect(followUps.pending()).toBe(2);
    tick();
    await new Promise((resolve) => setTimeout(resolve, 10));
    // An owner does not answer yet: nothing moves, both wait.
    expect(holders.get(owners[0]!)!.ids()).toEqual([]);
    expect(followUps.pending()).toBe(2);
    reachable = true;
    await settle(followUps, tick);
    expect(owners.map((owner) => holders.get(owner)!.ids())).toEqual([['x'], ['h', 'x']]);
    // 'gone' and 'nowhere' were stored nowhere: nothing was created, and both are done.
    expect([...holders.values()].flatMap((holder) => holder.ids()).sort()).toEqual(['h', 'x', 'x']);
    expect(followUps.pending()).toBe(0);
  });

  it('keeps a note made while an exchange of its partition runs', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const inner = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first owner's read waits until the test has failed x a second time.
    const holders = new Map([...inner].map(([name, holder]): [string, PartitionHolder] => [name, name === owners[0] ? { ...holder, records: async (part, keys) => (await held, holder.records(part, keys)) } : holder]));
    const disk = memoryDisk();
    const { timers, tick } = manualTimers();
    const followUps = followUpsOver(holders, disk, timers);
    followUps.start();
    // x failed, stored nowhere; the exchange starts and reads the second owner: nothing.
    await followUps.note('ssr', 2, [record('x')]);
    tick();
    await new Promise((resolve) => setTimeout(resolve, 5));
    // A retry of x through this node fails again, after the second owner stored it.
    inner.get(owners[1]!)!.store(SSR_PART, 2, [record('x')]);
    await followUps.note('ssr', 2, [record('x')]);
    release();
    await settle(followUps, tick);
    // The first exchange found x nowhere; the second note, kept, brought it to the first owner.
    expect(owners.map((owner) => inner.get(owner)!.ids())).toEqual([['x'], ['x']]);
    await vi.waitFor(() => expect(disk.entries.size).toBe(0));
  });

  it('past its key limit a partition is compared whole', async () => {
    const owners = ownersOf(TABLE, { partition: 1, replicas: 2 });
    const holders = new Map(['a', 'b', 'c'].map((name) => [name, memoryHolder(name, [])]));
    holders.get(owners[1]!)!.store(SSR_PART, 2, [record('unnoted')]);
    const disk = memoryDisk();
    const { timers, tick } = manualTimers();
    const followUps = followUpsOver(holders, disk, timers);
    await followUps.note('ssr', 2, Array.from({ length: FOLLOW_UP_KEYS_MAX }, (_, index) => record(`k${index}`)));
    await followUps.note('ssr', 2, [record('one-more')]);
    // Both notes became one of the whole partition, in the database too.
    expect([...disk.entries.values()].map((part) => part.keys?.length)).toEqual([FOLLOW_UP_KEYS_MAX, undefined]);
    followUps.start();
    await settle(followUps, tick);
    expect(holders.get(owners[0]!)!.ids()).toEqual(['unnoted']);
    await vi.waitFor(() => expect(disk.entries.size).toBe(0));
  });

  it('a node that has left hands what it noted to a member, and keeps it until one takes it', async () => {
    const left: Membership = { ...TABLE, members: TABLE.members.map((each) => (each.name === 'c' ? { ...each, state: 'Left' } : each)) };
    const disk = memoryDisk();
    const { timers, tick } = manualTimers();
    const taken: FollowUpPart[][] = [];
    let takes = false;
    const followUps: WriteFollowUps = followUpsOver(new Map(), disk, timers, {
      membership: () => left,
      handOver: async () => {
        if (!takes) return false;
        const parts = followUps.pendingParts();
        taken.push(parts);
        await followUps.forget(parts);
        return true;
      },
    });
    followUps.start();
    await followUps.note('ssr', 2, [record('x'), record('y', 2)]);
    tick();
    await new Promise((resolve) => setTimeout(resolve, 5));
    // No member takes them yet: they wait, durably.
    expect(followUps.pending()).toBe(2);
    takes = true;
    await settle(followUps, tick);
    expect(taken.flat().map((part) => `${part.partition}:${part.keys!.join(',')}`).sort()).toEqual(['1:x', '2:y']);
    await vi.waitFor(() => expect(disk.entries.size).toBe(0));
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
    const { timers, tick } = manualTimers();
    const followUps = followUpsOver(holders, memoryDisk(), timers);
    followUps.start();
    await followUps.noteParts(Array.from({ length: 8 }, (_, partition) => ({ repo: 'ssr', stream: 't/c/s', partition, replicas: 2 })));
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

describe('write follow-ups - the store in the database', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps notes across a reopen, deletes them, and drops an entry that is not a note', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-follow-ups-'));
    dirs.push(dir);
    const log = pino({ level: 'silent' });
    let database = await Database.open(dir, { nodeName: 'n1' });
    let { storage, stored } = await FollowUpStore.open(database, log);
    expect(stored).toEqual([]);
    const committer = new GroupCommitter(database);
    const keyed = storage.add({ repo: 'tsr', stream: 't/c/s', partition: 7, replicas: 3, keys: ['k1', 'k2'] });
    const whole = storage.add({ repo: 'ssr', stream: 't/c/s', partition: 0, replicas: 2 });
    await committer.commit([...keyed.operations, ...whole.operations]);
    await database.batch([{ type: 'put', sublevel: database.local, key: 'follow-up/zz', value: '{"repo":"nope"}' }], { sync: true });
    await database.close();
    database = await Database.open(dir, { nodeName: 'n1' });
    ({ storage, stored } = await FollowUpStore.open(database, log));
    expect(stored).toEqual([
      { key: keyed.key, part: { repo: 'tsr', stream: 't/c/s', partition: 7, replicas: 3, keys: ['k1', 'k2'] } },
      { key: whole.key, part: { repo: 'ssr', stream: 't/c/s', partition: 0, replicas: 2 } },
    ]);
    // A new note never reuses a key in use.
    expect(storage.add({ repo: 'ssr', stream: 't/c/s', partition: 1, replicas: 2 }).key > whole.key).toBe(true);
    await new GroupCommitter(database).commit(storage.remove([keyed.key, whole.key]));
    await database.close();
    database = await Database.open(dir, { nodeName: 'n1' });
    expect((await FollowUpStore.open(database, log)).stored).toEqual([]);
    expect(await database.local.keys({ gte: 'follow-up/', lt: 'follow-up0' }).all()).toEqual([]);
    await database.close();
  });
});
