// Hints count what is stored (docs/storage.md): a hint whose commit fails is neither counted
// nor held against limits.hintBufferBytesMax (a full disk left thousands of phantom hints,
// addressed to the node itself, that were never replayed and kept the cluster from
// settling), a removal counts once it is durable, and a node that cannot keep hints hands
// them to another member instead of failing the write.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HintKeeper, type HintEntry } from '../../src/cluster/hint-keeper.js';
import { Database, InsufficientStorageError } from '../../src/storage/database.js';
import { DiskWatch } from '../../src/storage/disk-watch.js';
import { GroupCommitter } from '../../src/storage/group-commit.js';
import { HintBuffer, HintBufferFullError } from '../../src/storage/hints.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import { realTimers } from '../../src/lib/timers.js';

const log = pino({ level: 'silent' });
const BOUND_BYTES = 1024 * 1024;
const FLOOR_BYTES = 1000;

const dirs: string[] = [];
const open: Database[] = [];
afterEach(async () => {
  for (const database of open.splice(0)) if (database.isOpen) await database.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function record(bytes: number, id = 'w1'): StoredRecord {
  return { stream: 't/c/s', partition: 3, timestamp: 1_700_000_000_000, writeId: id, value: 'x'.repeat(bytes) };
}

/** A database, its hints and group commit, and a disk whose free bytes the test sets. */
async function storage() {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-hints-'));
  dirs.push(dir);
  const database = await Database.open(dir, { nodeName: 'n1' });
  open.push(database);
  const disk = { freeBytes: 10 * FLOOR_BYTES };
  const watch = new DiskWatch(database, {
    folder: dir, floorBytes: FLOOR_BYTES, intervalMs: 1_000, writeBufferBytes: 1024 * 1024, nodeName: 'n1', log, timers: realTimers,
    space: async () => ({ freeBytes: disk.freeBytes, totalBytes: 100 * FLOOR_BYTES }),
  });
  return { database, disk, watch, hints: await HintBuffer.open(database, BOUND_BYTES), committer: new GroupCommitter(database) };
}

describe('hints - counted after their commit', () => {
  it('a hint whose commit fails counts for nothing, and its bytes do not hold the bound', async () => {
    const { disk, watch, hints, committer } = await storage();
    disk.freeBytes = FLOOR_BYTES - 1;
    await watch.check();
    const big = { repository: 'ssr' as const, records: [record(600 * 1024)] };
    await expect(committer.commit(hints.add('n1', big))).rejects.toBeInstanceOf(InsufficientStorageError);
    expect(hints.snapshot()).toEqual([]);
    expect(hints.targets()).toEqual([]);
    disk.freeBytes = 10 * FLOOR_BYTES;
    await watch.check();
    // 600 KiB more fits a 1 MiB bound only if the failed one is not counted.
    await committer.commit(hints.add('n3', big));
    expect(hints.snapshot()).toMatchObject([{ target: 'n3', hints: 1, records: 1 }]);
    expect(() => hints.add('n3', big)).toThrow(HintBufferFullError);
  });

  it('a removal counts once it is durable; one whose commit fails leaves the hint counted', async () => {
    const { database, hints, committer } = await storage();
    await committer.commit(hints.add('n3', { repository: 'ssr', records: [record(100)] }));
    const [stored] = await hints.oldest('n3', 10);
    const removal = hints.remove([stored!]);
    expect(hints.snapshot()).toMatchObject([{ target: 'n3', hints: 1 }]);
    await database.close();
    await expect(committer.commit(removal)).rejects.toThrow();
    expect(hints.snapshot()).toMatchObject([{ target: 'n3', hints: 1 }]);
  });

  it('operations abandoned before their commit release their bytes', async () => {
    const { hints } = await storage();
    const operations = hints.add('n3', { repository: 'ssr', records: [record(600 * 1024)] });
    expect(() => hints.add('n4', { repository: 'ssr', records: [record(600 * 1024)] })).toThrow(HintBufferFullError);
    hints.abandon(operations);
    expect(() => hints.add('n4', { repository: 'ssr', records: [record(600 * 1024)] })).not.toThrow();
  });
});

describe('hints - a node that cannot keep them', () => {
  it('hands them to another member and the write stands', async () => {
    const { disk, watch, hints, committer } = await storage();
    disk.freeBytes = 0;
    await watch.check();
    const sent: Array<{ node: string; hints: HintEntry[] }> = [];
    const keeper = new HintKeeper({
      localName: 'n1',
      goingAway: () => false,
      hints,
      committer,
      transport: { call: (async (node: string, _kind: string, body: { hints: HintEntry[] }) => void sent.push({ node, hints: body.hints })) as never },
      delegates: () => ['n2'],
      writeDeadlineMs: 1_000,
      log,
    });
    const failures = await keeper.keep('ssr', [{ position: 0, record: record(100), missing: ['n3'], storedOn: ['n1'], copies: 2 }]);
    expect(failures).toEqual(new Map());
    expect(sent).toMatchObject([{ node: 'n2', hints: [{ target: 'n3', repository: 'ssr', records: [{ writeId: 'w1' }] }] }]);
    expect(hints.snapshot()).toEqual([]);
  });

  it('says why when no other member can take them either', async () => {
    const { disk, watch, hints, committer } = await storage();
    disk.freeBytes = 0;
    await watch.check();
    const keeper = new HintKeeper({
      localName: 'n1', goingAway: () => false, hints, committer, writeDeadlineMs: 1_000, log,
      transport: { call: (async () => Promise.reject(new Error('n2 is unavailable'))) as never },
      delegates: () => ['n2'],
    });
    const failures = await keeper.keep('ssr', [{ position: 0, record: record(100), missing: ['n3'], storedOn: ['n1'], copies: 2 }]);
    expect(failures.get(0)).toMatch(/no other node could keep a hint for n3 \(n1 could not keep it: n1 takes no writes: .* below the floor/);
  });
});
