import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ChunkData, DurableIncoming, TransferPlan } from '../../src/protocol/cluster-types.js';
import { Database } from '../../src/storage/database.js';
import type { DefinitionRecord } from '../../src/storage/definition-store.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { packBlocks } from '../../src/storage/tsr-block.js';
import { decodeTimestamp, type StoredRecord } from '../../src/storage/repository.js';
import { decodePairs, encodePairs, TransferChunks } from '../../src/cluster/transfer-chunks.js';
import { digestKeys } from '../../src/repair/key-digest.js';
import { StoredPartitions } from '../../src/repair/stored-partitions.js';
import type { LocalReplica } from '../../src/storage/local-replica.js';
import { SearchableRepository } from '../../src/storage/ssr.js';

const dirs: string[] = [];
let source: Database;
let target: Database;

async function open(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-chunks-'));
  dirs.push(dir);
  return Database.open(dir);
}

const streams = [
  { key: 'demo/c/a', replicas: 2 },
  { key: 'demo/c/b', replicas: 3 },
];
const definitions: DefinitionRecord[] = [];
const sources = {
  streams: () => streams,
  definitionRecords: () => definitions,
  applyDefinitions: async (records: DefinitionRecord[]) => void definitions.push(...records),
  partitionChanged: () => {},
};

/** A tsr record: a block of one payload. */
function oneBlock(stream: string, partition: number, timestamp: number, writeId: string, payload: Record<string, unknown>): StoredRecord {
  return { stream, partition, timestamp, writeId, value: packBlocks([{ timestamp, payload, position: 0 }])[0]!.text };
}

function plan(slots: TransferPlan['slots'], id = 'c1/tsr/a>b'): TransferPlan {
  return { id, repo: 'tsr', from: 'a', to: 'b', slots, complete: false, percentComplete: 0, bytes: 0, records: 0 };
}

/** The writeIds of a tsr chunk's records, in key order. */
function writeIdsOf(chunk: ChunkData): string[] {
  return decodePairs(chunk.bytes).map(([key]) => key.toString('utf8').split('/').at(-1)!);
}

/** Writes to the source a one-payload block whose key comes right after the chunk's last one (its first timestamp, plus one). */
async function writeAfter(chunk: ChunkData, writeId: string): Promise<void> {
  const parts = decodePairs(chunk.bytes).at(-1)![0].toString('utf8').split('/');
  const [stream, partition, minTs] = [parts.slice(0, 3).join('/'), parseInt(parts[3]!, 16), decodeTimestamp(parts.at(-4)!)];
  await source.batch(new TimeSeriesRepository(source).writeOperations([oneBlock(stream, partition, minTs + 1, writeId, {})]), { sync: true });
}

/** The target's progress entry once `chunk` (the `seq`th) is stored. */
function progressOf(transfer: TransferPlan, seq: number, chunk: ChunkData): DurableIncoming {
  return { transferId: transfer.id, seqAcked: seq, cursor: chunk.cursor, records: chunk.records, bytes: chunk.bytes.length };
}

