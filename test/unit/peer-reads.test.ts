import { pino } from 'pino';
import nacl from 'tweetnacl';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeIdentity } from '../../src/peer/identity.js';
import { remoteExecutionStatuses, remoteOutputPoll, serveExecutionStatuses, serveOutputPolls } from '../../src/sessions/execution-peer.js';
import { remoteScan, serveScans } from '../../src/historical/historical-peer.js';
import type { OutputRegistry } from '../../src/sessions/output-registry.js';
import { remoteDetails, serveMonitoring } from '../../src/monitoring/monitoring-peer.js';
import type { MonitoringDeps } from '../../src/monitoring/monitoring.js';
import { remoteStoreStats, serveStoreStats } from '../../src/ops/store-stats-peer.js';
import { PeerTransport } from '../../src/peer/transport.js';
import type { LocalSearchRequest, LocalSearchResult } from '../../src/search/local-search.js';
import { remoteSearch, serveSearchReads } from '../../src/search/search-peer.js';
import { clusterHoldsData, serveHoldsData } from '../../src/streams/stored-data-peer.js';
import { MONITORING_READ } from '../../src/monitoring/monitoring-peer.js';

const HOST = '127.0.0.1';
const DEADLINE_MS = 5_000;

function identity(): NodeIdentity {
  const pair = nacl.sign.keyPair();
  return { ...pair, publicKeyBase64: Buffer.from(pair.publicKey).toString('base64') };
}

let asker: PeerTransport;
let owner: PeerTransport;
let searchAnswer: LocalSearchResult;
const searched: LocalSearchRequest[] = [];

beforeAll(async () => {
  const keys = { asker: identity(), owner: identity() };
  const ports = new Map<string, number>();
  const directory = {
    publicKeyOf: (name: string) => (name === 'asker' || name === 'owner' ? keys[name].publicKeyBase64 : undefined),
    addressOf: (name: string) => (ports.has(name) ? { address: HOST, port: ports.get(name)! } : undefined),
  };
  const options = { directory, replayWindowMs: 5_000, log: pino({ level: 'silent' }), host: HOST, port: 0 };
  asker = new PeerTransport({ ...options, name: 'asker', identity: keys.asker });
  owner = new PeerTransport({ ...options, name: 'owner', identity: keys.owner });
  serveSearchReads(owner, async (request) => {
    searched.push(request);
    return searchAnswer;
  });
  serveScans(owner, async (request) => ({ records: [{ timestamp: request.fromMs ?? 0, writeId: 'w1', payload: { stream: request.stream, id: 855448618232418304n } }], done: true }));
  serveOutputPolls(owner, { poll: async (request) => ({ epoch: 'e1', seq: (request.cursor?.seq ?? 0) + 1, reset: request.cursor === undefined, entries: [{ message: { type: 'eos' } }] }) } as Pick<OutputRegistry, 'poll'> as OutputRegistry);
  serveExecutionStatuses(owner, { statuses: (key) => (key === 'session/demo/s1' ? new Map([['q1', { runToken: 2, state: 'completed', errors: [] }]]) : undefined), reconcile: async () => undefined });
  serveStoreStats(owner, { get: async () => ({ records: 3, bytes: 4_096, partitions: { 'demo/c/s': { '0': 3 } }, countedAtMs: 7 }) });
  serveMonitoring(owner, { localName: 'owner', system: { read: () => ({ cpu: 1 }) }, version: { number: '1' } } as unknown as MonitoringDeps);
  serveHoldsData(owner, async (stream) => stream === 'demo/c/full');
  await Promise.all([asker.start(), owner.start()]);
  ports.set('asker', asker.port);
  ports.set('owner', owner.port);
});

afterAll(async () => {
  await Promise.all([asker.close(1_000), owner.close(1_000)]);
});

const request: LocalSearchRequest = {
  parts: [{ stream: 'demo/c/s', partitions: [1], analyzer: 'keyword', base: 'x', drilldowns: [], taxonomyFacets: [], rangeFacets: [], tsField: undefined }],
  range: undefined,
  hitsMax: 10,
  histogram: undefined,
};

describe('peer reads - each kind answered by the part that owns it', () => {
  it("a SearchRead reaches the owner's search and its answer comes back checked", async () => {
    searchAnswer = { streams: [{ stream: 'demo/c/s', total: 1, hits: [{ score: 2, writeId: 'w1', data: { a: 1 } }], facets: [], ranges: [] }], histogram: undefined };
    await expect(remoteSearch(asker, DEADLINE_MS)('owner', request)).resolves.toEqual(searchAnswer);
    expect(searched.at(-1)).toEqual(request);
  });

  it("refuses an owner's search answer of the wrong shape instead of handing it on", async () => {
    searchAnswer = { streams: [{ stream: 'demo/c/s', total: 1, hits: [{ score: 2, writeId: 'w1', data: 'not an object' as unknown as Record<string, unknown> }], facets: [], ranges: [] }], histogram: undefined };
    await expect(remoteSearch(asker, DEADLINE_MS)('owner', request)).rejects.toThrow(/hits\[0\]\.data: expected an object, got string/);
  });

  it('a ScanRead, an OutputPoll and an ExecutionStatusRead come back typed', async () => {
    const page = await remoteScan(asker, DEADLINE_MS)('owner', { repo: 'tsr', stream: 'demo/c/s', partition: 0, limit: 10, fromMs: 5 });
    expect(page).toEqual({ records: [{ timestamp: 5, writeId: 'w1', payload: { stream: 'demo/c/s', id: 855448618232418304n } }], done: true });
    await expect(remoteOutputPoll(asker, DEADLINE_MS)('owner', { outputId: 'o', cursor: { epoch: 'e1', seq: 4 }, waitMs: 0 })).resolves.toEqual({ epoch: 'e1', seq: 5, reset: false, entries: [{ message: { type: 'eos' } }] });
    const statuses = remoteExecutionStatuses(asker, DEADLINE_MS);
    expect(await statuses('owner', 'demo', 's1')).toEqual(new Map([['q1', { runToken: 2, state: 'completed', errors: [] }]]));
    expect(await statuses('owner', 'demo', 'other')).toEqual(new Map());
  });

  it('a StoreStatsRead, a MonitoringRead and a HoldsDataRead come back typed; a bad monitoring service is the owner’s 404', async () => {
    await expect(remoteStoreStats(asker, DEADLINE_MS)('owner')).resolves.toEqual({ records: 3, bytes: 4_096, partitions: { 'demo/c/s': { '0': 3 } }, countedAtMs: 7 });
    const core = { membership: () => ({ epoch: 1, members: [{ name: 'asker', state: 'Joined' }, { name: 'owner', state: 'Joined' }], change: undefined }) } as never;
    const [details] = await remoteDetails(asker, core, 'system', { tenant: 'system' }, 'owner', DEADLINE_MS);
    expect(details).toMatchObject({ node: 'owner', details: { build: { number: '1' }, metrics: { cpu: 1 } } });
    await expect(asker.call('owner', MONITORING_READ, { service: 'nope', tenant: 'demo', uri: undefined }, { deadlineMs: DEADLINE_MS })).rejects.toMatchObject({ status: 404 });
    const holds = (stream: string) => clusterHoldsData(stream, { localHoldsData: async () => false, core, transport: asker, deadlineMs: DEADLINE_MS });
    expect(await holds('demo/c/full')).toBe(true);
    expect(await holds('demo/c/empty')).toBe(false);
  });
});
