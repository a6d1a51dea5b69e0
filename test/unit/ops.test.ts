import { describe, expect, it } from 'vitest';
import type { Membership, TransferPlan } from '../../src/protocol/cluster-types.js';
import { advertisedAddress } from '../../src/cluster/advertised-address.js';
import { renderStatus } from '../../src/cli/status.js';
import { TributaryError } from '../../src/lib/errors.js';
import { usePretty } from '../../src/lib/log.js';
import { formatBytes, formatDuration, formatTable, parseCatRequest, renderCat, type CatColumn } from '../../src/ops/cat-table.js';
import { nodeRows, ownership, streamRows, transferRows } from '../../src/ops/cat-views.js';
import type { StoreStats } from '../../src/ops/store-stats.js';
import { etaOf, membershipChangeLine, rateOf, TransferWatch, type TransferEvent } from '../../src/ops/transfer-watch.js';

const COLUMNS: CatColumn[] = [
  { name: 'name', kind: 'text', description: 'the name' },
  { name: 'count', kind: 'number', description: 'how many' },
  { name: 'size', kind: 'bytes', description: 'how big' },
];
const ROWS = [
  { name: 'b', count: 7, size: 2048 },
  { name: 'alpha', count: 1234, size: null },
];

describe('cat table - formatting', () => {
  it('aligns text left and numbers right, two spaces apart, headers only with v', () => {
    expect(formatTable(COLUMNS, ROWS, true)).toBe(
      'name   count    size\n' +
      'b          7  2.0KiB\n' +
      'alpha   1234       -\n',
    );
    expect(formatTable(COLUMNS, ROWS, false)).toBe('b         7  2.0KiB\nalpha  1234       -\n');
  });

  it('reads v, h, s, format and help from the query, and refuses what it does not know', () => {
    const request = parseCatRequest({ v: '', h: 'count,name', s: 'count:desc', format: 'json' }, COLUMNS);
    expect(request).toMatchObject({ headers: true, format: 'json', sort: [{ column: 'count', descending: true }] });
    expect(request.columns.map((column) => column.name)).toEqual(['count', 'name']);
    expect(renderCat(request, ROWS).body).toEqual([{ count: 1234, name: 'alpha' }, { count: 7, name: 'b' }]);
    expect(parseCatRequest({ v: 'false' }, COLUMNS).headers).toBe(false);
    expect(renderCat(parseCatRequest({ help: '' }, COLUMNS), []).body).toBe('name   the name\ncount  how many\nsize   how big\n');
    for (const [query, message] of [
      [{ colour: 'red' }, /unknown parameter 'colour'/],
      [{ h: 'nope' }, /unknown column 'nope'/],
      [{ format: 'yaml' }, /format must be text or json/],
      [{ s: 'name:up' }, /asc or desc/],
      [{ v: ['', ''] }, /more than once/],
    ] as const) {
      expect(() => parseCatRequest(query as Record<string, string>, COLUMNS)).toThrow(message);
      expect(() => parseCatRequest(query as Record<string, string>, COLUMNS)).toThrow(TributaryError);
    }
  });

  it('writes bytes in binary units and durations as h/m/s', () => {
    expect([formatBytes(0), formatBytes(1023), formatBytes(1536), formatBytes(5 * 1024 ** 3)]).toEqual(['0B', '1023B', '1.5KiB', '5.0GiB']);
    expect([formatDuration(0), formatDuration(59.4), formatDuration(185), formatDuration(7380)]).toEqual(['0s', '59s', '3m05s', '2h03m']);
  });
});

const member = (name: string, state: Membership['members'][number]['state'] = 'Joined') => ({
  name, state, publicKey: 'k', address: '127.0.0.1', port: 2000, httpPort: 1000, zone: 'local',
});

const plan = (overrides: Partial<TransferPlan> = {}): TransferPlan => ({
  id: 'c1/tsr/a>c', repo: 'tsr', from: 'a', to: 'c', slots: [], complete: false, percentComplete: 0, bytes: 0, records: 0, ...overrides,
});

const changing = (transfers: TransferPlan[]): Membership => ({
  epoch: 5,
  members: [member('a'), member('b'), member('c', 'Joining')],
  change: { id: 'c1', kind: 'join', node: 'c', slots: [], transfers },
});

