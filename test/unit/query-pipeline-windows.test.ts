import { describe, expect, it } from 'vitest';
import { createPipeline, type Change, type Pipeline } from '../../src/pipeline/index.js';
import { analyseQuery, windowStartsMs, type QueryCheck, type StreamInfo, type WindowSpec } from '../../src/query/index.js';
import { Prng } from '../sim/prng.js';
import { IDLE_GRACE_MS } from '../../src/pipeline/live-clock.js';

const EVENTS = '/streams/test/windows/events';
const STREAMS = new Map<string, StreamInfo>([
  [
    EVENTS,
    {
      schema: {
        version: '1.0',
        topDef: {
          type: 'record',
          properties: {
            k: { type: 'string' },
            v: { type: 'int', optional: true },
            ts: { type: 'datetime', optional: true, annotations: ['urn:itrs:default-timestamp'] },
          },
        },
      },
    },
  ],
]);

function start(text: string): { pipeline: Pipeline; check: QueryCheck } {
  const analysis = analyseQuery(text, { streams: STREAMS });
  expect(analysis.errors).toEqual([]);
  const check = analysis.check as QueryCheck;
  const limits = { groupsMax: 100_000, rowsHeldMax: 100_000 };
  return { pipeline: createPipeline({ check, historical: check.output.isHistorical, compile: {}, limits }), check };
}

/** Noon, on a minute (and hour) boundary. */
const BASE_MS = Date.UTC(2024, 2, 1, 12, 0, 0);
const at = (seconds: number): string => new Date(BASE_MS + seconds * 1000).toISOString();
const event = (k: string, seconds: number, v: number | null = 1) => ({ k, v, ts: at(seconds) });
const add = (data: Record<string, unknown>): Change => ({ action: 'add', data }) as Change;
const update = (data: Record<string, unknown>): Change => ({ action: 'update', data }) as Change;
const remove = (data: Record<string, unknown>): Change => ({ action: 'remove', data }) as Change;

