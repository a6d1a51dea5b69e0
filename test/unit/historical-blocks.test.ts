// Historical queries over tsr blocks: the column reader and the block-row reader
// must give exactly what the whole-payload reader gives, for every query they take.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planBlockRows } from '../../src/historical/block-row-plan.js';
import { readBlockColumns, readBlockRows } from '../../src/historical/historical-blocks.js';
import { readHistorical, scanPage, type HistoricalSource } from '../../src/historical/historical-reader.js';
import { readLatestRows } from '../../src/historical/historical-latest.js';
import { type LatestEntry, LatestValues, type LatestRequest, mergeLatest } from '../../src/historical/latest-values.js';
import { createPipeline } from '../../src/pipeline/index.js';
import type { Change } from '../../src/pipeline/types.js';
import { timeBoundsOf } from '../../src/historical/time-bounds.js';
import { analyseQuery } from '../../src/query/index.js';
import { Database } from '../../src/storage/database.js';
import type { StoredRecord } from '../../src/storage/repository.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { type BlockEntry, isoString, packBlocks } from '../../src/storage/tsr-block.js';
import { partitionOf } from '../../src/streams/partitioner.js';
import { Prng } from '../sim/prng.js';

const STREAM = '/streams/t/c/metrics';
const KEY = 't/c/metrics';
const RING = 8;
const START_MS = Date.UTC(2024, 0, 1);
const FROM_MS = START_MS + 7 * 60_000 + 30_500;
const TO_MS = START_MS + 31 * 60_000;
const SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      cpu: { type: 'double', optional: true },
      host: { type: 'string' },
      mem: { type: 'double' },
      ok: { type: 'boolean' },
      note: { type: 'record', optional: true, properties: { text: { type: 'string' }, n: { type: 'int' } } },
    },
  },
};

let dir: string;
let database: Database;
let tsr: TimeSeriesRepository;
let latestValues: LatestValues;

/**
 * Writes of many shapes: ISO timestamps and others (no milliseconds), payloads without cpu
 * (a field that is then no column), with extra fields, overlapping in time; cpu and mem are
 * multiples of 1/4 and 1/16, so sums are exact in any order.
 */
async function write(prng: Prng): Promise<void> {
  const records: StoredRecord[] = [];
  for (let write = 0; write < 60; write += 1) {
    const base = START_MS + prng.int(0, 40) * 60_000;
    const byPartition = new Map<number, BlockEntry[]>();
    for (let position = 0; position < prng.int(1, 80); position += 1) {
      const timestamp = base + prng.int(0, 900) * 1000 + prng.pick([0, 0, 0, 500]);
      const payload: Record<string, unknown> = {
        at: prng.int(0, 9) === 0 ? new Date(timestamp - (timestamp % 1000)).toISOString().replace('.000Z', 'Z') : isoString(timestamp),
        ...(prng.int(0, 30) === 0 ? {} : { host: `h${prng.int(0, 5)}` }),
        mem: prng.int(0, 1024) / 16,
        ok: prng.int(0, 1) === 0,
      };
      if (prng.int(0, 7) !== 0) payload.cpu = prng.int(0, 400) / 4;
      if (prng.int(0, 9) === 0) payload.note = { text: 'extra', n: position };
      const entryTime = Date.parse(payload.at as string);
      const partition = partitionOf(payload, { replicas: 1, ring_size: RING, hash_payload: { bytes: 128 } });
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), { timestamp: entryTime, payload, position }]);
    }
    for (const [partition, entries] of byPartition) {
      packBlocks(entries).forEach((block, ordinal) => records.push({ stream: KEY, partition, timestamp: block.minTs, writeId: `w${String(write).padStart(3, '0')}.${ordinal}`, value: block.text }));
    }
  }
  // Payloads exactly at the bounds the queries below use, in blocks reaching past them.
  for (const [write, bound] of [[100, FROM_MS], [101, TO_MS]] as const) {
    const byPartition = new Map<number, BlockEntry[]>();
    for (let position = 0; position < 40; position += 1) {
      const timestamp = bound + (position % 3 === 0 ? 0 : position % 3 === 1 ? -1 : 1);
      const payload = { at: isoString(timestamp), host: `h${position % 6}`, mem: position / 16, ok: true, cpu: position / 4 };
      const partition = partitionOf(payload, { replicas: 1, ring_size: RING, hash_payload: { bytes: 128 } });
      byPartition.set(partition, [...(byPartition.get(partition) ?? []), { timestamp, payload, position }]);
    }
    for (const [partition, entries] of byPartition) {
      packBlocks(entries).forEach((block, ordinal) => records.push({ stream: KEY, partition, timestamp: block.minTs, writeId: `w${write}.${ordinal}`, value: block.text }));
    }
  }
  await database.batch(tsr.writeOperations(records), { sync: true });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tributary-blocks-'));
  database = await Database.open(dir);
  tsr = new TimeSeriesRepository(database);
  latestValues = new LatestValues(tsr);
  await write(new Prng(21));
});

