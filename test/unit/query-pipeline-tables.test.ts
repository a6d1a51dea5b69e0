import { describe, expect, it } from 'vitest';
import { createPipeline, PipelineLimitError, type Change, type OutputRow, type Pipeline } from '../../src/pipeline/index.js';
import { analyseQuery, type QueryCheck, type StreamInfo } from '../../src/query/index.js';
import { Prng } from '../sim/prng.js';

const EVENTS = '/streams/test/tables/events';
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
            g: { type: 'string', optional: true },
            v: { type: 'int', optional: true },
            ts: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
          },
        },
      },
    },
  ],
]);

const LIMITS = { groupsMax: 100_000, rowsHeldMax: 100_000 };

function start(text: string, limits = LIMITS): Pipeline {
  const analysis = analyseQuery(text, { streams: STREAMS });
  expect(analysis.errors).toEqual([]);
  const check = analysis.check as QueryCheck;
  return createPipeline({ check, historical: check.output.isHistorical, compile: {}, limits });
}

const BASE_MS = Date.UTC(2024, 2, 1, 12, 0, 0);
const at = (seconds: number): string => new Date(BASE_MS + seconds * 1000).toISOString();
const event = (k: string, v: number | null, seconds = 0) => ({ k, v, ts: at(seconds) });
const add = (data: Record<string, unknown>): Change => ({ action: 'add', data }) as Change;
const update = (data: Record<string, unknown>): Change => ({ action: 'update', data }) as Change;
const remove = (data: Record<string, unknown>): Change => ({ action: 'remove', data }) as Change;

/** Applies changes to a table by key, failing on a change the table's state makes invalid. */
function apply(table: Map<string, OutputRow>, changes: readonly Change[], keyOf: (row: OutputRow) => string): void {
  for (const change of changes) {
    const key = keyOf(change.data);
    if (change.action === 'add') expect(table.has(key), `add of present ${key}`).toBe(false);
    else expect(table.get(key), `${change.action} of ${key}`).toBeDefined();
    if (change.action === 'remove') table.delete(key);
    else table.set(key, change.data);
  }
}

describe('query pipeline - order by and take over tables', () => {
  const TOP_TWO = `from ${EVENTS} group by k select k, sum(v) as s order by s desc take 2`;

  it('emits the changes of the visible top N as group rows cross its boundary', () => {
    const pipeline = start(TOP_TWO);
    expect(pipeline.mode).toBe('table');
    expect(pipeline.push([event('a', 5)], 0)).toEqual([add({ k: 'a', s: 5 })]);
    expect(pipeline.push([event('b', 3)], 0)).toEqual([add({ k: 'b', s: 3 })]);
    expect(pipeline.push([event('c', 1)], 0)).toEqual([]);
    // c rises above b: c enters, b is pushed out.
    expect(pipeline.push([event('c', 6)], 0)).toEqual([add({ k: 'c', s: 7 }), remove({ k: 'b', s: 3 })]);
    // a falls below b: a leaves, b comes back.
    expect(pipeline.push([event('a', -10)], 0)).toEqual([remove({ k: 'a', s: 5 }), add({ k: 'b', s: 3 })]);
    expect(pipeline.push([event('b', 1)], 0)).toEqual([update({ k: 'b', s: 4 })]);
    expect(pipeline.push([event('d', 0)], 0)).toEqual([]);
    expect(pipeline.snapshot()).toEqual([add({ k: 'c', s: 7 }), add({ k: 'b', s: 4 })]);
  });

  it('keeps the visible table equal to the top N of all groups over random pushes', () => {
    const prng = new Prng(41);
    const pipeline = start(`from ${EVENTS} group by k select k, sum(v) as s order by s desc take 3`);
    const visible = new Map<string, OutputRow>();
    const sums = new Map<string, number>();
    for (let round = 0; round < 200; round++) {
      const rows = Array.from({ length: prng.int(1, 6) }, () => event(`k${prng.int(0, 9)}`, prng.int(-20, 20)));
      apply(visible, pipeline.push(rows, 0), (row) => String(row.k));
      for (const row of rows) sums.set(row.k, (sums.get(row.k) ?? 0) + (row.v as number));
      // Ties keep arrival order: a group's place is where it first appeared (Map order).
      const arrival = [...sums.keys()];
      const top = [...sums]
        .sort(([k1, s1], [k2, s2]) => s2 - s1 || arrival.indexOf(k1) - arrival.indexOf(k2))
        .slice(0, 3)
        .map(([k, s]) => [k, { k, s }] as const);
      expect(visible, `round ${round}`).toEqual(new Map(top));
    }
    expect(pipeline.snapshot().map((change) => change.data.s)).toEqual(
      [...sums.values()].sort((a, b) => b - a).slice(0, 3),
    );
  });

  it('takes the first N groups in arrival order when there is no order by', () => {
    const pipeline = start(`from ${EVENTS} group by k select k, count() as n take 2`);
    expect(pipeline.push([event('a', 1), event('b', 1), event('c', 1), event('a', 1)], 0)).toEqual([
      add({ k: 'a', n: 2 }),
      add({ k: 'b', n: 1 }),
    ]);
    expect(pipeline.push([event('c', 1)], 0)).toEqual([]);
  });

  it('orders a bounded grouped query at finish and takes its top', () => {
    const pipeline = start(`from historical ${EVENTS} group by k select k, count() as n order by n desc, k take 2`);
    expect(pipeline.push([event('b', 1), event('a', 1), event('c', 1), event('c', 1), event('a', 1)], 0)).toEqual([]);
    expect(pipeline.finish()).toEqual([add({ k: 'a', n: 2 }), add({ k: 'c', n: 2 })]);
  });
});

