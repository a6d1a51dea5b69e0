// Platform API authentication and membership authority over a real node:
// a node with tokens on answers 401/403 in the platform's error format, a test per
// route family, accounts of /api/v1 with per-tenant grants get exactly what they were
// given, SSE outputs honour it, and membership changes need the admin secret.

import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, http, NodeProcess, temporaryDataDir } from '../kit/node-process.js';
import { NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const SECRET = 'auth-test-admin-secret-0123456789';
const admin = { authorization: `Bearer ${SECRET}` };

let node: NodeProcess;
const tokens: Record<string, string> = {};

async function account(name: string, permissions: Record<string, string>): Promise<string> {
  const created = await http(`${node.url}/api/v1/admin/accounts`, 'POST', { name }, admin);
  expect(created.status).toBe(201);
  const patched = await http(`${node.url}/api/v1/admin/accounts/${name}`, 'PATCH', { permissions }, admin);
  expect(patched.status).toBe(200);
  expect(patched.json.permissions).toEqual(permissions);
  return created.json.token as string;
}

const as = (who: string) => ({ authorization: `Bearer ${tokens[who]}` });

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'guarded', args: ['--auth', 'on', '--admin-secret', SECRET] });
  tokens.reader = await account('reader', { demo: 'read' });
  tokens.writer = await account('writer', { demo: 'write' });
  tokens.ops = await account('ops', { system: 'admin' });
  tokens.other = await account('other', { elsewhere: 'admin' });
});
afterAll(cleanup);