describe('cat views - rows', () => {
  it('ownership is the share of slots a node holds a replica of: every node with replicas = nodes', () => {
    const membership: Membership = { epoch: 1, members: [member('a'), member('b'), member('c')], change: undefined };
    const full = ownership(membership, Array.from({ length: 16 }, (_, partition) => ({ partition, replicas: 3 })));
    expect([...full.values()]).toEqual([100, 100, 100]);
    const single = ownership(membership, Array.from({ length: 300 }, (_, partition) => ({ partition, replicas: 1 })));
    expect([...single.values()].reduce((sum, share) => sum + share, 0)).toBeCloseTo(100, 6);
    for (const share of single.values()) expect(share).toBeGreaterThan(10);
  });

  it('node rows carry stats of nodes that answered and - for the others', () => {
    const membership: Membership = { epoch: 1, members: [member('b'), member('a')], change: undefined };
    const disk = { freeBytes: 4096, totalBytes: 8192, writable: false, reason: 'a write failed' };
    const rows = nodeRows(membership, (name) => name === 'a', 'a', new Map([['a', 50], ['b', 50]]), new Map([['a', { records: 10, bytes: 99, partitions: {}, countedAtMs: 0, disk }], ['b', undefined]]));
    expect(rows).toEqual([
      { name: 'a', state: 'Joined', available: true, coordinator: '*', address: '127.0.0.1', http: 1000, peer: 2000, zone: 'local', owns: 50, records: 10, bytes: 99, disk_free: 4096, disk_total: 8192, writable: false },
      { name: 'b', state: 'Joined', available: false, coordinator: '', address: '127.0.0.1', http: 1000, peer: 2000, zone: 'local', owns: 50, records: null, bytes: null, disk_free: null, disk_total: null, writable: null },
    ]);
  });

  it('a stream counts, per partition, the most any node holds', () => {
    const stats = new Map<string, StoreStats>([
      ['a', { records: 0, bytes: 0, countedAtMs: 0, partitions: { 't/c/s': { '0': 5, '1': 3 } } }],
      ['b', { records: 0, bytes: 0, countedAtMs: 0, partitions: { 't/c/s': { '0': 5, '2': 4 } } }],
    ]);
    expect(streamRows([{ key: 't/c/s', repo: 'tsr', replicas: 2, ringSize: 4 }, { key: 't/c/empty', repo: 'ssr', replicas: 3, ringSize: 128 }], stats)).toEqual([
      { stream: 't/c/empty', repo: 'ssr', replicas: 3, ring_size: 128, partitions: 0, records: 0 },
      { stream: 't/c/s', repo: 'tsr', replicas: 2, ring_size: 4, partitions: 3, records: 12 },
    ]);
  });
});

