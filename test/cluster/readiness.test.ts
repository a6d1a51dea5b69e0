// Readiness tells the truth (docs/operating.md, "Health and readiness"): node-1 of two is
// restarted while node-2 is down. It cannot confirm its cluster table with a peer, so it
// refuses client requests; /ready and `tributary health --ready` must say so with the same
// reason, and the log must say it once when it starts and once when it ends (node-2 back).

import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { addNode, startClusterNode, until, waitState } from '../kit/cluster.js';
import { cleanup, client, sleep, type NodeProcess } from '../kit/node-process.js';

const run = promisify(execFile);
const MAIN = join(packageRoot(), 'dist', 'src', 'main.js');
const LOGS = ['--log-level', 'info', '--log-format', 'json'];
const UNCONFIRMED = 'node node-1 restarted and has not yet confirmed its cluster table with a peer; retry';

afterAll(cleanup);

/** `tributary health --ready --url …`: its exit code and what it printed. */
async function healthReady(node: NodeProcess): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await run(process.execPath, ['--no-node-snapshot', MAIN, 'health', '--ready', '--url', node.url], { timeout: 20_000 });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string };
    return { code: failed.code, stdout: failed.stdout };
  }
}

function logLines(node: NodeProcess, message: string): string[] {
  return node.output.split('\n').filter((line) => line.includes(message));
}

describe('cluster readiness - a node restarted while its only peer is down', () => {
  it('answers 503 with the reason on /ready, health --ready and data requests, logs it once, and is ready once the peer is back', async () => {
    const first = await startClusterNode('node-1', { args: LOGS });
    const second = await startClusterNode('node-2', { join: true, args: LOGS });
    expect((await addNode(first, second)).status).toBe(200);
    await waitState(second, 'Joined');
    expect((await client(first).get('/ready')).status).toBe(200);
    expect((await client(second).get('/ready')).status).toBe(200);

    await second.kill('SIGKILL');
    await first.restart();

    const ready = await client(first).get('/ready');
    expect(ready.status).toBe(503);
    expect(ready.json).toMatchObject({ ready: false, state: 'Joined', storage: 'open', stopping: false, reasons: [UNCONFIRMED], refusing: ['cluster'] });
    const cli = await healthReady(first);
    expect(cli.code).toBe(1);
    expect(JSON.parse(cli.stdout)).toMatchObject({ ready: false, reasons: [UNCONFIRMED] });
    const search = await client(first).post('/ssr/demo/_search', { uris: [], query: { base: 'true' } });
    expect(search.status).toBe(503);
    expect(search.json).toMatchObject({ error: { type: 'NODE_NOT_SERVING', message: UNCONFIRMED } });

    // Probed again and again, over several heartbeats: still one line.
    for (let probe = 0; probe < 5; probe += 1) {
      expect((await client(first).get('/ready')).status).toBe(503);
      await sleep(300);
    }
    expect(logLines(first, `not serving clients: ${UNCONFIRMED}`)).toHaveLength(1);
    expect(logLines(first, 'serving clients again')).toHaveLength(0);

    await second.launch();
    await until('node-1 to be ready again', async () => (await client(first).get('/ready')).status === 200, 30_000);
    expect((await client(first).get('/ready')).json).toMatchObject({ ready: true, reasons: [], refusing: [] });
    expect((await healthReady(first)).code).toBe(0);
    await until('node-1 to log the end of the refusal', async () => logLines(first, `serving clients again; cleared: ${UNCONFIRMED}`).length === 1, 5_000);
    expect(logLines(first, `not serving clients: ${UNCONFIRMED}`)).toHaveLength(1);
  }, 120_000);
});
