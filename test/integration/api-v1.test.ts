// The brain management interface (/api/v1) over real node processes: the accounts
// CLI's contract, both gates in every combination, brains (PATCH whitelist, soft delete,
// templates), the free tier's refusals, problem documents, and the docs page. Every answer
// of a documented operation is checked against the OpenAPI document the node serves.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, http, NodeProcess, type HttpResult } from '../kit/node-process.js';
import { OpenApiCheck } from '../kit/openapi-check.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = resolve(ROOT, 'dist', 'src', 'api-v1', 'accounts-cli.js');
const SECRET = 'integration-admin-secret-0123456789';
const BODY_BYTES_MAX = 65_536;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let node: NodeProcess;
let document: any;
let check: OpenApiCheck;

beforeAll(async () => {
  node = await NodeProcess.start({
    name: 'brains',
    args: ['--admin-secret', SECRET, '--licence-tier', 'paid', '--licence-brain-allowance', '50', '--limits-body-bytes-max', String(BODY_BYTES_MAX)],
  });
  document = (await http(`${node.url}/api/v1/openapi.json`, 'GET')).json;
  check = new OpenApiCheck(document);
});
afterAll(cleanup);

interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(command: string, args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((resolveRun, reject) => {
    const childEnv = { ...process.env, ...env };
    for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
    const child = spawn(command, args, { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolveRun({ status, stdout, stderr }));
  });
}

/** The CLI as operators run it, against `target` with the admin secret unless told otherwise. */
function cli(args: string[], options: { target?: NodeProcess; secret?: string | null; env?: Record<string, string | undefined> } = {}): Promise<CliResult> {
  const target = options.target ?? node;
  const secret = options.secret === undefined ? SECRET : options.secret;
  const connection = ['--url', target.url, ...(secret === null ? [] : ['--admin-secret', secret])];
  return run(process.execPath, [CLI, ...args, ...connection], { TRIBUTARY_ADMIN_SECRET: undefined, TRIBUTARY_URL: undefined, ...options.env });
}

async function createAccount(name: string, target = node): Promise<string> {
  const result = await cli(['create', name], { target });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function call(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string>; target?: NodeProcess } = {}): Promise<HttpResult> {
  const headers = { ...(options.token === undefined ? {} : bearer(options.token)), ...options.headers };
  return http((options.target ?? node).url + path, method, options.body, headers);
}

const admin = (method: string, path: string, body?: unknown, target = node) => call(method, `/api/v1/admin${path}`, { body, headers: bearer(SECRET), target });

/** An RFC 7807 document with every member, for this request path. */
function expectProblem(response: HttpResult, status: number, code: string, path: string): any {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(response.json).toMatchObject({ type: `https://tributary.dev/problems/${code}`, status, instance: path });
  expect(typeof response.json.title).toBe('string');
  expect(typeof response.json.detail).toBe('string');
  expect(response.json.detail.length).toBeGreaterThan(0);
  return response.json;
}

/** The answer is one the document declares for this operation, in status, media type and schema. */
function expectDocumented(method: string, template: string, response: HttpResult): void {
  check.expectAnswer(method, template, response);
}

async function setSwitch(enabled: boolean): Promise<void> {
  const result = await cli([enabled ? 'api-enable' : 'api-disable']);
  expect(result.status, result.stderr).toBe(0);
}

describe('api-v1 docs - OpenAPI document and page', () => {
  it('GET /api/v1/openapi.json is a valid OpenAPI 3.1 document, served without a token', async () => {
    const response = await call('GET', '/api/v1/openapi.json');
    expectDocumented('GET', '/api/v1/openapi.json', response);
    const validator = new Validator();
    const result = await validator.validate(response.json);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(response.json.openapi).toBe('3.1.0');
  });

  it('GET /api/v1/docs serves Swagger UI from the node itself, no other origin', async () => {
    const page = await call('GET', '/api/v1/docs');
    expectDocumented('GET', '/api/v1/docs', page);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.text).not.toMatch(/https?:\/\//);
    const references = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(references).toEqual(expect.arrayContaining(['/api/v1/docs/swagger-ui-bundle.js', '/api/v1/docs/swagger-ui.css', '/api/v1/docs/initialiser.js']));
    for (const reference of references) {
      const asset = await call('GET', reference);
      expect(asset.status, reference).toBe(200);
    }
    const bundle = await call('GET', '/api/v1/docs/swagger-ui-bundle.js');
    expect(bundle.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(bundle.text).toContain('SwaggerUIBundle');
    const initialiser = await call('GET', '/api/v1/docs/initialiser.js');
    expect(initialiser.text).toContain("url: '/api/v1/openapi.json'");
    expect(initialiser.text).toContain('validatorUrl: null');
    expect((await call('GET', '/api/v1/docs/swagger-ui.css')).headers.get('content-type')).toMatch(/^text\/css/);
    expectProblem(await call('GET', '/api/v1/docs/package.json'), 404, 'not-found', '/api/v1/docs/package.json');
    // Names an object's prototype answers are no files either (they were 500s).
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      expectProblem(await call('GET', `/api/v1/docs/${name}`), 404, 'not-found', `/api/v1/docs/${name}`);
      expect((await call('GET', `/docs/${name}`)).status, `/docs/${name}`).toBe(404);
      expect((await call('GET', `/console/${name}`)).status, `/console/${name}`).toBe(404);
    }
  });
});

describe('api-v1 accounts - the CLI contract', () => {
  it('create prints the token alone on its own line, once; a second create is refused', async () => {
    const created = await cli(['create', 'cli-bot']);
    expect(created.status).toBe(0);
    expect(created.stdout).toMatch(/^trib_[A-Za-z0-9_-]{43}\n$/);
    const again = await cli(['create', 'cli-bot']);
    expect(again.status).toBe(1);
    expect(again.stdout).toBe('');
    expect(again.stderr).toContain("account 'cli-bot' exists");
  });

  it('grant-api, revoke-api and list; the secret can come from TRIBUTARY_ADMIN_SECRET', async () => {
    await createAccount('lister');
    const before = await cli(['list']);
    expect(before.status).toBe(0);
    expect(before.stdout.split('\n')[0]).toBe('NAME\tAPI_ACCESS\tSTATUS\tCREATED');
    expect(before.stdout).toMatch(/^lister\toff\tactive\t\S+$/m);
    expect((await cli(['grant-api', 'lister'], { secret: null, env: { TRIBUTARY_ADMIN_SECRET: SECRET } })).status).toBe(0);
    expect((await cli(['list'])).stdout).toMatch(/^lister\ton\tactive\t/m);
    const json = await cli(['list', '--json']);
    expect(JSON.parse(json.stdout)).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'lister', apiAccessEnabled: true, status: 'active' })]));
    expect((await cli(['revoke-api', 'lister'])).status).toBe(0);
    expect((await cli(['list'])).stdout).toMatch(/^lister\toff\tactive\t/m);
    expect((await cli(['revoke', 'lister'])).status).toBe(0);
    expect((await cli(['list'])).stdout).toMatch(/^lister\toff\trevoked\t/m);
    const listed = await admin('GET', '/accounts');
    expectDocumented('GET', '/api/v1/admin/accounts', listed);
    expect(JSON.stringify(listed.json)).not.toMatch(/trib_|tokenSha256/);
  });

  it('exit codes: 2 for usage, 1 for a refusal with the problem detail on stderr', async () => {
    expect((await run(process.execPath, [CLI])).status).toBe(2);
    expect((await cli(['frobnicate'])).status).toBe(2);
    expect((await cli(['create'])).status).toBe(2);
    expect((await cli(['create', 'a', 'b'])).status).toBe(2);
    const noSecret = await cli(['list'], { secret: null });
    expect(noSecret.status).toBe(2);
    expect(noSecret.stderr).toContain('TRIBUTARY_ADMIN_SECRET');
    const wrongSecret = await cli(['list'], { secret: 'not-the-secret-at-all' });
    expect(wrongSecret.status).toBe(1);
    expect(wrongSecret.stderr).toContain('the admin secret is wrong');
    const unknown = await cli(['grant-api', 'nobody']);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("account 'nobody' does not exist");
    const badName = await cli(['create', 'no/slashes']);
    expect(badName.status).toBe(1);
    expect(badName.stderr).toContain('must be 1-64');
    const unreachable = await run(process.execPath, [CLI, 'list', '--url', 'http://127.0.0.1:1', '--admin-secret', SECRET]);
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toContain('cannot reach');
  });

  it('npm run accounts -- create NAME --url … --admin-secret … ends with the token line', async () => {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const result = await run(npm, ['run', 'accounts', '--', 'create', 'via-npm', '--url', node.url, '--admin-secret', SECRET]);
    expect(result.status, result.stderr).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^trib_[A-Za-z0-9_-]{43}$/);
    expect(lines.filter((line) => line.startsWith('trib_'))).toHaveLength(1);
  });

  it('admin endpoints: 401 with a Bearer challenge without the secret, problem documents', async () => {
    const missing = await call('GET', '/api/v1/admin/accounts');
    expectProblem(missing, 401, 'admin-unauthenticated', '/api/v1/admin/accounts');
    expect(missing.headers.get('www-authenticate')).toMatch(/^Bearer realm="tributary-admin"/);
    expectDocumented('GET', '/api/v1/admin/accounts', missing);
    const wrong = await call('GET', '/api/v1/admin/settings', { token: 'wrong-secret-0123456789' });
    expectProblem(wrong, 401, 'admin-unauthenticated', '/api/v1/admin/settings');
    expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expectDocumented('GET', '/api/v1/admin/settings', wrong);
    // A service account token is not the admin secret.
    const token = await createAccount('not-an-admin');
    expectProblem(await call('GET', '/api/v1/admin/licence', { token }), 401, 'admin-unauthenticated', '/api/v1/admin/licence');
    const created = await admin('POST', '/accounts', { name: 'direct' });
    expectDocumented('POST', '/api/v1/admin/accounts', created);
    expectDocumented('POST', '/api/v1/admin/accounts', await admin('POST', '/accounts', { name: 'direct' }));
    expectDocumented('POST', '/api/v1/admin/accounts', await admin('POST', '/accounts', { nom: 'x' }));
    expectDocumented('GET', '/api/v1/admin/accounts/{name}', await admin('GET', '/accounts/direct'));
    expectDocumented('GET', '/api/v1/admin/accounts/{name}', await admin('GET', '/accounts/nobody'));
    expectDocumented('PATCH', '/api/v1/admin/accounts/{name}', await admin('PATCH', '/accounts/direct', { apiAccessEnabled: true }));
    expectDocumented('PATCH', '/api/v1/admin/accounts/{name}', await admin('PATCH', '/accounts/direct', { apiAccessEnabled: 'yes' }));
    expectDocumented('POST', '/api/v1/admin/accounts/{name}/revoke', await admin('POST', '/accounts/direct/revoke'));
    expectDocumented('GET', '/api/v1/admin/settings', await admin('GET', '/settings'));
    expectDocumented('PATCH', '/api/v1/admin/settings', await admin('PATCH', '/settings', { apiEnabled: false }));
    expectDocumented('GET', '/api/v1/admin/licence', await admin('GET', '/licence'));
    const licence = await admin('PATCH', '/licence', { tier: 'paid', brainAllowance: 50 });
    expectDocumented('PATCH', '/api/v1/admin/licence', licence);
    expect(licence.json).toMatchObject({ tier: 'paid', brainAllowance: 50 });
    expectDocumented('PATCH', '/api/v1/admin/licence', await admin('PATCH', '/licence', { tier: 'gold' }));
    const granted = await admin('PATCH', '/accounts/direct', { permissions: { demo: 'read', system: null } });
    expectDocumented('PATCH', '/api/v1/admin/accounts/{name}', granted);
    expect(granted.json.permissions).toEqual({ demo: 'read' });
  });

  it('a node without adminSecret keeps its admin endpoints closed (403)', async () => {
    const closed = await NodeProcess.start({ name: 'no-admin' });
    const response = await call('GET', '/api/v1/admin/accounts', { target: closed, token: 'anything-at-all-0123' });
    expectProblem(response, 403, 'admin-disabled', '/api/v1/admin/accounts');
    const result = await cli(['list'], { target: closed });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('no admin secret');
    await closed.kill('SIGTERM');
  });
});

