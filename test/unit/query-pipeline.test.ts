import { describe, expect, it } from 'vitest';
import { createPipeline, PipelineLimitError, type Change, type OutputRow, type Pipeline } from '../../src/pipeline/index.js';
import { analyseQuery, variableValue, type CheckContext, type QueryCheck, type SessionVariable, type StreamInfo } from '../../src/query/index.js';
import type { CompileOptions, Value } from '../../src/expression/index.js';
import { LANGUAGE_EXAMPLES as EXAMPLES } from '../kit/query-examples.js';
import { Prng } from '../sim/prng.js';

const CPU = '/streams/demo/infrastructure/cpu';
const HAPPINESS = '/streams/demo/mobile/happiness';
const LOCATION = '/streams/demo/mobile/location';
const TEMPERATURE = '/streams/demo/iot_board/temperature';
const TWEETS = '/streams/demo/twitter/tweets';
const LOG1 = '/streams/demo/infrastructure/log1';
const FLAGS = '/streams/test/logic/flags';
const METRICS = '/streams/test/stats/metrics';

const record = (properties: Record<string, unknown>) => ({ type: 'record', properties });
const t = (type: string, extra: Record<string, unknown> = {}) => ({ type, ...extra });
const optional = (type: string) => t(type, { optional: true });
const contributor = t('contributor', { definition: 'mobile_user' });
const timestamp = t('datetime', { annotations: ['urn:itrs:default-timestamp'] });
const schema = (properties: Record<string, unknown>) => ({ version: '1.0', topDef: record(properties) });

/** The streams of the examples (as in query-checker.test.ts) and two of this file's own. */
const STREAMS = new Map<string, StreamInfo>([
  [CPU, { schema: schema({ host: t('string'), user: optional('double'), kernel: t('double'), timestamp }), repository: 'tsr' }],
  [HAPPINESS, { schema: schema({ contributor, happiness: optional('double'), timestamp }), repository: 'tsr' }],
  [LOCATION, { schema: schema({ contributor, timestamp, position: record({ latitude: optional('double'), longitude: optional('double') }) }) }],
  [TEMPERATURE, { schema: schema({ contributor, timestamp: t('datetime'), temperature: t('double') }) }],
  [
    TWEETS,
    {
      schema: schema({
        tweet: record({ user: record({ followers_count: optional('int'), name: t('string') }), lang: t('string'), source: t('string') }),
        created: optional('datetime'),
      }),
      repository: 'ssr',
    },
  ],
  [LOG1, { schema: schema({ host: t('string'), msg: t('string') }) }],
  [FLAGS, { schema: schema({ id: t('int'), a: optional('boolean'), b: optional('boolean'), n: optional('int') }) }],
  [
    METRICS,
    { schema: schema({ g: t('string'), x: optional('int'), y: optional('double'), s: optional('string'), ts: timestamp }) },
  ],
]);

const CONTRIBUTOR_TYPES = new Map<string, unknown>([
  ['mobile_user', { schema: record({ contributor: t('contributor'), user: record({ name: t('string'), typeOfParticipant: t('string') }) }) }],
]);

const PARTICIPANT_TYPES = ['staff', 'student', 'visitor'];
/** Contributor instances by id, which the session's resolver follows. */
const CONTRIBUTORS = new Map<string, { user: { name: string; typeOfParticipant: string } }>(
  Array.from({ length: 10 }, (_, i) => [`c${i}`, { user: { name: `user ${i}`, typeOfParticipant: PARTICIPANT_TYPES[i % 3] as string } }]),
);

/** What the session passes: contributor fields followed into their instances. */
function resolveContributor(path: readonly string[]): ((row: unknown) => unknown) | undefined {
  if (path[0] !== 'contributor' || path.length < 2) return undefined;
  return (row) => {
    let value: unknown = CONTRIBUTORS.get((row as { contributor?: string }).contributor ?? '');
    for (const segment of path.slice(1)) value = (value as Record<string, unknown> | undefined)?.[segment];
    return value ?? null;
  };
}