beforeEach(async () => {
  source = await open();
  target = await open();
  const tsr = new TimeSeriesRepository(source);
  const records = [];
  for (let i = 0; i < 300; i += 1) {
    records.push(oneBlock(streams[i % 2]!.key, i % 4, 1_000 + i, `w${String(i).padStart(4, '0')}`, { i, pad: 'x'.repeat(50) }));
  }
  await source.batch(tsr.writeOperations(records), { sync: true });
});
afterEach(async () => {
  await source.close();
  await target.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('transfer chunks - read, resume, store, drop', () => {
  it('moves exactly the records of the slots, in bounded chunks, resuming after each cursor', async () => {
    const reader = new TransferChunks(source, sources, 2_000);
    const writer = new TransferChunks(target, sources, 2_000);
    // Partitions 1 and 2 of replicas-2 streams (stream a: even i, so partition 2 only), and partition 1 of replicas-3 streams (b: odd i).
    const transfer = plan([{ partition: 1, replicas: 2 }, { partition: 2, replicas: 2 }, { partition: 1, replicas: 3 }]);
    let cursor: string | undefined;
    let chunks = 0;
    let moved = 0;
    for (;;) {
      const { chunk, last, totalEstimate } = await reader.read(transfer, cursor);
      // The first read counts nothing yet; the one read ahead with the second may not have; every later one has.
      if (chunks === 0) await reader.whenCounted(transfer.id);
      expect(chunks === 0 ? [0] : chunks === 1 ? [0, 150] : [150]).toContain(totalEstimate);
      expect(chunk.bytes.length).toBeLessThanOrEqual(2_000);
      chunks += 1;
      await writer.store(transfer, chunk, progressOf(transfer, chunks, chunk), last);
      moved += chunk.records;
      cursor = chunk.cursor;
      if (last) break;
    }
    expect(chunks).toBeGreaterThan(5);
    expect(moved).toBe(150);
    const counts = await new TimeSeriesRepository(target).countByPartition('demo/c/a');
    expect(Object.fromEntries(counts)).toEqual({ 2: 75 });
    expect(Object.fromEntries(await new TimeSeriesRepository(target).countByPartition('demo/c/b'))).toEqual({ 1: 75 });
  });

  it('reads each chunk ahead, and gives it only to a read from where it starts', async () => {
    const reader = new TransferChunks(source, sources, 2_000);
    // Stream a's partition 2: i = 2, 6, 10, … at timestamps 1,000 + i.
    const transfer = plan([{ partition: 2, replicas: 2 }]);
    const iterators = vi.spyOn(source.tsr, 'iterator');
    const first = await reader.read(transfer, undefined);
    expect(first.last).toBe(false);
    // The chunk after it is being read: its iterator, and so its snapshot, exists.
    await vi.waitFor(() => expect(iterators).toHaveBeenCalledTimes(2));
    await writeAfter(first.chunk, 'late');
    const ahead = await reader.read(transfer, first.chunk.cursor);
    expect(writeIdsOf(ahead.chunk)).not.toContain('late');
    // Asked again from the same cursor (the target dropped the chunk): read afresh, now with the record.
    const again = await reader.read(transfer, first.chunk.cursor);
    expect(writeIdsOf(again.chunk)[0]).toBe('late');
  });

  it('reads again a chunk read ahead too long ago, or before forgetReadsAhead()', async () => {
    let nowMs = 0;
    const reader = new TransferChunks(source, sources, 2_000, undefined, undefined, () => nowMs);
    const transfer = plan([{ partition: 2, replicas: 2 }]);
    const iterators = vi.spyOn(source.tsr, 'iterator');
    const first = await reader.read(transfer, undefined);
    await vi.waitFor(() => expect(iterators).toHaveBeenCalledTimes(2));
    await writeAfter(first.chunk, 'late1');
    nowMs += 5_001;
    const aged = await reader.read(transfer, first.chunk.cursor);
    expect(writeIdsOf(aged.chunk)[0]).toBe('late1');
    // The chunk after it is being read ahead now: forgotten, and a read from its start reads afresh.
    await vi.waitFor(() => expect(iterators).toHaveBeenCalledTimes(4));
    reader.forgetReadsAhead();
    await writeAfter(aged.chunk, 'late2');
    const afresh = await reader.read(transfer, aged.chunk.cursor);
    expect(writeIdsOf(afresh.chunk)[0]).toBe('late2');
  });

  it('storing a chunk twice stores its records once', async () => {
    const reader = new TransferChunks(source, sources, 1_000_000);
    const writer = new TransferChunks(target, sources, 1_000_000);
    const transfer = plan([{ partition: 0, replicas: 2 }]);
    const { chunk, last } = await reader.read(transfer, undefined);
    expect(last).toBe(true);
    await writer.store(transfer, chunk, progressOf(transfer, 1, chunk), last);
    await writer.store(transfer, chunk, progressOf(transfer, 1, chunk), last);
    expect(Object.fromEntries(await new TimeSeriesRepository(target).countByPartition('demo/c/a'))).toEqual({ 0: 75 });
  });

  it('stores the progress entry with the last chunk and with one every so many bytes or seconds, the chunks between as records alone', async () => {
    const reader = new TransferChunks(source, sources, 2_000);
    const transfer = plan([{ partition: 1, replicas: 2 }, { partition: 2, replicas: 2 }, { partition: 1, replicas: 3 }]);
    let nowMs = 0;
    const writer = new TransferChunks(target, sources, 2_000, undefined, { bytes: 5_000, ms: 60_000 }, () => nowMs);
    const localKeys = async () => (await target.local.keys().all()).length;
    const stored: Array<{ seq: number; bytes: number; progress: DurableIncoming[]; localKeys: number }> = [];
    let cursor: string | undefined;
    for (let seq = 1; ; seq += 1) {
      const { chunk, last } = await reader.read(transfer, cursor);
      // The 6th chunk comes a minute after the 5th: its entry is due by time, whatever its bytes.
      if (seq === 6) nowMs += 60_000;
      await writer.store(transfer, chunk, progressOf(transfer, seq, chunk), last);
      stored.push({ seq, bytes: chunk.bytes.length, progress: await writer.storedProgress(), localKeys: await localKeys() });
      cursor = chunk.cursor;
      if (last) break;
    }
    expect(stored.length).toBeGreaterThan(8);
    let unsaved = 0;
    let entry: number | undefined;
    for (const chunk of stored) {
      unsaved += chunk.bytes;
      const due = unsaved >= 5_000 || chunk.seq === 6 || chunk.seq === stored.length;
      if (due) [entry, unsaved] = [chunk.seq, 0];
      // Never ahead of the records: the entry is the newest chunk's that was due.
      expect(chunk.progress.map((progress) => progress.seqAcked)).toEqual(entry === undefined ? [] : [entry]);
    }
    // A chunk without its entry wrote no key but its records (no sequence key either): the `local` keys changed only with entries.
    for (const [index, chunk] of stored.entries()) {
      if (index > 0 && stored[index - 1]!.progress[0]?.seqAcked === chunk.progress[0]?.seqAcked) expect(chunk.localKeys).toBe(stored[index - 1]!.localKeys);
    }
  });

  it('stores the last chunk with its progress entry, which outlives a reopen until its change has ended', async () => {
    const reader = new TransferChunks(source, sources, 2_000);
    const transfer = plan([{ partition: 1, replicas: 2 }, { partition: 2, replicas: 2 }]);
    const first = await reader.read(transfer, undefined);
    const second = await reader.read(transfer, first.chunk.cursor);
    expect(second.chunk.cursor > first.chunk.cursor).toBe(true);
    const writer = new TransferChunks(target, sources, 2_000);
    await writer.store(transfer, first.chunk, progressOf(transfer, 1, first.chunk), true);
    await writer.store(transfer, second.chunk, progressOf(transfer, 2, second.chunk), true);
    const older = plan([{ partition: 0, replicas: 2 }], 'c0/tsr/a>b');
    const olderChunk = (await reader.read(older, undefined)).chunk;
    await writer.store(older, olderChunk, progressOf(older, 1, olderChunk), true);
    expect(await writer.storedProgress()).toEqual([progressOf(older, 1, olderChunk), progressOf(transfer, 2, second.chunk)]);
    await writer.forgetProgress('c1');
    expect(await writer.storedProgress()).toEqual([progressOf(transfer, 2, second.chunk)]);
    await writer.forgetProgress(undefined);
    expect(await writer.storedProgress()).toEqual([]);
  });

  it('refuses a chunk whose keys go back to a partition it had left, and stores nothing of it', async () => {
    const writer = new TransferChunks(target, sources, 100_000);
    const transfer = plan([{ partition: 0, replicas: 2 }, { partition: 2, replicas: 2 }]);
    const key = (partition: string, id: string) => Buffer.from(`demo/c/a/${partition}/${id}`);
    const bytes = encodePairs([[key('0000', 'a'), Buffer.from('1')], [key('0002', 'b'), Buffer.from('2')], [key('0000', 'c'), Buffer.from('3')]]);
    const chunk: ChunkData = { bytes, records: 3, cursor: 'demo/c/a/0000/c' };
    await expect(writer.store(transfer, chunk, progressOf(transfer, 1, chunk), true)).rejects.toThrow(/0000.*come after those of .*0002/);
    expect(await writer.storedProgress()).toEqual([]);
  });

  it('drops the slots a node no longer owns and nothing else', async () => {
    const chunks = new TransferChunks(source, sources, 1_000);
    await chunks.drop('tsr', [{ partition: 0, replicas: 2 }, { partition: 3, replicas: 3 }]);
    const tsr = new TimeSeriesRepository(source);
    expect(Object.fromEntries(await tsr.countByPartition('demo/c/a'))).toEqual({ 2: 75 });
    expect(Object.fromEntries(await tsr.countByPartition('demo/c/b'))).toEqual({ 1: 75 });
  });
});

describe('transfer chunks - ranges with nothing to move', () => {
  const everyPartition = Array.from({ length: 128 }, (_, partition) => ({ partition, replicas: 2 }));

  it('sends an empty repository as one empty, last chunk, after a seek or two, not a read of every partition', async () => {
    const chunks = new TransferChunks(source, sources, 1_000);
    const transfer = { ...plan(everyPartition, 'c1/ssr/a>b'), repo: 'ssr' as const };
    const seeks = vi.spyOn(source.ssr, 'keys');
    const reads = vi.spyOn(source.ssr, 'iterator');
    const { chunk, last, totalEstimate } = await chunks.read(transfer, undefined);
    expect({ records: chunk.records, bytes: chunk.bytes.length, last, totalEstimate }).toEqual({ records: 0, bytes: 0, last: true, totalEstimate: 0 });
    // The total and the chunk: the first partition and one seek past the rest, each, where
    // all 128 partitions were counted and read.
    expect(seeks.mock.calls.length + reads.mock.calls.length).toBeLessThanOrEqual(4);
  });

  it('moves every record of a sparse transfer, skipping its empty partitions by seeks', async () => {
    // Stream a (replicas 2) holds partitions 0 and 2 only; the transfer names all 128.
    const chunks = new TransferChunks(source, sources, 100_000);
    const transfer = plan(everyPartition);
    const seeks = vi.spyOn(source.tsr, 'keys');
    const reads = vi.spyOn(source.tsr, 'iterator');
    let cursor: string | undefined;
    let moved = 0;
    for (let chunksRead = 0; ; chunksRead += 1) {
      expect(chunksRead).toBeLessThan(10);
      const read = await chunks.read(transfer, cursor);
      expect(read.totalEstimate).toBe(chunksRead === 0 ? 0 : 150);
      await chunks.whenCounted(transfer.id);
      moved += read.chunk.records;
      cursor = read.chunk.cursor;
      if (read.last) break;
    }
    expect(moved).toBe(150);
    expect(seeks.mock.calls.length + reads.mock.calls.length).toBeLessThanOrEqual(20);
  });

  it('ends a transfer whose cursor is past its last record with an empty, last chunk', async () => {
    const chunks = new TransferChunks(source, sources, 100_000);
    const transfer = plan([{ partition: 2, replicas: 2 }]);
    const first = await chunks.read(transfer, undefined);
    expect(first.chunk.records).toBe(75);
    const after = await chunks.read(transfer, first.chunk.cursor);
    expect({ records: after.chunk.records, last: after.last }).toEqual({ records: 0, last: true });
  });
});

describe('transfer chunks - progress counts payloads', () => {
  it('counts the payloads of tsr blocks, not the blocks, in chunks and in the total', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-chunks-'));
    dirs.push(dir);
    const database = await Database.open(dir);
    try {
      const tsr = new TimeSeriesRepository(database);
      const records = Array.from({ length: 40 }, (_, i) => {
        const entries = Array.from({ length: 1 + (i % 5) }, (__, j) => ({ timestamp: 1_000 + i * 10 + j, payload: { i, j }, position: j }));
        return { stream: 'demo/c/a', partition: i % 2, timestamp: 1_000 + i * 10, writeId: `w${i}`, value: packBlocks(entries)[0]!.text };
      });
      await database.batch(tsr.writeOperations(records), { sync: true });
      const payloads = Array.from({ length: 40 }, (_, i) => 1 + (i % 5)).reduce((sum, count) => sum + count, 0);
      const reader = new TransferChunks(database, sources, 600);
      const transfer = plan([{ partition: 0, replicas: 2 }, { partition: 1, replicas: 2 }], 'c3/tsr/a>b');
      let cursor: string | undefined;
      let moved = 0;
      const totals: number[] = [];
      for (;;) {
        const { chunk, last, totalEstimate } = await reader.read(transfer, cursor);
        expect([0, payloads]).toContain(totalEstimate);
        totals.push(totalEstimate);
        await reader.whenCounted(transfer.id);
        moved += chunk.records;
        cursor = chunk.cursor;
        if (last) break;
      }
      expect(moved).toBe(payloads);
      expect(totals.length).toBeGreaterThan(2);
      expect(totals.at(-1)).toBe(payloads);
    } finally {
      await database.close();
    }
  });
});

describe('transfer chunks - the total of a large transfer', () => {
  it('is counted up to a bound, then estimated from what LevelDB holds on disk, within 15%', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-chunks-'));
    dirs.push(dir);
    let database = await Database.open(dir);
    const tsr = new TimeSeriesRepository(database);
    // 12,000 records of ~1 KiB over 8 partitions of stream a, written in batches.
    for (let batch = 0; batch < 24; batch += 1) {
      const records = [];
      for (let i = batch * 500; i < (batch + 1) * 500; i += 1) {
        records.push(oneBlock('demo/c/a', i % 8, 1_000 + i, `w${String(i).padStart(6, '0')}`, { i, text: `${i} `.repeat(200).slice(0, 1000) }));
      }
      await database.batch(tsr.writeOperations(records), { sync: true });
    }
    // A reopen moves the memory table into a file, where approximate sizes see it.
    await database.close();
    database = await Database.open(dir);
    try {
      const transfer = plan(Array.from({ length: 8 }, (_, partition) => ({ partition, replicas: 2 })), 'c2/tsr/a>b');
      const totalOf = async (chunks: TransferChunks) => {
        expect((await chunks.read(transfer, undefined)).totalEstimate).toBe(0); // no read waits for the count
        await chunks.whenCounted(transfer.id);
        return chunks.read(transfer, undefined);
      };
      const exact = await totalOf(new TransferChunks(database, sources, 1 << 20));
      expect(exact.totalEstimate).toBe(12_000);
      const estimated = await totalOf(new TransferChunks(database, sources, 1 << 20, 2_000));
      expect(estimated.totalEstimate).not.toBe(12_000);
      expect(Math.abs(estimated.totalEstimate - 12_000)).toBeLessThan(12_000 * 0.15);
    } finally {
      await database.close();
    }
  });
});