describe('api-v1 access - both gates, every combination', () => {
  const PROBES = [
    ['GET', '/api/v1/brains'],
    ['GET', '/api/v1/brain-templates'],
    ['POST', '/api/v1/brains'],
    ['GET', '/api/v1/brains/{brainId}'],
    ['PATCH', '/api/v1/brains/{brainId}'],
    ['DELETE', '/api/v1/brains/{brainId}'],
  ] as const;
  let token: string;
  let brainId: string;

  beforeAll(async () => {
    token = await createAccount('gated');
    await setSwitch(true);
    await cli(['grant-api', 'gated']);
    const created = await call('POST', '/api/v1/brains', { token, body: { name: 'probe target' } });
    expect(created.status).toBe(201);
    brainId = created.json.id;
  });

  const probe = (method: string, template: string, authorization?: string) => {
    const path = template.replace('{brainId}', brainId);
    const body = method === 'POST' ? { name: 'gate probe' } : method === 'PATCH' ? { description: 'probed' } : undefined;
    return call(method, path, { body, headers: authorization === undefined ? {} : { authorization } });
  };

  for (const hive of [false, true]) {
    for (const account of [false, true]) {
      it(`hive switch ${hive ? 'on' : 'off'}, api_access_enabled ${account ? 'on' : 'off'}`, async () => {
        await setSwitch(hive);
        expect((await cli([account ? 'grant-api' : 'revoke-api', 'gated'])).status).toBe(0);
        for (const [method, template] of PROBES) {
          if (method === 'DELETE' && hive && account) continue; // keep the brain for the other cases
          const response = await probe(method, template, `Bearer ${token}`);
          const path = template.replace('{brainId}', brainId);
          if (hive && account) {
            expect(response.status, `${method} ${template}`).toBeLessThan(300);
          } else {
            const problem = expectProblem(response, 403, hive ? 'api-access-not-granted' : 'api-disabled', path);
            expect(problem.detail.length).toBeGreaterThan(0);
          }
          expectDocumented(method, template, response);
        }
      });
    }
  }

  it('a missing, malformed, unknown or revoked token is 401 with WWW-Authenticate: Bearer, whatever the gates', async () => {
    const revoked = await createAccount('revoked-soon');
    await cli(['grant-api', 'revoked-soon']);
    await setSwitch(true);
    expect((await call('GET', '/api/v1/brains', { token: revoked })).status).toBe(200);
    expect((await cli(['revoke', 'revoked-soon'])).status).toBe(0);
    const headers = [undefined, 'Basic dXNlcjpwYXNz', 'Bearer', `Bearer trib_${'A'.repeat(43)}`, `Bearer ${revoked}`];
    for (const hive of [true, false]) {
      await setSwitch(hive);
      for (const authorization of headers) {
        for (const [method, template] of PROBES) {
          const response = await probe(method, template, authorization);
          const path = template.replace('{brainId}', brainId);
          expectProblem(response, 401, 'unauthenticated', path);
          expect(response.headers.get('www-authenticate'), String(authorization)).toMatch(/^Bearer realm="tributary"/);
          expectDocumented(method, template, response);
        }
      }
    }
    await setSwitch(true);
  });

  it('the config key opens the hive switch until the CLI sets it (TRIBUTARY_BRAIN_API_ENABLED)', async () => {
    const configured = await NodeProcess.start({ name: 'configured', env: { TRIBUTARY_BRAIN_API_ENABLED: 'true', TRIBUTARY_ADMIN_SECRET: SECRET } });
    const configuredToken = await createAccount('by-config', configured);
    expect((await cli(['grant-api', 'by-config'], { target: configured })).status).toBe(0);
    expect((await admin('GET', '/settings', undefined, configured)).json).toMatchObject({ apiEnabled: true, source: 'config' });
    expect((await call('GET', '/api/v1/brains', { token: configuredToken, target: configured })).status).toBe(200);
    expect((await cli(['api-disable'], { target: configured })).status).toBe(0);
    expect((await admin('GET', '/settings', undefined, configured)).json).toMatchObject({ apiEnabled: false, source: 'stored' });
    expectProblem(await call('GET', '/api/v1/brains', { token: configuredToken, target: configured }), 403, 'api-disabled', '/api/v1/brains');
    await configured.kill('SIGTERM');
  });
});