const LIMITS = { groupsMax: 10_000, rowsHeldMax: 100_000 };

interface Run {
  readonly pipeline: Pipeline;
  readonly check: QueryCheck;
}

function start(text: string, context: Partial<CheckContext> = {}, variables: SessionVariable[] = [], limits = LIMITS): Run {
  const analysis = analyseQuery(text, { streams: STREAMS, contributorTypes: CONTRIBUTOR_TYPES, variables, ...context });
  expect(analysis.errors).toEqual([]);
  const check = analysis.check as QueryCheck;
  const compile: CompileOptions = {
    resolveField: resolveContributor,
    variable: (name) => {
      const found = variables.find((variable) => variable.id === name);
      return found === undefined ? undefined : variableValue(found);
    },
    clock: () => 0,
  };
  return { pipeline: createPipeline({ check, historical: check.output.isHistorical, compile, limits }), check };
}

/** Feeds rows in batches of `size`, one second of wall clock apart; returns every change. */
function feed(pipeline: Pipeline, rows: readonly unknown[], size = 50, nowMs = 0): Change[] {
  const changes: Change[] = [];
  for (let i = 0; i < rows.length; i += size) changes.push(...pipeline.push(rows.slice(i, i + size), nowMs + i * 1000));
  return changes;
}

const iso = (ms: number): string => new Date(ms).toISOString();
const BASE_MS = Date.UTC(2024, 2, 1, 12, 0, 0);

/** A table applied from changes, checking each is valid for the table's state. */
function applyChanges(table: Map<string, OutputRow>, changes: readonly Change[], keyOf: (row: OutputRow) => string): void {
  for (const change of changes) {
    const key = keyOf(change.data);
    if (change.action === 'add') expect(table.has(key), `add of present ${key}`).toBe(false);
    else expect(table.has(key), `${change.action} of absent ${key}`).toBe(true);
    if (change.action === 'remove') table.delete(key);
    else table.set(key, change.data);
  }
}

