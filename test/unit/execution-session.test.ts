// The pure parts of execution sessions: the spec's "Execution queries" transitions table,
// session bodies, time bounds of historical scans, and output channels.

import { describe, expect, it } from 'vitest';
import { parseQuery } from '../../src/query/index.js';
import { analyseSession, type SessionWorld } from '../../src/sessions/session-analysis.js';
import { parseSessionBody, parseQueryEntry, parseVariable } from '../../src/sessions/session-document.js';
import {
  deleteQuery,
  downstreamOf,
  putQuery,
  resetSession,
  setDomain,
  setVariable,
  startQuery,
  stopQuery,
  upstreamOf,
  type StoredSession,
} from '../../src/sessions/session-model.js';
import { timeBoundsOf } from '../../src/historical/time-bounds.js';
import { OutputChannel, type OutputMessage, type PollReply } from '../../src/sessions/output-channel.js';
import { OutputRegistry, type OutputPollRequest } from '../../src/sessions/output-registry.js';
import { createLogger } from '../../src/lib/log.js';
import { stringifyJson } from '../../src/lib/json.js';
import { checkQuery } from '../../src/query/index.js';

const LIMITS = { sessionQueriesMax: 10 };
const CPU_SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      host: { type: 'string' },
      user: { type: 'double' },
      timestamp: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
    },
  },
};
const world: SessionWorld = {
  streams: new Map([['/streams/demo/infra/cpu', { schema: CPU_SCHEMA, repository: 'tsr' }]]),
  contributorTypes: new Map(),
  domainExists: (uri) => uri === '/domain/demo/c/d',
};

let ids = 0;
const newId = () => `out-${++ids}`;

/** a reads cpu into x; b reads x into y; c reads y; v uses @limit; lone reads cpu. */
function chainSession(): StoredSession {
  const body = parseSessionBody(
    {
      variables: [{ id: 'limit', value: '50', type: 'double' }],
      queries: [
        { id: 'a', body: 'from /streams/demo/infra/cpu where user > 1 into x' },
        { id: 'b', body: 'from x select host, user into y' },
        { id: 'c', body: 'from y select host' },
        { id: 'v', body: 'from /streams/demo/infra/cpu where user > @limit select host' },
        { id: 'lone', body: 'from /streams/demo/infra/cpu select user' },
      ],
    },
    LIMITS,
  );
  return resetSession('demo', 's1', body, newId);
}

function links(session: StoredSession) {
  return analyseSession(session, world).links;
}

function states(session: StoredSession): Record<string, string> {
  return Object.fromEntries(session.queries.map((query) => [query.id, `${query.desired}#${query.runToken}`]));
}

