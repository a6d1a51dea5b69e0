// After a stop that was not clean, the data plane follows up every partition: the write
// follow-ups the node held in memory (partitions where a write of unknown outcome may sit on
// one owner) died with it, and the chaos suite found nodes answering different totals once
// settled because of it.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ClusterCore } from '../../src/cluster-core/core.js';
import { startDataPlane } from '../../src/cluster/data-plane.js';
import type { Member, Membership } from '../../src/protocol/cluster-types.js';
import type { Timers } from '../../src/lib/timers.js';

const member = (name: string): Member => ({ name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state: 'Joined' });
const STREAMS = [
  { key: 't/c/events', repo: 'ssr' as const, replicas: 2, ringSize: 8 },
  { key: 't/c/metrics', repo: 'tsr' as const, replicas: 2, ringSize: 4 },
];

function plane() {
  const membership: Membership = { epoch: 3, members: [member('a'), member('b')], change: undefined };
  const core = new ClusterCore({ name: 'a', heartbeatIntervalMs: 100, failureTimeoutMs: 400, transferStallMs: 600, transferWindowChunks: 2 }, { membership, incoming: [] }, { self: member('a'), lone: false });
  const timers: Timers = { now: () => 0, setTimeout: () => ({ cancel: () => undefined }), setInterval: () => ({ cancel: () => undefined }) };
  const nothing = async () => undefined;
  return startDataPlane({
    localName: 'a', core, timers, wallClock: () => 0, log: pino({ level: 'silent' }),
    endpoint: { name: 'a', handle: () => undefined, handleTransfer: () => undefined, call: nothing, notify: () => false, openTransferStream: () => undefined } as never,
    shell: { adopt: nothing, suspect: () => undefined, finalSynced: () => undefined, damaged: () => undefined },
    replica: { store: nothing },
    partitions: { digest: async () => [], keys: async () => [], records: async () => [], store: nothing },
    hints: { add: () => [], remove: () => [], targets: () => [], oldest: async () => [] },
    committer: { commit: nothing },
    dropPartition: nothing,
    definitions: { records: () => [], apply: nothing },
    persistDamage: nothing,
    streams: () => STREAMS,
    replicasOf: () => 2,
    limits: { writeDeadlineMs: 100, peerDeadlineMs: 100, hintReplayIntervalMs: 100, repairIntervalMs: 0, repairPacingMs: 0 },
  });
}

describe('data plane - a start after a stop that was not clean', () => {
  it('follows up every partition of every stream', () => {
    const started = plane();
    started.start(undefined, true);
    expect(started.followUps.pending()).toBe(8 + 4);
    // Nothing acknowledged waits on them: a leave is not held back by them, but by a
    // partition noted since for a write seen to fail.
    expect(started.followUps.pendingForLeave()).toBe(0);
    started.followUps.note('ssr', 't/c/events', 3, 2);
    expect(started.followUps.pending()).toBe(8 + 4);
    expect(started.followUps.pendingForLeave()).toBe(1);
    started.stop();
  });

  it('follows up nothing after a clean stop', () => {
    const started = plane();
    started.start(undefined, false);
    expect(started.followUps.pending()).toBe(0);
    started.stop();
  });
});
