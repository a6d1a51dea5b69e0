// The brain interface on a two-node cluster: accounts, the hive switch and brains are the same
// on both nodes, and the licence's brain allowance is one pool for the cluster, also when both
// nodes are asked to create at the same moment.

import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNode, startClusterNode, waitState } from '../kit/cluster.js';
import { cleanup, http, type HttpResult, type NodeProcess } from '../kit/node-process.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = resolve(ROOT, 'dist', 'src', 'api-v1', 'accounts-cli.js');
const SECRET = 'cluster-admin-secret-0123456789';
const ALLOWANCE = 5;
const LICENCE_ARGS = ['--admin-secret', SECRET, '--licence-tier', 'paid', '--licence-brain-allowance', String(ALLOWANCE)];

let one: NodeProcess;
let two: NodeProcess;
let token: string;

function cli(node: NodeProcess, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [CLI, ...args, '--url', node.url, '--admin-secret', SECRET], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolveRun({ status, stdout, stderr }));
  });
}

const call = (node: NodeProcess, method: string, path: string, body?: unknown): Promise<HttpResult> =>
  http(node.url + path, method, body, { authorization: `Bearer ${token}` });
const licence = async (node: NodeProcess) => (await http(`${node.url}/api/v1/admin/licence`, 'GET', undefined, { authorization: `Bearer ${SECRET}` })).json;
const brainIds = async (node: NodeProcess): Promise<string[]> => (await call(node, 'GET', '/api/v1/brains')).json.brains.map((brain: { id: string }) => brain.id).sort();

/** `perNode` creates fired at each node at once; the statuses, counted. */
async function race(perNode: number, round: string): Promise<Map<number, number>> {
  const requests = [one, two].flatMap((node) =>
    Array.from({ length: perNode }, (_, i) => call(node, 'POST', '/api/v1/brains', { name: `${round} ${node.name} ${i}` })),
  );
  const statuses = new Map<number, number>();
  for (const response of await Promise.all(requests)) {
    if (response.status !== 201) expect(response.json.type, response.text).toBe('https://tributary.dev/problems/licence-brain-allowance-exceeded');
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  }
  return statuses;
}

beforeAll(async () => {
  one = await startClusterNode('node-1', { args: LICENCE_ARGS });
  two = await startClusterNode('node-2', { join: true, args: LICENCE_ARGS });
  expect((await addNode(one, two, SECRET)).status).toBe(200);
  await waitState(two, 'Joined');
}, 90_000);
afterAll(cleanup);

describe('api-v1 cluster - every node answers the same', () => {
  it('an account made on one node, granted and switched on through the other, works on both', async () => {
    const created = await cli(one, ['create', 'cluster-bot']);
    expect(created.status, created.stderr).toBe(0);
    token = created.stdout.trim();
    expect((await cli(two, ['grant-api', 'cluster-bot'])).status).toBe(0);
    expect((await cli(two, ['api-enable'])).status).toBe(0);
    for (const node of [one, two]) {
      expect((await call(node, 'GET', '/api/v1/brains')).status, node.name).toBe(200);
      expect((await cli(node, ['list'])).stdout).toMatch(/^cluster-bot\ton\tactive\t/m);
    }
    expect((await cli(one, ['api-disable'])).status).toBe(0);
    expect((await call(two, 'GET', '/api/v1/brains')).status).toBe(403);
    expect((await cli(two, ['api-enable'])).status).toBe(0);
  });
});

describe('api-v1 licence - one pool across two nodes', () => {
  it('concurrent creates on both nodes never exceed the allowance', async () => {
    const statuses = await race(8, 'first');
    expect(Object.fromEntries(statuses)).toEqual({ 201: ALLOWANCE, 402: 16 - ALLOWANCE });
    const ids = await brainIds(one);
    expect(ids).toHaveLength(ALLOWANCE);
    expect(await brainIds(two)).toEqual(ids);
    for (const node of [one, two]) expect(await licence(node)).toEqual({ tier: 'paid', brainAllowance: ALLOWANCE, brainsUsed: ALLOWANCE });
  });

  it('slots given back by deletes on one node are taken once, across both', async () => {
    const ids = await brainIds(two);
    for (const id of ids.slice(0, 3)) expect((await call(two, 'DELETE', `/api/v1/brains/${id}`)).status).toBe(204);
    for (const node of [one, two]) expect((await licence(node)).brainsUsed).toBe(ALLOWANCE - 3);
    const statuses = await race(5, 'second');
    expect(Object.fromEntries(statuses)).toEqual({ 201: 3, 402: 7 });
    expect(await brainIds(one)).toHaveLength(ALLOWANCE);
    expect(await brainIds(two)).toEqual(await brainIds(one));
    const full = await race(2, 'third');
    expect(Object.fromEntries(full)).toEqual({ 402: 4 });
  });
});
