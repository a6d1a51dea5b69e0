// The brain management interface's pure parts and services over an in-memory definitions
// store: tokens, gates, the PATCH whitelist, soft delete, the licence pool under
// contention, problem documents, templates, and the OpenAPI document against the router.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeEach, describe, expect, it } from 'vitest';
import { AccountService, hashToken, TOKEN_PREFIX } from '../../src/api-v1/accounts.js';
import { AdminGate, ApiSwitch, authorise, bearerToken } from '../../src/api-v1/access.js';
import { BrainService, parseCreate, parsePatch } from '../../src/api-v1/brains.js';
import { DocsAssets } from '../../src/api-v1/docs.js';
import { checkPaidFeatures, heldSlots, LicencePool, RESERVATION_TTL_MS, type Licence } from '../../src/api-v1/licence.js';
import { openApiDocument } from '../../src/api-v1/openapi.js';
import { PROBLEM_TYPE_BASE, PROBLEMS, ProblemError, toProblem } from '../../src/api-v1/problems.js';
import { brainApiRoutes } from '../../src/api-v1/routes.js';
import { KEYS, type Environment } from '../../src/api-v1/store.js';
import { BrainTemplates, loadBrainTemplates } from '../../src/api-v1/templates.js';
import { ConfigError } from '../../src/config/config.js';
import { TributaryError, VersionConflictError } from '../../src/lib/errors.js';
import type { Definition, DefinitionListener, Definitions } from '../../src/storage/definition-store.js';

/** Definitions in memory, with the store's version check; every write yields first. */
class MemoryDefinitions implements Definitions {
  readonly records = new Map<string, { version: number; value: unknown }>();
  writes = 0;

  get<T>(key: string): Definition<T> | undefined {
    const record = this.records.get(key);
    return record === undefined || record.value === undefined ? undefined : { key, version: String(record.version), value: record.value as T };
  }

  list<T>(prefix: string): Array<Definition<T>> {
    return [...this.records.keys()].filter((key) => key.startsWith(prefix)).sort().map((key) => this.get<T>(key)).filter((d) => d !== undefined);
  }

  async put<T>(key: string, value: T, expectedVersion?: string): Promise<Definition<T>> {
    // Let other writers interleave, as a forwarded write to a coordinator would.
    await new Promise((resolve) => setImmediate(resolve));
    const current = this.get(key)?.version;
    if (expectedVersion !== undefined && current !== expectedVersion) throw new VersionConflictError(key, expectedVersion, current);
    const version = (this.records.get(key)?.version ?? 0) + 1;
    this.records.set(key, { version, value: structuredClone(value) });
    this.writes += 1;
    return { key, version: String(version), value };
  }

  async delete(key: string): Promise<string | undefined> {
    const record = this.records.get(key);
    if (record === undefined) return undefined;
    this.records.set(key, { version: record.version + 1, value: undefined });
    return String(record.version + 1);
  }

  onChange(_listener: DefinitionListener): () => void {
    return () => undefined;
  }
}

function testEnvironment(): Environment & { advance(ms: number): void } {
  let now = Date.UTC(2026, 0, 1);
  let sequence = 0;
  return {
    now: () => new Date(now),
    advance: (ms) => void (now += ms),
    randomBytes: (size) => Buffer.alloc(size, ++sequence),
    randomUUID: () => `00000000-0000-4000-8000-${String(++sequence).padStart(12, '0')}`,
  };
}

const templates = new BrainTemplates([
  { id: 'team', name: 'Team', description: '', neuronTypes: [{ name: 'Decision', description: 'a decision' }, { name: 'Runbook', description: 'how to' }] },
]);

function problemCode(error: unknown): string {
  expect(error).toBeInstanceOf(TributaryError);
  return (error as TributaryError).code;
}

async function refusal(promise: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    return problemCode(error);
  }
  throw new Error('expected a refusal');
}

