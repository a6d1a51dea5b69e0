// Moving a stream's payloads to another repository (docs/storage.md, "Changing a stream's
// repository"): the conversion keeps each payload's identity both ways; the pure core
// walks copying → copied → deleting → done; the mover, over a real database, moves every
// payload exactly once while stores go on, and carries on from its cursor after a restart.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../src/storage/database.js';
import { GroupCommitter } from '../../src/storage/group-commit.js';
import { LocalReplica } from '../../src/storage/local-replica.js';
import { convertRecords } from '../../src/storage/repository-convert.js';
import type { Repository, RepositoryName, StoredPayload, StoredRecord } from '../../src/storage/repository.js';
import { SearchableRepository } from '../../src/storage/ssr.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { blockRecords } from '../../src/streams/block-records.js';
import { canonicalJson } from '../../src/lib/json.js';
import { partitionOf } from '../../src/streams/partitioner.js';
import { DEFAULT_POLICY } from '../../src/streams/policy.js';
import {
  afterChunk,
  beginDeleting,
  nextStep,
  percentComplete,
  readRepository,
  startMove,
  storeTargets,
  type MoveOrder,
} from '../../src/streams/repository-move.js';
import { loadMoveStates, RepositoryMover, type MoveProgress } from '../../src/streams/repository-mover.js';
import { Prng } from '../sim/prng.js';
import { createLogger } from '../../src/lib/log.js';

const STREAM = 'demo/mobile/happiness';
const POLICY = { ...DEFAULT_POLICY, ring_size: 8 };
const START_MS = Date.UTC(2017, 3, 21);

function payloads(count: number, seed: number, first = 0): Array<Record<string, unknown>> {
  const prng = new Prng(seed);
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(START_MS + (first + i) * 1_000).toISOString(),
    happiness: prng.int(0, 10),
    user: { name: prng.pick(['ann', 'bob', 'cy']), id: 855448618232418304n + BigInt(first + i) },
  }));
}

/** tsr records as ingest makes them for one POST of these payloads. */
function tsrWrite(batch: ReadonlyArray<Record<string, unknown>>, base: string): StoredRecord[] {
  return blockRecords(STREAM, POLICY, batch.map((payload, position) => ({ payload, position, timestamp: Date.parse(payload.timestamp as string) })), base).records;
}

/** ssr records as ingest makes them. */
function ssrWrite(batch: ReadonlyArray<Record<string, unknown>>, base: string): StoredRecord[] {
  return batch.map((payload, index) => ({ stream: STREAM, partition: partitionOf(payload, POLICY), timestamp: Date.parse(payload.timestamp as string), writeId: `${base}.${String(index).padStart(4, '0')}`, value: canonicalJson(payload) }));
}

async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** Every payload a repository holds, by writeId (a payload held twice would show). */
async function held(repository: Repository): Promise<Map<string, StoredPayload>> {
  const found = new Map<string, StoredPayload>();
  for (const payload of await all(repository.scan(STREAM))) {
    expect(found.has(payload.writeId), `${payload.writeId} held twice in ${repository.name}`).toBe(false);
    found.set(payload.writeId, payload);
  }
  return found;
}

describe('repository move - conversion', () => {
  it('keeps every payload, its event time and its writeId, from tsr to ssr and back', () => {
    const batch = payloads(300, 1);
    const blocks = tsrWrite(batch, '00005a0000aaaa.node-1');
    const documents = convertRecords(blocks, 'tsr', 'ssr');
    expect(documents).toHaveLength(300);
    expect(new Set(documents.map((record) => record.writeId)).size).toBe(300);
    for (const document of documents) expect(document.writeId).toMatch(/^00005a0000aaaa\.node-1:[0-9a-f]{7}$/);
    expect(documents.map((record) => record.value).sort()).toEqual(batch.map((payload) => canonicalJson(payload)).sort());
    const back = convertRecords(documents, 'ssr', 'tsr');
    const again = convertRecords(back, 'tsr', 'ssr');
    expect(again).toEqual(documents);
    expect(convertRecords(blocks, 'tsr', 'tsr')).toEqual(blocks);
  });

  it("keeps an ssr document's own writeId in the one-payload block it becomes", () => {
    const documents = ssrWrite(payloads(5, 2), '00005a0000bbbb.node-2');
    const blocks = convertRecords(documents, 'ssr', 'tsr');
    expect(convertRecords(blocks, 'tsr', 'ssr')).toEqual(documents);
  });
});