describe('query pipeline - order by and take over live streams', () => {
  it('passes the first N rows of a live stream, then nothing', () => {
    const pipeline = start(`from ${EVENTS} select k take 3`);
    expect(pipeline.mode).toBe('stream');
    expect(pipeline.push([event('a', 1), event('b', 1)], 0)).toEqual([add({ k: 'a' }), add({ k: 'b' })]);
    expect(pipeline.push([event('c', 1), event('d', 1)], 0)).toEqual([add({ k: 'c' })]);
    expect(pipeline.push([event('e', 1)], 0)).toEqual([]);
  });

  it('keeps the top N of a live stream as a table, holding N rows only', () => {
    const pipeline = start(`from ${EVENTS} select k, v order by v desc take 2`, { groupsMax: 1, rowsHeldMax: 2 });
    expect(pipeline.mode).toBe('table');
    expect(pipeline.push([event('a', 1), event('b', 3)], 0)).toEqual([add({ k: 'a', v: 1 }), add({ k: 'b', v: 3 })]);
    expect(pipeline.push([event('c', 2)], 0)).toEqual([add({ k: 'c', v: 2 }), remove({ k: 'a', v: 1 })]);
    expect(pipeline.push([event('d', 0), event('e', null)], 0)).toEqual([]);
    const many = Array.from({ length: 1000 }, (_, i) => event(`x${i}`, -i));
    expect(pipeline.push(many, 0)).toEqual([]);
    expect(pipeline.snapshot()).toEqual([add({ k: 'b', v: 3 }), add({ k: 'c', v: 2 })]);
  });

  it('leaves a live stream in arrival order when order by has no take', () => {
    const pipeline = start(`from ${EVENTS} select k, v order by v`);
    expect(pipeline.mode).toBe('stream');
    expect(pipeline.push([event('a', 3), event('b', 1)], 0)).toEqual([add({ k: 'a', v: 3 }), add({ k: 'b', v: 1 })]);
  });
});

describe('query pipeline - stages after a table', () => {
  it('maps a where after a grouping: rows that start matching are added, rows that stop are removed', () => {
    const pipeline = start(`from ${EVENTS} group by k select k, sum(v) as s where s > 10 select k, s * 2 as twice`);
    expect(pipeline.push([event('a', 5)], 0)).toEqual([]);
    expect(pipeline.push([event('a', 6)], 0)).toEqual([add({ k: 'a', twice: 22 })]);
    expect(pipeline.push([event('a', 1)], 0)).toEqual([update({ k: 'a', twice: 24 })]);
    expect(pipeline.push([event('a', -5)], 0)).toEqual([remove({ k: 'a', twice: 24 })]);
    expect(pipeline.push([event('a', 10)], 0)).toEqual([add({ k: 'a', twice: 34 })]);
    expect(pipeline.snapshot()).toEqual([add({ k: 'a', twice: 34 })]);
  });

  it('sends no update when a select after a grouping hides what changed', () => {
    const pipeline = start(`from ${EVENTS} group by k select k, count() as n, sum(v) as s select k, s`);
    expect(pipeline.push([event('a', 5)], 0)).toEqual([add({ k: 'a', s: 5 })]);
    expect(pipeline.push([event('a', null)], 0)).toEqual([]);
  });
});

const FIRST_LEVEL = `from ${EVENTS} group by k, ts window of 1 minute every 30 seconds select k, ts, count() as n, max(v) as m`;
const SECOND_LEVEL = `${FIRST_LEVEL} group by k select k, sum(n) as total, max(m) as top, min(m) as low, count() as windows`;