describe('transfer chunks - encoding', () => {
  it('round-trips pairs with any text, and refuses truncated bytes', async () => {
    const { decodePairs, encodePairs } = await import('../../src/cluster/transfer-chunks.js');
    const texts: Array<[string, string]> = [['a/b/c/0001/x', '{"é":"😀","q":"\\"quoted\\""}'], ['', ''], ['k', 'v'.repeat(70_000)]];
    const bytes = encodePairs(texts.map(([key, value]) => [Buffer.from(key), Buffer.from(value)]));
    expect(decodePairs(bytes).map(([key, value]) => [key.toString('utf8'), value.toString('utf8')])).toEqual(texts);
    expect(() => decodePairs(bytes.subarray(0, bytes.length - 1))).toThrow(/truncated/);
  });
});

describe('transfer chunks - partition digests built on the way', () => {
  /** A node's digests over `database`, and the chunk sources that feed them (as node.ts wires them). */
  function digestsOver(database: Database) {
    const repositories = { ssr: new SearchableRepository(database), tsr: new TimeSeriesRepository(database) };
    const partitions = new StoredPartitions(repositories, {} as LocalReplica);
    const scans = vi.spyOn(repositories.tsr, 'partitionKeys');
    const wired = { ...sources, partitionChanged: (repo: 'ssr' | 'tsr', stream: string, partition: number) => partitions.stale(repo, stream, partition), digests: partitions };
    return { partitions, scans, wired, tsr: repositories.tsr };
  }

  /** Moves the transfer chunk by chunk; `between` runs after each chunk is stored. */
  async function move(reader: TransferChunks, writer: TransferChunks, transfer: TransferPlan, between: (seq: number) => Promise<void> = async () => undefined): Promise<void> {
    let cursor: string | undefined;
    for (let seq = 1; ; seq += 1) {
      expect(seq).toBeLessThan(200);
      const { chunk, last } = await reader.read(transfer, cursor);
      await writer.store(transfer, chunk, progressOf(transfer, seq, chunk), last);
      cursor = chunk.cursor;
      if (last) return;
      await between(seq);
    }
  }

  /** The digest the partition's keys give when scanned. */
  async function scanned(tsr: TimeSeriesRepository, stream: string, partition: number): Promise<number[]> {
    return Array.from(digestKeys(await tsr.partitionKeys(stream, partition)));
  }

  // Stream a (replicas 2) holds partitions 0 and 2, 75 records each; chunks of ~10 records.
  const transfer = plan([{ partition: 0, replicas: 2 }, { partition: 2, replicas: 2 }]);

  it('leaves each end the digest of every partition it read or stored whole, equal to a scan\'s, with no scan', async () => {
    const from = digestsOver(source);
    const to = digestsOver(target);
    await move(new TransferChunks(source, from.wired, 2_000), new TransferChunks(target, to.wired, 2_000), transfer);
    const digests = await Promise.all([0, 2].map((partition) => from.partitions.digest({ repo: 'tsr', stream: 'demo/c/a', partition })));
    // The target's last partition waits for a chunk after it: only the first one is built there.
    const targetFirst = await to.partitions.digest({ repo: 'tsr', stream: 'demo/c/a', partition: 0 });
    expect(from.scans).not.toHaveBeenCalled();
    expect(to.scans).not.toHaveBeenCalled();
    expect(digests.map((digest) => Array.from(digest))).toEqual([await scanned(from.tsr, 'demo/c/a', 0), await scanned(from.tsr, 'demo/c/a', 2)]);
    expect(Array.from(targetFirst)).toEqual(await scanned(to.tsr, 'demo/c/a', 0));
    expect(Array.from(targetFirst)).toEqual(Array.from(digests[0]!));
  });

  it('keeps no digest of a partition written to while it moved, on either end: the next is a scan that sees the write', async () => {
    const from = digestsOver(source);
    const to = digestsOver(target);
    const extra = oneBlock('demo/c/a', 0, 5_000, 'w9999', { late: true });
    await move(new TransferChunks(source, from.wired, 2_000), new TransferChunks(target, to.wired, 2_000), transfer, async (seq) => {
      if (seq !== 2) return;
      // A write to partition 0 on both ends while the transfer is inside it (as a write owner's would be).
      for (const [database, ends] of [[source, from], [target, to]] as const) {
        await database.batch(ends.tsr.writeOperations([extra]), { sync: true });
        ends.partitions.staleRecords('tsr', [extra]);
      }
    });
    for (const ends of [from, to]) {
      const digest = await ends.partitions.digest({ repo: 'tsr', stream: 'demo/c/a', partition: 0 });
      expect(ends.scans).toHaveBeenCalledTimes(1);
      expect(Array.from(digest)).toEqual(await scanned(ends.tsr, 'demo/c/a', 0));
    }
    expect((await from.tsr.partitionKeys('demo/c/a', 0)).length).toBe(76);
  });

  it('forgets every digest built and spoils those under way when the database is opened again (it may have lost batches)', async () => {
    const from = digestsOver(source);
    const reader = new TransferChunks(source, from.wired, 2_000);
    // Partition 0 is read whole (its digest kept), partition 2 only begun.
    let cursor: string | undefined;
    for (let read = await reader.read(transfer, cursor); ; read = await reader.read(transfer, cursor)) {
      cursor = read.chunk.cursor;
      if (cursor.startsWith('demo/c/a/0002/')) break;
    }
    from.partitions.forgetAll();
    for (let read = await reader.read(transfer, cursor); ; read = await reader.read(transfer, cursor)) {
      cursor = read.chunk.cursor;
      if (read.last) break;
    }
    for (const partition of [0, 2]) {
      expect(Array.from(await from.partitions.digest({ repo: 'tsr', stream: 'demo/c/a', partition }))).toEqual(await scanned(from.tsr, 'demo/c/a', partition));
    }
    expect(from.scans).toHaveBeenCalledTimes(4); //                                   two digests scanned, two scans to compare
  });

  it('builds no digest on a target whose partition held records before, nor from a read that starts over', async () => {
    const from = digestsOver(source);
    const to = digestsOver(target);
    const early = oneBlock('demo/c/a', 0, 7, 'w0000a', { early: true });
    await target.batch(to.tsr.writeOperations([early]), { sync: true });
    const reader = new TransferChunks(source, from.wired, 2_000);
    // The target asks again from the first chunk's cursor after the second was read (its
    // store failed, a stall): the keys of the second chunk are read again.
    const first = await reader.read(transfer, undefined);
    await reader.read(transfer, first.chunk.cursor);
    const writer = new TransferChunks(target, to.wired, 2_000);
    await writer.store(transfer, first.chunk, progressOf(transfer, 1, first.chunk), first.last);
    for (let cursor = first.chunk.cursor, seq = 2; ; seq += 1) {
      expect(seq).toBeLessThan(200);
      const { chunk, last } = await reader.read(transfer, cursor);
      await writer.store(transfer, chunk, progressOf(transfer, seq, chunk), last);
      cursor = chunk.cursor;
      if (last) break;
    }
    for (const ends of [from, to]) {
      const digest = await ends.partitions.digest({ repo: 'tsr', stream: 'demo/c/a', partition: 0 });
      expect(Array.from(digest)).toEqual(await scanned(ends.tsr, 'demo/c/a', 0));
    }
    expect(to.scans).toHaveBeenCalledTimes(2);
    expect((await to.tsr.partitionKeys('demo/c/a', 0)).length).toBe(76);
  });
});

