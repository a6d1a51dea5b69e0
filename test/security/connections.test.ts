// Attack classes "slow connections exhaust the node" and "fuzzing": a flood of connections that
// send nothing or send slowly stays within the connection cap and is closed by the header and
// body timeouts; the node answers meanwhile; and thousands of malformed requests over every
// route family answer 4xx, never 5xx, a hang or a crash.

import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, http, NodeProcess, sleep } from '../kit/node-process.js';
import { Prng } from '../sim/prng.js';
import { alive, figure, openFds, ROUTES, rssMiB } from './kit.js';

const CONNECTIONS_MAX = 200;
let node: NodeProcess;

beforeAll(async () => {
  node = await NodeProcess.start({
    name: 'connections',
    args: ['--limits-connections-max', String(CONNECTIONS_MAX), '--limits-headers-timeout-ms', '2000', '--limits-request-timeout-ms', '4000', '--limits-body-bytes-max', '1048576'],
  });
  const api = client(node);
  await api.put('/streams/demo/fuzz/s', { schema: { version: '1', topDef: { type: 'record', properties: { n: { type: 'int' }, text: { type: 'string', optional: true } } } } });
  await api.put('/streams/demo/fuzz/s/repository', { name: 'ssr', config: {} });
  await api.post('/streams/demo/fuzz/s', Array.from({ length: 200 }, (_, n) => ({ n, text: `t${n}` })));
}, 60_000);
afterAll(cleanup);

function open(count: number, send: (socket: Socket) => void): Promise<Socket[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      new Promise<Socket>((resolve) => {
        const socket = connect(node.httpPort, '127.0.0.1', () => {
          send(socket);
          resolve(socket);
        });
        socket.on('error', () => resolve(socket));
      }),
    ),
  );
}

const closedCount = (sockets: Socket[]) => sockets.filter((socket) => socket.destroyed || socket.closed || socket.readyState === 'closed').length;

describe('security - connection limits', () => {
  it('1,500 silent and slow connections: at most the cap stays open, all are closed by the timeouts, the node answers', async () => {
    const fdsBefore = openFds(node);
    const silent = await open(1_000, () => undefined);
    const slowHead = await open(250, (socket) => socket.write('GET /cluster HTTP/1.1\r\nHost: x\r\n'));
    const slowBody = await open(250, (socket) => socket.write('POST /streams/demo/fuzz/s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n[{"n":'));
    const all = [...silent, ...slowHead, ...slowBody];
    for (const socket of all) socket.on('close', () => undefined);
    await sleep(500);
    const fdsDuring = openFds(node);
    const probe = await http(`${node.url}/cluster/localNode`, 'GET').catch(() => undefined);
    await sleep(6_000);
    const closed = closedCount(all);
    const fdsAfter = openFds(node);
    figure('slow and silent connections', { opened: all.length, cap: CONNECTIONS_MAX, fdsBefore, fdsDuring, fdsAfter, closedAfter6s: closed, probeDuringFlood: probe?.status ?? 'refused' });
    expect(fdsDuring - fdsBefore).toBeLessThanOrEqual(CONNECTIONS_MAX + 10);
    expect(closed).toBe(all.length);
    expect(fdsAfter - fdsBefore).toBeLessThan(10);
    expect((await http(`${node.url}/cluster/localNode`, 'GET')).status).toBe(200);
    for (const socket of all) socket.destroy();
  });
});

function fuzzValue(prng: Prng, depth = 0): unknown {
  const pick = prng.int(0, depth > 3 ? 5 : 8);
  switch (pick) {
    case 0: return null;
    case 1: return prng.int(-1e9, 1e9) / (prng.int(1, 3) === 1 ? 7 : 1);
    case 2: return ['', 'a', '../..', '%00', "'", '*', '~0', 'search(', '\u0000', 'x'.repeat(prng.int(0, 3000))][prng.int(0, 9)];
    case 3: return prng.int(0, 1) === 1;
    case 4: return 'Infinity';
    case 5: return `${'('.repeat(prng.int(0, 300))}a`;
    case 6: return Array.from({ length: prng.int(0, 5) }, () => fuzzValue(prng, depth + 1));
    default: {
      const keys = ['query', 'base', 'schema', 'topDef', 'type', 'properties', 'nodes', 'uris', 'facets', 'ranges', 'queries', 'body', 'id', 'key', '__proto__', 'constructor', 'count', 'from'];
      return Object.fromEntries(Array.from({ length: prng.int(0, 5) }, () => [keys[prng.int(0, keys.length - 1)]!, fuzzValue(prng, depth + 1)]));
    }
  }
}

function fuzzBody(prng: Prng): string | undefined {
  switch (prng.int(0, 5)) {
    case 0: return undefined;
    case 1: return '{"unterminated": [1, 2';
    case 2: return `${'['.repeat(prng.int(100, 3000))}`;
    case 3: return String.fromCharCode(...Array.from({ length: prng.int(1, 200) }, () => prng.int(0, 255)));
    default: return JSON.stringify(fuzzValue(prng));
  }
}

/**
 * The spec's answer to a POST whose payloads all failed (schema, tags): 500 with
 * `{ "<index>": { msg } }` per payload. A client's mistake, not a server error, in the
 * spec's own format (docs/platform-decisions.md, "Errors").
 */
function isIngestRefusal(status: number, text: string): boolean {
  if (status !== 500) return false;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const entries = Object.entries(body);
    return entries.length > 0 && entries.every(([key, value]) => /^\d+$/.test(key) && typeof (value as { msg?: unknown })?.msg === 'string');
  } catch {
    return false;
  }
}

describe('security - fuzzing every route family', () => {
  it('3,000 malformed requests: no 5xx, no hang, no crash, bounded memory', async () => {
    const prng = new Prng(1515);
    const rssBefore = rssMiB(node);
    const statuses = new Map<number, number>();
    const fiveHundreds: string[] = [];
    let hangs = 0;
    const one = async () => {
      const [method, template] = ROUTES[prng.int(0, ROUTES.length - 1)]!;
      const name = ['x', 's', '%2e%2e', 'a%2Fb', '%E0%A4%A', 'z'.repeat(300), '__proto__', 'system'][prng.int(0, 7)]!;
      const path = template.replace('{name}', name);
      const body = fuzzBody(prng);
      const headers: Record<string, string> = prng.int(0, 4) === 0 ? { 'content-type': 'text/plain' } : { 'content-type': 'application/json' };
      try {
        const response = await fetch(`${node.url}${path}`, { method, headers, body, signal: AbortSignal.timeout(20_000) });
        const text = await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        if (response.status >= 500 && !isIngestRefusal(response.status, text)) fiveHundreds.push(`${method} ${path} ${String(body).slice(0, 120)} → ${response.status} ${text.slice(0, 200)}`);
      } catch (error) {
        if ((error as Error).name === 'TimeoutError') hangs += 1;
      }
    };
    for (let round = 0; round < 300; round++) await Promise.all(Array.from({ length: 10 }, one));
    const growth = Math.round(rssMiB(node) - rssBefore);
    figure('HTTP fuzzing', { requests: 3_000, fiveHundreds: fiveHundreds.length, hangs, crashed: !alive(node), rssGrowthMiB: growth, statuses: Object.fromEntries(statuses) });
    expect(fiveHundreds).toEqual([]);
    expect(hangs).toBe(0);
    expect(alive(node)).toBe(true);
    expect(growth).toBeLessThan(300);
  });
});
