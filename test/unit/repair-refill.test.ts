// The refill a damaged node runs before it serves reads again: it ends once the definitions are
// read back and every owned partition is filled, and a node that has left the cluster has
// nothing to refill (the chaos suite found leavers that kept trying, refused by every peer, and
// never settled). Hints this node kept for other owners live in the same database: a refill
// cannot bring them back, so the owners of every partition compare what they hold (the chaos
// suite found acknowledged records missing on one owner after settling, their hint lost with
// a damaged node that did not own them).

import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { writeOwners } from '../../src/cluster-core/placement.js';
import { WriteFollowUps } from '../../src/cluster/write-follow-ups.js';
import type { Member, Membership, NodeState } from '../../src/protocol/cluster-types.js';
import { digestKeys, segmentOf } from '../../src/repair/key-digest.js';
import { RepairService, type Damage, type RepairStream } from '../../src/repair/repair-service.js';
import type { LocalPartitions, PartitionHolder, PeerPartitions, RepairPartitionRef } from '../../src/repair/partition-sync.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import type { Timers } from '../../src/lib/timers.js';

const DAMAGE: Damage = { reason: 'the newest data file was cut short', sinceMs: 1 };

function member(name: string, state: NodeState): Member {
  return { name, publicKey: 'key', address: '127.0.0.1', port: 1, httpPort: 2, zone: 'default', state, incarnation: 1 } as Member;
}

function service(selfState: NodeState, refillDefinitions: () => Promise<void>, epoch = 3) {
  const membership: Membership = { epoch, members: [member('n1', 'Joined'), member('n2', 'Joined'), member('n4', selfState)], change: undefined };
  const announced: boolean[] = [];
  const persisted: Array<Damage | undefined> = [];
  const retries: number[] = [];
  const timers: Timers = {
    now: () => 0,
    setTimeout: (_run, ms) => {
      retries.push(ms);
      return { cancel: () => {} };
    },
    setInterval: () => ({ cancel: () => {} }),
  };
  const unused = () => Promise.reject(new Error('no partition is owned in this test'));
  const repair = new RepairService({
    localName: 'n4',
    membership: () => membership,
    available: () => true,
    streams: () => [],
    local: { digest: unused, keys: unused, records: unused, store: unused } as LocalPartitions,
    peers: { digest: unused, keys: unused, fetch: unused, push: unused } as PeerPartitions,
    refillDefinitions,
    persistDamage: async (damage) => {
      persisted.push(damage);
    },
    announceDamage: (damaged) => void announced.push(damaged),
    followUpAll: () => undefined,
    intervalMs: 0,
    pacingMs: 0,
    log: pino({ level: 'silent' }),
    timers,
    wallClock: () => 1_000,
  });
  return { repair, persisted, retries, announced };
}

describe('repair - refill of damaged data', () => {
  it('serves reads again once the definitions are read back and the owned partitions filled', async () => {
    const { repair, persisted, announced } = service('Joined', () => Promise.resolve());
    repair.start(DAMAGE);
    expect(repair.damaged()).toEqual(DAMAGE);
    await vi.waitFor(() => expect(repair.damaged()).toBeUndefined());
    expect(persisted).toEqual([undefined]);
    // The core hears both, so no coordinator waives a leaver while this node was damaged.
    expect(announced).toEqual([true, false]);
  });

  it('waits for a table when the damage took it (epoch 0): nothing is owned yet, nothing cleared', async () => {
    const refill = vi.fn(() => Promise.resolve());
    const { repair, persisted, retries } = service('Pending', refill, 0);
    repair.start(DAMAGE);
    await vi.waitFor(() => expect(retries).toEqual([2_000]));
    expect(repair.damaged()).toEqual(DAMAGE);
    expect(persisted).toEqual([]);
    expect(refill).not.toHaveBeenCalled();
  });

  it('keeps the damage and tries again while no peer gives the definitions back', async () => {
    const refill = vi.fn(() => Promise.reject(new Error('no peer answered')));
    const { repair, persisted, retries } = service('Joined', refill);
    repair.start(DAMAGE);
    await vi.waitFor(() => expect(retries).toEqual([2_000]));
    expect(repair.damaged()).toEqual(DAMAGE);
    expect(persisted).toEqual([]);
  });

  it('clears the damage of a node that has left: it owns nothing and no peer answers it', async () => {
    const refill = vi.fn(() => Promise.reject(new Error('peer refused: sender has left')));
    const { repair, persisted, retries } = service('Left', refill);
    repair.start(DAMAGE);
    await vi.waitFor(() => expect(repair.damaged()).toBeUndefined());
    expect(persisted).toEqual([undefined]);
    expect(refill).not.toHaveBeenCalled();
    expect(retries).toEqual([]);
  });
});

