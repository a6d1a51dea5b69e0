// What an operator sees while a cluster grows: a third node joins two that hold data; one
// source is paused during the join. The target's log tells the membership change, each transfer
// started, stalled with its reason, resumed or replaced, and done; /_cat/transfers and
// `tributary status` show the same; every log line names its own node once and other nodes as
// `peer`.

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { addNode, startClusterNode, until, waitState } from '../kit/cluster.js';
import { cleanup, client, type NodeProcess } from '../kit/node-process.js';

const run = promisify(execFile);
const MAIN = join(packageRoot(), 'dist', 'src', 'main.js');
const STREAM = '/streams/demo/ops/cpu';
const PAYLOADS = 8_000;
const schema = { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, at: { type: 'datetime' }, cpu: { type: 'double' } } } };
/** Sources send 1 KiB chunks one at a time: the join's transfers last long enough to pause one. */
const SLOW_SOURCE = ['--cluster-transfer-chunk-bytes', '1024', '--cluster-transfer-window-chunks', '1'];
const LOGS = ['--log-level', 'info', '--log-format', 'json', '--access-log-level', 'debug'];

let nodes: NodeProcess[] = [];

beforeAll(async () => {
  const first = await startClusterNode('node-1', { args: [...LOGS, ...SLOW_SOURCE] });
  const second = await startClusterNode('node-2', { join: true, args: [...LOGS, ...SLOW_SOURCE] });
  expect((await addNode(first, second)).status).toBe(200);
  await waitState(second, 'Joined');
  nodes = [first, second];
  const api = client(first);
  expect((await api.put(STREAM, { schema })).status).toBe(200);
  expect((await api.put(`${STREAM}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
  expect((await api.put(`${STREAM}/policy`, { replicas: 2, ring_size: 16, hash_payload: { bytes: 64 } })).status).toBe(200);
  for (let start = 0; start < PAYLOADS; start += 1_000) {
    const batch = Array.from({ length: 1_000 }, (_, index) => ({ host: `h${(start + index) % 13}`, at: new Date(Date.UTC(2024, 0, 1) + (start + index) * 1000).toISOString(), cpu: index % 100 }));
    expect((await api.post(STREAM, batch)).status).toBe(200);
  }
}, 180_000);
afterAll(cleanup);

function jsonLines(node: NodeProcess): Array<Record<string, unknown>> {
  return node.output.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('cluster ops - a join watched by an operator', () => {
  it('logs and shows the transfers, a stall with its reason, and the end of the change', async () => {
    const [first, second] = nodes as [NodeProcess, NodeProcess];
    const third = await startClusterNode('node-3', { join: true, args: LOGS });
    nodes.push(third);
    expect((await addNode(first, third)).status).toBe(200);
    second.pause();
    try {
      const stalled = await until('node-3 to log a stalled transfer from node-2', async () =>
        jsonLines(third).find((line) => String(line.msg).startsWith('transfer stalled: ') && line.from === 'node-2' && line.repo === 'tsr'), 60_000);
      expect(stalled).toMatchObject({ level: 40, node: 'node-3', to: 'node-3', reason: expect.stringMatching(/^node-2 unreachable since \d\d:\d\d:\d\d UTC$/) });
      expect(stalled.msg).toMatch(/^transfer stalled: tsr node-2 → node-3: node-2 unreachable since \d\d:\d\d:\d\d UTC$/);
      const rows = (await client(third).get('/_cat/transfers?format=json')).json as Array<Record<string, unknown>>;
      expect(rows).toContainEqual(expect.objectContaining({ from: 'node-2', to: 'node-3', repo: 'tsr', state: 'stalled', reason: expect.stringMatching(/^node-2 unreachable since \d\d:\d\d:\d\d UTC$/) }));
    } finally {
      second.resume();
    }
    await waitState(third, 'Joined', 120_000);

    const lines = jsonLines(third);
    const messages = lines.map((line) => String(line.msg));
    expect(messages).toContain('membership change: join node-3');
    expect(messages.some((message) => /^transfer started: tsr node-[12] → node-3$/.test(message))).toBe(true);
    expect(messages.some((message) => /^transfer done: tsr node-[12] → node-3, [\d.]+(B|KiB|MiB) in \d+s$/.test(message))).toBe(true);
    // Progress lines (10% steps with rate and ETA: test/unit/ops.test.ts) come when the
    // target's table shows a transfer part done; one that finishes between two of its table
    // updates (a few hundred KiB here) goes from started to done. Those logged are well formed.
    const progress = messages.filter((message) => message.startsWith('transfer progress: '));
    for (const message of progress) expect(message).toMatch(/^transfer progress: (tsr|ssr) node-[12] → node-3 \d+%(, [\d.]+(B|KiB|MiB)\/s)?(, ETA \S+)?$/);
    await until('node-3 to log the end of the change', async () => jsonLines(third).some((line) => line.msg === 'membership change complete: join node-3'), 30_000);

    const transfers = (await client(third).get('/_cat/transfers?format=json')).json as Array<Record<string, unknown>>;
    expect(transfers.length).toBeGreaterThanOrEqual(2);
    for (const row of transfers) expect(row).toMatchObject({ state: 'done', percent: 100, to: 'node-3' });
    expect((await client(third).get('/_cat/transfers?v&h=repo,from,to,state,percent')).text.split('\n')[0]).toBe('repo  from    to      state  percent');
  }, 240_000);

  it('status shows three nodes up and Joined, with the ownership of replicas 2', async () => {
    const { stdout } = await run(process.execPath, ['--no-node-snapshot', MAIN, 'status', '--url', nodes[0]!.url], { timeout: 30_000 });
    expect(stdout).toContain('3 node(s), 3 Joined');
    const rows = stdout.split('\n').filter((line) => /^UN {2}node-\d/.test(line));
    expect(rows).toHaveLength(3);
    const owns = rows.map((line) => Number(/ ([\d.]+)% /.exec(line)![1]));
    // 16 partitions, 2 replicas each, over three nodes: the shares add up to 200%.
    expect(owns.reduce((sum, share) => sum + share, 0)).toBeCloseTo(200, 0);
    const streams = (await client(nodes[1]!).get('/_cat/streams?format=json')).json;
    expect(streams).toEqual([expect.objectContaining({ stream: 'demo/ops/cpu', replicas: 2, ring_size: 16, records: PAYLOADS })]);
  }, 60_000);

  it('every log line names its own node once and another node as peer', () => {
    for (const node of nodes) {
      const raw = node.output.split('\n').filter((line) => line.startsWith('{'));
      for (const line of raw) expect(line.match(/"node":/g), `${node.name}: ${line}`).toHaveLength(1);
      const lines = jsonLines(node);
      for (const line of lines) expect(line.node).toBe(node.name);
      if (node.name === 'node-1') {
        expect(lines).toContainEqual(expect.objectContaining({ msg: 'node state', peer: 'node-3', state: 'Joined' }));
        expect(lines).toContainEqual(expect.objectContaining({ msg: 'availability', peer: 'node-2', available: false }));
      }
    }
  });
});
