// RepairDigests: an owner's digests of many partitions of one stream in one call, at most
// REPAIR_DIGESTS_PER_CALL_MAX a call (a final sync reads them before its steps); a step given
// the peer's digest compares with it instead of asking again.

import { describe, expect, it } from 'vitest';
import type { PeerEndpoint } from '../../src/peer/endpoint.js';
import { BadRequestError } from '../../src/lib/errors.js';
import { digestKeys } from '../../src/repair/key-digest.js';
import { syncPartition, type LocalPartitions, type PeerPartitions } from '../../src/repair/partition-sync.js';
import { REPAIR_DIGESTS, REPAIR_DIGESTS_PER_CALL_MAX } from '../../src/repair/repair-messages.js';
import { remotePartitions, serveRepair } from '../../src/repair/repair-peer.js';

/** One endpoint that answers its own calls with the handlers served on it, counting calls by kind. */
function loopback(): { endpoint: PeerEndpoint; calls: Map<string, number> } {
  const handlers = new Map<string, (sender: string, body: unknown) => Promise<unknown>>();
  const calls = new Map<string, number>();
  const endpoint = {
    name: 'a',
    handle: (kind: { name: string }, handler: (sender: string, body: unknown) => Promise<unknown>) => void handlers.set(kind.name, handler),
    call: async (_to: string, kind: { name: string }, body: unknown) => {
      calls.set(kind.name, (calls.get(kind.name) ?? 0) + 1);
      return handlers.get(kind.name)!('b', body);
    },
    notify: () => false,
    handleTransfer: () => undefined,
    openTransferStream: () => {
      throw new Error('no transfers here');
    },
  } as unknown as PeerEndpoint;
  return { endpoint, calls };
}

const local = (digestOf: (partition: number) => number[]): LocalPartitions => ({
  digest: async (part) => digestOf(part.partition),
  keys: async () => [],
  records: async () => [],
  store: async () => undefined,
});

describe('repair digests - many partitions a call', () => {
  it('answers each partition\'s digest in the order asked, a call per REPAIR_DIGESTS_PER_CALL_MAX', async () => {
    const { endpoint, calls } = loopback();
    serveRepair(endpoint, { partitions: local((partition) => [partition, 0, 1]), repair: { startRun: () => undefined as never, status: () => undefined } });
    const partitions = Array.from({ length: 2 * REPAIR_DIGESTS_PER_CALL_MAX + 5 }, (_, index) => 3 * index);
    const digests = await remotePartitions(endpoint, 1_000).digests('b', 'ssr', 't/c/s', partitions);
    expect(calls.get(REPAIR_DIGESTS.name)).toBe(3);
    expect([...digests.keys()]).toEqual(partitions);
    for (const partition of partitions) expect(digests.get(partition)).toEqual([partition, 0, 1]);
  });

  it('scans a few partitions at once and answers them in the order asked', async () => {
    const { endpoint } = loopback();
    let inFlight = 0;
    let most = 0;
    const slowFirst: LocalPartitions = {
      ...local(() => []),
      digest: async (part) => {
        most = Math.max(most, (inFlight += 1));
        await new Promise((resolve) => setTimeout(resolve, 40 - part.partition)); //  earlier partitions finish later
        inFlight -= 1;
        return [part.partition, 7, 7];
      },
    };
    serveRepair(endpoint, { partitions: slowFirst, repair: { startRun: () => undefined as never, status: () => undefined } });
    const partitions = Array.from({ length: 12 }, (_, index) => index);
    const digests = await remotePartitions(endpoint, 1_000).digests('b', 'tsr', 't/c/s', partitions);
    expect([...digests.entries()]).toEqual(partitions.map((partition) => [partition, [partition, 7, 7]]));
    expect(most).toBe(4);
  });

  it('refuses a call naming more partitions than a call may', async () => {
    const { endpoint } = loopback();
    serveRepair(endpoint, { partitions: local(() => []), repair: { startRun: () => undefined as never, status: () => undefined } });
    const tooMany = Array.from({ length: REPAIR_DIGESTS_PER_CALL_MAX + 1 }, (_, index) => index);
    await expect(endpoint.call('b', REPAIR_DIGESTS, { repo: 'ssr', stream: 't/c/s', partitions: tooMany }, { deadlineMs: 1_000 })).rejects.toThrow(BadRequestError);
    await expect(endpoint.call('b', REPAIR_DIGESTS, { repo: 'ssr', stream: 't/c/s', partitions: [] }, { deadlineMs: 1_000 })).rejects.toThrow(/1 to 32 partitions/);
  });

  it('compares with a digest already read instead of asking for it', async () => {
    let asked = 0;
    const mine = Array.from(digestKeys(['k1', 'k2']));
    const peers: PeerPartitions = {
      digest: async () => {
        asked += 1;
        return mine;
      },
      keys: async () => [],
      fetch: async () => [],
      push: async () => undefined,
    };
    const same = await syncPartition(local(() => mine), peers, 'b', { repo: 'ssr', stream: 't/c/s', partition: 4 }, 2, 'pull', mine);
    expect(same).toEqual({ segments: 0, sent: 0, received: 0 });
    expect(asked).toBe(0);
    await syncPartition(local(() => mine), peers, 'b', { repo: 'ssr', stream: 't/c/s', partition: 4 }, 2, 'pull');
    expect(asked).toBe(1);
  });
});
