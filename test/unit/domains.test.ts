// Domains without a server: parsing, filter semantics over instance documents (several
// types, several filters, && / || in queries), contributors added after the domain, and
// the scope a domain gives a search.

import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ClusterEventBus } from '../../src/cluster/events.js';
import { TenantService } from '../../src/replicated-definitions/tenants.js';
import { ContributorService } from '../../src/contributors/contributor-service.js';
import { PublishedIndex } from '../../src/contributors/published-index.js';
import { compileFilters, matchContributors, parseDomain, parseDomainUri } from '../../src/domains/domain-definition.js';
import { DomainService } from '../../src/domains/domain-service.js';
import { BadRequestError, NotFoundError, VersionConflictError } from '../../src/lib/errors.js';
import type { DefinitionStore } from '../../src/storage/definition-store.js';
import { parseSchema } from '../../src/streams/schema.js';
import { TemporaryDefinitions } from '../kit/temporary-definitions.js';

const boards: Array<[string, Record<string, unknown>]> = [
  ['b-1', { id: 'b-1', region: 'north', slots: 4, vendor: 'acme' }],
  ['b-2', { id: 'b-2', region: 'north', slots: 16, vendor: 'globex' }],
  ['b-3', { id: 'b-3', region: 'south', slots: 8, vendor: 'acme' }],
  ['b-4', { id: 'b-4', region: 'west', slots: 32 }],
];
const sensors: Array<[string, Record<string, unknown>]> = [
  ['s-1', { contributor: 's-1', kind: 'temp', site: 'lab' }],
  ['s-2', { contributor: 's-2', kind: 'humidity', site: 'lab' }],
  ['s-3', { contributor: 's-3', kind: 'temp', site: 'roof' }],
];
const instancesOf = (type: string) => (type === 'board' ? boards : type === 'sensor' ? sensors : []);
const match = (filters: Array<{ contributor: string; query?: string }>) =>
  Object.fromEntries([...matchContributors(parseDomain({ contributorFilters: filters }, 'demo').filters, instancesOf)].map(([type, ids]) => [type, [...ids].sort()]));

