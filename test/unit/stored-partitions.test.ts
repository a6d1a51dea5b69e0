// A partition's digest is kept until its own partition changes: writes to other partitions
// (hints, repairs, follow-ups after faults) must not make every exchange scan it again, and
// exchanges of one partition with several owners at once scan it once.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../src/storage/database.js';
import type { LocalReplica } from '../../src/storage/local-replica.js';
import type { Repository, RepositoryName, StoredRecord } from '../../src/storage/repository.js';
import { SearchableRepository } from '../../src/storage/ssr.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { packBlocks } from '../../src/storage/tsr-block.js';
import { StoredPartitions } from '../../src/repair/stored-partitions.js';

/** A repository whose key scans are counted and can be held open. */
function scannedRepository(): { repository: Repository; scans: () => number; hold: () => () => void; keys: Map<number, string[]> } {
  const keys = new Map<number, string[]>([[1, ['a', 'b']], [2, ['c']]]);
  let scans = 0;
  let gate: Promise<void> | undefined;
  const repository = {
    async partitionKeys(_stream: string, partition: number): Promise<string[]> {
      scans += 1;
      const snapshot = [...(keys.get(partition) ?? [])];
      if (gate !== undefined) await gate;
      return snapshot;
    },
  } as unknown as Repository;
  const hold = (): (() => void) => {
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    return () => {
      gate = undefined;
      release();
    };
  };
  return { repository, scans: () => scans, hold, keys };
}

function partitions(repository: Repository): StoredPartitions {
  const repositories = { ssr: repository, tsr: repository } as Record<RepositoryName, Repository>;
  return new StoredPartitions(repositories, {} as LocalReplica);
}

const part = (partition: number) => ({ repo: 'ssr' as const, stream: 't/s', partition });

describe('StoredPartitions digests', () => {
  it('keeps a digest while only other partitions change', async () => {
    const { repository, scans } = scannedRepository();
    const stored = partitions(repository);
    const first = await stored.digest(part(1));
    stored.stale('ssr', 't/s', 2);
    stored.staleRecords('ssr', [{ stream: 't/s', partition: 2 } as never]);
    expect(await stored.digest(part(1))).toBe(first);
    expect(scans()).toBe(1);
    stored.stale('ssr', 't/s', 1);
    await stored.digest(part(1));
    expect(scans()).toBe(2);
  });

  it('does not keep a digest scanned while its partition changed, and keeps one scanned while another did', async () => {
    const { repository, scans, hold, keys } = scannedRepository();
    const stored = partitions(repository);
    let release = hold();
    const during = stored.digest(part(1));
    keys.set(1, ['a', 'b', 'x']);
    stored.staleRecords('ssr', [{ stream: 't/s', partition: 1 } as never]);
    release();
    const stale = await during;
    const fresh = await stored.digest(part(1));
    expect(scans()).toBe(2);
    expect(fresh).not.toEqual(stale);

    stored.stale('ssr', 't/s', 1);
    release = hold();
    const other = stored.digest(part(1));
    stored.stale('ssr', 't/s', 2);
    release();
    await other;
    await stored.digest(part(1));
    expect(scans()).toBe(3);
  });

  it('shares one scan among exchanges of the same partition at once', async () => {
    const { repository, scans, hold } = scannedRepository();
    const stored = partitions(repository);
    const release = hold();
    const digests = [stored.digest(part(1)), stored.digest(part(1)), stored.digest(part(1))];
    release();
    const [a, b, c] = await Promise.all(digests);
    expect(scans()).toBe(1);
    expect(b).toBe(a);
    expect(c).toBe(a);
  });
});

describe('StoredPartitions keys of records', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('keyOf gives the key under which the partition lists and reads the record, in ssr and tsr', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-record-keys-'));
    dirs.push(dir);
    const database = await Database.open(dir, { nodeName: 'n1' });
    const repositories = { ssr: new SearchableRepository(database), tsr: new TimeSeriesRepository(database) };
    const stored = new StoredPartitions(repositories, {} as LocalReplica);
    const ssr: StoredRecord = { stream: 't/c/s', partition: 3, timestamp: 1_000, writeId: '0000000000abcd.n1', value: '{"a":1}' };
    const tsr: StoredRecord = { stream: 't/c/m', partition: 5, timestamp: 2_000, writeId: 'kblock', value: packBlocks([{ timestamp: 2_000, payload: { v: 1 }, position: 0 }, { timestamp: 2_500, payload: { v: 2 }, position: 1 }])[0]!.text };
    await database.batch([...repositories.ssr.writeOperations([ssr]), ...repositories.tsr.writeOperations([tsr])], { sync: true });
    for (const [repo, record] of [['ssr', ssr], ['tsr', tsr]] as const) {
      const part = { repo, stream: record.stream, partition: record.partition };
      expect(await stored.keys(part)).toEqual([stored.keyOf(repo, record)]);
      expect((await stored.records(part, [stored.keyOf(repo, record)])).map((each) => each.writeId)).toEqual([record.writeId]);
    }
    await database.close();
  });
});