describe('query pipeline - the examples of docs/query-language.md', () => {
  it('runs the live cpu query: select, then where over its output', () => {
    const prng = new Prng(11);
    const rows = Array.from({ length: 500 }, (_, i) => ({
      host: prng.pick(['a', 'b', 'c']),
      user: prng.chance(0.1) ? null : prng.next() * 100,
      kernel: prng.next() * 10,
      timestamp: iso(BASE_MS + i * 1000),
    }));
    const { pipeline } = start(EXAMPLES.cpuLive);
    expect(pipeline.mode).toBe('stream');
    const changes = feed(pipeline, rows);
    const expected = rows.filter((row) => row.user !== null && row.user > 90).map((row) => ({ user: row.user, kernel: row.kernel }));
    expect(expected.length).toBeGreaterThan(20);
    expect(changes).toEqual(expected.map((data) => ({ action: 'add', data })));
    expect(Object.keys(changes[0]?.data ?? {})).toEqual(['user', 'kernel']);
    expect(pipeline.finish()).toEqual([]);
    expect(pipeline.snapshot()).toEqual([]);
  });

  it('runs the historical cpu query against a variable, passing rows straight through push', () => {
    const prng = new Prng(12);
    const rows = Array.from({ length: 300 }, (_, i) => ({
      host: `h${prng.int(0, 4)}`,
      user: prng.chance(0.1) ? null : prng.int(0, 100) + 0.5,
      kernel: 1,
      timestamp: iso(BASE_MS + i),
    }));
    const { pipeline } = start(EXAMPLES.cpuHistorical, {}, [{ id: 'limit', value: '80', type: 'double' }]);
    const changes = feed(pipeline, rows);
    const expected = rows.filter((row) => row.user !== null && row.user > 80).map(({ host, user }) => ({ host, user }));
    expect(changes.map((change) => change.data)).toEqual(expected);
    expect(changes.every((change) => change.action === 'add')).toBe(true);
    expect(pipeline.finish()).toEqual([]);
  });

  it('groups live by a path through a contributor: an add per new key, then updates', () => {
    const prng = new Prng(13);
    const rows = Array.from({ length: 400 }, (_, i) => ({
      contributor: `c${prng.int(0, 9)}`,
      happiness: prng.chance(0.15) ? null : prng.int(0, 100) / 10,
      timestamp: iso(BASE_MS + i * 1000),
    }));
    const { pipeline, check } = start(EXAMPLES.happiness);
    expect(check.output.schema.config.key).toEqual(['typeOfParticipant']);
    expect(pipeline.mode).toBe('table');
    const table = new Map<string, OutputRow>();
    const changes = feed(pipeline, rows, 37);
    applyChanges(table, changes, (row) => String(row.typeOfParticipant));
    expect(changes.filter((change) => change.action === 'add')).toHaveLength(3);
    expect(changes.some((change) => change.action === 'remove')).toBe(false);
    const expected = new Map<string, OutputRow>();
    for (const type of PARTICIPANT_TYPES) {
      const mine = rows.filter((row) => CONTRIBUTORS.get(row.contributor)?.user.typeOfParticipant === type);
      const values = mine.map((row) => row.happiness).filter((value): value is number => value !== null);
      let total = 0;
      for (const value of values) total += value;
      expected.set(type, { typeOfParticipant: type, avgHappiness: values.length === 0 ? null : total / values.length, N: mine.length });
    }
    expect(table).toEqual(expected);
    expect(new Map(pipeline.snapshot().map((change) => [String(change.data.typeOfParticipant), change.data]))).toEqual(expected);
  });

  it('runs the historical location query: tumbling windows, all rows at finish in key order', () => {
    const prng = new Prng(14);
    const rows = prng.shuffle(
      Array.from({ length: 600 }, (_, i) => ({
        contributor: `c${prng.int(0, 4)}`,
        timestamp: iso(BASE_MS + i * 1500 + prng.int(0, 999)),
        position: { latitude: prng.chance(0.1) ? null : prng.next() * 90, longitude: prng.next() * 180 },
      })),
    );
    const { pipeline } = start(EXAMPLES.location);
    expect(feed(pipeline, rows)).toEqual([]);
    const expected = new Map<string, { contributor: string; start: number; lat: number | null; long: number | null }>();
    for (const row of rows) {
      const start = Math.floor(Date.parse(row.timestamp) / 60_000) * 60_000;
      const key = `${row.contributor}/${start}`;
      const group = expected.get(key) ?? { contributor: row.contributor, start, lat: null, long: null };
      if (row.position.latitude !== null) group.lat = row.position.latitude;
      group.long = row.position.longitude;
      expected.set(key, group);
    }
    const ordered = [...expected.values()].sort((a, b) => (a.contributor < b.contributor ? -1 : a.contributor > b.contributor ? 1 : a.start - b.start));
    const changes = pipeline.finish();
    expect(changes).toEqual(
      ordered.map((group) => ({
        action: 'add',
        data: { contributor: group.contributor, timestamp: iso(group.start), lat: group.lat, long: group.long },
      })),
    );
    expect(pipeline.lateRows).toBe(0);
  });

  it("runs the live temperature query: each contributor's trailing window from panes, with the exact average of what arrived", () => {
    const prng = new Prng(15);
    const rows = Array.from({ length: 400 }, (_, i) => ({
      contributor: `c${prng.int(0, 2)}`,
      timestamp: iso(BASE_MS + i * 700),
      temperature: 15 + prng.int(0, 100) / 10,
    }));
    const { pipeline } = start(EXAMPLES.temperature);
    const keyOf = (row: OutputRow): string => String(row.contributor);
    const average = (contributorId: string, startMs: number): number | undefined => {
      const inside = rows.filter((row) => row.contributor === contributorId && Date.parse(row.timestamp) >= startMs && Date.parse(row.timestamp) < startMs + 60_000);
      if (inside.length === 0) return undefined;
      let total = 0;
      for (const row of inside) total += row.temperature;
      return total / inside.length;
    };
    const table = new Map<string, OutputRow>();
    let emitted = 0;
    for (let first = 0; first < rows.length; first += 25) {
      const changes = pipeline.push(rows.slice(first, first + 25), BASE_MS + first * 1000);
      applyChanges(table, changes, keyOf);
      // Every row emitted holds the exact average of the rows of its window that arrived so far.
      const arrived = rows.slice(0, first + 25);
      for (const { action, data } of changes) {
        if (action === 'remove') continue;
        const startMs = Date.parse(String(data.timestamp));
        expect(startMs % 1000).toBe(0);
        const inside = arrived.filter((row) => row.contributor === data.contributor && Date.parse(row.timestamp) >= startMs && Date.parse(row.timestamp) < startMs + 60_000);
        expect(data.Temperature, `${String(data.contributor)} ${String(data.timestamp)}`).toBeCloseTo(inside.reduce((sum, row) => sum + row.temperature, 0) / inside.length, 9);
        emitted++;
      }
    }
    expect(emitted).toBeGreaterThan(3 * 10);
    // The table holds, per contributor, its trailing window: the oldest open at the last row's time.
    const watermarkMs = Date.parse(rows[rows.length - 1]!.timestamp);
    const trailingStartMs = (Math.floor((watermarkMs - 60_000) / 1000) + 1) * 1000;
    for (const contributorId of ['c0', 'c1', 'c2']) {
      expect(table.get(contributorId)?.timestamp).toBe(iso(trailingStartMs));
      expect(table.get(contributorId)?.Temperature).toBeCloseTo(average(contributorId, trailingStartMs)!, 9);
    }
    // With no row coming, the clock moves the windows on: the rows slide out, and go.
    applyChanges(table, pipeline.tick(BASE_MS + 10_000_000), keyOf);
    expect(table.size).toBe(0);
    expect(pipeline.lateRows).toBe(0);
  });

  it('runs the historical tweets query: select, group by a renamed field, order by an aggregate', () => {
    const prng = new Prng(16);
    const apps = ['web', 'android', 'iphone', 'bot', 'tweetdeck'];
    const rows = Array.from({ length: 700 }, () => ({
      tweet: {
        user: { followers_count: prng.chance(0.1) ? null : prng.int(0, 5000), name: 'n' },
        lang: prng.pick(['en', 'fr']),
        source: prng.pick(apps),
      },
      created: null,
    }));
    rows.push({ tweet: { user: { followers_count: null, name: 'n' }, lang: 'en', source: 'silent' }, created: null });
    const { pipeline, check } = start(EXAMPLES.tweets);
    expect(check.output.schema.config.key).toEqual(['app']);
    expect(feed(pipeline, rows)).toEqual([]);
    const groups = new Map<string, { C: number; total: number; counted: number }>();
    for (const row of rows) {
      const group = groups.get(row.tweet.source) ?? { C: 0, total: 0, counted: 0 };
      group.C++;
      if (row.tweet.user.followers_count !== null) {
        group.total += row.tweet.user.followers_count;
        group.counted++;
      }
      groups.set(row.tweet.source, group);
    }
    const expected = [...groups].map(([app, group]) => ({ app, C: group.C, F: group.counted === 0 ? null : group.total / group.counted }));
    // Nulls first, ties by key.
    expected.sort((a, b) => (a.F === null ? -1 : b.F === null ? 1 : a.F - b.F) || (a.app < b.app ? -1 : 1));
    expect(pipeline.finish()).toEqual(expected.map((data) => ({ action: 'add', data })));
    expect(pipeline.finish()).toEqual([]);
  });

  it('runs the historical order by timestamp take 10000 over shuffled rows', () => {
    const prng = new Prng(17);
    const rows = prng.shuffle(Array.from({ length: 12_500 }, (_, i) => ({ contributor: 'c1', happiness: i % 7, timestamp: iso(BASE_MS + i * 1000) })));
    const { pipeline } = start(EXAMPLES.happinessTake);
    expect(pipeline.mode).toBe('stream');
    expect(feed(pipeline, rows, 1000)).toEqual([]);
    const expected = [...rows]
      .sort((a, b) => Date.parse(a.timestamp) - Date.parse(b.timestamp))
      .slice(0, 10_000)
      .map(({ timestamp, happiness }) => ({ action: 'add', data: { timestamp, happiness } }));
    expect(pipeline.finish()).toEqual(expected);
  });

  it('runs the live window with no group by: one count per hour, removed as each hour closes', () => {
    const prng = new Prng(18);
    let ms = BASE_MS;
    const rows = Array.from({ length: 300 }, () => ({ host: 'h', user: 1, kernel: 1, timestamp: iso((ms += prng.int(1, 90) * 1000)) }));
    const { pipeline, check } = start(EXAMPLES.cpuWindow);
    expect(check.output.schema.config.key).toEqual([]);
    const changes = [...feed(pipeline, rows, 20, BASE_MS), ...pipeline.tick(BASE_MS + 100 * 3_600_000)];
    const hours = new Map<number, number>();
    for (const row of rows) {
      const hour = Math.floor(Date.parse(row.timestamp) / 3_600_000);
      hours.set(hour, (hours.get(hour) ?? 0) + 1);
    }
    const removes = changes.filter((change) => change.action === 'remove').map((change) => change.data);
    expect(removes).toEqual([...hours.values()].map((count) => ({ count })));
    expect(changes.filter((change) => change.action === 'add')).toHaveLength(hours.size);
    expect(pipeline.snapshot()).toEqual([]);
  });

  it('runs the two queries of one session: into x, then from x over what the first wrote', () => {
    const prng = new Prng(19);
    const rows = Array.from({ length: 400 }, (_, i) => ({
      host: prng.pick(['ABC', 'DEF', 'abc']),
      msg: prng.pick(['ok', 'an error here', 'error', 'fine', 'Error']) + ` ${i}`,
    }));
    const first = start(EXAMPLES.logInto);
    const second = start(EXAMPLES.logFrom, {
      logicalStreams: new Map([['x', [{ queryId: 'q1', schema: first.check.output.schema, isHistorical: false }]]]),
    });
    const written = feed(first.pipeline, rows).map((change) => change.data);
    expect(written).toEqual(rows.filter((row) => row.host === 'ABC'));
    const changes = feed(second.pipeline, written, 7);
    const expected = rows.filter((row) => row.host === 'ABC' && row.msg.includes('error'));
    expect(expected.length).toBeGreaterThan(10);
    expect(changes).toEqual(expected.map((data) => ({ action: 'add', data })));
  });

  it('cuts rows to the output schema when the query has no select', () => {
    const { pipeline } = start(`from ${LOG1} where host == 'A'`);
    expect(pipeline.push([{ host: 'A', msg: 'm', extra: 1 }, { host: 'A' }, { host: 'B', msg: 'n' }], 0)).toEqual([
      { action: 'add', data: { host: 'A', msg: 'm' } },
      { action: 'add', data: { host: 'A', msg: null } },
    ]);
  });
});

