// A replicated write sends owners that get the same records one shared write (partition-router.ts
// `sends`, replica-writer.ts `writeEach`): its body is encoded and digested once, and each
// owner's outcome still counts for that owner alone.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PartitionRouter, type ReplicaWrites } from '../../src/cluster/partition-router.js';
import { ReplicaWriteError, ReplicaWriter } from '../../src/cluster/replica-writer.js';
import type { Membership } from '../../src/protocol/cluster-types.js';
import type { StoredRecord } from '../../src/storage/repository.js';

const POLICY = { replicas: 3, ring_size: 8, hash_payload: { bytes: 128 } };
const record = (partition: number): StoredRecord => ({ stream: 't/c/s', partition, timestamp: 1, writeId: `w${partition}`, value: '{}' });
const noHints = { keep: async () => new Map<number, string>() };

/** A writer that notes each shared write: its nodes and the partitions of its records. */
function notingWriter(failing: ReadonlySet<string> = new Set()) {
  const writes: Array<{ nodes: string[]; partitions: number[] }> = [];
  const writer: Required<ReplicaWrites> = {
    write: async () => {
      throw new Error('every write goes through writeEach');
    },
    writeEach: (nodes, _repository, _replicas, records) => {
      writes.push({ nodes: [...nodes], partitions: records.map((each) => each.partition) });
      return nodes.map(async (node) => {
        if (failing.has(node)) throw new ReplicaWriteError(node, `${node} is down`, { sent: false });
      });
    },
  };
  return { writer, writes };
}

describe('replica fan-out - one write for owners with the same records', () => {
  it('sends every owner of every partition one shared write', async () => {
    const { writer, writes } = notingWriter();
    const router = new PartitionRouter(() => ['a', 'b', 'c'], writer, noHints);
    expect(await router.write('tsr', POLICY, [record(1), record(2), record(5)])).toEqual(new Map());
    expect(writes).toEqual([{ nodes: ['a', 'b', 'c'], partitions: [1, 2, 5] }]);
  });

  it('sends owners with different records their own writes', async () => {
    const { writer, writes } = notingWriter();
    const owners: Record<number, string[]> = { 1: ['a', 'b'], 2: ['b', 'c'] };
    const router = new PartitionRouter((_policy, partition) => owners[partition]!, writer, noHints);
    await router.write('tsr', { ...POLICY, replicas: 2 }, [record(1), record(2)]);
    expect(writes.sort((x, y) => x.nodes[0]!.localeCompare(y.nodes[0]!))).toEqual([
      { nodes: ['a'], partitions: [1] },
      { nodes: ['b'], partitions: [1, 2] },
      { nodes: ['c'], partitions: [2] },
    ]);
  });

  it('groups only the owners sent the same records', async () => {
    const { writer, writes } = notingWriter();
    const owners: Record<number, string[]> = { 1: ['a', 'b', 'c'], 2: ['a', 'b', 'd'] };
    const router = new PartitionRouter((_policy, partition) => owners[partition]!, writer, noHints);
    await router.write('tsr', POLICY, [record(1), record(2)]);
    expect(writes.sort((x, y) => x.nodes.length - y.nodes.length || x.nodes[0]!.localeCompare(y.nodes[0]!))).toEqual([
      { nodes: ['c'], partitions: [1] },
      { nodes: ['d'], partitions: [2] },
      { nodes: ['a', 'b'], partitions: [1, 2] },
    ]);
  });

  it("counts each owner's outcome of a shared write for that owner alone", async () => {
    const { writer } = notingWriter(new Set(['c']));
    const hinted: string[][] = [];
    const hints = {
      keep: async (_repository: string, wanted: ReadonlyArray<{ missing: string[] }>) => {
        for (const want of wanted) hinted.push(want.missing);
        return new Map<number, string>();
      },
    };
    const router = new PartitionRouter(() => ['a', 'b', 'c'], writer, hints);
    expect(await router.write('tsr', POLICY, [record(1)])).toEqual(new Map());
    expect(hinted).toEqual([['c']]);
  });
});

describe('replica fan-out - the replica writer', () => {
  const membership: Membership = { epoch: 1, members: [], change: undefined };

  it('calls the available peers at once with one body, stores its own share, and fails each other owner alone', async () => {
    const calls: Array<{ to: string[]; records: number }> = [];
    const stored: number[] = [];
    const members = ['a', 'b', 'c', 'd'].map((name) => ({ name, publicKey: name, address: '127.0.0.1', port: 1, httpPort: 2, zone: 'local', state: 'Joined' as const }));
    const writer = new ReplicaWriter({
      localName: 'a',
      replica: { store: async (_repository, records) => void stored.push(records.length) },
      transport: {
        callEach: ((to: readonly string[], _kind: unknown, body: { records: StoredRecord[] }) => {
          calls.push({ to: [...to], records: body.records.length });
          return to.map(async (node) => {
            if (node === 'c') throw new Error('c failed the write');
            return {};
          });
        }) as never,
      },
      available: (node) => node !== 'd',
      epoch: () => 1,
      membership: () => ({ ...membership, members }),
      adopt: async () => undefined,
      suspect: () => undefined,
      writeDeadlineMs: 1_000,
      log: pino({ level: 'silent' }),
    });
    const outcomes = await Promise.allSettled(writer.writeEach(['b', 'a', 'c', 'd'], 'tsr', 4, [record(1), record(2)]));
    expect(calls).toEqual([{ to: ['b', 'c'], records: 2 }]);
    expect(stored).toEqual([2]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ node: 'c', sent: true, message: /c failed the write/ });
    expect((outcomes[3] as PromiseRejectedResult).reason).toMatchObject({ node: 'd', sent: false });
  });
});
