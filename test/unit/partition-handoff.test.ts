// A joining node's final sync (docs/cluster.md, "Changes complete only when nothing is
// missing") goes partition by partition and owner by owner: an owner that blips fails only
// its own steps, and the next round goes on from there instead of starting over.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { nextOwnersOf, ownersOf, planChange } from '../../src/cluster-core/placement.js';
import { PartitionHandOff } from '../../src/cluster/partition-handoff.js';
import type { Member, Membership, NodeState, Slot } from '../../src/protocol/cluster-types.js';
import type { Timers } from '../../src/lib/timers.js';

const member = (name: string, state: NodeState = 'Joined'): Member => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state });
const SLOTS: Slot[] = Array.from({ length: 16 }, (_, partition) => ({ partition, replicas: 2 }));

/** c joins a and b; every transfer is complete, only the final sync is left. */
function joining(): Membership {
  const draft: Membership = { epoch: 4, members: [member('a'), member('b'), member('c', 'Pending')], change: { id: 'e4-join-c', kind: 'join', node: 'c', slots: SLOTS, transfers: [] } };
  const transfers = planChange({ membership: draft, available: () => true, kvSource: 'a' }).map((plan) => ({ ...plan, complete: true, percentComplete: 100 }));
  return { ...draft, members: [member('a'), member('b'), member('c', 'Joining')], change: { ...draft.change!, transfers } };
}

describe('partition hand-off - a final sync that goes on where it was', () => {
  it('retries only the steps of the owner that was out of reach, then reports the sync done once', async () => {
    const membership = joining();
    const gained = SLOTS.filter((slot) => nextOwnersOf(membership, slot).includes('c') && !ownersOf(membership, slot).includes('c'));
    expect(gained.length).toBeGreaterThan(0);
    const calls: string[] = [];
    let bDown = true;
    const finalSynced: string[] = [];
    let tick: () => void = () => undefined;
    const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: (run) => ((tick = run), { cancel: () => undefined }) };
    const handOff = new PartitionHandOff({
      localName: 'c', membership: () => membership, timers, log: pino({ level: 'silent' }),
      streams: () => [{ key: 't/c/s', repo: 'ssr', replicas: 2 }],
      dropPartition: async () => undefined,
      hintTargets: () => [],
      handOff: async () => 0,
      catchUp: async (part, _replicas, owners) => {
        calls.push(`${part.partition}<${owners.join(',')}`);
        if (owners.includes('b') && bDown) throw new Error('b is unavailable');
        return 1;
      },
      holds: async () => true,
      finalSynced: (changeId) => finalSynced.push(changeId),
      graceMs: 0,
      retryMs: 1_000,
    });
    handOff.start();
    const round = async () => {
      tick();
      await new Promise((resolve) => setTimeout(resolve, 20));
    };
    await round();
    const steps = gained.flatMap((slot) => ownersOf(membership, slot).map((owner) => `${slot.partition}<${owner}`));
    expect(calls.sort()).toEqual([...steps].sort());
    expect(finalSynced).toEqual([]);
    // b is back: only b's steps are made again, and the sync is done.
    calls.length = 0;
    bDown = false;
    await round();
    expect(calls.sort()).toEqual(steps.filter((step) => step.endsWith('<b')).sort());
    expect(finalSynced).toEqual(['e4-join-c']);
    handOff.stop();
  });
});