describe('query pipeline - a grouping over a grouping, with retractions', () => {
  it('rebuilds a group when an input row changes: max falls back to the other rows', () => {
    const pipeline = start(`from ${EVENTS} group by k, g select k, g, last(v) as lastV group by k select k, max(lastV) as top, count() as rows`);
    const row = (k: string, g: string, v: number) => ({ k, g, v, ts: at(0) });
    expect(pipeline.push([row('a', 'g1', 9), row('a', 'g2', 5)], 0)).toEqual([add({ k: 'a', top: 9, rows: 2 })]);
    expect(pipeline.push([row('a', 'g1', 1)], 0)).toEqual([update({ k: 'a', top: 5, rows: 2 })]);
    expect(pipeline.push([row('a', 'g2', 3), row('b', 'g1', 7)], 0)).toEqual([update({ k: 'a', top: 3, rows: 2 }), add({ k: 'b', top: 7, rows: 1 })]);
  });

  it("regroups the first level as its trailing windows replace each other, and removes the group when none is left", () => {
    const pipeline = start(SECOND_LEVEL);
    // a@10: the first level's trailing window is 11:59:30 – 12:00:30.
    expect(pipeline.push([event('a', 9, 10)], 0)).toEqual([add({ k: 'a', total: 1, top: 9, low: 9, windows: 1 })]);
    // a@35 closes it: the trailing window 12:00:00 – 12:01:00 holds a@10 and a@35, and replaces it.
    expect(pipeline.push([event('a', 2, 35)], 0)).toEqual([update({ k: 'a', total: 2, top: 9, low: 9, windows: 1 })]);
    // a@65: 12:00:30 – 12:01:30 holds a@35 and a@65.
    expect(pipeline.push([event('a', 4, 65)], 0)).toEqual([update({ k: 'a', total: 2, top: 4, low: 4, windows: 1 })]);
    // With no row for a while the clock closes it, and the next is empty: the group has no rows and goes.
    expect(pipeline.tick(60_000)).toEqual([remove({ k: 'a', total: 2, top: 4, low: 4, windows: 1 })]);
    expect(pipeline.snapshot()).toEqual([]);
  });

  it('matches a plain regrouping of the first level table over random events, late ones included', () => {
    const prng = new Prng(42);
    const first = start(FIRST_LEVEL);
    const second = start(SECOND_LEVEL);
    const firstTable = new Map<string, OutputRow>();
    const secondTable = new Map<string, OutputRow>();
    let seconds = 0;
    for (let round = 0; round < 150; round++) {
      const rows = Array.from({ length: prng.int(1, 8) }, () => {
        seconds += prng.int(0, 9);
        return event(`k${prng.int(0, 4)}`, prng.chance(0.2) ? null : prng.int(0, 50), seconds - prng.int(0, 40));
      });
      const nowMs = round * 5_000;
      const quiet = prng.chance(0.05);
      apply(firstTable, [...first.push(rows, nowMs), ...(quiet ? first.tick(nowMs + 60_000) : [])], (row) => `${row.k} ${row.ts}`);
      apply(secondTable, [...second.push(rows, nowMs), ...(quiet ? second.tick(nowMs + 60_000) : [])], (row) => String(row.k));
      expect(secondTable, `round ${round}`).toEqual(regroup(firstTable));
    }
    expect(first.lateRows).toBeGreaterThan(0);
    expect(second.lateRows).toBe(first.lateRows);
  });
});

/** The second level computed in plain JS from the first level's table. */
function regroup(firstTable: ReadonlyMap<string, OutputRow>): Map<string, OutputRow> {
  const groups = new Map<string, OutputRow[]>();
  for (const row of firstTable.values()) groups.set(String(row.k), [...(groups.get(String(row.k)) ?? []), row]);
  const result = new Map<string, OutputRow>();
  for (const [k, rows] of groups) {
    const maxima = rows.map((row) => row.m).filter((m): m is number => typeof m === 'number');
    result.set(k, {
      k,
      total: rows.reduce((sum, row) => sum + (row.n as number), 0),
      top: maxima.length === 0 ? null : Math.max(...maxima),
      low: maxima.length === 0 ? null : Math.min(...maxima),
      windows: rows.length,
    });
  }
  return result;
}

describe('query pipeline - limits over tables', () => {
  it('throws PipelineLimitError when a grouping over a grouping holds more rows than rowsHeldMax', () => {
    const pipeline = start(`from ${EVENTS} group by k select k, count() as n group by n select n, count() as keys`, {
      groupsMax: 100,
      rowsHeldMax: 5,
    });
    pipeline.push(['a', 'b', 'c', 'd', 'e'].map((k) => event(k, 1)), 0);
    expect(() => pipeline.push([event('f', 1)], 0)).toThrow(PipelineLimitError);
  });

  it('throws PipelineLimitError when an ordered live table holds more rows than rowsHeldMax', () => {
    const pipeline = start(`from ${EVENTS} group by k select k, count() as n order by n take 1`, { groupsMax: 100, rowsHeldMax: 3 });
    pipeline.push(['a', 'b', 'c'].map((k) => event(k, 1)), 0);
    expect(() => pipeline.push([event('d', 1)], 0)).toThrow(/rowsHeldMax/);
  });
});