describe('execution - session transitions (spec "Execution queries")', () => {
  it('analyses logical streams: dependencies go writer to reader', () => {
    const session = chainSession();
    const analysis = analyseSession(session, world);
    for (const result of analysis.queries.values()) expect(result.errors).toEqual([]);
    expect(upstreamOf(analysis.links, 'c')).toEqual(new Set(['a', 'b']));
    expect(downstreamOf(analysis.links, 'a')).toEqual(new Set(['b', 'c']));
    expect(analysis.queries.get('v')!.check!.dependencies).toEqual([{ type: 'variable', id: 'limit' }]);
  });

  it('_start starts the query and the queries upstream of it, and nothing else', () => {
    const session = startQuery(chainSession(), links(chainSession()), 'b');
    expect(states(session)).toEqual({ a: 'running#1', b: 'running#1', c: 'initialised#0', v: 'initialised#0', lone: 'initialised#0' });
  });

  it('_start of a running query does not restart it', () => {
    const once = startQuery(chainSession(), links(chainSession()), 'c');
    const twice = startQuery(once, links(once), 'c');
    expect(states(twice)).toEqual(states(once));
  });

  it('_stop stops the query and the running queries downstream of it', () => {
    let session = startQuery(chainSession(), links(chainSession()), 'c');
    session = stopQuery(session, links(session), 'b');
    expect(states(session)).toMatchObject({ a: 'running#1', b: 'stopped#1', c: 'stopped#1' });
  });

  it('PUT of an existing running query restarts it and its running dependents only', () => {
    let session = startQuery(chainSession(), links(chainSession()), 'c');
    session = startQuery(session, links(session), 'lone');
    const entry = parseQueryEntry({ id: 'b', body: 'from x select host, user, timestamp into y' });
    session = putQuery(session, links(session), entry, newId);
    expect(states(session)).toMatchObject({ a: 'running#1', b: 'running#2', c: 'running#2', lone: 'running#1' });
    expect(session.queries.find((query) => query.id === 'b')!.body).toContain('timestamp');
  });

  it('PUT of a new query adds it initialised, with a new output id; an existing one keeps its output id', () => {
    const before = chainSession();
    const added = putQuery(before, links(before), parseQueryEntry({ id: 'new', body: 'from x select host' }), newId);
    expect(added.queries.at(-1)).toMatchObject({ id: 'new', desired: 'initialised', runToken: 0 });
    const replaced = putQuery(added, links(added), parseQueryEntry({ id: 'a', body: 'from /streams/demo/infra/cpu into x' }), newId);
    expect(replaced.queries[0]!.outputId).toBe(before.queries[0]!.outputId);
  });

  it('DELETE of a query removes it and stops its running dependents', () => {
    let session = startQuery(chainSession(), links(chainSession()), 'c');
    session = deleteQuery(session, links(session), 'a');
    expect(states(session)).toEqual({ b: 'stopped#1', c: 'stopped#1', v: 'initialised#0', lone: 'initialised#0' });
  });

  it('PUT or DELETE of a variable restarts the running queries using it, and only them', () => {
    let session = startQuery(chainSession(), links(chainSession()), 'v');
    session = startQuery(session, links(session), 'lone');
    session = setVariable(session, links(session), parseVariable({ id: 'limit', value: '60', type: 'double' }));
    expect(states(session)).toMatchObject({ v: 'running#2', lone: 'running#1' });
    expect(session.variables).toEqual([{ id: 'limit', value: '60', type: 'double' }]);
    session = setVariable(session, links(session), { id: 'limit', deleted: true });
    expect(states(session)).toMatchObject({ v: 'running#3', lone: 'running#1' });
    expect(session.variables).toEqual([]);
  });

  it('a query variable of the same id hides the session variable: changing that restarts nothing', () => {
    const body = parseSessionBody(
      {
        variables: [{ id: 'limit', value: '50', type: 'double' }],
        queries: [{ id: 'own', body: 'from /streams/demo/infra/cpu where user > @limit select host', variables: [{ id: 'limit', value: '1', type: 'double' }] }],
      },
      LIMITS,
    );
    let session = resetSession('demo', 's2', body, newId);
    session = startQuery(session, links(session), 'own');
    session = setVariable(session, links(session), parseVariable({ id: 'limit', value: '70', type: 'double' }));
    expect(states(session)).toEqual({ own: 'running#1' });
  });

  it('PUT or DELETE of the domain restarts running queries that read physical streams, and their dependents', () => {
    let session = startQuery(chainSession(), links(chainSession()), 'c');
    session = setDomain(session, links(session), '/domain/demo/c/d');
    expect(states(session)).toMatchObject({ a: 'running#2', b: 'running#2', c: 'running#2', lone: 'initialised#0' });
    session = setDomain(session, links(session), null);
    expect(session.domain).toBeNull();
    expect(states(session)).toMatchObject({ a: 'running#3' });
  });

  it('PUT of the session resets everything: nothing runs and outputs are new', () => {
    const running = startQuery(chainSession(), links(chainSession()), 'c');
    const reset = resetSession('demo', 's1', parseSessionBody({ queries: [{ id: 'a', body: 'from /streams/demo/infra/cpu select host' }] }, LIMITS), newId);
    expect(states(reset)).toEqual({ a: 'initialised#0' });
    expect(reset.queries[0]!.outputId).not.toBe(running.queries[0]!.outputId);
  });

  it('a session domain that does not exist is INVALID_DOMAIN on queries reading streams', () => {
    const session = { ...chainSession(), domain: '/domain/demo/c/missing' };
    const analysis = analyseSession(session, world);
    expect(analysis.queries.get('a')!.errors).toContainEqual({ type: 'INVALID_DOMAIN', domain: '/domain/demo/c/missing' });
    expect(analysis.queries.get('b')!.errors).toEqual([]);
  });

  it('a cycle of logical streams is INVALID_STREAM_REFERENCE', () => {
    const body = parseSessionBody({ queries: [{ id: 'p', body: 'from q1 into p1' }, { id: 'q', body: 'from p1 into q1' }] }, LIMITS);
    const analysis = analyseSession(body, world);
    const errors = [...analysis.queries.values()].flatMap((result) => result.errors.map((error) => error.type));
    expect(errors).toContain('INVALID_STREAM_REFERENCE');
  });
});