describe('api-v1 accounts - tokens', () => {
  let store: MemoryDefinitions;
  let accounts: AccountService;
  beforeEach(() => {
    store = new MemoryDefinitions();
    accounts = new AccountService(store, testEnvironment());
  });

  it('a token is 256 random bits, shown once, stored only as its SHA-256', async () => {
    const { token, account } = await accounts.create('bot');
    expect(token.startsWith(TOKEN_PREFIX)).toBe(true);
    expect(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url')).toHaveLength(32);
    const stored = JSON.stringify([...store.records.values()]);
    expect(stored).not.toContain(token);
    expect(stored).not.toContain(token.slice(TOKEN_PREFIX.length));
    expect(stored).toContain(hashToken(token));
    expect(account).toMatchObject({ name: 'bot', apiAccessEnabled: false, status: 'active' });
    expect(JSON.stringify(account)).not.toContain(hashToken(token));
    expect(accounts.authenticate(token)?.name).toBe('bot');
    expect(accounts.authenticate(token + 'x')).toBeUndefined();
    expect(accounts.authenticate('')).toBeUndefined();
  });

  it('revoke stops the token; create again issues a new one for the same id, access off', async () => {
    const first = await accounts.create('bot');
    await accounts.setApiAccess('bot', true);
    expect(await refusal(accounts.create('bot'))).toBe('conflict');
    const revoked = await accounts.revoke('bot');
    expect(revoked).toMatchObject({ status: 'revoked', apiAccessEnabled: true });
    expect(revoked.revokedAt).not.toBeNull();
    expect(accounts.authenticate(first.token)).toBeUndefined();
    const second = await accounts.create('bot');
    expect(second.token).not.toBe(first.token);
    expect(second.account).toMatchObject({ id: first.account.id, status: 'active', apiAccessEnabled: false, revokedAt: null });
    expect(accounts.authenticate(first.token)).toBeUndefined();
    expect(accounts.authenticate(second.token)?.id).toBe(first.account.id);
  });

  it('refuses bad names and unknown accounts', async () => {
    expect(await refusal(accounts.create('a/b'))).toBe('invalid-request');
    expect(await refusal(accounts.create(''))).toBe('invalid-request');
    expect(await refusal(accounts.create('x'.repeat(65)))).toBe('invalid-request');
    expect(await refusal(accounts.setApiAccess('nobody', true))).toBe('not-found');
    expect(await refusal(accounts.revoke('nobody'))).toBe('not-found');
  });
});

describe('api-v1 access - gates', () => {
  it('parses Bearer headers only', () => {
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer  abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });

  it('401 before the gates, then the hive switch, then the account flag', async () => {
    const store = new MemoryDefinitions();
    const accounts = new AccountService(store, testEnvironment());
    const { token } = await accounts.create('bot');
    const closed = new ApiSwitch(store, false);
    const gate = (header: string | undefined, apiSwitch = closed) => {
      try {
        return authorise(accounts, apiSwitch, header).name;
      } catch (error) {
        return problemCode(error);
      }
    };
    expect(gate(undefined)).toBe('unauthenticated');
    expect(gate('Bearer trib_unknown')).toBe('unauthenticated');
    expect(gate(`Bearer ${token}`)).toBe('api-disabled');
    const openByConfig = new ApiSwitch(store, true);
    expect(openByConfig.state()).toMatchObject({ apiEnabled: true, source: 'config' });
    expect(gate(`Bearer ${token}`, openByConfig)).toBe('api-access-not-granted');
    await accounts.setApiAccess('bot', true);
    expect(gate(`Bearer ${token}`, openByConfig)).toBe('bot');
    // A stored setting wins over the config, on every node.
    await openByConfig.set(false);
    expect(openByConfig.state()).toMatchObject({ apiEnabled: false, source: 'stored' });
    expect(gate(`Bearer ${token}`, openByConfig)).toBe('api-disabled');
    await closed.set(true);
    expect(gate(`Bearer ${token}`, closed)).toBe('bot');
    await accounts.revoke('bot');
    expect(gate(`Bearer ${token}`, closed)).toBe('unauthenticated');
  });

  it('the admin gate: closed without a secret, 401 with a wrong one', () => {
    const check = (gate: AdminGate, header: string | undefined) => {
      try {
        gate.check(header);
        return 'ok';
      } catch (error) {
        return problemCode(error);
      }
    };
    expect(check(new AdminGate(null), 'Bearer anything-at-all-here')).toBe('admin-disabled');
    const gate = new AdminGate('a-long-enough-secret');
    expect(check(gate, undefined)).toBe('admin-unauthenticated');
    expect(check(gate, 'Bearer a-long-enough-secreT')).toBe('admin-unauthenticated');
    expect(check(gate, 'Bearer a-long-enough-secret-and-more')).toBe('admin-unauthenticated');
    expect(check(gate, 'Bearer a-long-enough-secret')).toBe('ok');
  });
});

describe('api-v1 brains - bodies', () => {
  it('create: name required, defaults, named fields checked, others ignored', () => {
    expect(parseCreate({ name: 'b', ownerUserId: 'someone', id: 'x', colour: 'red' })).toEqual({
      name: 'b',
      description: '',
      brainTemplateId: null,
      auditEnabled: false,
      advancedSecurityEnabled: false,
    });
    expect(() => parseCreate({})).toThrow(/name is required/);
    expect(() => parseCreate({ name: '  ' })).toThrow(ProblemError);
    expect(() => parseCreate({ name: 'b', auditEnabled: 'yes' })).toThrow(/auditEnabled/);
    expect(() => parseCreate({ name: 'b', brainTemplateId: 7 })).toThrow(/brainTemplateId/);
    expect(() => parseCreate([])).toThrow(/JSON object/);
    expect(() => parseCreate(undefined)).toThrow(/JSON object/);
  });

  it('patch: only the whitelist, everything else silently ignored', () => {
    expect(parsePatch({ name: 'n', description: 'd', auditEnabled: true, advancedSecurityEnabled: false, ownerUserId: 'x', id: 'y', createdAt: 'z', neuronTypes: [] })).toEqual({
      name: 'n',
      description: 'd',
      auditEnabled: true,
      advancedSecurityEnabled: false,
    });
    expect(parsePatch({ ownerUserId: 'x' })).toEqual({});
    expect(() => parsePatch({ advancedSecurityEnabled: 1 })).toThrow(/advancedSecurityEnabled/);
    expect(() => parsePatch({ description: 'x'.repeat(2_001) })).toThrow(/description/);
  });
});

describe('api-v1 brains - service', () => {
  const paid: Licence = { tier: 'paid', brainAllowance: 10 };
  let store: MemoryDefinitions;
  let env: ReturnType<typeof testEnvironment>;
  let brains: BrainService;
  let owner: Awaited<ReturnType<AccountService['create']>>['account'] & { tokenSha256: string | null };
  let other: typeof owner;

  beforeEach(async () => {
    store = new MemoryDefinitions();
    env = testEnvironment();
    const accounts = new AccountService(store, env);
    await accounts.create('owner');
    await accounts.create('other');
    owner = store.get<typeof owner>(`${KEYS.accountPrefix}owner`)!.value;
    other = store.get<typeof other>(`${KEYS.accountPrefix}other`)!.value;
    brains = new BrainService({ store, templates, pool: new LicencePool(store, paid, env), env });
  });

  it('a template seeds the neuron types; the owner is the caller', async () => {
    const brain = await brains.create(owner as never, { name: 'b', brainTemplateId: 'team', ownerUserId: other.id });
    expect(brain.ownerUserId).toBe(owner.id);
    expect(brain.neuronTypes.map((type) => type.name)).toEqual(['Decision', 'Runbook']);
    expect(await refusal(brains.create(owner as never, { name: 'b', brainTemplateId: 'nope' }))).toBe('unknown-brain-template');
  });

  it("another account's brain is not found", async () => {
    const brain = await brains.create(owner as never, { name: 'b' });
    expect(brains.list(other as never)).toEqual([]);
    expect(await refusal(() => brains.get(other as never, brain.id))).toBe('not-found');
    expect(await refusal(brains.patch(other as never, brain.id, { name: 'x' }))).toBe('not-found');
    expect(await refusal(brains.delete(other as never, brain.id))).toBe('not-found');
  });

  it('patch changes whitelisted fields and updatedAt only when something changed', async () => {
    const brain = await brains.create(owner as never, { name: 'b' });
    env.advance(1_000);
    const same = await brains.patch(owner as never, brain.id, { name: 'b', ownerUserId: other.id });
    expect(same).toEqual(brain);
    env.advance(1_000);
    const changed = await brains.patch(owner as never, brain.id, { description: 'new', createdAt: 'never', id: 'x' });
    expect(changed).toEqual({ ...brain, description: 'new', updatedAt: new Date(Date.UTC(2026, 0, 1) + 2_000).toISOString() });
  });

  it('soft delete: reads 404, lists leave it out, record and neuron types stay', async () => {
    const brain = await brains.create(owner as never, { name: 'b', brainTemplateId: 'team' });
    await brains.delete(owner as never, brain.id);
    expect(await refusal(() => brains.get(owner as never, brain.id))).toBe('not-found');
    expect(brains.list(owner as never)).toEqual([]);
    expect(store.get(KEYS.brainPrefix + brain.id)?.value).toMatchObject({ id: brain.id, deletedAt: expect.any(String) });
    expect(store.get(KEYS.neuronTypesPrefix + brain.id)).toBeDefined();
    expect(brains.inspect(brain.id).neuronTypes).toHaveLength(2);
    expect(await refusal(brains.delete(owner as never, brain.id))).toBe('not-found');
  });

  it('the free tier refuses paid features on create and patch, not turning them off', async () => {
    const free = new BrainService({ store, templates, pool: new LicencePool(store, { tier: 'free', brainAllowance: 5 }, env), env });
    expect(await refusal(free.create(owner as never, { name: 'b', auditEnabled: true }))).toBe('licence-feature-unavailable');
    expect(await refusal(free.create(owner as never, { name: 'b', advancedSecurityEnabled: true }))).toBe('licence-feature-unavailable');
    const brain = await free.create(owner as never, { name: 'b', auditEnabled: false });
    expect(await refusal(free.patch(owner as never, brain.id, { advancedSecurityEnabled: true }))).toBe('licence-feature-unavailable');
    expect(await free.patch(owner as never, brain.id, { auditEnabled: false, advancedSecurityEnabled: false })).toMatchObject({ auditEnabled: false });
  });
});

describe('api-v1 licence - pool', () => {
  it('held slots drop deleted brains and abandoned reservations', () => {
    const now = Date.UTC(2026, 0, 1);
    const at = (ms: number) => new Date(now - ms).toISOString();
    const slots = [
      { brainId: 'live', reservedAt: at(RESERVATION_TTL_MS * 2) },
      { brainId: 'deleted', reservedAt: at(0) },
      { brainId: 'fresh', reservedAt: at(1_000) },
      { brainId: 'abandoned', reservedAt: at(RESERVATION_TTL_MS) },
    ];
    const presence = (id: string) => (id === 'live' ? 'live' : id === 'deleted' ? 'deleted' : 'absent');
    expect(heldSlots(slots, presence, now).map((slot) => slot.brainId)).toEqual(['live', 'fresh']);
  });

  it('concurrent creates never exceed the allowance, and a delete gives a slot back', async () => {
    const store = new MemoryDefinitions();
    const env = testEnvironment();
    const accounts = new AccountService(store, env);
    await accounts.create('owner');
    const owner = store.get(`${KEYS.accountPrefix}owner`)!.value as never;
    const pool = new LicencePool(store, { tier: 'paid', brainAllowance: 4 }, env);
    await pool.initialise();
    const brains = new BrainService({ store, templates, pool, env });
    const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => brains.create(owner, { name: `b${i}` })));
    const created = results.filter((result) => result.status === 'fulfilled');
    const refused = results.filter((result): result is PromiseRejectedResult => result.status === 'rejected');
    expect(created).toHaveLength(4);
    expect(refused.map((result) => problemCode(result.reason))).toEqual(Array(8).fill('licence-brain-allowance-exceeded'));
    expect(pool.state()).toEqual({ tier: 'paid', brainAllowance: 4, brainsUsed: 4 });
    await brains.delete(owner, brains.list(owner)[0]!.id);
    expect(pool.state().brainsUsed).toBe(3);
    await brains.create(owner, { name: 'again' });
    expect(await refusal(brains.create(owner, { name: 'one too many' }))).toBe('licence-brain-allowance-exceeded');
  });

  it("is one setting for the cluster: a joining node's config changes neither tier nor allowance, an administrator does", async () => {
    const store = new MemoryDefinitions();
    const env = testEnvironment();
    const first = new LicencePool(store, { tier: 'free', brainAllowance: 3 }, env);
    await first.initialise();
    const joiner = new LicencePool(store, { tier: 'paid', brainAllowance: 100 }, env);
    expect(joiner.licence).toEqual({ tier: 'free', brainAllowance: 3 });
    expect(joiner.configDiffers()).toBe(true);
    expect(checkPaidRefusal(joiner)).toBe('licence-feature-unavailable');
    await joiner.setLicence({ tier: 'paid' });
    expect(first.state()).toEqual({ tier: 'paid', brainAllowance: 3, brainsUsed: 0 });
  });

  it('a cluster made before the pool gets it from its live brains on the first create', async () => {
    const store = new MemoryDefinitions();
    const env = testEnvironment();
    await store.put(`${KEYS.brainPrefix}old`, { id: 'old', createdAt: env.now().toISOString(), deletedAt: null });
    const pool = new LicencePool(store, { tier: 'paid', brainAllowance: 1 }, env);
    expect(await refusal(pool.reserve('new'))).toBe('licence-brain-allowance-exceeded');
  });
});