describe('api-v1 brains - create, read, PATCH whitelist, soft delete', () => {
  let token: string;
  let otherToken: string;
  let ownerId: string;

  beforeAll(async () => {
    token = await createAccount('brain-owner');
    otherToken = await createAccount('brain-neighbour');
    for (const name of ['brain-owner', 'brain-neighbour']) expect((await cli(['grant-api', name])).status).toBe(0);
    await setSwitch(true);
    ownerId = (await admin('GET', '/accounts/brain-owner')).json.id;
  });

  it('GET /api/v1/brain-templates lists config/brain-templates.json', async () => {
    const response = await call('GET', '/api/v1/brain-templates', { token });
    expectDocumented('GET', '/api/v1/brain-templates', response);
    const file = JSON.parse(readFileSync(resolve(ROOT, 'config', 'brain-templates.json'), 'utf8'));
    expect(response.json).toEqual(file);
    expect(response.json.templates.length).toBeGreaterThanOrEqual(3);
  });

  it('POST /api/v1/brains: 201, Location, a UUID, the caller as owner, the template seeds neuron types', async () => {
    const response = await call('POST', '/api/v1/brains', {
      token,
      body: { name: 'Platform team', description: 'How we run things', brainTemplateId: 'engineering-team', ownerUserId: 'someone-else', id: 'mine' },
    });
    expectDocumented('POST', '/api/v1/brains', response);
    expect(response.status).toBe(201);
    const brain = response.json;
    expect(brain.id).toMatch(UUID);
    expect(response.headers.get('location')).toBe(`/api/v1/brains/${brain.id}`);
    expect(brain).toMatchObject({ name: 'Platform team', description: 'How we run things', ownerUserId: ownerId, brainTemplateId: 'engineering-team', auditEnabled: false, advancedSecurityEnabled: false });
    expect(brain.createdAt).toBe(brain.updatedAt);
    expect(Math.abs(Date.parse(brain.createdAt) - Date.now())).toBeLessThan(60_000);
    const template = (await call('GET', '/api/v1/brain-templates', { token })).json.templates.find((t: any) => t.id === 'engineering-team');
    expect(brain.neuronTypes).toEqual(template.neuronTypes);
    const fetched = await call('GET', `/api/v1/brains/${brain.id}`, { token });
    expectDocumented('GET', '/api/v1/brains/{brainId}', fetched);
    expect(fetched.json).toEqual(brain);
    const plain = await call('POST', '/api/v1/brains', { token, body: { name: 'No template', auditEnabled: true, advancedSecurityEnabled: true } });
    expect(plain.json).toMatchObject({ brainTemplateId: null, neuronTypes: [], auditEnabled: true, advancedSecurityEnabled: true, description: '' });
  });

  it('an unknown template is 422; bad bodies are 400, 413 and 415 problems', async () => {
    const unknown = await call('POST', '/api/v1/brains', { token, body: { name: 'x', brainTemplateId: 'no-such-template' } });
    expect(expectProblem(unknown, 422, 'unknown-brain-template', '/api/v1/brains').brainTemplateId).toBe('no-such-template');
    expectDocumented('POST', '/api/v1/brains', unknown);
    for (const body of [{}, { name: '' }, { name: 'x', auditEnabled: 'yes' }, { name: 'x', description: 5 }, [], 'null']) {
      const response = await call('POST', '/api/v1/brains', { token, body });
      expectProblem(response, 400, 'invalid-request', '/api/v1/brains');
      expectDocumented('POST', '/api/v1/brains', response);
    }
    const malformed = await call('POST', '/api/v1/brains', { token, body: '{"name": ' });
    expectProblem(malformed, 400, 'invalid-request', '/api/v1/brains');
    const form = await call('POST', '/api/v1/brains', { token, body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectProblem(form, 415, 'unsupported-media-type', '/api/v1/brains');
    expectDocumented('POST', '/api/v1/brains', form);
    const huge = await call('POST', '/api/v1/brains', { token, body: { name: 'x', description: 'y'.repeat(BODY_BYTES_MAX) } });
    expectProblem(huge, 413, 'payload-too-large', '/api/v1/brains');
    expectDocumented('POST', '/api/v1/brains', huge);
  });

  it("GET /api/v1/brains lists the caller's brains only; another account's brain is 404", async () => {
    const mine = await call('POST', '/api/v1/brains', { token, body: { name: 'Mine' } });
    const theirs = await call('POST', '/api/v1/brains', { token: otherToken, body: { name: 'Theirs' } });
    const list = await call('GET', '/api/v1/brains', { token });
    expectDocumented('GET', '/api/v1/brains', list);
    const ids = list.json.brains.map((brain: any) => brain.id);
    expect(ids).toContain(mine.json.id);
    expect(ids).not.toContain(theirs.json.id);
    expect(list.json.brains.every((brain: any) => brain.ownerUserId === ownerId)).toBe(true);
    const path = `/api/v1/brains/${theirs.json.id}`;
    expectProblem(await call('GET', path, { token }), 404, 'not-found', path);
    expectProblem(await call('PATCH', path, { token, body: { name: 'stolen' } }), 404, 'not-found', path);
    expectProblem(await call('DELETE', path, { token }), 404, 'not-found', path);
    expect((await call('GET', path, { token: otherToken })).json.name).toBe('Theirs');
    expectProblem(await call('GET', '/api/v1/brains/not-a-uuid', { token }), 404, 'not-found', '/api/v1/brains/not-a-uuid');
  });

  it('PATCH changes name, description, auditEnabled, advancedSecurityEnabled and silently ignores the rest', async () => {
    const created = (await call('POST', '/api/v1/brains', { token, body: { name: 'Before', brainTemplateId: 'research' } })).json;
    const path = `/api/v1/brains/${created.id}`;
    await new Promise((resolveWait) => setTimeout(resolveWait, 5));
    const response = await call('PATCH', path, {
      token,
      body: {
        name: 'After',
        description: 'patched',
        auditEnabled: true,
        advancedSecurityEnabled: true,
        ownerUserId: 'f0000000-0000-4000-8000-000000000000',
        id: 'f0000000-0000-4000-8000-000000000001',
        createdAt: '2000-01-01T00:00:00Z',
        brainTemplateId: 'customer-support',
        neuronTypes: [],
        colour: 'blue',
      },
    });
    expectDocumented('PATCH', '/api/v1/brains/{brainId}', response);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      ...created,
      name: 'After',
      description: 'patched',
      auditEnabled: true,
      advancedSecurityEnabled: true,
      updatedAt: response.json.updatedAt,
    });
    expect(Date.parse(response.json.updatedAt)).toBeGreaterThan(Date.parse(created.updatedAt));
    expect((await call('GET', path, { token })).json).toEqual(response.json);
    const ignoredOnly = await call('PATCH', path, { token, body: { ownerUserId: 'someone' } });
    expect(ignoredOnly.json).toEqual(response.json);
    const bad = await call('PATCH', path, { token, body: { auditEnabled: 'no' } });
    expectProblem(bad, 400, 'invalid-request', path);
    expectDocumented('PATCH', '/api/v1/brains/{brainId}', bad);
  });

  it('DELETE soft-deletes: reads 404, lists leave it out, its record and neuron types stay', async () => {
    const created = (await call('POST', '/api/v1/brains', { token, body: { name: 'Doomed', brainTemplateId: 'sales-accounts' } })).json;
    const path = `/api/v1/brains/${created.id}`;
    const deleted = await call('DELETE', path, { token });
    expectDocumented('DELETE', '/api/v1/brains/{brainId}', deleted);
    expect(deleted.status).toBe(204);
    for (const [method, body] of [['GET'], ['PATCH', { name: 'ghost' }], ['DELETE']] as const) {
      const response = await call(method, path, { token, body });
      expectProblem(response, 404, 'not-found', path);
      expectDocumented(method, '/api/v1/brains/{brainId}', response);
    }
    const ids = (await call('GET', '/api/v1/brains', { token })).json.brains.map((brain: any) => brain.id);
    expect(ids).not.toContain(created.id);
    const stored = await admin('GET', `/brains/${created.id}`);
    expectDocumented('GET', '/api/v1/admin/brains/{brainId}', stored);
    expect(stored.json).toMatchObject({ id: created.id, name: 'Doomed', neuronTypes: created.neuronTypes });
    expect(Date.parse(stored.json.deletedAt)).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
    expectDocumented('GET', '/api/v1/admin/brains/{brainId}', await admin('GET', '/brains/0b6d8c4e-0000-4000-8000-000000000000'));
  });

  it('every error under /api/v1 is a problem document: unknown routes, methods, malformed paths', async () => {
    expectProblem(await call('GET', '/api/v1/nothing-here', { token }), 404, 'not-found', '/api/v1/nothing-here');
    const method = await call('PUT', '/api/v1/brains', { token, body: {} });
    expect(expectProblem(method, 405, 'method-not-allowed', '/api/v1/brains').detail).toContain('GET');
    expect(method.headers.get('allow')).toContain('POST');
    expect((await call('GET', '/api/v1/brains/%E0%A4%A', { token })).headers.get('content-type')).toMatch(/^application\/problem\+json/);
    // The platform interface keeps its own error shape.
    const platform = await call('GET', '/no/such/route');
    expect(platform.json).toHaveProperty('error');
  });

  it('every operation of the document was exercised against the server', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]: [string, any]) =>
      Object.keys(item).filter((key) => key !== 'parameters').map((method) => `${method.toUpperCase()} ${path}`),
    );
    const answered = [...check.exercised].map((entry) => entry.split(' ').slice(0, 2).join(' '));
    expect(operations.filter((operation) => !answered.includes(operation))).toEqual([]);
  });
});

