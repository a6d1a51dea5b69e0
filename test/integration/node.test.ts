// The node process: its CLI, its identity, its node document, its stop, tenants and vendors.

import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, freePort, NodeProcess, sleep, temporaryDataDir } from '../kit/node-process.js';
import { NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
let node: NodeProcess;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'alpha' });
  api = client(node);
});
afterAll(cleanup);

/** The one child process of `pid` (Linux). */
function onlyChildOf(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  expect(children).toHaveLength(1);
  return children[0]!;
}

/** Whether a process of this pid still runs (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('node - start and identity', () => {
  it('GET /cluster/localNode returns the node document of a lone Joined node', async () => {
    const response = await api.get('/cluster/localNode');
    expect(response.status).toBe(200);
    const local = response.json.node;
    expect(local).toMatchObject({ name: 'alpha', zone: 'local', address: '127.0.0.1', port: node.peerPort, state: 'Joined', available: 'true' });
    expect(Buffer.from(local.publicKey, 'base64')).toHaveLength(32);
    expect(local.version.number).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof local.version.revision).toBe('string');
    expect((await api.get('/cluster/nodes')).json.nodes).toEqual([local]);
    expect((await api.get('/cluster/nodes/alpha')).json.node).toEqual(local);
    expect((await api.get('/cluster/nodes/nobody')).status).toBe(404);
  });

  it('keeps its key pair across restarts, and SIGTERM stops it within 5 s', async () => {
    const before = (await api.get('/cluster/localNode')).json.node.publicKey;
    const stopMs = await node.kill('SIGTERM');
    expect(stopMs).toBeLessThan(5_000);
    expect(node.child!.exitCode).toBe(0);
    await node.launch();
    expect((await api.get('/cluster/localNode')).json.node.publicKey).toBe(before);
  });

  it('started without the flags `npm start` gives Node, runs itself again with them; SIGTERM stops both, SIGKILL of the first leaves no node behind', async () => {
    const bare = await NodeProcess.start({ name: 'bare', nodeFlags: false, env: { NODE_OPTIONS: '' } });
    const nodePid = onlyChildOf(bare.child!.pid!);
    const nodeArgs = readFileSync(`/proc/${nodePid}/cmdline`, 'utf8').split('\0');
    expect(nodeArgs).toEqual(expect.arrayContaining([...NODE_FLAGS_GIVEN, 'start']));
    expect(await bare.kill('SIGTERM')).toBeLessThan(5_000);
    expect(bare.child!.exitCode).toBe(0);
    expect(alive(nodePid)).toBe(false);

    await bare.launch();
    const orphan = onlyChildOf(bare.child!.pid!);
    try {
      await bare.kill('SIGKILL');
      const deadline = Date.now() + 10_000;
      while (alive(orphan) && Date.now() < deadline) await sleep(100);
      expect(alive(orphan)).toBe(false);
    } finally {
      // Stopped here, by its pid, if it outlived its parent: the kit knows only the parent.
      if (alive(orphan)) process.kill(orphan, 'SIGKILL');
    }
  });

  it('--join starts the node Pending', async () => {
    const pending = await NodeProcess.start({ name: 'waiting', join: true });
    const local = (await client(pending).get('/cluster/localNode')).json.node;
    expect(local.state).toBe('Pending');
    await pending.kill('SIGTERM');
  });

  it('takes TRIBUTARY_* variables and --config FILE, flags winning over both', async () => {
    const dataDir = temporaryDataDir();
    const configFile = join(dataDir, 'node.json');
    const [httpPort, peerPort] = [await freePort(), await freePort()];
    writeFileSync(configFile, JSON.stringify({ name: 'from-file', zone: 'zone-file', peerPort }));
    const configured = await NodeProcess.start({
      name: 'from-flag',
      dataDir,
      portFlags: false,
      httpPort,
      peerPort,
      args: ['--config', configFile],
      env: { TRIBUTARY_HTTP_PORT: String(httpPort), TRIBUTARY_ZONE: 'zone-env' },
    });
    const local = (await client({ url: `http://127.0.0.1:${httpPort}` }).get('/cluster/localNode')).json.node;
    expect(local).toMatchObject({ name: 'from-flag', zone: 'zone-env', port: peerPort });
    await configured.kill('SIGTERM');
  });

  it('a bad config is refused at start with a message that names the key', () => {
    const result = spawnSync(process.execPath, ['--no-node-snapshot', 'dist/src/main.js', 'start', '--http-port', 'eighty'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("'httpPort'");
    const unknown = spawnSync(process.execPath, ['--no-node-snapshot', 'dist/src/main.js', 'start'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 10_000,
      env: { ...process.env, TRIBUTARY_LIMITS_TAG_TIMEOUT_MS: '0' },
    });
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("'limits.tagTimeoutMs'");
  });
});

describe('cluster tenants', () => {
  it('the demo tenant is present; PUT adds a tenant and GET reads it', async () => {
    expect((await api.get('/cluster/tenants')).json.tenants).toContainEqual({ name: 'demo' });
    const put = await api.put('/cluster/tenants/acme', {});
    expect(put.status).toBe(200);
    expect(put.json).toEqual({});
    expect(put.headers.get('service-config-version')).toBeTruthy();
    expect((await api.get('/cluster/tenants/acme')).json).toEqual({ name: 'acme' });
    expect((await api.get('/cluster/tenants/nobody')).status).toBe(404);
    expect((await api.get('/cluster')).json.tenants).toEqual([{ name: 'acme' }, { name: 'demo' }]);
    expect((await api.put('/cluster/tenants/a..b', {})).status).toBe(400);
  });
});

describe('admin vendors', () => {
  it('PUT, GET, list and DELETE with versions; id and key required; extra fields kept', async () => {
    const vendor = { id: 'acme-tools', key: 'PUBKEY-1', support: { email: 'help@acme.example' } };
    const put = await api.put('/admin/demo/vendors/acme-tools', vendor);
    expect(put.status).toBe(200);
    expect(put.json).toEqual(vendor);
    const version = put.headers.get('service-config-version')!;
    const get = await api.get('/admin/demo/vendors/acme-tools');
    expect(get.json).toEqual(vendor);
    expect(get.headers.get('service-config-version')).toBe(version);
    expect((await api.get('/admin/demo/vendors')).json).toEqual({ instances: ['acme-tools'] });

    expect((await api.put('/admin/demo/vendors/v2', { id: 'v2' })).status).toBe(400);
    expect((await api.put('/admin/demo/vendors/v2', { key: 'k' })).status).toBe(400);
    expect((await api.put('/admin/nobody/vendors/v2', { id: 'v2', key: 'k' })).status).toBe(404);

    const stale = await api.delete('/admin/demo/vendors/acme-tools', { 'Service-Config-Version': 'nope' });
    expect(stale.status).toBe(409);
    expect((await api.get('/admin/demo/vendors/acme-tools')).status).toBe(200);
    expect((await api.delete('/admin/demo/vendors/acme-tools', { 'Service-Config-Version': version })).status).toBe(200);
    expect((await api.get('/admin/demo/vendors/acme-tools')).status).toBe(404);
    expect((await api.get('/admin/demo/vendors')).json).toEqual({ instances: [] });
  });
});