/** Each node's records, by name: what the refill and the follow-ups read and fill. */
class MemoryNodes {
  private readonly held = new Map<string, StoredRecord[]>();

  of(node: string): StoredRecord[] {
    let records = this.held.get(node);
    if (records === undefined) this.held.set(node, (records = []));
    return records;
  }

  inPart(node: string, part: RepairPartitionRef): StoredRecord[] {
    return this.of(node).filter((each) => each.stream === part.stream && each.partition === part.partition);
  }

  store(node: string, records: readonly StoredRecord[]): void {
    const mine = this.of(node);
    for (const record of records) if (!mine.some((known) => known.writeId === record.writeId)) mine.push(record);
  }

  holder(node: string): PartitionHolder {
    return {
      name: node,
      digest: async (part) => digestKeys(this.inPart(node, part).map((each) => each.writeId)),
      keys: async (part, segments) => this.inPart(node, part).map((each) => each.writeId).filter((key) => segments.includes(segmentOf(key))),
      records: async (part, keys) => this.inPart(node, part).filter((each) => keys.includes(each.writeId)),
      store: async (_part, _replicas, records) => this.store(node, records),
    };
  }

  local(node: string): LocalPartitions {
    const holder = this.holder(node);
    return { digest: holder.digest, keys: async (part) => this.inPart(node, part).map((each) => each.writeId), records: holder.records, store: async (_repo, records) => this.store(node, records) };
  }

  peers(): PeerPartitions {
    return {
      digest: async (peer, part) => Array.from(await this.holder(peer).digest(part)),
      keys: (peer, part, segments) => this.holder(peer).keys(part, segments),
      fetch: (peer, part, keys) => this.holder(peer).records(part, keys),
      push: (peer, part, replicas, records) => this.holder(peer).store(part, replicas, records),
    };
  }
}

describe('repair - hints a damaged node may have lost', () => {
  it('makes the owners of every partition agree, also of partitions the damaged node does not own', async () => {
    const membership: Membership = { epoch: 5, members: ['n1', 'n2', 'n3', 'n4'].map((name) => member(name, 'Joined')), change: undefined };
    const stream: RepairStream = { key: 't/c/metrics', repo: 'tsr', replicas: 2, ringSize: 8 };
    // A partition n4 does not own: n4 coordinated the write, stored it on one owner and kept
    // the hint for the other, and the damage took the hint.
    const partition = [...Array(stream.ringSize).keys()].find((each) => !writeOwners(membership, { partition: each, replicas: 2 }).includes('n4'))!;
    const [stored, lacking] = writeOwners(membership, { partition, replicas: 2 }) as [string, string];
    const record: StoredRecord = { stream: stream.key, partition, timestamp: 1, writeId: 'w3-25d', value: '{"id":"w3-25d"}' };
    const nodes = new MemoryNodes();
    nodes.store(stored, [record]);
    let tick: () => void = () => undefined;
    const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: (run) => ((tick = run), { cancel: () => undefined }) };
    const log = pino({ level: 'silent' });
    const followUps = new WriteFollowUps({
      localName: 'n4', membership: () => membership, available: () => true, holder: (node) => nodes.holder(node), timers, intervalMs: 1_000, log,
      keyOf: (_repo, each) => each.writeId, storage: { add: () => ({ key: 'follow-up/0', operations: [] }), remove: () => [] }, committer: { commit: async () => undefined }, stored: [],
    });
    const repair = new RepairService({
      localName: 'n4', membership: () => membership, available: () => true, streams: () => [stream],
      local: nodes.local('n4'), peers: nodes.peers(),
      refillDefinitions: () => Promise.resolve(),
      persistDamage: async () => undefined,
      announceDamage: () => undefined,
      followUpAll: (streams) => {
        for (const each of streams) for (let at = 0; at < each.ringSize; at += 1) void followUps.noteParts([{ repo: each.repo, stream: each.key, partition: at, replicas: each.replicas }]);
      },
      intervalMs: 0, pacingMs: 0, log, timers, wallClock: () => 1_000,
    });
    followUps.start();
    repair.start(DAMAGE);
    await vi.waitFor(() => expect(repair.damaged()).toBeUndefined());
    // Settled means no follow-up waits (monitoring handoff: pendingSyncs); the refill alone left one.
    expect(followUps.pending()).toBe(stream.ringSize);
    tick();
    await vi.waitFor(() => expect(followUps.pending()).toBe(0));
    expect(nodes.of(lacking).map((each) => each.writeId)).toEqual(['w3-25d']);
    expect(nodes.of('n4')).toEqual([]);
  });
});
