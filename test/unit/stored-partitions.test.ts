// A partition's digest is kept until its own partition changes: writes to other partitions
// (hints, repairs, follow-ups after faults) must not make every exchange scan it again, and
// exchanges of one partition with several owners at once scan it once.

import { describe, expect, it } from 'vitest';
import type { LocalReplica } from '../../src/storage/local-replica.js';
import type { Repository, RepositoryName } from '../../src/storage/repository.js';
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
