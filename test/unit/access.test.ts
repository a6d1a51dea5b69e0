// Platform access: the route table and the decision it drives, one case per route family.

import { describe, expect, it } from 'vitest';
import { accessRule } from '../../src/auth/access-rules.js';
import { allows, type Grants } from '../../src/auth/permissions.js';
import { authorise, type AuthenticationOptions } from '../../src/http/authentication.js';

describe('access rules - what each route family needs', () => {
  it.each([
    ['GET', '/streams/demo/c/s', { kind: 'tenant', tenant: 'demo', level: 'read' }],
    ['POST', '/streams/demo/c/s', { kind: 'tenant', tenant: 'demo', level: 'write' }],
    ['PUT', '/streams/demo/c/s/tags', { kind: 'tenant', tenant: 'demo', level: 'write' }],
    ['POST', '/ssr/demo/_search', { kind: 'tenant', tenant: 'demo', level: 'read' }],
    ['GET', '/contributors/demo/t/instances', { kind: 'tenant', tenant: 'demo', level: 'read' }],
    ['DELETE', '/domain/demo/c/d', { kind: 'tenant', tenant: 'demo', level: 'write' }],
    ['POST', '/execution/demo/sessions', { kind: 'tenant', tenant: 'demo', level: 'write' }],
    ['GET', '/output/demo/abc', { kind: 'tenant', tenant: 'demo', level: 'read' }],
    ['PUT', '/daemon/demo/c/d', { kind: 'tenant', tenant: 'demo', level: 'write' }],
    ['GET', '/monitoring/system/cluster', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/admin/demo/vendors', { kind: 'tenant', tenant: 'demo', level: 'admin' }],
    ['GET', '/cluster', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/output/cluster', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/cluster/tenants/demo', { kind: 'tenant', tenant: 'demo', level: 'read' }],
    ['PUT', '/cluster/tenants/evil', { kind: 'tenant', tenant: 'system', level: 'admin' }],
    ['GET', '/_internal/repos/ssr/demo/c/s', { kind: 'tenant', tenant: 'system', level: 'admin' }],
    ['POST', '/cluster/nodes', { kind: 'membership' }],
    ['DELETE', '/cluster/nodes/node-2', { kind: 'membership' }],
    ['GET', '/cluster/join-token', { kind: 'membership' }],
    ['GET', '/cluster/localNode', { kind: 'public' }],
    ['GET', '/metrics', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/_cat', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/_cat/streams', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/console/data/ring', { kind: 'tenant', tenant: 'system', level: 'read' }],
    ['GET', '/health', { kind: 'public' }],
    ['GET', '/ready', { kind: 'public' }],
    ['GET', '/', { kind: 'public' }],
    ['GET', '/openapi.json', { kind: 'public' }],
    ['GET', '/docs/swagger-ui.css', { kind: 'public' }],
    ['GET', '/console', { kind: 'public' }],
    ['GET', '/console/console.js', { kind: 'public' }],
    ['POST', '/api/v1/brains', { kind: 'public' }],
    ['GET', '/no/such/route', { kind: 'public' }],
  ])('%s %s', (method, path, rule) => {
    expect(accessRule(method, path)).toEqual(rule);
  });

  it('reads the tenant percent-decoded, as the router does', () => {
    expect(accessRule('GET', '/streams/my%20tenant/c/s')).toEqual({ kind: 'tenant', tenant: 'my tenant', level: 'read' });
    expect(() => accessRule('GET', '/streams/%E0%A4%A/c')).toThrow(URIError);
  });
});

describe('access - decisions', () => {
  const accounts = new Map<string, { name: string; permissions: Grants }>([
    ['tok-reader', { name: 'reader', permissions: { demo: 'read' } }],
    ['tok-ops', { name: 'ops', permissions: { system: 'admin' } }],
    ['tok-none', { name: 'none', permissions: {} }],
  ]);
  const options = (tokensRequired: boolean): AuthenticationOptions => ({
    tokensRequired,
    adminSecret: { configured: true, matches: (token) => token === 'the-admin-secret-123' },
    accounts: { authenticate: (token) => accounts.get(token) },
  });
  const read = { kind: 'tenant', tenant: 'demo', level: 'read' } as const;
  const write = { kind: 'tenant', tenant: 'demo', level: 'write' } as const;

  it('levels include the ones below, and system holds on every tenant', () => {
    expect(allows({ demo: 'admin' }, 'demo', 'read')).toBe(true);
    expect(allows({ demo: 'read' }, 'demo', 'write')).toBe(false);
    expect(allows({ system: 'write' }, 'other', 'write')).toBe(true);
    expect(allows({ other: 'admin' }, 'demo', 'read')).toBe(false);
    expect(allows({}, '__proto__', 'read')).toBe(false);
  });

  it('401 without a token or with an unknown one, 403 with too little, the principal otherwise', () => {
    expect(() => authorise(read, undefined, options(true))).toThrow(expect.objectContaining({ status: 401, challenge: 'Bearer realm="tributary"' }));
    expect(() => authorise(read, 'tok-forged', options(true))).toThrow(expect.objectContaining({ status: 401, challenge: expect.stringContaining('invalid_token') }));
    expect(() => authorise(write, 'tok-reader', options(true))).toThrow(expect.objectContaining({ status: 403, message: "account 'reader' lacks 'write' on tenant 'demo'" }));
    expect(authorise(read, 'tok-reader', options(true))).toMatchObject({ name: 'reader', admin: false });
    expect(authorise(write, 'the-admin-secret-123', options(true))).toMatchObject({ admin: true });
  });

  it('membership needs the admin secret, or system admin when tokens are on', () => {
    const membership = { kind: 'membership' } as const;
    expect(() => authorise(membership, 'tok-none', options(false))).toThrow(expect.objectContaining({ status: 403 }));
    expect(() => authorise(membership, 'tok-ops', options(false))).toThrow(expect.objectContaining({ status: 403 }));
    expect(authorise(membership, 'tok-ops', options(true))).toMatchObject({ name: 'ops' });
    expect(authorise(membership, 'the-admin-secret-123', options(false))).toMatchObject({ admin: true });
  });
});