/** Three-valued logic as docs/query-language.md ("Expressions") states it, written out by hand. */
const AND: Record<string, Record<string, boolean | null>> = {
  true: { true: true, false: false, null: null },
  false: { true: false, false: false, null: false },
  null: { true: null, false: null, null: null },
};
const OR: Record<string, Record<string, boolean | null>> = {
  true: { true: true, false: true, null: true },
  false: { true: true, false: false, null: null },
  null: { true: null, false: null, null: null },
};
const NOT: Record<string, boolean | null> = { true: false, false: true, null: null };

describe('query pipeline - where keeps rows whose condition is exactly true', () => {
  const values = [true, false, null];
  const rows = values.flatMap((a) => values.map((b) => ({ id: 0, a, b, n: null as number | null }))).map((row, id) => ({ ...row, id, n: id % 3 === 2 ? null : id }));
  const kept = (condition: string): number[] =>
    start(`from ${FLAGS} where ${condition} select id`)
      .pipeline.push(rows, 0)
      .map((change) => change.data.id as number);
  const expectedIds = (truth: (row: (typeof rows)[number]) => boolean | null): number[] =>
    rows.filter((row) => truth(row) === true).map((row) => row.id);

  it('&& and || follow the left-to-right three-valued tables', () => {
    expect(kept('a && b')).toEqual(expectedIds((row) => AND[String(row.a)]?.[String(row.b)] ?? null));
    expect(kept('a || b')).toEqual(expectedIds((row) => OR[String(row.a)]?.[String(row.b)] ?? null));
    expect(kept('!a')).toEqual(expectedIds((row) => NOT[String(row.a)] ?? null));
    expect(kept('!(a && b)')).toEqual(expectedIds((row) => NOT[String(AND[String(row.a)]?.[String(row.b)])] ?? null));
    expect(kept('a || !b')).toEqual(expectedIds((row) => OR[String(row.a)]?.[String(NOT[String(row.b)])] ?? null));
  });

  it('comparisons with null are null, and a null condition drops the row', () => {
    expect(kept('n > 2')).toEqual(rows.filter((row) => row.n !== null && row.n > 2).map((row) => row.id));
    expect(kept('!(n > 2)')).toEqual(rows.filter((row) => row.n !== null && !(row.n > 2)).map((row) => row.id));
    expect(kept('n == null')).toEqual([]);
    expect(kept('n != null')).toEqual([]);
    expect(kept('ifNull(n, -1) == -1')).toEqual(rows.filter((row) => row.n === null).map((row) => row.id));
    expect(kept('n > 2 || a')).toEqual(expectedIds((row) => OR[String(row.n === null ? null : row.n > 2)]?.[String(row.a)] ?? null));
  });
});