describe('execution - session bodies', () => {
  it('an empty or absent body is the empty session', () => {
    expect(parseSessionBody(undefined, LIMITS)).toEqual({ domain: null, variables: [], functions: [], queries: [] });
    expect(parseSessionBody({}, LIMITS)).toEqual({ domain: null, variables: [], functions: [], queries: [] });
  });

  it('refuses duplicate query ids, naming the id', () => {
    const body = { queries: [{ id: 'a', body: 'from x' }, { id: 'a', body: 'from y' }] };
    expect(() => parseSessionBody(body, LIMITS)).toThrow(/queries: the id 'a' is used twice/);
  });

  it('names the field that is wrong', () => {
    expect(() => parseSessionBody({ queries: [{ id: 'a' }] }, LIMITS)).toThrow(/queries\[0\]\.body/);
    expect(() => parseSessionBody({ queries: 'x' }, LIMITS)).toThrow(/queries: expected an array/);
    expect(() => parseSessionBody({ functions: [{ id: 'f', language: 'python', body: 'x' }] }, LIMITS)).toThrow(/functions\[0\]\.language/);
    expect(() => parseSessionBody({ domain: 'nope' }, LIMITS)).toThrow(/domain: expected a domain URI/);
    expect(() => parseQueryEntry({ id: 'a', body: 'from x', query_type: 'sql' })).toThrow(/query_type/);
    expect(() => parseVariable({ id: 'v', value: { a: 1 }, type: 'int' })).toThrow(/value/);
  });

  it('bounds the number of queries', () => {
    const queries = Array.from({ length: 11 }, (_, index) => ({ id: `q${index}`, body: 'from x' }));
    expect(() => parseSessionBody({ queries }, LIMITS)).toThrow(/at most 10/);
  });
});

describe('execution - time bounds of a historical scan', () => {
  const steps = (text: string) => checkQuery(parseQuery(text), { streams: world.streams, variables: [{ id: 'since', value: '2024-01-01T00:00:00Z', type: 'datetime' }] }).steps;
  const bounds = (text: string) => timeBoundsOf(steps(text), ['timestamp'], (name) => (name === 'since' ? '2024-01-01T00:00:00Z' : undefined));
  const ms = (iso: string) => Date.parse(iso);

  it('narrows on comparisons of the timestamp with constants, both ways round', () => {
    expect(bounds("from historical /streams/demo/infra/cpu where timestamp >= '2024-01-01T00:00:00Z' && timestamp < '2024-01-02T00:00:00Z'")).toEqual({
      fromMs: ms('2024-01-01T00:00:00Z'),
      toMs: ms('2024-01-02T00:00:00Z') - 1,
    });
    expect(bounds("from historical /streams/demo/infra/cpu where '2024-01-01T00:00:00Z' < timestamp")).toEqual({ fromMs: ms('2024-01-01T00:00:00Z') + 1 });
    expect(bounds('from historical /streams/demo/infra/cpu where timestamp > @since')).toEqual({ fromMs: ms('2024-01-01T00:00:00Z') + 1 });
  });

  it('leaves the range open for anything it cannot prove', () => {
    expect(bounds("from historical /streams/demo/infra/cpu where timestamp > '2024-01-01T00:00:00Z' || user > 1")).toEqual({});
    expect(bounds("from historical /streams/demo/infra/cpu select host, timestamp where timestamp > '2024-01-01T00:00:00Z'")).toEqual({});
    expect(bounds('from historical /streams/demo/infra/cpu where user > 1')).toEqual({});
  });
});

