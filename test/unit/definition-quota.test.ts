// Byte quotas of definitions: one definition, and a tenant's total.

import { describe, expect, it } from 'vitest';
import { DefinitionQuota, tenantOfKey } from '../../src/replicated-definitions/definition-quota.js';
import type { Definition, DefinitionListener } from '../../src/storage/definition-store.js';

function store() {
  const values = new Map<string, unknown>();
  const listeners: DefinitionListener[] = [];
  return {
    list: <T>(prefix: string) => [...values].filter(([key]) => key.startsWith(prefix)).map(([key, value]) => ({ key, version: '1', value }) as Definition<T>),
    onChange: (listener: DefinitionListener) => {
      listeners.push(listener);
      return () => undefined;
    },
    set(key: string, value: unknown) {
      if (value === undefined) values.delete(key);
      else values.set(key, value);
      for (const listener of listeners) listener(key, value === undefined ? undefined : { key, version: '1', value });
    },
  };
}

describe('definition quota - bytes', () => {
  it('attributes keys to their tenant, the brain interface to system', () => {
    expect(tenantOfKey('vendor/acme/v1')).toBe('acme');
    expect(tenantOfKey('tenant/acme')).toBe('acme');
    expect(tenantOfKey('api/accounts/bot')).toBe('system');
  });

  it('refuses one definition over the limit, naming it', () => {
    const quota = new DefinitionQuota(store(), { definitionBytesMax: 100, tenantDefinitionBytesMax: 1_000 });
    expect(() => quota.check('vendor/acme/big', { key: 'x'.repeat(200) })).toThrow(expect.objectContaining({ status: 413, message: expect.stringMatching(/limit of one definition is 100/) }));
    expect(() => quota.check('vendor/acme/small', { key: 'x' })).not.toThrow();
  });

  it("refuses a write that takes the tenant past its quota, counts replacements once, and lets deletes and shrinking writes through", () => {
    const definitions = store();
    definitions.set('vendor/acme/old', { key: 'x'.repeat(80) });
    const quota = new DefinitionQuota(definitions, { definitionBytesMax: 100, tenantDefinitionBytesMax: 250 });
    for (const id of ['a', 'b']) definitions.set(`vendor/acme/${id}`, { key: 'x'.repeat(60) });
    expect(quota.tenantBytes('acme')).toBe(90 + 70 + 70);
    expect(() => quota.check('vendor/acme/c', { key: 'x'.repeat(60) })).toThrow(expect.objectContaining({ code: 'QUOTA_EXCEEDED' }));
    expect(() => quota.check('vendor/acme/a', { key: 'x'.repeat(70) })).not.toThrow();
    expect(() => quota.check('vendor/other/c', { key: 'x'.repeat(60) })).not.toThrow();
    definitions.set('vendor/acme/old', undefined);
    expect(quota.tenantBytes('acme')).toBe(140);
    expect(() => quota.check('vendor/acme/c', { key: 'x'.repeat(60) })).not.toThrow();
  });
});