afterAll(async () => {
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const owners = { localName: 'n', ownersOf: () => ['n'], available: () => true };
const context = { timestampPath: ['at'], variable: () => undefined, isSessionFunction: () => false, isPlainField: () => true };

function checkOf(text: string) {
  const analysis = analyseQuery(text, { streams: new Map([[STREAM, { schema: SCHEMA, repository: 'tsr' }]]) });
  expect(analysis.errors).toEqual([]);
  return analysis.check!;
}

function pipelineFor(check: ReturnType<typeof checkOf>, skip = 0, columns?: Parameters<typeof createPipeline>[0]['columns']) {
  return createPipeline({
    check: { ...check, steps: check.steps.slice(skip) },
    historical: true,
    compile: { clock: Date.now },
    limits: { groupsMax: 1e6, rowsHeldMax: 1e6 },
    ...(columns === undefined ? {} : { columns }),
  });
}

/** The result read from whole payloads (historical-reader.ts): the reference. */
async function fromPayloads(text: string): Promise<Change[]> {
  const check = checkOf(text);
  const source: HistoricalSource = { stream: KEY, repo: 'tsr', ringSize: RING, replicas: 1, ...timeBoundsOf(check.steps, ['at'], () => undefined) };
  const deps = { ...owners, scanLocal: (request: Parameters<typeof scanPage>[1]) => scanPage((stream, options) => tsr.scan(stream, options), request, 50), scanRemote: () => Promise.reject(new Error('no peers')) };
  const pipeline = pipelineFor(check);
  for await (const rows of readHistorical(deps, source, 50)) pipeline.push(rows, 0);
  return pipeline.finish();
}

/** The result read from blocks as the plan says, and how it was read. */
async function fromBlocks(text: string): Promise<{ how: 'columns' | 'rows' | 'latest'; changes: Change[] }> {
  const check = checkOf(text);
  const plan = planBlockRows(check.steps, context);
  expect(plan).toBeDefined();
  if (plan!.latest !== undefined) {
    const source: HistoricalSource = { stream: KEY, repo: 'tsr', ringSize: RING, replicas: 1, rows: plan! };
    const deps = { ...owners, latestKept: (request: LatestRequest) => latestValues.kept(request), latestLocal: (request: LatestRequest) => latestValues.latest(request), latestRemote: () => Promise.reject(new Error('no peers')) };
    const pipeline = pipelineFor(check);
    for await (const rows of readLatestRows(deps, source, plan!.latest)) pipeline.push(rows, 0);
    return { how: 'latest', changes: pipeline.finish() };
  }
  const source: HistoricalSource = { stream: KEY, repo: 'tsr', ringSize: RING, replicas: 1, ...timeBoundsOf(check.steps, ['at'], () => undefined), rows: plan! };
  // Small pages: every page boundary is crossed many times.
  const deps = { ...owners, blocksLocal: (request: Parameters<TimeSeriesRepository['blockPage']>[2] & { stream: string; partition: number }) => tsr.blockPage(request.stream, request.partition, { ...request, charsMax: 700 }), blocksRemote: () => Promise.reject(new Error('no peers')) };
  const pipeline = pipelineFor(check, plan!.absorbed?.steps ?? 0, plan!.columns);
  if (plan!.columns !== undefined) {
    for await (const batch of readBlockColumns(deps, source, plan!)) pipeline.pushColumns(batch);
    return { how: 'columns', changes: pipeline.finish() };
  }
  for await (const rows of readBlockRows(deps, source, plan!, 37)) pipeline.push(rows, 0);
  return { how: 'rows', changes: pipeline.finish() };
}

/**
 * stddev adds its values one by one (Welford): columns, read in another order than time,
 * may round its last bits differently; every other aggregate here is exact in any order.
 */
function roundSpreads(changes: readonly Change[]): Change[] {
  return changes.map((change) => (typeof change.data.spread === 'number' ? { ...change, data: { ...change.data, spread: Number(change.data.spread.toPrecision(12)) } } : change));
}

const from = isoString(FROM_MS);
const to = isoString(TO_MS);

describe('historical blocks - the same answers as whole payloads', () => {
  const cases: Array<[string, 'columns' | 'rows' | 'latest']> = [
    [`from historical ${STREAM} group by host select host, last(at) as at, last(cpu) as cpu, last(mem) as mem`, 'latest'],
    [`from historical ${STREAM} group by ok select ok, last(cpu) as cpu, last(note) as note`, 'latest'],
    [`from historical ${STREAM} group by host, at window of 1 minute select host, at, count() as n, count(cpu) as c, avg(cpu) as cpu, sum(mem) as mem, min(cpu) as low, max(mem) as high, stddev(mem) as spread`, 'columns'],
    [`from historical ${STREAM} where at >= '${from}' && at < '${to}' group by host, at window of 5 minutes select host, at, count() as n, avg(cpu) as cpu`, 'columns'],
    // Windows of a second: a key's windows far apart (past the dense array a key keeps), in any order.
    [`from historical ${STREAM} group by host, at window of 1 second select host, at, count() as n, avg(cpu) as cpu`, 'columns'],
    [`from historical ${STREAM} where at > '${from}' where at <= '${to}' group by ok select ok, count() as n, sum(cpu) as cpu`, 'columns'],
    [`from historical ${STREAM} select count() as n, avg(mem) as mem`, 'columns'],
    [`from historical ${STREAM} group by host select host, last(at) as at, last(cpu) as cpu, first(mem) as mem, count() as n`, 'rows'],
    [`from historical ${STREAM} where cpu > 50 group by host, at window of 2 minutes select host, at, count() as n, avg(mem) as mem`, 'rows'],
    [`from historical ${STREAM} where at >= '${from}' && cpu > 20 group by host select host, count() as n, max(cpu) as top`, 'rows'],
    [`from historical ${STREAM} group by host, at window of 10 minutes every 1 minute select host, at, count() as n`, 'rows'],
    [`from historical ${STREAM} group by note.n select n, count() as n2`, 'rows'],
  ];
  for (const [text, how] of cases) {
    it(`reads ${how}: ${text.slice(text.indexOf(STREAM) + STREAM.length + 1)}`, async () => {
      const expected = await fromPayloads(text);
      expect(expected.length).toBeGreaterThan(0);
      const actual = await fromBlocks(text);
      expect(actual.how).toBe(how);
      expect(roundSpreads(actual.changes)).toEqual(roundSpreads(expected));
    });
  }
});

describe('historical blocks - a key\'s windows in any order', () => {
  // Column batches as partitions give them: each in time order, the next starting earlier
  // again; a key's windows come back, go before the first seen, and jump far past the
  // last. The grouping keeps a key's windows in an array it may only grow so far.
  const minute = 60_000;
  const windowsOfHostA = [10, 11, 13, 5, 2, 11, 400_000, 12, 1, 10, 70_000, 3];
  const windowsOfHostB = [7, 7, 900, 6, 8];
  const rows = [
    ...windowsOfHostA.map((window, i) => ({ host: 'a', at: START_MS + window * minute + i, cpu: i })),
    ...windowsOfHostB.map((window, i) => ({ host: 'b', at: START_MS + window * minute + i, cpu: 100 + i })),
  ];
  const text = `from historical ${STREAM} group by host, at window of 1 minute select host, at, count() as n, sum(cpu) as cpu`;

  it('gives what rows give, batch by batch', () => {
    const check = checkOf(text);
    const plan = planBlockRows(check.steps, context);
    expect(plan?.columns).toBeDefined();
    const byRows = pipelineFor(check);
    byRows.push(rows.map((row) => ({ host: row.host, at: isoString(row.at), cpu: row.cpu })), 0);
    const byColumns = pipelineFor(check, plan!.absorbed?.steps ?? 0, plan!.columns);
    const hosts = ['a', 'b'];
    // Three rows a batch, so that the key's last window and its array carry over batches.
    for (let first = 0; first < rows.length; first += 3) {
      const batch = rows.slice(first, first + 3);
      byColumns.pushColumns({
        count: batch.length,
        timestamps: batch.map((row) => row.at),
        keep: undefined,
        column: (field) =>
          field === 'host'
            ? { kind: 'codes', distinct: hosts, codes: batch.map((row) => hosts.indexOf(row.host)) }
            : field === 'cpu'
              ? { kind: 'values', values: Float64Array.from(batch, (row) => row.cpu) }
              : { kind: 'timestamp' },
      });
    }
    const expected = byRows.finish();
    expect(expected).toHaveLength(new Set(rows.map((row) => `${row.host} ${Math.floor((row.at - START_MS) / minute)}`)).size);
    // A late subscriber's snapshot reads the groups before the end: it leaves them whole.
    expect(byColumns.snapshot()).toEqual(expected);
    expect(byColumns.snapshot()).toEqual(expected);
    expect(byColumns.finish()).toEqual(expected);
  });
});

describe('historical blocks - last values per key as writes and drops come', () => {
  const text = `from historical ${STREAM} group by host select host, last(at) as at, last(cpu) as cpu`;

  it('keeps its key index current with what is stored, and builds it again after a drop', async () => {
    expect((await fromBlocks(text)).changes).toEqual(await fromPayloads(text));
    // A new key, and newer values of old ones, stored after the index was built.
    const records: StoredRecord[] = [];
    const prng = new Prng(99);
    for (let position = 0; position < 30; position += 1) {
      const timestamp = START_MS + 50 * 60_000 + prng.int(0, 1000);
      const payload = { at: isoString(timestamp), host: position % 2 === 0 ? 'h-new' : `h${position % 6}`, mem: 1, ok: false, ...(position % 3 === 0 ? {} : { cpu: position / 4 }) };
      const partition = partitionOf(payload, { replicas: 1, ring_size: RING, hash_payload: { bytes: 128 } });
      packBlocks([{ timestamp, payload, position }]).forEach((block) => records.push({ stream: KEY, partition, timestamp: block.minTs, writeId: `late${position}.0`, value: block.text }));
    }
    await database.batch(tsr.writeOperations(records), { sync: true });
    latestValues.stored(records);
    const after = await fromBlocks(text);
    expect(after.changes).toEqual(await fromPayloads(text));
    expect(after.changes.some((change) => change.data.host === 'h-new')).toBe(true);
    // A partition emptied by a drop: its index goes, and the answer follows the data.
    const [dropped] = records;
    await database.batch((await tsr.partitionKeys(KEY, dropped!.partition)).map((suffix) => ({ type: 'del' as const, sublevel: database.tsr, key: `${KEY}/${dropped!.partition.toString(16).padStart(4, '0')}/${suffix}` })), { sync: true });
    latestValues.forget(KEY, dropped!.partition);
    expect((await fromBlocks(text)).changes).toEqual(await fromPayloads(text));
  });
});

/** A block of one partition of `stream`, of payloads { host, cpu } at the times given. */
function hostBlock(stream: string, writeId: string, entries: Array<[number, string, number]>): StoredRecord {
  const [packed] = packBlocks(entries.map(([timestamp, host, cpu], position) => ({ timestamp, payload: { host, cpu }, position })));
  return { stream, partition: 0, timestamp: packed!.minTs, writeId, value: packed!.text };
}

/** Each key's value of the first field asked for. */
function firstValues(entries: readonly LatestEntry[] | undefined): Record<string, unknown> {
  return Object.fromEntries((entries ?? []).map((entry) => [entry.key, entry.slots[0]?.value]));
}

describe('historical blocks - last values read newest first', () => {
  it('reads on past a block that starts earlier but may end later than what it found', async () => {
    const stream = 't/c/overlap';
    const block = (writeId: string, entries: Array<[number, string, number]>) => hostBlock(stream, writeId, entries);
    // Newest first by start, b comes before a; a starts earlier and ends later, with x's newest.
    const a = block('a.0', [[START_MS + 100, 'y', 1], [START_MS + 500, 'x', 2]]);
    const b = block('b.0', [[START_MS + 200, 'x', 3], [START_MS + 300, 'y', 4]]);
    await database.batch(tsr.writeOperations([a, b]), { sync: true });
    const entries = await new LatestValues(tsr).latest({ stream, partition: 0, key: 'host', fields: ['cpu'] });
    expect(firstValues(entries)).toEqual({ x: 2, y: 4 });
  });

  it('hands out answers that later writes leave as they were, while the kept answer follows the writes', async () => {
    const stream = 't/c/handed-out';
    const block = (writeId: string, entries: Array<[number, string, number]>) => hostBlock(stream, writeId, entries);
    const values = new LatestValues(tsr);
    const request = { stream, partition: 0, key: 'host', fields: ['cpu'] };
    const first = block('a.0', [[START_MS + 100, 'x', 1], [START_MS + 200, 'y', 2]]);
    await database.batch(tsr.writeOperations([first]), { sync: true });
    const before = await values.latest(request);
    const again = await values.latest(request);
    const later = block('b.0', [[START_MS + 300, 'x', 3], [START_MS + 400, 'z', 4]]);
    await database.batch(tsr.writeOperations([later]), { sync: true });
    values.stored([later]);
    expect(firstValues(before)).toEqual({ x: 1, y: 2 });
    expect(firstValues(again)).toEqual({ x: 1, y: 2 });
    expect(firstValues(await values.latest(request))).toEqual({ x: 3, y: 2, z: 4 });
  });

  it('takes the writes stored since it was asked for, older and newer, new keys, ties and missing fields, as a read of the store answers', async () => {
    const stream = 't/c/taken-later';
    const prng = new Prng(7);
    const values = new LatestValues(tsr);
    // cpu in every payload (blocks older than every key's cpu are passed over), mem in few.
    const requests = [
      { stream, partition: 0, key: 'host', fields: ['cpu'] },
      { stream, partition: 0, key: 'host', fields: ['cpu', 'mem'] },
    ];
    const used = new Set<number>();
    let writes = 0;
    const store = async (count: number, round: number): Promise<StoredRecord[]> => {
      const records: StoredRecord[] = [];
      for (let block = 0; block < count; block += 1, writes += 1) {
        // Mostly newer than what is kept; some from long ago, some at the same times; a new key now and then, old ones too.
        const late = prng.int(0, 4) === 0;
        const entries = Array.from({ length: prng.int(1, 8) }, (_, position) => ({
          timestamp: START_MS + (late ? prng.int(0, 5) : round * 10 + prng.int(0, 2)) * 1000,
          payload: { host: prng.int(0, 9) === 0 ? `n${writes}` : `h${prng.int(0, 2)}`, cpu: prng.int(0, 400) / 4, ...(prng.int(0, 5) === 0 ? { mem: prng.int(0, 64) } : {}) },
          position,
        }));
        // writeIds in no order of the writes: a tie is won by the greater, wherever it waits.
        let id: number;
        do id = prng.int(0, 99_999);
        while (used.has(id));
        used.add(id);
        packBlocks(entries).forEach((packed, ordinal) => records.push({ stream, partition: 0, timestamp: packed.minTs, writeId: `w${String(id).padStart(5, '0')}.${ordinal}`, value: packed.text }));
      }
      await database.batch(tsr.writeOperations(records), { sync: true });
      return records;
    };
    // By key: which key an answer names first is no part of it (the query orders its rows).
    const byKey = (entries: readonly LatestEntry[] | undefined) => [...(entries ?? [])].sort((a, b) => String(a.key).localeCompare(String(b.key)));
    const fromStore = async (request: LatestRequest) => byKey(await new LatestValues(tsr).latest(request));
    await store(5, 0);
    for (const request of requests) expect(byKey(await values.latest(request))).toEqual(await fromStore(request));
    for (let round = 1; round <= 30; round += 1) {
      values.stored(await store(prng.int(1, 30), round));
      for (const request of requests) {
        const kept = values.kept(request);
        expect(kept, `round ${round}`).toBeDefined();
        expect(byKey(kept), `round ${round}, ${request.fields}`).toEqual(await fromStore(request));
      }
    }
  });

  it('takes a write at the time of a kept value when its writeId is greater, and a new key from a block older than every kept value', async () => {
    const stream = 't/c/ties';
    const block = (writeId: string, entries: Array<[number, string, number]>) => hostBlock(stream, writeId, entries);
    const values = new LatestValues(tsr);
    const request = { stream, partition: 0, key: 'host', fields: ['cpu'] };
    const first = block('b.0', [[START_MS + 500, 'x', 1], [START_MS + 600, 'y', 2]]);
    await database.batch(tsr.writeOperations([first]), { sync: true });
    expect(firstValues(await values.latest(request))).toEqual({ x: 1, y: 2 });
    // At x's time with a greater writeId (wins), and at y's with a smaller one (loses).
    const ties = [block('c.0', [[START_MS + 500, 'x', 3]]), block('a.0', [[START_MS + 600, 'y', 4]])];
    await database.batch(tsr.writeOperations(ties), { sync: true });
    values.stored(ties);
    expect(firstValues(values.kept(request))).toEqual({ x: 3, y: 2 });
    // A key only before every kept value.
    const older = [block('d.0', [[START_MS + 100, 'z', 5]])];
    await database.batch(tsr.writeOperations(older), { sync: true });
    values.stored(older);
    expect(firstValues(values.kept(request))).toEqual({ x: 3, y: 2, z: 5 });
    expect(firstValues(await new LatestValues(tsr).latest(request))).toEqual({ x: 3, y: 2, z: 5 });
  });

  it('keeps an answer read while writes are stored, with those writes (its key index too), and not one read while the partition is dropped', async () => {
    const stream = 't/c/read-while-stored';
    const block = (writeId: string, entries: Array<[number, string, number]>) => hostBlock(stream, writeId, entries);
    const request = { stream, partition: 0, key: 'host', fields: ['cpu'] };
    await database.batch(tsr.writeOperations([block('a.0', [[START_MS + 1_000, 'x', 1], [START_MS + 1_000, 'y', 2]])]), { sync: true });
    // A read held after its first block (its snapshot taken) while the test stores or drops:
    // the newest-first read of the answer, or the oldest-first one of the key index.
    const heldRead = (meanwhile: (values: LatestValues) => Promise<void>, holding = true) => {
      let reached!: () => void;
      const atFirst = new Promise<void>((resolve) => (reached = resolve));
      let resume!: () => void;
      const resumed = new Promise<void>((resolve) => (resume = resolve));
      const values = new LatestValues({
        async *partitionBlocks(name, partition, newestFirst) {
          let first = newestFirst === holding;
          for await (const stored of tsr.partitionBlocks(name, partition, newestFirst)) {
            if (first) {
              first = false;
              reached();
              await resumed;
            }
            yield stored;
          }
        },
      });
      const asked = values.latest(request);
      return (async () => {
        await atFirst;
        await meanwhile(values);
        resume();
        await asked;
        return values;
      })();
    };
    const later = block('b.0', [[START_MS + 1_300, 'x', 3], [START_MS + 1_400, 'z', 4]]);
    const stored = await heldRead(async (values) => {
      await database.batch(tsr.writeOperations([later]), { sync: true });
      values.stored([later]);
    });
    expect(firstValues(stored.kept(request))).toEqual({ x: 3, y: 2, z: 4 });
    const dropped = await heldRead(async (values) => values.forget(stream, 0));
    expect(dropped.kept(request)).toBeUndefined();
    // A new key stored while the index is built, older than every other key's value: the
    // index has it, so the read goes on past the blocks of x and y (each of no span) to it.
    const older = block('c.0', [[START_MS + 50, 'w', 5]]);
    const indexed = await heldRead(async (values) => {
      await database.batch(tsr.writeOperations([older]), { sync: true });
      values.stored([older]);
    }, false);
    expect(firstValues(indexed.kept(request))).toEqual({ x: 3, y: 2, z: 4, w: 5 });
  });

  it('drops a kept answer that more writes wait beside than it keeps, and reads it again when asked', async () => {
    const stream = 't/c/too-many-waiting';
    const block = (writeId: string, timestamp: number, cpu: number): StoredRecord => {
      const [packed] = packBlocks([{ timestamp, payload: { host: 'x', cpu }, position: 0 }]);
      return { stream, partition: 0, timestamp: packed!.minTs, writeId, value: packed!.text };
    };
    const values = new LatestValues(tsr);
    const request = { stream, partition: 0, key: 'host', fields: ['cpu'] };
    const first = block('a.0', START_MS, 1);
    await database.batch(tsr.writeOperations([first]), { sync: true });
    await values.latest(request);
    const later = Array.from({ length: 1_025 }, (_, index) => block(`b${String(index).padStart(4, '0')}.0`, START_MS + 1 + index, index));
    await database.batch(tsr.writeOperations(later), { sync: true });
    values.stored(later.slice(0, 1_024));
    expect(values.kept(request)?.[0]?.slots[0]?.value).toBe(1_023);
    values.stored(later.slice(1_024));
    expect(values.kept(request)?.[0]?.slots[0]?.value).toBe(1_024);
    // 1,025 blocks at once: more than wait beside an answer (1,024); it is dropped, then read from the store.
    const more = Array.from({ length: 1_025 }, (_, index) => block(`c${String(index).padStart(4, '0')}.0`, START_MS + 2_000 + index, 2_000 + index));
    await database.batch(tsr.writeOperations(more), { sync: true });
    values.stored(more);
    expect(values.kept(request)).toBeUndefined();
    expect((await values.latest(request))[0]?.slots[0]?.value).toBe(3_024);
    expect(values.kept(request)?.[0]?.slots[0]?.value).toBe(3_024);
  });
});

describe('historical blocks - where each partition\'s last values come from', () => {
  it('takes the answers this node keeps without asking, and asks for the rest: its own partitions once, the others from their owner', async () => {
    const latest = { key: 'host', fields: ['at', 'cpu'] };
    const source: HistoricalSource = { stream: KEY, repo: 'tsr', ringSize: RING, replicas: 1 };
    const values = new LatestValues(tsr);
    const elsewhere = new LatestValues(tsr);
    const asked = { local: [] as number[], remote: [] as number[] };
    // Even partitions are this node's; odd ones another's.
    const deps = {
      localName: 'n',
      ownersOf: (partition: number) => [partition % 2 === 0 ? 'n' : 'm'],
      available: () => true,
      latestKept: (request: LatestRequest) => values.kept(request),
      latestLocal: (request: LatestRequest) => (asked.local.push(request.partition), values.latest(request)),
      latestRemote: (_owner: string, request: LatestRequest) => (asked.remote.push(request.partition), elsewhere.latest(request)),
    };
    const read = async () => {
      const rows: Array<Record<string, unknown>> = [];
      for await (const batch of readLatestRows(deps, source, latest)) rows.push(...batch);
      return rows.sort((a, b) => String(a.host).localeCompare(String(b.host)));
    };
    const first = await read();
    const evens = Array.from({ length: RING / 2 }, (_, index) => 2 * index);
    const odds = evens.map((even) => even + 1);
    expect(asked.local.sort((a, b) => a - b)).toEqual(evens);
    expect(asked.remote.sort((a, b) => a - b)).toEqual(odds);
    asked.local = [];
    asked.remote = [];
    const second = await read();
    expect(asked.local).toEqual([]);
    expect(asked.remote.sort((a, b) => a - b)).toEqual(odds);
    expect(second).toEqual(first);
    expect(first.length).toBeGreaterThan(1);
    // The same rows as every partition read here.
    const alone = { ...deps, ownersOf: () => ['n'], latestKept: () => undefined, latestLocal: (request: LatestRequest) => new LatestValues(tsr).latest(request) };
    const rows: Array<Record<string, unknown>> = [];
    for await (const batch of readLatestRows(alone, source, latest)) rows.push(...batch);
    expect(rows.sort((a, b) => String(a.host).localeCompare(String(b.host)))).toEqual(first);
  });
});

describe('historical blocks - merging the partitions\' last values', () => {
  const slot = (timestamp: number, writeId: string, value: number) => ({ timestamp, writeId, value });

  it('keeps per key and field the newest by time, then by writeId, and leaves the answers it merges as they were', () => {
    const a: LatestEntry[] = [{ key: 'x', slots: [slot(5, 'a.0', 1), null] }, { key: 1, slots: [slot(1, 'a.1', 10), slot(1, 'a.1', 11)] }];
    const b: LatestEntry[] = [{ key: 'x', slots: [slot(5, 'b.0', 2), slot(3, 'b.0', 3)] }, { key: '1', slots: [null, slot(2, 'b.1', 12)] }];
    const c: LatestEntry[] = [{ key: 'x', slots: [slot(4, 'z.9', 9), slot(2, 'z.9', 9)] }];
    const merged = mergeLatest([a, b, c], 2);
    expect(merged).toEqual([
      { key: 'x', slots: [slot(5, 'b.0', 2), slot(3, 'b.0', 3)] },
      { key: 1, slots: [slot(1, 'a.1', 10), slot(1, 'a.1', 11)] },
      { key: '1', slots: [null, slot(2, 'b.1', 12)] },
    ]);
    expect(a[0]!.slots).toEqual([slot(5, 'a.0', 1), null]);
    expect(b[1]!.slots).toEqual([null, slot(2, 'b.1', 12)]);
  });
});

describe('historical blocks - the plan', () => {
  const plan = (text: string) => planBlockRows(checkOf(text).steps, context);

  it('reads columns for a grouping of plain fields whose aggregates do not depend on order, after wheres on the timestamp alone', () => {
    const columns = plan(`from historical ${STREAM} where at >= '${from}' group by host, at window of 1 minute select host, at, count() as n, avg(cpu) as cpu`);
    expect(columns).toEqual({
      columns: { keys: ['host'], window: 'at', slots: [[], ['cpu']] },
      fields: ['cpu', 'host'],
      timestampAsMs: 'at',
      absorbed: { steps: 1, field: 'at', bounds: { fromMs: Date.parse(from) } },
    });
  });

  it('reads rows, with the fields they need, for first and last, other wheres, hopping windows and nested fields', () => {
    expect(plan(`from historical ${STREAM} group by host select host, last(cpu) as cpu, count() as n`)).toEqual({ fields: ['cpu', 'host'], timestampAsMs: undefined, absorbed: undefined });
    expect(plan(`from historical ${STREAM} where cpu > 5 group by host select host, count() as n`)).toEqual({ fields: ['cpu', 'host'], timestampAsMs: undefined, absorbed: undefined });
    expect(plan(`from historical ${STREAM} group by host, at window of 1 hour every 1 minute select host, at, count() as n`)?.columns).toBeUndefined();
    expect(plan(`from historical ${STREAM} group by host select host, first(at) as at`)).toEqual({ fields: ['at', 'host'], timestampAsMs: undefined, absorbed: undefined });
    expect(plan(`from historical ${STREAM} group by note.n select n, count() as count`)).toEqual({ fields: ['note'], timestampAsMs: undefined, absorbed: undefined });
  });

  it('asks for the last values per key only when every aggregate is last of a plain field, with no where or window', () => {
    expect(plan(`from historical ${STREAM} group by host select host, last(cpu) as cpu, last(at) as at`)?.latest).toEqual({ key: 'host', fields: ['cpu', 'at'] });
    expect(plan(`from historical ${STREAM} group by host select host, last(cpu) as cpu, count() as n`)?.latest).toBeUndefined();
    expect(plan(`from historical ${STREAM} where at >= '${from}' group by host select host, last(cpu) as cpu`)?.latest).toBeUndefined();
    expect(plan(`from historical ${STREAM} group by host, ok select host, last(cpu) as cpu`)?.latest).toBeUndefined();
    expect(plan(`from historical ${STREAM} group by host, at window of 1 minute select host, last(cpu) as cpu`)?.latest).toBeUndefined();
  });

  it('reads whole payloads for a query whose rows do not go straight into a grouping', () => {
    expect(plan(`from historical ${STREAM} where cpu > 5 select host, cpu`)).toBeUndefined();
    expect(plan(`from historical ${STREAM} select host, cpu`)).toBeUndefined();
  });
});
