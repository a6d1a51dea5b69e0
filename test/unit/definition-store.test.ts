import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VersionConflictError } from '../../src/lib/errors.js';
import type { DefinitionStore } from '../../src/storage/definition-store.js';
import { TemporaryDefinitions } from '../kit/temporary-definitions.js';

let definitions: TemporaryDefinitions;
let store: DefinitionStore;

beforeEach(async () => {
  definitions = await TemporaryDefinitions.open('definitions');
  store = definitions.store;
});
afterEach(() => definitions.remove());

describe('definitions - versions', () => {
  it('assigns a new version on every write and keeps it across reopen', async () => {
    const first = await store.put('stream/t/c/a', { n: 1 });
    const second = await store.put('stream/t/c/a', { n: 2 }, first.version);
    expect(second.version).not.toBe(first.version);
    store = await definitions.reopen();
    expect(store.get('stream/t/c/a')).toEqual({ key: 'stream/t/c/a', version: second.version, value: { n: 2 } });
  });

  it('refuses a write with a version that differs from the stored one, and changes nothing', async () => {
    const first = await store.put('k', 'one');
    await store.put('k', 'two');
    await expect(store.put('k', 'three', first.version)).rejects.toBeInstanceOf(VersionConflictError);
    expect(store.get('k')!.value).toBe('two');
    await expect(store.put('new-key', 'x', '1')).rejects.toThrow(/current is Service-Config-Version: none/);
  });

  it('of two concurrent writes with the same version, exactly one wins', async () => {
    const base = await store.put('k', 0);
    const results = await Promise.allSettled([store.put('k', 1, base.version), store.put('k', 2, base.version)]);
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    expect(results.filter((result) => result.status === 'rejected')).toHaveLength(1);
  });

  it('a delete leaves a tombstone whose version keeps rising', async () => {
    const put = await store.put('k', 'v');
    const deleted = await store.delete('k', put.version);
    expect(Number(deleted)).toBeGreaterThan(Number(put.version));
    expect(store.get('k')).toBeUndefined();
    expect(store.list('')).toEqual([]);
    const again = await store.put('k', 'w');
    expect(Number(again.version)).toBeGreaterThan(Number(deleted));
  });

  it('lists by prefix in key order and tells listeners after the write', async () => {
    const seen: string[] = [];
    store.onChange((key) => seen.push(key));
    await store.put('vendor/t/b', 2);
    await store.put('vendor/t/a', 1);
    await store.put('vendor/u/c', 3);
    expect(store.list('vendor/t/').map((definition) => definition.value)).toEqual([1, 2]);
    expect(seen).toEqual(['vendor/t/b', 'vendor/t/a', 'vendor/u/c']);
  });
});