describe('domains - definitions', () => {
  it('keeps contributorFilters and userData; a single { contributor, query } body is one filter', () => {
    const body = { contributorFilters: [{ contributor: '/contributors/demo/board', query: "region == 'north'" }], userData: { owner: 'ops', tags: [1] } };
    expect(parseDomain(body, 'demo').document).toEqual(body);
    expect(parseDomain({ contributor: 'board', query: 'slots > 1' }, 'demo').document).toEqual({ contributorFilters: [{ contributor: 'board', query: 'slots > 1' }] });
    expect(parseDomain({ contributorFilters: [{ contributor: 'board' }] }, 'demo').document.contributorFilters).toEqual([{ contributor: 'board', query: '' }]);
  });

  it('a bad query is a 400 naming the filter and the place; other bad bodies are 400s too', () => {
    const bad = (body: unknown) => {
      try {
        parseDomain(body, 'demo', { filtersPerDomainMax: 2, userDataBytesMax: 50 });
      } catch (error) {
        expect(error).toBeInstanceOf(BadRequestError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(bad({ contributorFilters: [{ contributor: 'board', query: 'slots >' }] })).toMatch(/^contributorFilters\[0\]\.query: line 1, column 8/);
    expect(bad({ contributorFilters: [{ contributor: 'board', query: 'nope(slots)' }] })).toMatch(/unknown function 'nope'/);
    expect(bad({ contributorFilters: [{ contributor: 'board', query: 7 }] })).toMatch(/^contributorFilters\[0\]\.query: expected a string, got number/);
    expect(bad({ contributorFilters: [{ contributor: '/contributors/other/board' }] })).toMatch(/tenant 'other'/);
    expect(bad({ contributorFilters: [{ contributor: 'a' }, { contributor: 'b' }, { contributor: 'c' }] })).toMatch(/^contributorFilters: at most 2 items are allowed, got 3/);
    expect(bad({ contributorFilters: [], userData: { text: 'x'.repeat(60) } })).toMatch(/^userData: at most 50 characters of JSON/);
    expect(bad({ contributorFilters: [], userData: [1] })).toMatch(/^userData: expected an object, got array/);
    expect(bad({ userData: {} })).toMatch(/^contributorFilters: expected an array of { contributor, query }, got nothing/);
  });

  it('domain URIs', () => {
    expect(parseDomainUri('/domain/demo/ops/north')).toEqual({ tenant: 'demo', collection: 'ops', name: 'north' });
    expect(() => parseDomainUri('/domains/demo/ops/north')).toThrow(BadRequestError);
    expect(() => parseDomainUri('/domain/demo/ops')).toThrow(BadRequestError);
  });
});

describe('domains - filter semantics', () => {
  it('a query selects the instances of its type whose document it matches, with && and ||', () => {
    expect(match([{ contributor: 'board', query: "region == 'north' && slots > 8" }])).toEqual({ board: ['b-2'] });
    expect(match([{ contributor: 'board', query: "region == 'south' || slots >= 16" }])).toEqual({ board: ['b-2', 'b-3', 'b-4'] });
    // A missing field is null, and logic is three-valued: !(null == 'globex') is not true for b-4.
    expect(match([{ contributor: 'board', query: "(region == 'north' || region == 'west') && !(vendor == 'globex')" }])).toEqual({ board: ['b-1'] });
    expect(match([{ contributor: 'board', query: "region == 'west' || vendor == 'globex'" }])).toEqual({ board: ['b-2', 'b-4'] });
    expect(match([{ contributor: 'board', query: "vendor != 'acme'" }])).toEqual({ board: ['b-2'] });
    expect(match([{ contributor: 'board', query: '' }])).toEqual({ board: ['b-1', 'b-2', 'b-3', 'b-4'] });
  });

  it('several filters are alternatives; several types are kept apart; a type with no match is listed empty', () => {
    expect(match([
      { contributor: 'board', query: "region == 'north'" },
      { contributor: '/contributors/demo/board', query: 'slots == 32' },
      { contributor: 'sensor', query: "kind == 'temp' && site == 'lab'" },
      { contributor: 'sensor', query: "site == 'roof'" },
    ])).toEqual({ board: ['b-1', 'b-2', 'b-4'], sensor: ['s-1', 's-3'] });
    expect(match([{ contributor: 'sensor', query: "kind == 'light'" }, { contributor: 'board', query: "prefix(vendor, 'ACM')" }])).toEqual({ sensor: [], board: ['b-1', 'b-3'] });
  });

  it('compiles a stored domain again the same way', () => {
    const filters = compileFilters({ contributorFilters: [{ contributor: 'board', query: 'slots < 10' }] }, 'demo');
    expect(filters.map((filter) => filter.type)).toEqual(['board']);
    expect(boards.filter(([, document]) => filters[0]!.accepts(document)).map(([id]) => id)).toEqual(['b-1', 'b-3']);
  });
});

describe('domains - service', () => {
  let definitions: TemporaryDefinitions;
  let store: DefinitionStore;
  let contributors: ContributorService;
  let published: PublishedIndex;
  let domains: DomainService;

  beforeEach(async () => {
    definitions = await TemporaryDefinitions.open('domains');
    store = definitions.store;
    const tenants = new TenantService(store, new ClusterEventBus());
    await tenants.put('demo');
    published = new PublishedIndex(store, pino({ level: 'silent' }));
    contributors = new ContributorService(store, tenants, published);
    domains = new DomainService(store, tenants, contributors, published);
    await contributors.putType('demo', 'board', { schema: { type: 'record', properties: { id: { type: 'contributor' }, region: { type: 'string' } } } });
    await contributors.putType('demo', 'sensor', { schema: { type: 'record', properties: { contributor: { type: 'contributor' }, site: { type: 'string' } } } });
  });
  afterEach(() => definitions.remove());

  const ids = (name = 'north') => domains.contributorsOf('demo', 'ops', name).map(({ type, items }) => [type, items.map((item) => item.id)]);

  it('picks up contributors added, changed and removed after the domain was defined', async () => {
    await contributors.putInstance('demo', 'board', 'b-1', { id: 'b-1', region: 'north' });
    await domains.put('demo', 'ops', 'north', { contributorFilters: [{ contributor: '/contributors/demo/board', query: "region == 'north'" }] });
    expect(ids()).toEqual([['/contributors/demo/board', ['b-1']]]);
    await contributors.putInstance('demo', 'board', 'b-2', { id: 'b-2', region: 'north' });
    await contributors.putInstance('demo', 'board', 'b-3', { id: 'b-3', region: 'south' });
    expect(ids()).toEqual([['/contributors/demo/board', ['b-1', 'b-2']]]);
    await contributors.putInstance('demo', 'board', 'b-1', { id: 'b-1', region: 'south' });
    await contributors.deleteInstance('demo', 'board', 'b-2');
    await contributors.putInstance('demo', 'board', 'b-3', { id: 'b-3', region: 'north' });
    expect(ids()).toEqual([['/contributors/demo/board', ['b-3']]]);
    // A new version of the domain is compiled again.
    const current = domains.get('demo', 'ops', 'north');
    await domains.put('demo', 'ops', 'north', { contributorFilters: [{ contributor: 'board', query: "region == 'south'" }] }, current.version);
    expect(ids()).toEqual([['/contributors/demo/board', ['b-1']]]);
    await expect(domains.put('demo', 'ops', 'north', { contributorFilters: [] }, current.version)).rejects.toBeInstanceOf(VersionConflictError);
  });

  it('lists, 404s and unknown types', async () => {
    expect(domains.collections('demo')).toEqual([]);
    await domains.put('demo', 'ops', 'a', { contributorFilters: [] });
    await domains.put('demo', 'ops', 'b', { contributorFilters: [{ contributor: 'sensor' }] });
    await domains.put('demo', 'lab', 'c', { contributorFilters: [] });
    expect(domains.collections('demo')).toEqual(['lab', 'ops']);
    expect(domains.domains('demo', 'ops')).toEqual(['a', 'b']);
    expect(() => domains.domains('demo', 'none')).toThrow(NotFoundError);
    expect(() => domains.get('demo', 'ops', 'none')).toThrow(NotFoundError);
    expect(() => domains.put('demo', 'ops', 'x', { contributorFilters: [{ contributor: 'pump' }] })).toThrow(/contributor type 'pump' does not exist/);
    await domains.delete('demo', 'ops', 'a');
    expect(domains.domains('demo', 'ops')).toEqual(['b']);
    await expect(domains.delete('demo', 'ops', 'a')).rejects.toBeInstanceOf(NotFoundError);
  });

  it("a search scope: each contributor field gets its type's set, an untyped field every set, other tenants none", async () => {
    for (const [id, region] of [['b-1', 'north'], ['b-2', 'south']] as const) await contributors.putInstance('demo', 'board', id, { id, region });
    await contributors.putInstance('demo', 'sensor', 's-1', { contributor: 's-1', site: 'lab' });
    await domains.put('demo', 'ops', 'north', { contributorFilters: [{ contributor: 'board', query: "region == 'north'" }, { contributor: 'sensor' }] });
    const schema = parseSchema({
      version: '1',
      topDef: {
        type: 'record',
        properties: {
          board: { type: 'contributor', definition: 'board' },
          pump: { type: 'contributor', definition: 'pump' },
          site: { type: 'contributor', uri: { tenant: 'other', collection: 'sensor' } },
          any: { type: 'contributor' },
        },
      },
    });
    await store.put('stream/demo/c/s', { schema: { version: '1', topDef: { type: 'record', properties: { board: { type: 'contributor', definition: 'board' } } } } });
    await published.record({ id: { tenant: 'demo', collection: 'c', name: 's' }, key: 'demo/c/s' }, [{ board: 'b-1' }, { board: 'b-2' }]);

    const scope = domains.scope('demo', '/domain/demo/ops/north');
    expect(scope.fieldsOf({ tenant: 'demo', collection: 'c', name: 's' }, schema)).toEqual([
      { path: 'board', ids: ['type:board'] },
      { path: 'any', ids: ['type:board', 'type:sensor'] },
    ]);
    expect(scope.idSet('type:board')).toEqual(['b-1']);
    expect(scope.idSet('type:sensor')).toEqual(['s-1']);
    expect([...scope.streams]).toEqual(['demo/c/s']);
    expect(domains.streamsOf('demo', 'ops', 'north')).toEqual(['/streams/demo/c/s']);
    expect(() => domains.scope('demo', '/domain/demo/ops/none')).toThrow(NotFoundError);
    expect(() => domains.scope('demo', '/domain/other/ops/north')).toThrow(BadRequestError);
  });
});