describe('repository move - the core', () => {
  const order: MoveOrder = { id: 'm1', from: 'tsr', to: 'ssr' };

  it('copies partition after partition, waits for the grace without reads of the old repository, deletes, and is done', () => {
    let state = startMove(STREAM, order, [2, 5], 40);
    expect(nextStep(state, 1_000, 0, 500)).toEqual({ kind: 'copy', partition: 2, after: undefined });
    state = afterChunk(state, 10, 'k10', 1_100);
    expect(nextStep(state, 1_100, 0, 500)).toEqual({ kind: 'copy', partition: 2, after: 'k10' });
    expect(percentComplete(state)).toBe(22);
    state = afterChunk(state, 5, undefined, 1_200);
    expect(nextStep(state, 1_200, 0, 500)).toEqual({ kind: 'copy', partition: 5, after: undefined });
    state = afterChunk(state, 25, undefined, 1_300);
    expect(state).toMatchObject({ phase: 'copied', copied: 40, copiedAtMs: 1_300 });
    expect(percentComplete(state)).toBe(90);
    // A read of the old repository at 1,600 puts the deletion off to 2,100.
    expect(nextStep(state, 1_700, 1_600, 500)).toEqual({ kind: 'wait', ms: 400 });
    expect(nextStep(state, 2_100, 1_600, 500)).toEqual({ kind: 'begin-deleting' });
    state = beginDeleting(state, [2], 2_100);
    expect(nextStep(state, 2_100, 1_600, 500)).toEqual({ kind: 'delete', partition: 2, after: undefined });
    state = afterChunk(state, 3, undefined, 2_200);
    expect(state.phase).toBe('done');
    expect(percentComplete(state)).toBe(100);
    expect(nextStep(state, 9_999, 0, 500)).toEqual({ kind: 'none' });
    // Nothing held here: copied at once, and no grace to wait for.
    const empty = startMove(STREAM, order, [], 0);
    expect(empty.phase).toBe('copied');
    expect(nextStep(empty, 5_000, 0, 500)).toEqual({ kind: 'begin-deleting' });
  });

  it('stores into both repositories until deleting; reads the complete one, a read carrying on in the one it began in', () => {
    const copying = startMove(STREAM, order, [1], 10);
    const copied = afterChunk(copying, 10, undefined, 1);
    const deleting = beginDeleting(copied, [1], 2);
    const done = afterChunk(deleting, 10, undefined, 3);
    expect(storeTargets(undefined, 'tsr', 'ssr')).toEqual(['tsr']);
    expect(storeTargets(copying, 'ssr', 'tsr')).toEqual(['tsr', 'ssr']);
    expect(storeTargets(copied, 'ssr', 'ssr')).toEqual(['tsr', 'ssr']);
    expect(storeTargets(deleting, 'ssr', 'tsr')).toEqual(['ssr']);
    expect(storeTargets(done, 'ssr', 'tsr')).toEqual(['ssr']);
    expect(readRepository(undefined, 'tsr', false)).toBe('tsr');
    expect(readRepository(copying, 'ssr', true)).toBe('tsr');
    expect(readRepository(copying, 'tsr', false)).toBe('tsr');
    expect(readRepository(copying, 'ssr', false)).toMatch(/still copying/);
    expect(readRepository(copied, 'ssr', true)).toBe('ssr');
    expect(readRepository(copied, 'tsr', false)).toBe('tsr');
    expect(readRepository(deleting, 'tsr', false)).toMatch(/moved/);
    expect(readRepository(deleting, 'ssr', true)).toBe('ssr');
    expect(readRepository(done, 'tsr', false)).toMatch(/moved/);
    expect(readRepository(done, 'ssr', false)).toBe('ssr');
  });
});

// ---------------------------------------------------------------- the mover over a real database

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Node {
  database: Database;
  repositories: Record<RepositoryName, Repository>;
  replica: LocalReplica;
  mover: RepositoryMover;
  reports: MoveProgress[];
}