describe('query pipeline - tumbling windows', () => {
  const TUMBLING = `from ${EVENTS} group by k, ts window of 1 minute select k, ts, count() as n, sum(v) as s`;

  it('counts out-of-order rows in open windows, closes on the watermark and drops late rows', () => {
    const { pipeline, check } = start(TUMBLING);
    expect(check.output.schema.config.key).toEqual(['k', 'ts']);
    expect(pipeline.mode).toBe('table');
    // Out of order inside the open window: a@20 after b@50 still counts.
    expect(pipeline.push([event('a', 10, 1), event('b', 50, 2), event('a', 20, 3)], 0)).toEqual([
      add({ k: 'a', ts: at(0), n: 2, s: 4 }),
      add({ k: 'b', ts: at(0), n: 1, s: 2 }),
    ]);
    // a@65 passes the end of 12:00's windows: both are removed with their last rows.
    expect(pipeline.push([event('a', 65, 5)], 1000)).toEqual([
      remove({ k: 'a', ts: at(0), n: 2, s: 4 }),
      remove({ k: 'b', ts: at(0), n: 1, s: 2 }),
      add({ k: 'a', ts: at(60), n: 1, s: 5 }),
    ]);
    expect(pipeline.push([event('b', 30, 7)], 2000)).toEqual([]);
    expect(pipeline.lateRows).toBe(1);
    expect(pipeline.push([event('b', 119, 1)], 3000)).toEqual([add({ k: 'b', ts: at(60), n: 1, s: 1 })]);
    expect(pipeline.snapshot()).toEqual([add({ k: 'a', ts: at(60), n: 1, s: 5 }), add({ k: 'b', ts: at(60), n: 1, s: 1 })]);
  });

  it("closes windows on the node's clock when no row comes (the idle watermark), and rows older than it are late", () => {
    const { pipeline } = start(TUMBLING);
    // The watermark is 12:01:59; the window of 12:01 ends at 12:02:00.
    pipeline.push([event('a', 65, 5), event('b', 119, 1)], 3000);
    // After the grace, event time moves on with the clock from the last rows' watermark.
    expect(pipeline.tick(3000 + IDLE_GRACE_MS + 999)).toEqual([]);
    expect(pipeline.tick(3000 + IDLE_GRACE_MS + 1000)).toEqual([
      remove({ k: 'a', ts: at(60), n: 1, s: 5 }),
      remove({ k: 'b', ts: at(60), n: 1, s: 1 }),
    ]);
    // A minute of quiet later it is 12:03:00: a row of 12:02:30 is late, one of 12:03:05 counts.
    expect(pipeline.tick(3000 + IDLE_GRACE_MS + 61_000)).toEqual([]);
    expect(pipeline.push([event('a', 150, 1)], 65_500)).toEqual([]);
    expect(pipeline.lateRows).toBe(1);
    expect(pipeline.push([event('a', 185, 1)], 65_600)).toEqual([add({ k: 'a', ts: at(180), n: 1, s: 1 })]);
  });

  it('coalesces changes over the emission interval: at once after a quiet spell, then at most once per interval', () => {
    const analysis = analyseQuery(TUMBLING, { streams: STREAMS });
    const pipeline = createPipeline({ check: analysis.check!, historical: false, compile: {}, limits: { groupsMax: 1_000, rowsHeldMax: 1_000 }, emitIntervalMs: 1_000 });
    expect(pipeline.push([event('a', 1)], 10_000)).toEqual([add({ k: 'a', ts: at(0), n: 1, s: 1 })]);
    // Within the interval: held, however many rows and keys.
    for (let i = 0; i < 50; i++) expect(pipeline.push([event(`k${i % 5}`, 2 + i)], 10_100 + i)).toEqual([]);
    expect(pipeline.tick(10_999)).toEqual([]);
    // An interval after the last emission, one change per key, each with its state then.
    const changes = pipeline.tick(11_000);
    expect(changes).toEqual([
      add({ k: 'k0', ts: at(0), n: 10, s: 10 }),
      add({ k: 'k1', ts: at(0), n: 10, s: 10 }),
      add({ k: 'k2', ts: at(0), n: 10, s: 10 }),
      add({ k: 'k3', ts: at(0), n: 10, s: 10 }),
      add({ k: 'k4', ts: at(0), n: 10, s: 10 }),
    ]);
    expect(pipeline.push([event('a', 70)], 11_500)).toEqual([]);
    // The window of 12:00 closed meanwhile: its pending change and remove come before the new window.
    expect(pipeline.tick(12_000)).toEqual([
      remove({ k: 'a', ts: at(0), n: 1, s: 1 }),
      ...['k0', 'k1', 'k2', 'k3', 'k4'].map((k) => remove({ k, ts: at(0), n: 10, s: 10 })),
      add({ k: 'a', ts: at(60), n: 1, s: 1 }),
    ]);
  });

  it('reads epoch milliseconds as event times and drops rows whose window key is null or not a datetime', () => {
    const { pipeline } = start(TUMBLING);
    const rows = [
      { k: 'a', v: 1, ts: BASE_MS + 5_000 },
      { k: 'a', v: 1, ts: null },
      { k: 'a', v: 1, ts: 'yesterday' },
      { k: 'a', v: 1 },
      { k: 'a', v: 2, ts: at(7) },
    ];
    expect(pipeline.push(rows, 0)).toEqual([add({ k: 'a', ts: at(0), n: 2, s: 3 })]);
    expect(pipeline.lateRows).toBe(0);
  });

  it('windows on the primary timestamp when there is no group by', () => {
    const { pipeline, check } = start(`from ${EVENTS} window of 1 minute select ts, count() as n`);
    expect(check.output.schema.config.key).toEqual(['ts']);
    expect(pipeline.push([event('a', 1), event('b', 2), event('c', 61)], 0)).toEqual([
      add({ ts: at(0), n: 2 }),
      remove({ ts: at(0), n: 2 }),
      add({ ts: at(60), n: 1 }),
    ]);
  });
});