interface Metric {
  g: string;
  x: number | null;
  y: number | null;
  s: string | null;
  ts: string;
}

function metricRows(seed: number, count: number): Metric[] {
  const prng = new Prng(seed);
  return Array.from({ length: count }, (_, i) => ({
    g: prng.pick(['p', 'q', 'r']),
    x: prng.chance(0.2) ? null : prng.int(-50, 200),
    y: prng.chance(0.2) ? null : prng.next() * 40 - 10,
    s: prng.chance(0.3) ? null : `s${prng.int(0, 99)}`,
    ts: iso(BASE_MS + i * 1000),
  }));
}

const present = <T>(values: readonly (T | null)[]): T[] => values.filter((value): value is T => value !== null);
const total = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0);

describe('query pipeline - aggregates', () => {
  it('computes every aggregate per group, ignoring nulls except in count()', () => {
    const rows = metricRows(21, 600);
    rows.push({ g: 'empty', x: null, y: null, s: null, ts: iso(BASE_MS) });
    const { pipeline } = start(`from historical ${METRICS} group by g
      select g, count() as n, count(x) as nx, sum(x) as sx, avg(x) as ax, min(y) as mn, max(y) as mx,
             first(s) as f, last(s) as l, stddev(y) as sd, min(s) as smin`);
    feed(pipeline, rows);
    const result = pipeline.finish().map((change) => change.data);
    expect(result.map((row) => row.g)).toEqual(['empty', 'p', 'q', 'r']);
    for (const row of result) {
      const mine = rows.filter((metric) => metric.g === row.g);
      const xs = present(mine.map((metric) => metric.x));
      const ys = present(mine.map((metric) => metric.y));
      const ss = present(mine.map((metric) => metric.s));
      const mean = total(ys) / ys.length;
      const sample = ys.length < 2 ? null : Math.sqrt(total(ys.map((y) => (y - mean) ** 2)) / (ys.length - 1));
      expect(row).toMatchObject({
        n: mine.length,
        nx: xs.length,
        sx: xs.length === 0 ? null : total(xs),
        mn: ys.length === 0 ? null : Math.min(...ys),
        mx: ys.length === 0 ? null : Math.max(...ys),
        f: ss[0] ?? null,
        l: ss[ss.length - 1] ?? null,
        smin: ss.length === 0 ? null : [...ss].sort()[0],
      });
      if (xs.length === 0) expect(row.ax).toBeNull();
      else expect(row.ax).toBeCloseTo(total(xs) / xs.length, 9);
      if (sample === null) expect(row.sd).toBeNull();
      else expect(row.sd).toBeCloseTo(sample, 9);
    }
  });

  it('computes bivar over the rows where both values are present', () => {
    const rows = metricRows(22, 500).map((row) => ({ ...row, y: row.x === null || row.y === null ? row.y : row.x * 0.5 + row.y }));
    const { pipeline } = start(`from historical ${METRICS} group by g select g, bivar(x, y) as bv`);
    feed(pipeline, rows);
    for (const { data } of pipeline.finish()) {
      const pairs = rows.filter((row) => row.g === data.g && row.x !== null && row.y !== null) as Array<{ x: number; y: number }>;
      const meanX = total(pairs.map((pair) => pair.x)) / pairs.length;
      const meanY = total(pairs.map((pair) => pair.y)) / pairs.length;
      const sxx = total(pairs.map((pair) => (pair.x - meanX) ** 2));
      const syy = total(pairs.map((pair) => (pair.y - meanY) ** 2));
      const sxy = total(pairs.map((pair) => (pair.x - meanX) * (pair.y - meanY)));
      const bv = data.bv as Record<string, number>;
      expect(Object.keys(bv)).toEqual(['pearsonsR', 'slopeYX', 'interceptYX', 'slopeXY', 'interceptXY']);
      expect(bv.pearsonsR).toBeCloseTo(sxy / Math.sqrt(sxx * syy), 9);
      expect(bv.slopeYX).toBeCloseTo(sxy / sxx, 9);
      expect(bv.interceptYX).toBeCloseTo(meanY - (sxy / sxx) * meanX, 6);
      expect(bv.slopeXY).toBeCloseTo(sxy / syy, 9);
      expect(bv.interceptXY).toBeCloseTo(meanX - (sxy / syy) * meanY, 6);
    }
  });

  it('gives bivar null over no pairs and null fields where a variance is zero', () => {
    const { pipeline } = start(`from historical ${METRICS} group by g select g, bivar(x, y) as bv`);
    pipeline.push(
      [
        { g: 'a', x: null, y: 1, ts: iso(BASE_MS) },
        { g: 'b', x: 2, y: 1, ts: iso(BASE_MS) },
        { g: 'b', x: 2, y: 3, ts: iso(BASE_MS) },
      ],
      0,
    );
    expect(pipeline.finish().map((change) => change.data)).toEqual([
      { g: 'a', bv: null },
      { g: 'b', bv: { pearsonsR: null, slopeYX: null, interceptYX: null, slopeXY: 0, interceptXY: 2 } },
    ]);
  });

  it('computes arithmetic over aggregates, with integer division where both sides are integers', () => {
    const rows = metricRows(23, 300);
    const { pipeline } = start(`from historical ${METRICS} group by g
      select g, toDouble(count()) / 24.0 as perHour, count() / 24 as whole, sum(x) / 7 as sevenths,
             avg(x) / 2 as halfAverage, max(x) - min(x) as span, count() % 5 as rest, count(x) * 2 + 1 as odd`);
    feed(pipeline, rows);
    for (const { data } of pipeline.finish()) {
      const mine = rows.filter((row) => row.g === data.g);
      const xs = present(mine.map((row) => row.x));
      expect(data).toEqual({
        g: data.g,
        perHour: mine.length / 24,
        whole: Math.trunc(mine.length / 24),
        sevenths: Math.trunc(total(xs) / 7),
        halfAverage: total(xs) / xs.length / 2,
        span: Math.max(...xs) - Math.min(...xs),
        rest: mine.length % 5,
        odd: xs.length * 2 + 1,
      });
    }
  });

  it('aggregates the whole input into one row when there is no group by', () => {
    const rows = metricRows(24, 120);
    const live = start(`from ${METRICS} select count() as n, sum(x) as sx`).pipeline;
    expect(live.mode).toBe('table');
    const changes = feed(live, rows, 40);
    expect(changes.map((change) => change.action)).toEqual(['add', 'update', 'update']);
    expect(changes[2]?.data).toEqual({ n: 120, sx: total(present(rows.map((row) => row.x))) });
    expect(live.snapshot()).toEqual([{ action: 'add', data: changes[2]?.data }]);

    const bounded = start(`from historical ${METRICS} select count() as n, sum(x) as sx`).pipeline;
    expect(bounded.finish()).toEqual([{ action: 'add', data: { n: 0, sx: null } }]);
  });

  it('sends no update when a row of the push leaves the group row unchanged', () => {
    const { pipeline } = start(`from ${METRICS} group by g select g, max(x) as top`);
    expect(pipeline.push([{ g: 'a', x: 5, ts: iso(BASE_MS) }], 0)).toEqual([{ action: 'add', data: { g: 'a', top: 5 } }]);
    expect(pipeline.push([{ g: 'a', x: 3, ts: iso(BASE_MS) }], 0)).toEqual([]);
    expect(pipeline.push([{ g: 'a', x: 9, ts: iso(BASE_MS) }, { g: 'b', x: 1, ts: iso(BASE_MS) }], 0)).toEqual([
      { action: 'update', data: { g: 'a', top: 9 } },
      { action: 'add', data: { g: 'b', top: 1 } },
    ]);
  });
});

