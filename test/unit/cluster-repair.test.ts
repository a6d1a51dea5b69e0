// GET /cluster/repair/:id as a user reads it: the run's counts summed over the members,
// complete only when every member finished it, and per node how far it got or why it is not
// known.

import { describe, expect, it } from 'vitest';
import type { Member, Membership } from '../../src/protocol/cluster-types.js';
import type { RepairStatusReply } from '../../src/repair/repair-messages.js';
import { ClusterRepair, repairActions } from '../../src/repair/cluster-repair.js';
import type { RepairRunStatus, RepairService } from '../../src/repair/repair-service.js';

const member = (name: string, state: Member['state']) => ({ name, state }) as Member;

function clusterRepair(local: Partial<RepairRunStatus> | undefined, remote: Record<string, RepairStatusReply | Error>) {
  const membership: Membership = { epoch: 5, members: [member('n1', 'Joined'), member('n2', 'Joined'), member('n3', 'Leaving'), member('n4', 'Left')], change: undefined };
  const localRun = local === undefined ? undefined : ({ id: 'x', kind: 'repair', stream: undefined, startedAtMs: 1, ...local } as RepairRunStatus);
  const started: string[] = [];
  const repair = {
    startRun: () => localRun,
    status: () => localRun,
  } as unknown as RepairService;
  return {
    started,
    cluster: new ClusterRepair({
      localName: 'n1',
      membership: () => membership,
      repair,
      streamExists: (key) => key === 'demo/mobile/events',
      startRemote: async (node) => {
        started.push(node);
      },
      statusRemote: async (node) => {
        const answer = remote[node]!;
        if (answer instanceof Error) throw answer;
        return answer;
      },
    }),
  };
}

const counts = { partitionsCompared: 0, recordsSent: 0, recordsReceived: 0, failures: 0 };

describe('cluster repair - status over the members', () => {
  it('sums the members’ counts and is complete once every member finished', async () => {
    const { cluster, started } = clusterRepair(
      { complete: true, partitionsTotal: 10, partitionsDone: 10, partitionsCompared: 2, recordsSent: 5, recordsReceived: 1, failures: 0 },
      {
        n2: { known: true, complete: true, partitionsTotal: 12, partitionsDone: 12, partitionsCompared: 1, recordsSent: 0, recordsReceived: 7, failures: 1 },
        n3: { known: true, complete: true, partitionsTotal: 0, partitionsDone: 0, ...counts },
      },
    );
    const { id, nodes } = await cluster.start({ stream: '/streams/demo/mobile/events' });
    expect(nodes).toEqual(['n1', 'n2', 'n3']);
    expect(started).toEqual(['n2', 'n3']);
    const status = await cluster.status(id);
    expect(status).toMatchObject({ complete: true, percentComplete: 100, partitionsTotal: 22, partitionsDone: 22, partitionsCompared: 3, recordsSent: 5, recordsReceived: 8, failures: 1, stream: 'demo/mobile/events' });
    expect(status.nodes.map((node) => [node.node, node.percentComplete])).toEqual([['n1', 100], ['n2', 100], ['n3', 100]]);
  });

  it('is incomplete, below 100%, while one member is unreachable or never got the run', async () => {
    const { cluster } = clusterRepair(
      { complete: false, partitionsTotal: 10, partitionsDone: 5, ...counts },
      { n2: new Error('n2 is unavailable'), n3: { known: false, complete: false, partitionsTotal: 0, partitionsDone: 0, ...counts } },
    );
    const { id } = await cluster.start({});
    const status = await cluster.status(id);
    expect(status).toMatchObject({ complete: false, percentComplete: 50, partitionsTotal: 10, partitionsDone: 5 });
    expect(status.nodes).toEqual([
      { node: 'n1', complete: false, percentComplete: 50 },
      { node: 'n2', complete: false, percentComplete: 0, error: 'n2 is unavailable' },
      { node: 'n3', complete: false, percentComplete: 0, error: 'the run never reached this node' },
    ]);
  });

  it('refuses a stream that does not exist and a body that is not a stream URI', async () => {
    const { cluster } = clusterRepair(undefined, {});
    await expect(cluster.start({ stream: '/streams/demo/mobile/nope' })).rejects.toThrow("stream '/streams/demo/mobile/nope' does not exist");
    await expect(cluster.start({ stream: 'demo' })).rejects.toThrow('expected a stream URI');
    await expect(cluster.status('repair-unknown')).rejects.toThrow("no repair run 'repair-unknown'");
  });

  it('shows this node’s runs as transfer rows with their progress', () => {
    const run = { id: 'r', kind: 'refill', stream: undefined, startedAtMs: 1, complete: false, partitionsTotal: 3, partitionsDone: 1, partitionsCompared: 1, recordsSent: 2, recordsReceived: 4, failures: 0 } as RepairRunStatus;
    expect(repairActions('n1', [run])).toMatchObject([{ type: 'repo_data_transfer', from: 'n1', complete: false, percentComplete: 33, info: { kind: 'refill', payloads: 6, partitions: 3 } }]);
  });
});
