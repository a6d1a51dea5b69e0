// The refill a damaged node runs before it serves reads again: it ends once the definitions are
// read back and every owned partition is filled, and a node that has left the cluster has
// nothing to refill (the chaos suite found leavers that kept trying, refused by every peer, and
// never settled).

import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { Member, Membership, NodeState } from '../../src/protocol/cluster-types.js';
import { RepairService, type Damage } from '../../src/repair/repair-service.js';
import type { LocalPartitions, PeerPartitions } from '../../src/repair/partition-sync.js';
import type { Timers } from '../../src/timers.js';

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