function checkPaidRefusal(pool: LicencePool): string | undefined {
  try {
    checkPaidFeatures(pool.licence, { auditEnabled: true });
    return undefined;
  } catch (error) {
    return problemCode(error);
  }
}

describe('api-v1 problems - documents', () => {
  it('maps codes of this interface and of the rest of the node to problem types', () => {
    const instance = '/api/v1/brains';
    expect(toProblem({ status: 402, code: 'licence-brain-allowance-exceeded', message: 'm', details: { brainAllowance: 3, type: 'x' } }, instance)).toEqual({
      type: `${PROBLEM_TYPE_BASE}licence-brain-allowance-exceeded`,
      title: PROBLEMS['licence-brain-allowance-exceeded'].title,
      status: 402,
      detail: 'm',
      instance,
      brainAllowance: 3,
    });
    expect(toProblem({ status: 413, code: 'PAYLOAD_TOO_LARGE', message: 'big' }, instance).type).toBe(`${PROBLEM_TYPE_BASE}payload-too-large`);
    expect(toProblem({ status: 400, code: 'BAD_REQUEST', message: 'bad' }, instance).type).toBe(`${PROBLEM_TYPE_BASE}invalid-request`);
    expect(toProblem({ status: 409, code: 'VERSION_CONFLICT', message: 'c', details: { currentVersion: '3' } }, instance)).toMatchObject({ type: `${PROBLEM_TYPE_BASE}conflict`, currentVersion: '3' });
    expect(toProblem({ status: 500, code: 'INTERNAL', message: 'internal error; see the node log' }, instance).type).toBe(`${PROBLEM_TYPE_BASE}internal-error`);
    expect(toProblem({ status: 501, code: 'HTTP_ERROR', message: 'Not Implemented' }, instance)).toMatchObject({ type: 'about:blank', title: 'Not Implemented', status: 501 });
    expect(toProblem({ status: 403, code: 'FORBIDDEN', message: 'no' }, instance)).toMatchObject({ type: 'about:blank', title: 'Forbidden', detail: 'no' });
    const unauthenticated = toProblem({ status: 401, code: 'unauthenticated', message: 'm', details: { wwwAuthenticate: 'Bearer' } }, instance);
    expect(unauthenticated).not.toHaveProperty('wwwAuthenticate');
  });
});