describe('transfer watch - events, rate and ETA', () => {
  const options = { stallMs: 5_000, progressStepPercent: 10, rateWindowMs: 10_000, doneKeptMax: 2 };
  const types = (events: TransferEvent[]) => events.map((event) => event.type);

  it('starts, reports each 10% step, finishes when the change ends', () => {
    const watch = new TransferWatch(options);
    const up = () => true;
    expect(types(watch.observe(changing([plan()]), 0, up))).toEqual(['started']);
    expect(types(watch.observe(changing([plan({ percentComplete: 5, bytes: 500 })]), 1_000, up))).toEqual([]);
    const progress = watch.observe(changing([plan({ percentComplete: 25, bytes: 2_500 })]), 2_000, up);
    expect(types(progress)).toEqual(['progress']);
    expect(progress[0]!.transfer.rateBytesPerSecond).toBe(1_250);
    // 2,500 bytes are 25%: 7,500 left at 1,250 B/s.
    expect(progress[0]!.transfer.etaSeconds).toBe(6);
    const done = watch.observe({ epoch: 6, members: [member('a'), member('b'), member('c')], change: undefined }, 4_000, up);
    expect(types(done)).toEqual(['done']);
    expect(done[0]).toMatchObject({ seconds: 4, transfer: { complete: true, percentComplete: 100, etaSeconds: 0 } });
    expect(transferRows(watch.views(), 9_000)[0]).toMatchObject({ state: 'done', percent: 100, elapsed: 4 });
  });

  it('reports a stall once with its reason, and the resumption', () => {
    const watch = new TransferWatch(options);
    let sourceUp = true;
    watch.observe(changing([plan({ percentComplete: 10, bytes: 100 })]), 0, () => sourceUp);
    expect(types(watch.observe(changing([plan({ percentComplete: 10, bytes: 100 })]), 4_999, () => sourceUp))).toEqual([]);
    sourceUp = false;
    const stalled = watch.observe(changing([plan({ percentComplete: 10, bytes: 100 })]), 5_000, () => sourceUp);
    expect(stalled).toEqual([expect.objectContaining({ type: 'stalled', reason: 'source a unavailable' })]);
    expect(watch.observe(changing([plan({ percentComplete: 10, bytes: 100 })]), 9_000, () => sourceUp)).toEqual([]);
    expect(transferRows(watch.views(), 9_000)[0]).toMatchObject({ state: 'stalled', reason: 'source a unavailable' });
    sourceUp = true;
    expect(types(watch.observe(changing([plan({ percentComplete: 12, bytes: 120 })]), 10_000, () => sourceUp))).toEqual(['resumed']);
    const quiet = new TransferWatch(options);
    quiet.observe(changing([plan()]), 0, () => true);
    expect(quiet.observe(changing([plan()]), 6_000, () => true)).toEqual([expect.objectContaining({ reason: 'no progress for 6 s' })]);
  });

  it('says which end cannot reach which, and since when, while the stall lasts', () => {
    const watch = new TransferWatch(options);
    // a → c; this node is b. The target c has not heard from the source a for 3 s at 12:00:05.
    const noon = Date.parse('2026-11-27T12:00:00Z');
    let views: Record<string, Record<string, number>> = { c: { a: 3_000 } };
    const reach = { self: 'b', unreachableFor: (observer: string, node: string) => views[observer]?.[node] };
    watch.observe(changing([plan()]), noon, () => true, reach);
    const stalled = watch.observe(changing([plan()]), noon + 5_000, () => true, reach);
    expect(stalled).toEqual([expect.objectContaining({ type: 'stalled', reason: 'a unreachable from c since 12:00:02 UTC' })]);
    // Now b itself has not heard from c for 4 s: its own view comes first, and the reason follows without a second event.
    views = { b: { c: 4_000 } };
    expect(watch.observe(changing([plan()]), noon + 7_000, () => true, reach)).toEqual([]);
    expect(watch.views()[0]!.stalled).toBe('c unreachable since 12:00:03 UTC');
    views = {};
    expect(watch.observe(changing([plan()]), noon + 9_000, () => true, reach)).toEqual([]);
    expect(watch.views()[0]!.stalled).toBe('no progress for 9 s');
  });

  it('claims no progress only where progress is seen; elsewhere only an unreachable end is a stall', () => {
    // This node is neither the coordinator nor the target: its table moves only at completion.
    const bystander = new TransferWatch(options);
    let sourceUp = true;
    const elsewhere = () => false;
    bystander.observe(changing([plan()]), 0, () => sourceUp, undefined, elsewhere);
    expect(bystander.observe(changing([plan()]), 6_000, () => sourceUp, undefined, elsewhere)).toEqual([]);
    expect(transferRows(bystander.views(), 6_000)[0]).toMatchObject({ state: 'running', reason: null });
    sourceUp = false;
    expect(bystander.observe(changing([plan()]), 7_000, () => sourceUp, undefined, elsewhere)).toEqual([expect.objectContaining({ type: 'stalled', reason: 'source a unavailable' })]);
    sourceUp = true;
    bystander.observe(changing([plan()]), 8_000, () => sourceUp, undefined, elsewhere);
    expect(transferRows(bystander.views(), 8_000)[0]).toMatchObject({ state: 'running', reason: null });
  });

  it('keeps only the last finished transfers', () => {
    const watch = new TransferWatch(options);
    for (let index = 0; index < 4; index += 1) {
      watch.observe(changing([plan({ id: `c${index}/tsr/a>c` })]), index * 10, () => true);
      watch.observe({ epoch: 1, members: [], change: undefined }, index * 10 + 5, () => true);
    }
    expect(watch.views().map((view) => view.id)).toEqual(['c3/tsr/a>c', 'c2/tsr/a>c']);
  });

  it('rate and ETA are unknown until they can be computed', () => {
    expect(rateOf([])).toBeNull();
    expect(rateOf([{ atMs: 5, bytes: 1 }])).toBeNull();
    expect(rateOf([{ atMs: 0, bytes: 0 }, { atMs: 2_000, bytes: 4_000 }])).toBe(2_000);
    expect(etaOf(100, 0, 10)).toBeNull();
    expect(etaOf(100, 50, null)).toBeNull();
    expect(etaOf(100, 50, 10)).toBe(10);
    expect(etaOf(100, 100, null)).toBe(0);
  });

  it('a membership change is a line when it begins and when it completes', () => {
    const begun = membershipChangeLine(undefined, changing([plan()]));
    expect(begun).toMatchObject({ message: 'membership change: join c', fields: { peer: 'c', transfers: 1, epoch: 5 } });
    expect(membershipChangeLine(changing([plan()]), changing([plan({ bytes: 5 })]))).toBeUndefined();
    const ended = membershipChangeLine(changing([plan()]), { epoch: 6, members: [member('a'), member('c')], change: undefined });
    expect(ended).toMatchObject({ message: 'membership change complete: join c', fields: { members: ['a', 'c'] } });
  });
});