describe('query pipeline - hopping windows', () => {
  const HOPPING = `from ${EVENTS} group by k, ts window of 1 minute every 30 seconds select k, ts, count() as n`;

  it("shows each key's trailing window (the oldest open one): added, updated as rows come, replaced as the watermark closes it", () => {
    const { pipeline } = start(HOPPING);
    // Windows of 1 minute every 30 s; at the watermark 12:00:45 the trailing window is 12:00:00 – 12:01:00.
    expect(pipeline.push([event('a', 40), event('b', 45)], 0)).toEqual([add({ k: 'a', ts: at(0), n: 1 }), add({ k: 'b', ts: at(0), n: 1 })]);
    // The watermark reaches 12:01:10: 12:00:00 closed; each key's trailing window is now 12:00:30 – 12:01:30.
    expect(pipeline.push([event('a', 70)], 0)).toEqual([
      remove({ k: 'a', ts: at(0), n: 1 }),
      add({ k: 'a', ts: at(30), n: 2 }),
      remove({ k: 'b', ts: at(0), n: 1 }),
      add({ k: 'b', ts: at(30), n: 1 }),
    ]);
    // a@50 belongs to 12:00:00, closed, and 12:00:30, open: late once, counted where open.
    expect(pipeline.push([event('a', 50)], 0)).toEqual([update({ k: 'a', ts: at(30), n: 3 })]);
    expect(pipeline.lateRows).toBe(1);
    // a@100 closes 12:00:30: a's trailing window 12:01:00 holds a@70 and a@100; b's is empty, so b goes.
    expect(pipeline.push([event('a', 100)], 0)).toEqual([remove({ k: 'a', ts: at(30), n: 3 }), add({ k: 'a', ts: at(60), n: 2 }), remove({ k: 'b', ts: at(30), n: 1 })]);
    // a@200 closes up to 12:03:20, several windows at once: the trailing one only (12:02:30).
    expect(pipeline.push([event('a', 200)], 0)).toEqual([remove({ k: 'a', ts: at(60), n: 2 }), add({ k: 'a', ts: at(150), n: 1 })]);
    expect(pipeline.snapshot()).toEqual([add({ k: 'a', ts: at(150), n: 1 })]);
    // A row for a window long closed is dropped.
    expect(pipeline.push([event('b', 10)], 0)).toEqual([]);
    expect(pipeline.lateRows).toBe(2);
    // The clock moves the watermark on after the last row: a's row slides out, and goes.
    expect(pipeline.tick(IDLE_GRACE_MS + 9_999)).toEqual([]);
    expect(pipeline.tick(IDLE_GRACE_MS + 10_000)).toEqual([remove({ k: 'a', ts: at(150), n: 1 }), add({ k: 'a', ts: at(180), n: 1 })]);
    expect(pipeline.tick(IDLE_GRACE_MS + 40_000)).toEqual([remove({ k: 'a', ts: at(180), n: 1 })]);
    expect(pipeline.snapshot()).toEqual([]);
  });

  it('computes 8,640 windows per row from panes: every closed window exact, at the same cost per row', () => {
    const { pipeline } = start(`from ${EVENTS} group by k, ts window of 24 hour every 10 seconds select k, ts, count() as n, sum(v) as s, min(v) as low`);
    const rows = Array.from({ length: 3000 }, (_, i) => event(i % 2 === 0 ? 'a' : 'b', i * 60, i % 17));
    const changes = rows.flatMap((row, i) => pipeline.push([row], i));
    const adds = changes.filter((change) => change.action === 'add');
    expect(adds.length).toBeGreaterThan(1000);
    for (const { data } of adds) {
      const startMs = Date.parse(String(data.ts));
      const inside = rows.filter((row) => row.k === data.k && Date.parse(row.ts) >= startMs && Date.parse(row.ts) < startMs + 86_400_000);
      expect(data.n).toBe(inside.length);
      expect(data.s).toBe(inside.reduce((sum, row) => sum + (row.v as number), 0));
      expect(data.low).toBe(Math.min(...inside.map((row) => row.v as number)));
    }
  });

  it('agrees with windowStartsMs over random events and window shapes, bounded', () => {
    const prng = new Prng(31);
    const shapes: Array<[string, WindowSpec]> = [
      ['1 minute every 20 seconds', spec(60_000, 20_000)],
      ['10 seconds every 1 minute', spec(10_000, 60_000)],
      ['1 hour', spec(3_600_000, undefined)],
      ['90 seconds every 1 minute', spec(90_000, 60_000)],
    ];
    for (const [text, window] of shapes) {
      const rows = Array.from({ length: 300 }, () => event(prng.pick(['a', 'b']), prng.int(-4000, 4000)));
      const { pipeline } = start(`from historical ${EVENTS} group by k, ts window of ${text} select k, ts, count() as n`);
      expect(pipeline.push(rows, 0)).toEqual([]);
      const expected = new Map<string, number>();
      for (const row of rows) {
        for (const startMs of windowStartsMs(Date.parse(row.ts), window)) {
          const key = `${row.k} ${new Date(startMs).toISOString()}`;
          expected.set(key, (expected.get(key) ?? 0) + 1);
        }
      }
      const result = new Map(pipeline.finish().map(({ data }) => [`${String(data.k)} ${String(data.ts)}`, data.n]));
      expect(result, text).toEqual(expected);
    }
  });

  it('live, out of order: each window emitted holds every row that arrived before it closed', () => {
    // A row counts in every window still open when it arrives, so a window, emitted when it
    // closes, holds exactly the rows of its key and time that arrived by then: whatever the
    // order, the panes found again for late rows, the panes evicted and the stacks flipped.
    const prng = new Prng(47);
    for (const [text, sizeMs] of [
      ['1 minute every 10 seconds', 60_000],
      ['50 seconds every 20 seconds', 50_000],
      ['5 minute every 1 minute', 300_000],
    ] as const) {
      const { pipeline } = start(`from ${EVENTS} group by k, ts window of ${text} select k, ts, count() as n, sum(v) as s`);
      const arrived: Array<{ k: string; ms: number; v: number }> = [];
      let checked = 0;
      for (let push = 0; push < 400; push++) {
        const rows = Array.from({ length: prng.int(1, 4) }, () => {
          // Time moves on 7 s a push; a row may lag it by up to 90 s.
          const seconds = push * 7 - prng.int(0, prng.int(0, 9) === 0 ? 90 : 8);
          return event(prng.pick(['a', 'b', 'c']), seconds, prng.int(0, 9));
        });
        for (const row of rows) arrived.push({ k: row.k, ms: Date.parse(row.ts), v: row.v as number });
        for (const change of pipeline.push(rows, 0)) {
          if (change.action !== 'add') continue;
          const startMs = Date.parse(String(change.data.ts));
          const inside = arrived.filter((row) => row.k === change.data.k && row.ms >= startMs && row.ms < startMs + sizeMs);
          expect([change.data.n, change.data.s], `${text}: ${String(change.data.k)} ${String(change.data.ts)}`).toEqual([
            inside.length,
            inside.reduce((sum, row) => sum + row.v, 0),
          ]);
          checked++;
        }
      }
      expect(pipeline.lateRows, text).toBeGreaterThan(0);
      expect(checked, text).toBeGreaterThan(100);
    }
  });

  it('never closes windows of a bounded query: late rows still count', () => {
    const { pipeline } = start(`from historical ${EVENTS} group by k, ts window of 1 minute select k, ts, count() as n`);
    pipeline.push([event('a', 500), event('a', 10), event('a', 20)], 0);
    expect(pipeline.tick(1e12)).toEqual([]);
    expect(pipeline.finish()).toEqual([add({ k: 'a', ts: at(0), n: 2 }), add({ k: 'a', ts: at(480), n: 1 })]);
    expect(pipeline.lateRows).toBe(0);
  });
});

function spec(sizeMs: number, hopMs: number | undefined): WindowSpec {
  const position = { offset: 0, line: 1, column: 1 };
  const duration = (ms: number) => ({ count: ms, unit: 'millisecond' as const, ms });
  return hopMs === undefined ? { size: duration(sizeMs), position } : { size: duration(sizeMs), hop: duration(hopMs), position };
}