describe('api-v1 templates - file', () => {
  it('the packaged file has at least three templates, each with neuron types', () => {
    const loaded = loadBrainTemplates(null);
    expect(loaded.all.length).toBeGreaterThanOrEqual(3);
    for (const template of loaded.all) {
      expect(template.neuronTypes.length).toBeGreaterThanOrEqual(3);
      expect(loaded.get(template.id)).toBe(template);
    }
  });

  it('a bad file refuses the start, naming the file and the place', () => {
    const folder = mkdtempSync(join(tmpdir(), 'tributary-templates-'));
    const file = join(folder, 't.json');
    try {
      writeFileSync(file, JSON.stringify({ templates: [{ id: 'Bad Id', name: 'x', description: '', neuronTypes: [{ name: 'A', description: '' }] }] }));
      expect(() => loadBrainTemplates(file)).toThrow(ConfigError);
      expect(() => loadBrainTemplates(file)).toThrow(/templates\.0\.id/);
      expect(() => loadBrainTemplates(join(file, 'missing'))).toThrow(/cannot read brain templates/);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('api-v1 openapi - document', () => {
  it('is a valid OpenAPI 3.1 document whose schemas compile', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(openApiDocument) as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    const ajv = new Ajv2020({ strict: true, strictTypes: false, allErrors: true, formats: { uuid: true, 'date-time': true, uri: true } });
    // The document's top-level members are not JSON Schema keywords; everything below is.
    ajv.addVocabulary(['openapi', 'info', 'tags', 'paths', 'components']);
    ajv.addSchema({ ...structuredClone(openApiDocument), $id: 'openapi' }, undefined, undefined, false);
    for (const name of Object.keys(openApiDocument.components.schemas)) {
      expect(() => ajv.getSchema(`openapi#/components/schemas/${name}`), name).not.toThrow();
    }
  });

  it('names every route of the router and no other, and every problem it may answer', () => {
    const router = brainApiRoutes({} as never);
    const served = new Set<string>();
    for (const layer of router.stack) {
      const path = String(layer.path).replace(/:([A-Za-z]+)/g, '{$1}');
      if (path.startsWith('/api/v1/docs/')) continue; // the page's own files
      for (const method of layer.methods) if (method !== 'HEAD') served.add(`${method} ${path}`);
    }
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(openApiDocument.paths)) {
      for (const method of Object.keys(item)) if (method !== 'parameters') documented.add(`${method.toUpperCase()} ${path}`);
    }
    expect([...served].sort()).toEqual([...documented].sort());
    const text = JSON.stringify(openApiDocument);
    for (const code of Object.keys(PROBLEMS)) expect(text, code).toContain(code);
  });

  it('the docs page uses only same-origin files that are served', () => {
    const docs = new DocsAssets();
    const page = String(docs.page().body);
    const references = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);
    expect(references.length).toBeGreaterThanOrEqual(3);
    for (const reference of references) {
      expect(reference.startsWith('/api/v1/docs/')).toBe(true);
      expect(docs.asset(reference.slice('/api/v1/docs/'.length)), reference).toBeDefined();
    }
    expect(docs.asset('../package.json')).toBeUndefined();
    expect(docs.asset('index.html')).toBeUndefined();
  });
});