describe('query pipeline - limits', () => {
  it('throws PipelineLimitError past groupsMax', () => {
    const { pipeline } = start(`from ${METRICS} group by s select s, count() as n`, {}, [], { groupsMax: 10, rowsHeldMax: 10 });
    const rows = Array.from({ length: 11 }, (_, i) => ({ g: 'a', s: `s${i}`, ts: iso(BASE_MS) }));
    expect(() => pipeline.push(rows.slice(0, 10), 0)).not.toThrow();
    const error = (() => {
      try {
        pipeline.push(rows.slice(10), 0);
      } catch (caught) {
        return caught;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(PipelineLimitError);
    expect(error).toMatchObject({ name: 'PipelineLimitError', code: 'PIPELINE_LIMIT', limit: 'groupsMax', max: 10 });
    expect((error as Error).message).toContain('more than 10 groups');
  });

  it('throws PipelineLimitError past rowsHeldMax when a bounded query sorts', () => {
    const { pipeline } = start(`from historical ${METRICS} select g, x order by x`, {}, [], { groupsMax: 10, rowsHeldMax: 100 });
    const rows = metricRows(25, 101);
    expect(() => pipeline.push(rows.slice(0, 100), 0)).not.toThrow();
    expect(() => pipeline.push(rows.slice(100), 0)).toThrow(PipelineLimitError);
  });

  it('holds only 2N rows for a bounded take N, so it stays within rowsHeldMax', () => {
    const { pipeline } = start(`from historical ${METRICS} select x order by x desc take 10`, {}, [], { groupsMax: 10, rowsHeldMax: 20 });
    const rows = metricRows(26, 1000);
    feed(pipeline, rows, 100);
    const expected = present(rows.map((row) => row.x)).sort((a, b) => b - a);
    const nulls = rows.filter((row) => row.x === null).length;
    // Descending puts nulls last; there are far more than 10 numbers.
    expect(nulls).toBeGreaterThan(0);
    expect(pipeline.finish().map((change) => change.data.x)).toEqual(expected.slice(0, 10));
  });

  it('refuses a query with errors', () => {
    const analysis = analyseQuery(`from ${METRICS} select nope`, { streams: STREAMS });
    expect(analysis.errors).not.toEqual([]);
    expect(() =>
      createPipeline({ check: analysis.check as QueryCheck, historical: false, compile: {}, limits: LIMITS }),
    ).toThrow(/errors/);
  });
});
