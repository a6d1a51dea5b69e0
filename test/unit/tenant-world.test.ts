// A tenant's world (what its queries are checked against) is kept until a definition it is
// made of changes, and a stored session's analysis is kept for its document and world.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tenantWorld } from '../../src/sessions/query-context.js';
import { analysedSession } from '../../src/sessions/session-analysis.js';
import { parseSessionBody } from '../../src/sessions/session-document.js';
import { resetSession, startQuery } from '../../src/sessions/session-model.js';
import type { DefinitionStore } from '../../src/storage/definition-store.js';
import { TemporaryDefinitions } from '../kit/temporary-definitions.js';

const SCHEMA = { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, cpu: { type: 'double' } } } };

let definitions: TemporaryDefinitions;
let store: DefinitionStore;

beforeEach(async () => {
  definitions = await TemporaryDefinitions.open('world');
  store = definitions.store;
  await store.put('stream/demo/c/cpu', { schema: SCHEMA });
});
afterEach(() => definitions.remove());

describe('tenant world - kept until a definition it is made of changes', () => {
  it('is the same world across sessions\' writes and other tenants\' streams, and a new one that sees each change of its own', async () => {
    const first = tenantWorld(store, 'demo');
    expect([...first.streams.keys()]).toEqual(['/streams/demo/c/cpu']);
    await store.put('session/demo/s1', { any: 'thing' });
    await store.put('stream/other/c/cpu', { schema: SCHEMA });
    expect(tenantWorld(store, 'demo')).toBe(first);
    expect([...tenantWorld(store, 'other').streams.keys()]).toEqual(['/streams/other/c/cpu']);

    await store.put('stream/demo/c/mem', { schema: SCHEMA });
    const second = tenantWorld(store, 'demo');
    expect(second).not.toBe(first);
    expect([...second.streams.keys()].sort()).toEqual(['/streams/demo/c/cpu', '/streams/demo/c/mem']);

    await store.put('repository/demo/c/mem', { name: 'tsr', config: {} });
    expect(tenantWorld(store, 'demo').streams.get('/streams/demo/c/mem')).toEqual({ schema: expect.anything(), repository: 'tsr' });
    const third = tenantWorld(store, 'demo');
    await store.put('domain/demo/c/d', { filters: [] });
    expect(tenantWorld(store, 'demo')).not.toBe(third);
    expect(tenantWorld(store, 'demo').domainExists('/domain/demo/c/d')).toBe(true);
    const fourth = tenantWorld(store, 'demo');
    await store.put('contributor-type/demo/user', { schema: { type: 'record' } });
    expect(tenantWorld(store, 'demo')).not.toBe(fourth);
    expect([...tenantWorld(store, 'demo').contributorTypes.keys()]).toEqual(['user']);
    // An instance is read through the world as it is now, and keeps the world.
    const fifth = tenantWorld(store, 'demo');
    await store.put('contributor/demo/user/u1', { name: 'Ann' });
    expect(tenantWorld(store, 'demo')).toBe(fifth);
    expect(fifth.contributorInstance('user', 'u1')).toEqual({ name: 'Ann' });
    await store.delete('stream/demo/c/mem');
    expect([...tenantWorld(store, 'demo').streams.keys()]).toEqual(['/streams/demo/c/cpu']);
  });

  it('analyses a stored session once per document and world, and again for a new document or a changed world', async () => {
    const body = parseSessionBody({ queries: [{ id: 'q', body: 'from /streams/demo/c/mem select host' }] }, { sessionQueriesMax: 10 });
    const session = resetSession('demo', 's1', body, () => 'out-1');
    const before = analysedSession(session, tenantWorld(store, 'demo'));
    expect(before.queries.get('q')!.errors).not.toEqual([]);
    expect(analysedSession(session, tenantWorld(store, 'demo'))).toBe(before);
    // The stream the query reads is defined: the same document is analysed again, and passes.
    await store.put('stream/demo/c/mem', { schema: SCHEMA });
    const after = analysedSession(session, tenantWorld(store, 'demo'));
    expect(after).not.toBe(before);
    expect(after.queries.get('q')!.errors).toEqual([]);
    const started = startQuery(session, after.links, 'q');
    expect(analysedSession(started, tenantWorld(store, 'demo'))).not.toBe(after);
  });
});
