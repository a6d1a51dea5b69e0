// The shell simulation at scale (test/sim/scale-simulate.ts): a formed cluster of real
// cores, shells and data planes takes two joins and two leaves asked for at once. The
// suite runs one modest size; `npm run sim:scale` runs the sizes of the README's table.
//   SCALE_NODES=64 SCALE_RING_SIZE=1024 npx vitest run test/unit/cluster-scale.sim.test.ts

import { describe, expect, it } from 'vitest';
import { simulateScale } from '../sim/scale-simulate.js';

const NODES = Number(process.env.SCALE_NODES ?? 24);
const RING_SIZE = Number(process.env.SCALE_RING_SIZE ?? 256);

describe('cluster scale - simulation of a formed cluster taking several changes at once', () => {
  it(`${NODES} nodes at ring_size ${RING_SIZE}: two joins and two leaves queued at once all complete, moving what they must`, async () => {
    const result = await simulateScale({ nodes: NODES, ringSize: RING_SIZE, replicas: 3, recordsPerPartition: 4, joins: 2, leaves: 2, heartbeatIntervalMs: 1_000, idleMs: 5_000, changesLimitMs: 120_000, seed: 7 });
    console.log(JSON.stringify({ changes: result.changes, idle: result.idle, duringChanges: result.duringChanges, realSeconds: result.realSeconds }, null, 1));
    expect(result.failures).toEqual([]);
    expect(result.changes).toHaveLength(4);
    for (const change of result.changes) {
      expect(change.recordsMoved, change.id).toBeGreaterThanOrEqual(change.recordsMinimum);
      expect(change.recordsMoved, change.id).toBeLessThanOrEqual(1.1 * change.recordsMinimum);
    }
    // Heartbeats to every other member, once a second: at most a few per peer while idle.
    expect(result.idle.messagesPerNodePerSecond).toBeLessThan(2 * NODES);
  }, 300_000);
});