describe('execution - output channels', () => {
  const schema = { version: '1', config: { key: ['host'] }, topDef: {} };
  const limits = { logMessagesMax: 4, retainedRowsMax: 100, retainedBytesMax: 1_000_000 };

  it('gives a late subscriber the schema and the current table, then what follows', () => {
    const channel = new OutputChannel('o', limits);
    channel.begin(schema, 'table');
    channel.increment([{ action: 'add', data: { host: 'a', n: 1 } }, { action: 'add', data: { host: 'b', n: 1 } }]);
    channel.increment([{ action: 'update', data: { host: 'a', n: 2 } }, { action: 'remove', data: { host: 'b', n: 1 } }]);
    const seen: OutputMessage[] = [];
    channel.subscribe((message) => seen.push(message));
    channel.increment([{ action: 'add', data: { host: 'c', n: 1 } }]);
    expect(seen).toEqual([
      { type: 'sos', schema },
      { type: 'increment', items: [{ action: 'add', data: { host: 'a', n: 2 } }] },
      { type: 'increment', items: [{ action: 'add', data: { host: 'c', n: 1 } }] },
    ]);
  });

  it('a subscriber before the start sees the sos when the query starts; a bounded result ends with eos', () => {
    const channel = new OutputChannel('o', limits);
    const seen: OutputMessage[] = [];
    channel.subscribe((message) => seen.push(message));
    expect(seen).toEqual([]);
    channel.begin(schema, 'rows');
    channel.increment([{ action: 'add', data: { host: 'a' } }]);
    channel.end();
    expect(seen.map((message) => message.type)).toEqual(['sos', 'increment', 'eos']);
    const late: OutputMessage[] = [];
    channel.subscribe((message) => late.push(message));
    expect(late.map((message) => message.type)).toEqual(['sos', 'increment', 'eos']);
  });

  it('a poller continues from its cursor, and starts over from the state when it fell behind the log', () => {
    const channel = new OutputChannel('o', limits);
    channel.begin(schema, 'table');
    const first = channel.poll(undefined, 100);
    expect(first.reset).toBe(true);
    channel.increment([{ action: 'add', data: { host: 'a' } }]);
    const next = channel.poll({ epoch: first.epoch, seq: first.seq }, 100);
    expect(next).toMatchObject({ reset: false, entries: [{ message: { type: 'increment' } }] });
    for (let index = 0; index < 10; index += 1) channel.increment([{ action: 'add', data: { host: `h${index}` } }]);
    const behind = channel.poll({ epoch: next.epoch, seq: next.seq }, 100);
    expect(behind.reset).toBe(true);
    expect(behind.entries[0]).toMatchObject({ message: { type: 'sos' } });
    expect(channel.poll({ epoch: 'another', seq: 0 }, 100).reset).toBe(true);
  });

  it("gives each listener the message's JSON text, made once: the message stringified, longs beyond 2^53 as digits", () => {
    const channel = new OutputChannel('o', limits);
    const seen: Array<[OutputMessage, string]> = [];
    channel.subscribe((message, json) => seen.push([message, json]));
    channel.begin(schema, 'table');
    const odd = JSON.parse('{"__proto__": "p", "q\\"uote": "\\u2028", "n": -0.5}') as Record<string, unknown>;
    channel.increment([
      { action: 'add', data: { host: 'a', n: 1, nested: { list: [1, 'two', null] } } },
      { action: 'update', data: { host: 'b', long: 12345678901234567890n } },
      { action: 'remove', data: odd },
    ]);
    channel.increment([{ action: 'add', data: {} }]);
    channel.end();
    expect(seen.map(([message]) => message.type)).toEqual(['sos', 'increment', 'increment', 'eos']);
    for (const [message, json] of seen) expect(json).toBe(stringifyJson(message));
    expect(seen[1]![1]).toContain('"long":12345678901234567890}');
    expect(JSON.parse(seen[1]![1]).items[2].data).toEqual(JSON.parse(JSON.stringify(odd)));
    // A late subscriber is given the state with its text too.
    const late: string[] = [];
    channel.subscribe((message, json) => late.push(json === stringifyJson(message) ? 'same' : json));
    expect(late).toEqual(['same', 'same', 'same']);
  });

  it('ends its subscribers after eos, and a late one at once; the last event id of the end asks for nothing more', () => {
    const channel = new OutputChannel('o', limits);
    const ids: string[] = [];
    let ended = 0;
    channel.subscribe((_message, _json, eventId) => ids.push(eventId), () => ended++);
    channel.begin(schema, 'rows');
    channel.increment([{ action: 'add', data: { host: 'a' } }]);
    expect(ended).toBe(0);
    channel.end();
    expect(ended).toBe(1);
    expect(ids).toHaveLength(3);
    expect(new Set(ids).size).toBe(3);
    expect(channel.isEndedAt(ids[2]!)).toBe(true);
    expect(channel.isEndedAt(ids[1]!)).toBe(false);
    let lateEnded = 0;
    const late: string[] = [];
    channel.subscribe((message) => late.push(message.type), () => lateEnded++);
    expect(late).toEqual(['sos', 'increment', 'eos']);
    expect(lateEnded).toBe(1);
    // A copy that could not be brought up to date does not end its subscriber on an old end.
    let staleEnded = 0;
    channel.subscribe(() => undefined, () => staleEnded++, false);
    expect(staleEnded).toBe(0);
    // Started again: nobody is ended, and the old end's id no longer means the end.
    channel.begin(schema, 'rows');
    expect(channel.isEndedAt(ids[2]!)).toBe(false);
  });

  it('a stop ends the subscribers of a live query, and the copies that poll it; a restart does not', () => {
    const host = new OutputChannel('o', limits);
    host.begin(schema, 'table');
    host.increment([{ action: 'add', data: { host: 'a', n: 1 } }]);
    const copy = new OutputChannel('o', limits);
    for (const entry of host.poll(undefined, 100).entries) copy.apply(entry);
    let hostEnded = 0;
    let copyEnded = 0;
    const seen: string[] = [];
    host.subscribe(() => undefined, () => hostEnded++);
    copy.subscribe((message) => seen.push(message.type), () => copyEnded++);
    const cursor = host.poll(undefined, 100);
    host.stop();
    expect(hostEnded).toBe(1);
    const next = host.poll({ epoch: cursor.epoch, seq: cursor.seq }, 100);
    expect(next.entries).toEqual([{ end: 'stopped' }]);
    for (const entry of next.entries) copy.apply(entry);
    expect(copyEnded).toBe(1);
    // The end is no message to clients: the copy's subscriber saw only the state.
    expect(seen).toEqual(['sos', 'increment']);
    host.stop();
    expect(hostEnded).toBe(1);
    // A late poller is sent the state and the end.
    expect(host.poll(undefined, 100).entries.at(-1)).toEqual({ end: 'stopped' });
    let discarded = 0;
    copy.subscribe(() => undefined, () => discarded++, false);
    copy.discard();
    expect(discarded).toBe(1);
  });

  it("a copy on another node is brought up to date before a client subscribes: a host's end ends it, an old end does not", async () => {
    const host = new OutputChannel('o', limits);
    host.begin(schema, 'rows');
    host.end();
    let reachable = true;
    const polls: OutputPollRequest[] = [];
    const registry = new OutputRegistry({
      localName: 'b',
      hostOfOutput: () => 'a',
      pollRemote: async (_node, request): Promise<PollReply> => {
        polls.push(request);
        if (!reachable) throw new Error('unreachable');
        return host.poll(request.cursor, 100);
      },
      limits,
      pollWaitMs: 10,
      log: createLogger('test', 'silent'),
    });
    let ended = 0;
    const seen: string[] = [];
    const unsubscribe = await registry.subscribe('o', (message) => seen.push(message.type), () => ended++);
    expect(seen).toEqual(['sos', 'eos']);
    expect(ended).toBe(1);
    unsubscribe();
    // With no client left, the copy's poller stops after its poll under way.
    await new Promise((resolve) => setTimeout(resolve, 100));
    // The host runs the query again; the copy still holds the old end, and the host cannot be asked.
    host.begin(schema, 'rows');
    reachable = false;
    let staleEnded = 0;
    const stale = await registry.subscribe('o', () => undefined, () => staleEnded++);
    expect(staleEnded).toBe(0);
    expect(await registry.endedAt('o', 'anything')).toBe(false);
    stale();
    registry.close();
    // Every poll carried on from the cursor of the one before (none applied an entry twice).
    expect(polls[0]!.cursor).toBeUndefined();
  });

  it('retains at most retainedRowsMax rows of a bounded result', () => {
    const channel = new OutputChannel('o', { logMessagesMax: 100, retainedRowsMax: 3, retainedBytesMax: 1_000_000 });
    channel.begin(schema, 'rows');
    channel.increment(Array.from({ length: 5 }, (_, index) => ({ action: 'add' as const, data: { host: `h${index}` } })));
    const late: OutputMessage[] = [];
    channel.subscribe((message) => late.push(message));
    expect(late[1]).toMatchObject({ type: 'increment', items: { length: 3 } });
  });

  it('retains at most retainedBytesMax bytes of rows, of a table, and of the log', () => {
    const big = (index: number) => ({ host: `h${index}`, text: 'x'.repeat(1_000) });
    const rows = new OutputChannel('o', { logMessagesMax: 100, retainedRowsMax: 1_000, retainedBytesMax: 10_000 });
    rows.begin(schema, 'rows');
    rows.increment(Array.from({ length: 50 }, (_, index) => ({ action: 'add' as const, data: big(index) })));
    const late: OutputMessage[] = [];
    rows.subscribe((message) => late.push(message));
    expect(late[1]).toMatchObject({ type: 'increment', items: { length: 9 } });
    const table = new OutputChannel('t', { logMessagesMax: 100, retainedRowsMax: 1_000, retainedBytesMax: 10_000 });
    table.begin(schema, 'table');
    for (let index = 0; index < 50; index++) table.increment([{ action: 'add', data: big(index) }]);
    const first = table.poll(undefined, 1_000);
    expect(first.entries[1]).toMatchObject({ message: { items: { length: 9 } } });
    // The log keeps the latest entries within the bound: a poller from the start is sent the state.
    expect(table.poll({ epoch: first.epoch, seq: 1 }, 1_000).reset).toBe(true);
    expect(table.poll({ epoch: first.epoch, seq: first.seq - 5 }, 1_000)).toMatchObject({ reset: false, entries: { length: 5 } });
  });
});