describe('auth - tokens on', () => {
  it('answers 401 in the platform error format, with a Bearer challenge, without a token or with a forged one', async () => {
    const anonymous = await client(node).put('/cluster/tenants/evil');
    expect(anonymous.status).toBe(401);
    expect(anonymous.json.error.type).toBe('UNAUTHENTICATED');
    expect(anonymous.headers.get('www-authenticate')).toBe('Bearer realm="tributary"');
    const forged = await client(node).get('/streams/demo', { authorization: 'Bearer trib_forged' });
    expect(forged.status).toBe(401);
    expect(forged.headers.get('www-authenticate')).toContain('invalid_token');
    expect((await client(node).get('/cluster/tenants/evil', admin)).status).toBe(404);
  });

  it('keeps GET /cluster/localNode public (health checks, the operator reading the key)', async () => {
    expect((await client(node).get('/cluster/localNode')).status).toBe(200);
  });

  it('streams: read may list and read, write may define and post, other tenants get 403', async () => {
    const stream = { schema: { version: '', topDef: { type: 'record', properties: { n: { type: 'int' } } } } };
    expect((await client(node).put('/streams/demo/c/s', stream, as('reader'))).status).toBe(403);
    expect((await client(node).put('/streams/demo/c/s', stream, as('writer'))).status).toBe(200);
    expect((await client(node).post('/streams/demo/c/s', [{ n: 1 }], as('writer'))).status).toBe(200);
    expect((await client(node).get('/streams/demo/c/s', as('reader'))).status).toBe(200);
    const denied = await client(node).get('/streams/demo/c/s', as('other'));
    expect(denied.status).toBe(403);
    expect(denied.json.error).toEqual({ type: 'FORBIDDEN', message: "account 'other' lacks 'read' on tenant 'demo'" });
  });

  it('search is a read; contributors, domains and daemons follow read/write', async () => {
    expect((await client(node).post('/ssr/demo/_search', { query: { base: '' } }, as('reader'))).status).not.toBe(403);
    expect((await client(node).post('/ssr/demo/_search', { query: { base: '' } }, as('other'))).status).toBe(403);
    const type = { schema: { type: 'record', properties: { contributor: { type: 'contributor' } } } };
    expect((await client(node).put('/contributors/demo/boards', type, as('reader'))).status).toBe(403);
    expect((await client(node).put('/contributors/demo/boards', type, as('writer'))).status).toBe(200);
    expect((await client(node).get('/contributors/demo/boards', as('reader'))).status).toBe(200);
    expect((await client(node).get('/domain/demo', as('other'))).status).toBe(403);
    expect((await client(node).get('/daemon/demo/c', as('other'))).status).toBe(403);
  });

  it('execution and SSE outputs: write makes sessions, read follows outputs (header or access_token)', async () => {
    expect((await client(node).post('/execution/demo/sessions', undefined, as('reader'))).status).toBe(403);
    const session = await client(node).post('/execution/demo/sessions', undefined, as('writer'));
    expect(session.status).toBe(200);
    expect((await client(node).get('/output/demo/no-such-output')).status).toBe(401);
    expect((await client(node).get('/output/demo/no-such-output', as('other'))).status).toBe(403);
    expect((await client(node).get(`/output/demo/no-such-output?access_token=${tokens.reader}`)).status).toBe(404);
  });

  it('monitoring and vendors: system read sees monitoring, vendors need admin on the tenant', async () => {
    expect((await client(node).get('/monitoring/system/cluster', as('reader'))).status).toBe(403);
    expect((await client(node).get('/monitoring/system/cluster', as('ops'))).status).toBe(200);
    expect((await client(node).get('/admin/demo/vendors', as('writer'))).status).toBe(403);
    expect((await client(node).get('/admin/demo/vendors', as('ops'))).status).toBe(200);
  });

  it('cluster: reading needs system read, adding a tenant system admin; a tenant reads its own document', async () => {
    expect((await client(node).get('/cluster', as('reader'))).status).toBe(403);
    expect((await client(node).get('/cluster/tenants/demo', as('reader'))).status).toBe(200);
    expect((await client(node).put('/cluster/tenants/evil', undefined, as('writer'))).status).toBe(403);
    expect((await client(node).put('/cluster/tenants/ops-made', undefined, as('ops'))).status).toBe(200);
    expect((await client(node).get('/output/cluster', as('reader'))).status).toBe(403);
  });

  it('membership: POST and DELETE /cluster/nodes and the join token need the admin secret or system admin', async () => {
    const entry = { nodes: [{ name: 'x', publicKey: Buffer.alloc(32, 1).toString('base64'), address: '127.0.0.1', port: 1 }] };
    expect((await client(node).post('/cluster/nodes', entry)).status).toBe(401);
    expect((await client(node).post('/cluster/nodes', entry, as('writer'))).status).toBe(403);
    expect((await client(node).delete('/cluster/nodes/x', as('reader'))).status).toBe(403);
    expect((await client(node).get('/cluster/join-token', as('writer'))).status).toBe(403);
    const token = await client(node).get('/cluster/join-token', as('ops'));
    expect(token.status).toBe(200);
    expect(token.json.joinToken).toMatch(/^tribjoin1\./);
  });

  it("operators' views need system read; health, readiness and the node's pages stay public", async () => {
    for (const path of ['/health', '/ready', '/', '/openapi.json', '/docs', '/console', '/console/console.js', '/console/uPlot.iife.min.js']) {
      expect((await client(node).get(path)).status, path).toBe(200);
    }
    for (const path of ['/metrics', '/_cat', '/_cat/nodes', '/_cat/streams?format=json', '/console/data/ring', '/console/data/history']) {
      expect((await client(node).get(path)).status, path).toBe(401);
      expect((await client(node).get(path, as('writer'))).status, path).toBe(403);
      expect((await client(node).get(path, as('ops'))).status, path).toBe(200);
    }
    // The document says which operations need a token, and answers 401 and 403 for them.
    const document = (await client(node).get('/openapi.json')).json;
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.paths['/_cat/streams'].get.security).toEqual([{ bearer: [] }, {}]);
    expect(Object.keys(document.paths['/streams/{tenant}'].get.responses)).toEqual(expect.arrayContaining(['401', '403']));
    expect(document.paths['/health'].get.security).toBeUndefined();
    expect(document.paths['/cluster/localNode'].get.security).toBeUndefined();
  });

  it('tributary status takes a token (--token or TRIBUTARY_TOKEN) and says when one is needed', async () => {
    const refused = await runMain(['status', '--url', node.url]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/authentication on; pass --token/);
    const shown = await runMain(['status', '--url', node.url, '--token', SECRET]);
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/UN\s+guarded/);
  });

  it('a revoked token stops working at once', async () => {
    expect((await http(`${node.url}/api/v1/admin/accounts/reader/revoke`, 'POST', undefined, admin)).status).toBe(200);
    expect((await client(node).get('/streams/demo/c/s', as('reader'))).status).toBe(401);
  });
});

describe('auth - the local embedded start', () => {
  it('is open on loopback and says so in its log; membership still needs a configured admin secret', async () => {
    const open = await NodeProcess.start({ name: 'open', args: ['--log-level', 'info', '--admin-secret', SECRET] });
    expect(open.output).toMatch(/authentication is OFF/);
    expect((await client(open).put('/cluster/tenants/anyone')).status).toBe(200);
    expect((await client(open).get('/cluster/join-token')).status).toBe(401);
    expect((await client(open).get('/cluster/join-token', admin)).status).toBe(200);
  });

  it('refuses to listen beyond loopback without an admin secret, or with bare --join', async () => {
    const started = await runMain(['start', '--host', '0.0.0.0', '--data-dir', temporaryDataDir()]);
    expect(started.status).toBe(2);
    expect(started.stderr).toMatch(/adminSecret.*beyond loopback/);
    const joining = await runMain(['start', '--host', '0.0.0.0', '--admin-secret', SECRET, '--join', '--data-dir', temporaryDataDir()]);
    expect(joining.status).toBe(2);
    expect(joining.stderr).toMatch(/--join needs --join-token/);
  });
});

function runMain(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [...NODE_FLAGS_GIVEN, resolve(ROOT, 'dist', 'src', 'main.js'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolveRun({ status, stdout, stderr });
    });
  });
}