describe('status - rendering', () => {
  it('prints every node like nodetool status and only running transfers', () => {
    const text = renderStatus(
      'http://127.0.0.1:8888',
      [
        { name: 'node-1', state: 'Joined', available: true, address: '127.0.0.1', http: 8888, owns: 66.7, records: 1500, bytes: 2 * 1024 * 1024, zone: 'local' },
        { name: 'node-2', state: 'Joining', available: false, address: '127.0.0.1', http: 8890, owns: 0, records: null, bytes: null, zone: 'local' },
        { name: 'node-3', state: 'Left', available: false, address: '127.0.0.1', http: 8892, owns: 0, records: null, bytes: null, zone: 'local' },
      ],
      [
        { repo: 'tsr', from: 'node-1', to: 'node-2', state: 'running', percent: 42, bytes: 1024, rate: 2048, eta: 75, reason: null },
        { repo: 'KV', from: 'node-1', to: 'node-2', state: 'done', percent: 100, bytes: 10, rate: 10, eta: 0, reason: null },
      ],
    );
    expect(text.split('\n').slice(3)).toEqual([
      '--  name    address         state    available   owns  records   bytes  zone',
      'UN  node-1  127.0.0.1:8888  Joined   true       66.7%     1500  2.0MiB  local',
      'DJ  node-2  127.0.0.1:8890  Joining  false       0.0%        -       -  local',
      '-X  node-3  127.0.0.1:8892  Left     false       0.0%        -       -  local',
      '',
      'Transfers running (1):',
      'repo  from    to      state    percent   bytes      rate    eta  reason',
      'tsr   node-1  node-2  running    42.0%  1.0KiB  2.0KiB/s  1m15s  -',
      '',
    ]);
    expect(text).toContain('3 node(s), 1 Joined');
    // Every code the table uses is in the legend, Left's too.
    expect(text.split('\n')[1]).toBe('Status: U up, D down (this node does not hear from it), - left / State: N Joined, J Joining, L Leaving, P Pending, X Left');
  });
});

describe('advertised address and log format - choices', () => {
  const interfaces = { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }], eth0: [{ address: 'fe80::1', family: 'IPv6', internal: false }, { address: '172.17.0.2', family: 'IPv4', internal: false }] } as never;

  it('keeps a configured or specific address, derives one for a wildcard host', () => {
    expect(advertisedAddress('0.0.0.0', '10.0.0.5', interfaces)).toBe('10.0.0.5');
    expect(advertisedAddress('127.0.0.1', null, interfaces)).toBeNull();
    expect(advertisedAddress('0.0.0.0', null, interfaces)).toBe('172.17.0.2');
    expect(advertisedAddress('::', null, { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }] } as never)).toBe('127.0.0.1');
  });

  it('pretty when asked, or on a terminal when auto', () => {
    expect([usePretty('pretty', false), usePretty('json', true), usePretty('auto', true), usePretty('auto', false)]).toEqual([true, false, true, false]);
  });
});