async function openNode(dir: string, mapping: () => { name: RepositoryName; move?: MoveOrder }, limits = { chunkRecords: 7, pacingMs: 0, graceMs: 0 }): Promise<Node> {
  const database = await Database.open(dir);
  const repositories = { ssr: new SearchableRepository(database), tsr: new TimeSeriesRepository(database) };
  const committer = new GroupCommitter(database);
  const reports: MoveProgress[] = [];
  const mover = new RepositoryMover({
    states: await loadMoveStates(database.local),
    repositories,
    commit: (operations) => committer.commit(operations),
    local: database.local,
    stored: () => undefined,
    dropped: () => undefined,
    mappingOf: () => mapping(),
    moving: () => (mapping().move === undefined ? [] : [STREAM]),
    report: async (_stream, progress) => void reports.push(progress),
    wallClock: Date.now,
    log: createLogger('test', 'silent'),
    limits,
  });
  const replica = new LocalReplica(repositories, committer, () => undefined, (stream, tagged) => mover.targets(stream, tagged));
  return { database, repositories, replica, mover, reports };
}

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('repository move - the mover', () => {
  it('moves every payload from tsr to ssr exactly once while writes tagged for either repository go on; the old repository ends empty', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-move-'));
    dirs.push(dir);
    let mapping: { name: RepositoryName; move?: MoveOrder } = { name: 'tsr' };
    const node = await openNode(dir, () => mapping);
    try {
      const before = payloads(400, 3);
      for (let write = 0; write < 8; write += 1) await node.replica.store('tsr', tsrWrite(before.slice(write * 50, write * 50 + 50), `w${write}.node-1`));
      expect((await held(node.repositories.tsr)).size).toBe(400);
      mapping = { name: 'ssr', move: { id: 'm1', from: 'tsr', to: 'ssr' } };
      node.mover.mappingChanged(STREAM);
      node.mover.start();
      // Writes go on during the move, from writers that know the old mapping and the new.
      const during = payloads(60, 4, 1_000);
      await node.replica.store('tsr', tsrWrite(during.slice(0, 30), 'late.node-2'));
      await node.replica.store('ssr', ssrWrite(during.slice(30), '00005a0000cccc.node-3'));
      await until('the move is done', () => node.reports.at(-1)?.phase === 'done');
      const ssr = await held(node.repositories.ssr);
      expect(ssr.size).toBe(460);
      expect([...ssr.values()].map((payload) => canonicalJson(payload.payload)).sort()).toEqual([...before, ...during].map((payload) => canonicalJson(payload)).sort());
      expect((await held(node.repositories.tsr)).size).toBe(0);
      expect(node.reports.map((report) => report.percentComplete)).toEqual([...node.reports.map((report) => report.percentComplete)].sort((a, b) => a - b));
      // After the move, a writer with the old mapping still reaches the new repository.
      await node.replica.store('tsr', tsrWrite(payloads(3, 5, 2_000), 'stale.node-2'));
      expect((await held(node.repositories.ssr)).size).toBe(463);
      expect((await held(node.repositories.tsr)).size).toBe(0);
    } finally {
      node.mover.close();
      await node.database.close();
    }
  });

  it('carries on from its cursor after a restart mid-move, and every payload is in tsr once at the end (ssr to tsr)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-move-'));
    dirs.push(dir);
    let mapping: { name: RepositoryName; move?: MoveOrder } = { name: 'ssr' };
    const slow = { chunkRecords: 5, pacingMs: 5, graceMs: 0 };
    let node = await openNode(dir, () => mapping, slow);
    const batch = payloads(300, 6);
    await node.replica.store('ssr', ssrWrite(batch, '00005a0000dddd.node-1'));
    mapping = { name: 'tsr', move: { id: 'm2', from: 'ssr', to: 'tsr' } };
    node.mover.mappingChanged(STREAM);
    await until('part of the copy', () => (node.reports.at(-1)?.percentComplete ?? 0) >= 20);
    node.mover.close();
    await node.database.close();
    node = await openNode(dir, () => mapping);
    try {
      const resumed = (await loadMoveStates(node.database.local))[0]!;
      expect(resumed.phase).toBe('copying');
      expect(resumed.copied).toBeGreaterThan(0);
      node.mover.start();
      await until('the move is done', () => node.reports.at(-1)?.phase === 'done');
      const tsr = await held(node.repositories.tsr);
      expect(tsr.size).toBe(300);
      expect(new Set([...tsr.keys()])).toEqual(new Set(ssrWrite(batch, '00005a0000dddd.node-1').map((record) => record.writeId)));
      expect((await held(node.repositories.ssr)).size).toBe(0);
    } finally {
      node.mover.close();
      await node.database.close();
    }
  });
});
