// The write path states its invariants (docs/architecture.md, "The write path"): a bug in what
// the router, the hint keeper, the replica writer or the group committer is given is caught
// where it would break the acknowledgement rule, not stored.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { assert, InvariantError } from '../../src/lib/assert.js';
import { HintKeeper } from '../../src/cluster/hint-keeper.js';
import { PartitionRouter, type ReplicaWrites } from '../../src/cluster/partition-router.js';
import { ReplicaWriter } from '../../src/cluster/replica-writer.js';
import type { Database } from '../../src/storage/database.js';
import { GroupCommitter } from '../../src/storage/group-commit.js';
import { blockPayload, decodeBlock, packBlocks } from '../../src/storage/tsr-block.js';
import type { StoredRecord } from '../../src/storage/repository.js';

const log = pino({ level: 'silent' });
const POLICY = { replicas: 2, ring_size: 8, hash_payload: { bytes: 128 } };
const record = (partition: number): StoredRecord => ({ stream: 't/c/s', partition, timestamp: 1, writeId: `w${partition}`, value: '{}' });
const storing: ReplicaWrites = { write: async () => undefined };
const noHints = { keep: async () => new Map<number, string>() };

describe('write path invariants - partition router', () => {
  it('acknowledges a record stored on its two owners', async () => {
    const router = new PartitionRouter(() => ['a', 'b'], storing, noHints);
    expect(await router.write('ssr', POLICY, [record(1)])).toEqual(new Map());
  });

  it('fails on a partition outside the stream ring_size (the partitioner is wrong), before any owner is asked', async () => {
    const asked: string[] = [];
    const router = new PartitionRouter(() => ['a', 'b'], { write: async (node) => void asked.push(node) }, noHints);
    await expect(router.write('ssr', POLICY, [record(8)])).rejects.toThrow(InvariantError);
    await expect(router.write('ssr', POLICY, [record(8)])).rejects.toThrow(/partition 8 outside ring_size 8/);
    expect(asked).toEqual([]);
  });

  it('fails on a policy that keeps no copy, before any owner is asked', async () => {
    const asked: string[] = [];
    const router = new PartitionRouter(() => ['a', 'b'], { write: async (node) => void asked.push(node) }, noHints);
    await expect(router.write('ssr', { ...POLICY, replicas: 0 }, [record(1)])).rejects.toThrow(/a write under replicas 0, ring_size 8/);
    expect(asked).toEqual([]);
  });

  it('fails when the owners of a partition name one node twice: its copy would count as two', async () => {
    const router = new PartitionRouter(() => ['a', 'a'], storing, noHints);
    await expect(router.write('ssr', POLICY, [record(1)])).rejects.toThrow(/partition 1: owners a, a name a node twice/);
  });
});

describe('write path invariants - hint keeper', () => {
  it('fails when it is offered this node as another member to keep its hints', async () => {
    const keeper = new HintKeeper({
      localName: 'n1',
      goingAway: (node) => node === 'n1',
      hints: { add: () => [], remove: () => [], targets: () => [], oldest: async () => [] },
      committer: { commit: async () => undefined },
      transport: { call: (async () => ({})) as never },
      delegates: () => ['n1'],
      writeDeadlineMs: 1_000,
      log,
    });
    const want = { position: 0, record: record(1), missing: ['n3'], storedOn: ['n1'], copies: 2 };
    await expect(keeper.keep('ssr', [want])).rejects.toThrow(/n1 offered as a delegate of its own hints/);
  });
});

describe('write path invariants - replica writer and group commit', () => {
  it('the replica writer fails on a write of no records or of no copies', async () => {
    const writer = new ReplicaWriter({
      localName: 'n1',
      replica: { store: async () => undefined },
      transport: {
        callEach: (() => {
          throw new Error('not used: these writes are refused before any peer is called');
        }) as never,
      },
      available: () => true,
      epoch: () => 1,
      membership: () => ({ epoch: 1, members: [], change: undefined }),
      adopt: async () => undefined,
      suspect: () => undefined,
      writeDeadlineMs: 1_000,
      log,
    });
    await expect(writer.write('n2', 'ssr', 2, [])).rejects.toThrow(/a replica write of 0 records/);
    await expect(writer.write('n2', 'ssr', 0, [record(1)])).rejects.toThrow(/with 0 replicas/);
  });

  it('the group committer refuses a batch bound that is not a positive integer', () => {
    const database = { batch: async () => undefined } as unknown as Database;
    expect(() => new GroupCommitter(database, 0)).toThrow(InvariantError);
    expect(() => new GroupCommitter(database, 1.5)).toThrow(/batchOperationsMax 1.5/);
  });
});

describe('write path invariants - tsr blocks', () => {
  it('a payload is read only at an index within its block', () => {
    const [packed] = packBlocks([{ timestamp: 1_000, position: 0, payload: { cpu: 1 } }, { timestamp: 2_000, position: 1, payload: { cpu: 2 } }]);
    const block = decodeBlock(packed!.text);
    expect(blockPayload(block, 1)).toEqual({ cpu: 2 });
    expect(() => blockPayload(block, 2)).toThrow(InvariantError);
    expect(() => blockPayload(block, -1)).toThrow(/a payload read outside its block/);
  });
});

describe('write path invariants - messages', () => {
  it('an assertion in a loop makes its message only when it fails', () => {
    let made = 0;
    const message = () => `made ${++made}`;
    for (let i = 0; i < 1_000; i += 1) assert(i >= 0, message);
    expect(made).toBe(0);
    expect(() => assert(false, message)).toThrow('invariant broken: made 1');
  });
});
