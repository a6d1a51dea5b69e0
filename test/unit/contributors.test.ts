// Contributor types, instances and the published-to index, without a server: the schema
// rules, the instance checks, and the index over a real definitions store.

import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterEventBus } from '../../src/cluster/events.js';
import { TenantService } from '../../src/replicated-definitions/tenants.js';
import {
  checkContributorId,
  checkInstance,
  contributorFieldTargets,
  parseContributorType,
  parseContributorTypeUri,
} from '../../src/contributors/contributor-schema.js';
import { ContributorService } from '../../src/contributors/contributor-service.js';
import { PublishedIndex } from '../../src/contributors/published-index.js';
import { BadRequestError, NotFoundError, StateConflictError, VersionConflictError } from '../../src/lib/errors.js';
import type { DefinitionStore } from '../../src/storage/definition-store.js';
import { parseSchema } from '../../src/streams/schema.js';
import { TemporaryDefinitions } from '../kit/temporary-definitions.js';

const boardSchema = (idField = 'contributor', extra: Record<string, unknown> = {}) => ({
  schema: { type: 'record', properties: { [idField]: { type: 'contributor' }, region: { type: 'string', annotations: ['urn:x:label'] }, slots: { type: 'int' }, ...extra } },
});

function message(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('contributors - type schemas', () => {
  it('accepts the contributor field named contributor (spec) or id (existing clients)', () => {
    expect(parseContributorType(boardSchema()).idField).toBe('contributor');
    expect(parseContributorType(boardSchema('id')).idField).toBe('id');
    // A stream-style schema { version, topDef } is read too.
    expect(parseContributorType({ schema: { version: '1', topDef: boardSchema('id').schema } }).idField).toBe('id');
  });

  it('refuses a schema with no, two, nested or misnamed contributor fields, naming the problem', () => {
    expect(message(() => parseContributorType({ schema: { type: 'record', properties: { contributor: { type: 'string' } } } }))).toMatch(/needs a field of type 'contributor'.*has none/);
    expect(message(() => parseContributorType(boardSchema('contributor', { id: { type: 'contributor' } })))).toMatch(/exactly one field of type 'contributor'; it has 2: contributor, id/);
    expect(message(() => parseContributorType({ schema: { type: 'record', properties: { inner: { type: 'record', properties: { contributor: { type: 'contributor' } } } } } }))).toMatch(/top-level field named 'contributor' or 'id'/);
    expect(message(() => parseContributorType(boardSchema('owner')))).toMatch(/schema\.properties\.owner: .*named 'contributor' or 'id'/);
    expect(message(() => parseContributorType({ schema: { type: 'record', properties: { contributor: { type: 'strin' } } } }))).toMatch(/^schema\.properties\.contributor\.type: unknown type 'strin'/);
    expect(message(() => parseContributorType({}))).toMatch(/^schema: expected an object, got nothing/);
    expect(message(() => parseContributorType([]))).toMatch(/^body: expected an object, got array/);
  });
});

describe('contributors - ids and instances', () => {
  it('ids are safe names: UUIDs and names like board-00001, at most 128 characters', () => {
    for (const id of ['8d1c5f8e-3b0a-4b8e-9d7e-2f1a3c4b5d6e', 'board-00001', 'a_b.c', 'x'.repeat(128)]) expect(checkContributorId(id)).toBe(id);
    for (const id of ['', 'x'.repeat(129), 'a b', 'a/b', '..', 'é', 'a:b']) expect(() => checkContributorId(id)).toThrow(BadRequestError);
  });

  it('an instance must follow the schema and carry the id of the path in its contributor field', () => {
    const type = parseContributorType(boardSchema('id'));
    const instance = { id: 'board-00001', region: 'north', slots: 4 };
    expect(checkInstance(type, 'board-00001', instance)).toBe(instance);
    expect(message(() => checkInstance(type, 'board-00002', instance))).toMatch(/field 'id' \('board-00001'\) must equal the id 'board-00002'/);
    expect(message(() => checkInstance(type, 'board-00001', { ...instance, slots: 'four' }))).toMatch(/field 'slots': expected int/);
    // Fields are optional unless declared otherwise; the id field must still equal the path's id.
    expect(message(() => checkInstance(type, 'board-00001', { region: 'north', slots: 1 }))).toMatch(/field 'id' \(missing\) must equal the id 'board-00001'/);
    expect(checkInstance(type, 'board-00001', { id: 'board-00001', slots: null })).toEqual({ id: 'board-00001', slots: null });
    expect(message(() => checkInstance(type, 'board-00001', [instance]))).toMatch(/^instance: expected an object, got array/);
  });

  it('type URIs: /contributors/<tenant>/<type> or a bare type name', () => {
    expect(parseContributorTypeUri('/contributors/demo/board', 'f')).toEqual({ tenant: 'demo', type: 'board' });
    expect(parseContributorTypeUri('board', 'f')).toEqual({ tenant: undefined, type: 'board' });
    expect(() => parseContributorTypeUri('/contributors/demo', 'f')).toThrow(/not a contributor type URI/);
    expect(() => parseContributorTypeUri(7, 'f')).toThrow(BadRequestError);
  });

  it("a stream's contributor fields: definition names the type, uri's collection names it, neither means any", () => {
    const schema = parseSchema({
      version: '1',
      topDef: {
        type: 'record',
        properties: {
          board: { type: 'contributor', definition: 'board' },
          site: { type: 'contributor', uri: { tenant: 'other', collection: 'site' } },
          inner: { type: 'record', properties: { who: { type: 'contributor' } } },
        },
      },
    });
    expect(contributorFieldTargets('demo', schema)).toEqual([
      { path: 'board', target: { tenant: 'demo', type: 'board' } },
      { path: 'site', target: { tenant: 'other', type: 'site' } },
      { path: 'inner.who', target: undefined },
    ]);
  });
});

describe('contributors - service and published-to index', () => {
  let definitions: TemporaryDefinitions;
  let store: DefinitionStore;
  let tenants: TenantService;
  let published: PublishedIndex;
  let contributors: ContributorService;

  beforeEach(async () => {
    definitions = await TemporaryDefinitions.open('contributors');
    store = definitions.store;
    tenants = new TenantService(store, new ClusterEventBus());
    await tenants.put('demo');
    published = new PublishedIndex(store, pino({ level: 'silent' }));
    contributors = new ContributorService(store, tenants, published, { typesPerTenantMax: 3, instancesPerTypeMax: 2, instanceBytesMax: 200 });
  });
  afterEach(() => definitions.remove());

  it('types and instances: lists, versions with the 409 rule, 404s and limits', async () => {
    const type = await contributors.putType('demo', 'board', boardSchema('id'));
    expect(type.value).toEqual(boardSchema('id'));
    await expect(contributors.putType('demo', 'board', boardSchema('id'), String(Number(type.version) + 1))).rejects.toBeInstanceOf(VersionConflictError);
    await contributors.putType('demo', 'site', boardSchema());
    expect(contributors.listTypes('demo')).toEqual(['board', 'site']);

    const first = await contributors.putInstance('demo', 'board', 'b-2', { id: 'b-2', region: 'north', slots: 1 });
    await contributors.putInstance('demo', 'board', 'b-1', { id: 'b-1', region: 'south', slots: 2 });
    expect(contributors.listInstances('demo', 'board')).toEqual(['b-1', 'b-2']);
    await expect(contributors.putInstance('demo', 'board', 'b-2', { id: 'b-2', region: 'east', slots: 1 }, 'stale')).rejects.toBeInstanceOf(VersionConflictError);
    expect(contributors.getInstance('demo', 'board', 'b-2').version).toBe(first.version);

    expect(() => contributors.putInstance('demo', 'board', 'b-3', { id: 'b-3', region: 'x', slots: 1 })).toThrow(/2 instances, the most/);
    expect(() => contributors.putInstance('demo', 'board', 'b-1', { id: 'b-1', region: 'x'.repeat(300), slots: 1 })).toThrow(/at most 200 characters/);
    expect(() => contributors.getInstance('demo', 'board', 'nope')).toThrow(NotFoundError);
    expect(() => contributors.listInstances('demo', 'nope')).toThrow(NotFoundError);
    expect(() => contributors.listTypes('nobody')).toThrow(NotFoundError);
    await expect(contributors.deleteType('demo', 'board')).rejects.toBeInstanceOf(StateConflictError);
    await contributors.deleteInstance('demo', 'board', 'b-1');
    expect(contributors.listInstances('demo', 'board')).toEqual(['b-2']);
    await contributors.deleteInstance('demo', 'board', 'b-2');
    await contributors.deleteType('demo', 'board');
    expect(contributors.listTypes('demo')).toEqual(['site']);
  });

  it('the index records each (contributor, stream) pair once, and answers typed and untyped fields', async () => {
    const schema = {
      version: '1',
      topDef: { type: 'record', properties: { board: { type: 'contributor', definition: 'board' }, who: { type: 'contributor', optional: true } } },
    };
    await store.put('stream/demo/c/s1', { schema });
    await store.put('stream/demo/c/s2', { schema });
    const writes: string[] = [];
    store.onChange((key) => key.startsWith('published') && writes.push(key));
    const s1 = { id: { tenant: 'demo', collection: 'c', name: 's1' }, key: 'demo/c/s1' };
    const s2 = { id: { tenant: 'demo', collection: 'c', name: 's2' }, key: 'demo/c/s2' };
    await published.record(s1, [{ board: 'b-1' }, { board: 'b-1' }, { board: 'b-2', who: 'b-1' }, { board: 'not a name' }]);
    await published.record(s1, [{ board: 'b-1' }, { board: 'b-2' }]);
    await published.record(s2, [{ board: 'b-2' }]);
    expect(writes.sort()).toEqual([
      'published-untyped/demo/b-1/demo/c/s1',
      'published/demo/board/b-1/demo/c/s1',
      'published/demo/board/b-2/demo/c/s1',
      'published/demo/board/b-2/demo/c/s2',
    ]);
    expect(published.streamsOf('demo', 'board', 'b-1')).toEqual(['demo/c/s1']);
    expect(published.streamsOf('demo', 'board', 'b-2')).toEqual(['demo/c/s1', 'demo/c/s2']);
    // The untyped field counts for every type that has an instance with that id.
    expect(published.streamsOf('demo', 'site', 'b-1')).toEqual(['demo/c/s1']);

    // A new node (or a restart) knows every recorded pair from the store.
    const again = new PublishedIndex(store, pino({ level: 'silent' }));
    expect(again.streamsOf('demo', 'board', 'b-2')).toEqual(['demo/c/s1', 'demo/c/s2']);
    await again.record(s2, [{ board: 'b-2' }]);
    expect(writes).toHaveLength(4);
  });

  it('the index stops recording at its per-tenant limit', async () => {
    const limited = new PublishedIndex(store, pino({ level: 'silent' }), { pairsPerTenantMax: 2, writesInFlightMax: 4 });
    await store.put('stream/demo/c/s', { schema: { version: '1', topDef: { type: 'record', properties: { who: { type: 'contributor' } } } } });
    await limited.record({ id: { tenant: 'demo', collection: 'c', name: 's' }, key: 'demo/c/s' }, ['a', 'b', 'c', 'd'].map((who) => ({ who })));
    expect(store.list('published-untyped/')).toHaveLength(2);
  });
});