describe('api-v1 licence - free tier on one node', () => {
  let free: NodeProcess;
  let token: string;

  beforeAll(async () => {
    // The defaults: free tier, three brains.
    free = await NodeProcess.start({ name: 'free', args: ['--admin-secret', SECRET] });
    token = await createAccount('free-bot', free);
    expect((await cli(['grant-api', 'free-bot'], { target: free })).status).toBe(0);
    expect((await cli(['api-enable'], { target: free })).status).toBe(0);
  });

  it('auditEnabled or advancedSecurityEnabled set to true is 402 on create and on PATCH', async () => {
    for (const body of [{ name: 'x', auditEnabled: true }, { name: 'x', advancedSecurityEnabled: true }, { name: 'x', auditEnabled: true, advancedSecurityEnabled: true }]) {
      const response = await call('POST', '/api/v1/brains', { token, body, target: free });
      expect(expectProblem(response, 402, 'licence-feature-unavailable', '/api/v1/brains').tier).toBe('free');
      expectDocumented('POST', '/api/v1/brains', response);
    }
    const brain = await call('POST', '/api/v1/brains', { token, body: { name: 'free brain', auditEnabled: false, advancedSecurityEnabled: false }, target: free });
    expect(brain.status).toBe(201);
    const path = `/api/v1/brains/${brain.json.id}`;
    for (const body of [{ auditEnabled: true }, { advancedSecurityEnabled: true, name: 'renamed' }]) {
      const response = await call('PATCH', path, { token, body, target: free });
      expectProblem(response, 402, 'licence-feature-unavailable', path);
      expectDocumented('PATCH', '/api/v1/brains/{brainId}', response);
    }
    expect((await call('GET', path, { token, target: free })).json).toMatchObject({ name: 'free brain', auditEnabled: false, advancedSecurityEnabled: false });
    const off = await call('PATCH', path, { token, body: { auditEnabled: false, name: 'still free' }, target: free });
    expect(off.json).toMatchObject({ name: 'still free', auditEnabled: false });
    await call('DELETE', path, { token, target: free });
  });

  it('the default allowance is 3: a fourth brain is 402 until one is deleted', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const response = await call('POST', '/api/v1/brains', { token, body: { name: `brain ${i}` }, target: free });
      expect(response.status, response.text).toBe(201);
      ids.push(response.json.id);
    }
    const refused = await call('POST', '/api/v1/brains', { token, body: { name: 'one too many' }, target: free });
    expect(expectProblem(refused, 402, 'licence-brain-allowance-exceeded', '/api/v1/brains')).toMatchObject({ brainAllowance: 3, brainsUsed: 3, tier: 'free' });
    expectDocumented('POST', '/api/v1/brains', refused);
    expect((await admin('GET', '/licence', undefined, free)).json).toEqual({ tier: 'free', brainAllowance: 3, brainsUsed: 3 });
    expect((await call('DELETE', `/api/v1/brains/${ids[0]}`, { token, target: free })).status).toBe(204);
    expect((await admin('GET', '/licence', undefined, free)).json.brainsUsed).toBe(2);
    expect((await call('POST', '/api/v1/brains', { token, body: { name: 'replacement' }, target: free })).status).toBe(201);
    expect((await call('POST', '/api/v1/brains', { token, body: { name: 'still too many' }, target: free })).status).toBe(402);
  });
});
