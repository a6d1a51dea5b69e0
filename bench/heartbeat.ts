// Heartbeat benchmark (`npm run bench -- heartbeat`): the CPU one heartbeat costs its sender
// and its receiver together, as nodes send it (one way on the peer's notice stream,
// peer/notice-streams.ts) and as a unary call (how every heartbeat went before, and how other
// core messages still go). Two peer transports in this process on loopback, so that one
// process's CPU time is both ends'; rounds of `--payloads` heartbeats (default 3,000), the two
// ways in turn (`--runs` rounds each, default 5), each round's CPU per heartbeat, the median
// reported. What a node spends on heartbeats is this times its members, once a second
// (docs/cluster.md, "What the heartbeats cost"). Results go to bench/results/heartbeat.json.

import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { CORE_MESSAGE } from '../src/cluster/core-messages.js';
import { PeerTransport } from '../src/peer/transport.js';
import type { PeerMessage } from '../src/protocol/cluster-types.js';
import { loopbackDirectory, newIdentity, PEER_HOST } from '../test/kit/peer-pair.js';
import { log, round } from './ingest.js';
import { machine } from './machine.js';
import type { BenchOptions } from './options.js';

const RESULTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'results', 'heartbeat.json');
/** Calls in flight at once: a node heartbeats all its peers at the same tick. */
const AT_ONCE = 10;
const HEARTBEAT = { type: 'heartbeat', epoch: 12, at: { address: '10.0.0.1', port: 7000, httpPort: 8000 } } as PeerMessage;

async function pair(): Promise<{ a: PeerTransport; b: PeerTransport; heard: () => number }> {
  const ids = { a: newIdentity(), b: newIdentity() };
  const ports: Record<string, number> = {};
  const directory = loopbackDirectory({ a: { key: ids.a.publicKeyBase64, port: () => ports.a! }, b: { key: ids.b.publicKeyBase64, port: () => ports.b! } });
  const make = (name: 'a' | 'b') => new PeerTransport({ name, identity: ids[name], directory, replayWindowMs: 60_000, log: pino({ level: 'silent' }), host: PEER_HOST, port: 0 });
  const a = make('a');
  const b = make('b');
  ports.a = await a.start();
  ports.b = await b.start();
  let heard = 0;
  b.handle(CORE_MESSAGE, async () => {
    heard += 1;
    return {};
  });
  return { a, b, heard: () => heard };
}

/** CPU µs per heartbeat over `count`, both ends. */
async function cpuPerHeartbeat(count: number, send: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await send();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

export async function runHeartbeatBench(options: BenchOptions): Promise<void> {
  const count = options.payloads;
  const loadBefore = os.loadavg()[0]!;
  const { a, b, heard } = await pair();
  const failed: Error[] = [];
  const asCalls = async (): Promise<void> => {
    for (let sent = 0; sent < count; sent += AT_ONCE) {
      await Promise.all(Array.from({ length: AT_ONCE }, () => a.call('b', CORE_MESSAGE, HEARTBEAT, { deadlineMs: 10_000 })));
    }
  };
  // As the calls: AT_ONCE sent, then the next AT_ONCE once those arrived (a notice stream
  // keeps at most NOTICES_QUEUED_MAX waiting, and drops beyond: heartbeats come once a second).
  const asNotices = async (): Promise<void> => {
    const deadline = Date.now() + 60_000;
    for (let sent = 0; sent < count; sent += AT_ONCE) {
      const target = heard() + AT_ONCE;
      for (let index = 0; index < AT_ONCE; index += 1) a.notify('b', CORE_MESSAGE, HEARTBEAT, (error) => failed.push(error));
      while (heard() < target) {
        if (Date.now() > deadline || failed.length > 0) throw new Error(`notices stopped arriving after ${sent} of ${count}: ${failed[0]?.message ?? 'none lost a stream'}`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
  };
  // A warm-up of each way first (JIT, connections).
  await asCalls();
  await asNotices();
  const calls: number[] = [];
  const notices: number[] = [];
  for (let run = 0; run < options.runs; run += 1) {
    calls.push(await cpuPerHeartbeat(count, asCalls));
    notices.push(await cpuPerHeartbeat(count, asNotices));
  }
  await a.close(100);
  await b.close(100);
  if (failed.length > 0) throw new Error(`notice streams failed: ${failed[0]!.message}`);
  const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
  const result = {
    date: new Date().toISOString(),
    machine: machine(loadBefore),
    params: { heartbeatsPerRound: count, roundsEach: options.runs, atOnce: AT_ONCE },
    cpuMicrosecondsPerHeartbeat: { notice: round(median(notices), 0), call: round(median(calls), 0), noticeRounds: notices.map((value) => round(value, 0)), callRounds: calls.map((value) => round(value, 0)) },
    callOverNotice: round(median(calls) / median(notices), 2),
  };
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  log(`heartbeat, both ends' CPU: ${result.cpuMicrosecondsPerHeartbeat.notice} µs as a notice, ${result.cpuMicrosecondsPerHeartbeat.call} µs as a call (${result.callOverNotice}×), median of ${options.runs} rounds of ${count}`);
  log(`wrote ${RESULTS}`);
}
