// A joining or leaving node's final sync (docs/cluster.md, "Changes complete only when nothing is
// missing") goes partition by partition and owner by owner: an owner that blips fails only
// its own steps, and the next round goes on from there instead of starting over.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { nextOwnersOf, ownersOf, planChange } from '../../src/cluster-core/placement.js';
import { PartitionHandOff, type PartitionHandOffDeps } from '../../src/cluster/partition-handoff.js';
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

/** c leaves a, b and c; every transfer is complete, only the final hand-off is left. */
function leaving(): Membership {
  const draft: Membership = { epoch: 7, members: [member('a'), member('b'), member('c', 'Leaving')], change: { id: 'e7-leave-c', kind: 'leave', node: 'c', slots: SLOTS, transfers: [] } };
  const transfers = planChange({ membership: draft, available: () => true, kvSource: 'a' }).map((plan) => ({ ...plan, complete: true, percentComplete: 100 }));
  return { ...draft, members: [member('a'), member('b'), member('c', 'Leaving')], change: { ...draft.change!, transfers } };
}


/**
 * A started hand-off of `localName` under `membership`: one stream at replicas 2, every step
 * a no-op unless `deps` says otherwise. `tick()` runs a round; `until` waits for a condition.
 */
function started(membership: Membership, localName: string, deps: Partial<PartitionHandOffDeps> = {}) {
  const finalSynced: string[] = [];
  let tick: () => void = () => undefined;
  // Timeouts run (a round the table asks for: membershipChanged); the interval's rounds run on tick().
  const timers: Timers = {
    now: () => 0,
    setTimeout: (run, ms) => {
      const handle = setTimeout(run, ms);
      return { cancel: () => clearTimeout(handle) };
    },
    setInterval: (run) => ((tick = run), { cancel: () => undefined }),
  };
  const handOff = new PartitionHandOff({
    localName, membership: () => membership, timers, log: pino({ level: 'silent' }),
    streams: () => [{ key: 't/c/s', repo: 'ssr', replicas: 2 }],
    dropPartition: async () => undefined,
    hintTargets: () => [],
    handOff: async () => 0,
    catchUp: async () => 0,
    holds: async () => true,
    finalSynced: (changeId) => finalSynced.push(changeId),
    graceMs: 0,
    retryMs: 1_000,
    ...deps,
  });
  handOff.start();
  const until = async (done: () => boolean): Promise<void> => {
    const deadline = Date.now() + 2_000;
    while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { handOff, finalSynced, tick: () => tick(), until };
}

describe('partition hand-off - a leaving node\'s follow-ups of failed writes', () => {
  it('hands them to another member and leaves, or waits for them when none takes them', async () => {
    for (const taken of [true, false]) {
      let handedOver = 0;
      const { handOff, finalSynced, tick } = started(leaving(), 'c', {
        followUpsPending: () => 5,
        handOverFollowUps: async () => ((handedOver += 1), taken),
      });
      tick();
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(handedOver).toBe(1);
      expect(finalSynced).toEqual(taken ? ['e7-leave-c'] : []);
      handOff.stop();
    }
  });
});

describe('partition hand-off - a leaving node whose data awaits a refill', () => {
  it('hands off only once refilled, so that what its damage took reaches the next owners', async () => {
    let refilling = true;
    let handedOff = 0;
    const { handOff, finalSynced, tick, until } = started(leaving(), 'c', {
      refilling: () => refilling,
      handOff: async () => ((handedOff += 1), 0),
    });
    tick();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(handedOff).toBe(0);
    expect(finalSynced).toEqual([]);
    refilling = false;
    tick();
    await until(() => finalSynced.length > 0);
    expect(handedOff).toBeGreaterThan(0);
    expect(finalSynced).toEqual(['e7-leave-c']);
    handOff.stop();
  });
});

describe('partition hand-off - a partition dropped while a change is in flight', () => {
  it('is pushed to the owners the change gives it as well as to its owners now', async () => {
    // c joins a and b; e (not a member) once owned the partitions and drops them now.
    const membership = joining();
    const slot = SLOTS.find((each) => nextOwnersOf(membership, each).includes('c') && !ownersOf(membership, each).includes('c'))!;
    const pushedTo: string[][] = [];
    const dropped: number[] = [];
    const { handOff, tick, until } = started(membership, 'e', {
      dropPartition: async (_repo, _stream, partition) => void dropped.push(partition),
      handOff: async (_part, _replicas, owners) => {
        pushedTo.push([...owners]);
        return 0;
      },
    });
    handOff.schedule('ssr', [slot]);
    tick();
    await until(() => dropped.length > 0);
    expect(dropped).toEqual([slot.partition]);
    expect(pushedTo).toHaveLength(1);
    expect([...pushedTo[0]!].sort()).toEqual([...new Set([...ownersOf(membership, slot), ...nextOwnersOf(membership, slot)])].sort());
    expect(pushedTo[0]).toContain('c');
    handOff.stop();
  });
});

describe('partition hand-off - a final sync that goes on where it was', () => {
  it('reads each owner\'s digests of the steps\' partitions in one go, and a step without one reads its own', async () => {
    const membership = joining();
    const reads: string[] = [];
    const given: Array<{ step: string; digest: string | undefined }> = [];
    const { handOff, finalSynced, tick, until } = started(membership, 'c', {
      catchUp: async (part, _replicas, owners, theirs) => {
        given.push({ step: `${part.partition}<${owners.join(',')}`, digest: theirs?.get(owners[0]!) === undefined ? undefined : Array.from(theirs.get(owners[0]!)!).join() });
        return 0;
      },
      // a answers with each partition's number as its digest; b cannot be read at once.
      digests: async (owner, _repo, _stream, partitions) => {
        reads.push(`${owner}:${partitions.length}`);
        if (owner === 'b') throw new Error('b is busy');
        return new Map(partitions.map((partition) => [partition, [partition]]));
      },
    });
    tick();
    await until(() => finalSynced.length > 0);
    const gained = SLOTS.filter((slot) => nextOwnersOf(membership, slot).includes('c') && !ownersOf(membership, slot).includes('c'));
    const steps = gained.flatMap((slot) => ownersOf(membership, slot).map((owner) => ({ partition: slot.partition, owner })));
    expect(finalSynced).toEqual(['e4-join-c']);
    // One read per owner, naming every partition of its steps.
    expect(reads.sort()).toEqual(['a', 'b'].filter((owner) => steps.some((step) => step.owner === owner)).map((owner) => `${owner}:${steps.filter((step) => step.owner === owner).length}`).sort());
    for (const step of steps) {
      expect(given).toContainEqual({ step: `${step.partition}<${step.owner}`, digest: step.owner === 'a' ? String(step.partition) : undefined });
    }
    handOff.stop();
  });

  it('hands a leaving node\'s partitions off several at once, each once, then reports the sync done', async () => {
    const membership = leaving();
    const handed: string[] = [];
    let inFlight = 0;
    let mostInFlight = 0;
    const { handOff, finalSynced, tick, until } = started(membership, 'c', {
      handOff: async (part, _replicas, owners) => {
        inFlight += 1;
        mostInFlight = Math.max(mostInFlight, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 2));
        inFlight -= 1;
        handed.push(`${part.repo}/${part.partition}>${owners.join(',')}`);
        return 0;
      },
      holds: async (repo) => repo === 'ssr',
    });
    tick();
    await until(() => finalSynced.length > 0);
    const owned = SLOTS.filter((slot) => ownersOf(membership, slot).includes('c'));
    const expected = owned.flatMap((slot) => nextOwnersOf(membership, slot).filter((owner) => owner !== 'c').map((owner) => `ssr/${slot.partition}>${owner}`));
    expect(expected.length).toBeGreaterThan(4);
    expect(handed.sort()).toEqual(expected.sort());
    expect(finalSynced).toEqual(['e7-leave-c']);
    // One after another, ~290 such steps held a leave 5 s after its last transfer under faults.
    expect(mostInFlight).toBeGreaterThan(1);
    handOff.stop();
  });

  it('retries only the steps of the owner that was out of reach, then reports the sync done once', async () => {
    const membership = joining();
    const gained = SLOTS.filter((slot) => nextOwnersOf(membership, slot).includes('c') && !ownersOf(membership, slot).includes('c'));
    expect(gained.length).toBeGreaterThan(0);
    const calls: string[] = [];
    let bDown = true;
    const { handOff, finalSynced, tick } = started(membership, 'c', {
      catchUp: async (part, _replicas, owners) => {
        calls.push(`${part.partition}<${owners.join(',')}`);
        if (owners.includes('b') && bDown) throw new Error('b is unavailable');
        return 1;
      },
    });
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

describe('partition hand-off - a join whose last transfer completes', () => {
  it('final-syncs as soon as the table shows it, not at the next tick of its timer', async () => {
    const complete = joining();
    // The tsr transfer is still running: nothing to sync yet.
    let membership: Membership = { ...complete, change: { ...complete.change!, transfers: complete.change!.transfers.map((plan) => (plan.repo === 'tsr' ? { ...plan, complete: false, percentComplete: 90 } : plan)) } };
    const { handOff, finalSynced, until } = started(membership, 'c', { membership: () => membership });
    handOff.membershipChanged();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(finalSynced).toEqual([]);
    membership = complete;
    handOff.membershipChanged(); //                                                  the table now shows it: no tick() needed
    await until(() => finalSynced.length > 0);
    expect(finalSynced).toEqual(['e4-join-c']);
    handOff.stop();
  });

  it('reads its own digests while the owners read theirs', async () => {
    const membership = joining();
    const gained = SLOTS.filter((slot) => nextOwnersOf(membership, slot).includes('c') && !ownersOf(membership, slot).includes('c'));
    const localRead = new Set<number>();
    let localBeforeOwners = false;
    const { handOff, finalSynced, until } = started(membership, 'c', {
      localDigest: async (part) => void localRead.add(part.partition),
      digests: async (_owner, _repo, _stream, partitions) => {
        // Answered only once this node has started on its own: the two reads overlap.
        await until(() => localRead.size === gained.length);
        localBeforeOwners = localRead.size === gained.length;
        return new Map(partitions.map((partition) => [partition, new Uint32Array(3)]));
      },
    });
    handOff.membershipChanged();
    await until(() => finalSynced.length > 0);
    expect(localBeforeOwners).toBe(true);
    expect([...localRead].sort((a, b) => a - b)).toEqual(gained.map((slot) => slot.partition));
    expect(finalSynced).toEqual(['e4-join-c']);
    handOff.stop();
  });
});
