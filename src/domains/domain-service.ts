// Domains (spec, "Domains"): definitions under `domain/<tenant>/<collection>/<name>`, the
// contributors they hold, the streams those published to, and the scope a domain gives a
// search. Queries are compiled once per version of the domain; the matching contributors are
// computed on demand and kept until a type, an instance or a domain of the tenant changes.

import type { TenantService } from '../replicated-definitions/tenants.js';
import { BadRequestError, NotFoundError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definition-store.js';
import { contributorFieldTargets } from '../contributors/contributor-schema.js';
import type { ContributorService } from '../contributors/contributor-service.js';
import type { PublishedIndex } from '../contributors/published-index.js';
import { INSTANCE_PREFIX, TYPE_PREFIX } from '../contributors/keys.js';
import type { DomainScope, SearchDomains } from '../search/search-service.js';
import { streamUri } from '../streams/stream-id.js';
import {
  compileFilters,
  DEFAULT_DOMAIN_LIMITS,
  filterTypeUri,
  matchContributors,
  parseDomain,
  parseDomainUri,
  type CompiledFilter,
  type DomainDocument,
  type DomainLimits,
} from './domain-definition.js';

const DOMAIN_PREFIX = 'domain/';

export interface DomainServiceLimits extends DomainLimits {
  domainsPerTenantMax: number;
  /** Contributors a domain-limited search sends to every node (ids of at most 128 characters fit a peer message). */
  searchContributorsMax: number;
}

export const DEFAULT_DOMAIN_SERVICE_LIMITS: DomainServiceLimits = { ...DEFAULT_DOMAIN_LIMITS, domainsPerTenantMax: 10_000, searchContributorsMax: 100_000 };

interface CachedDomain {
  version: string;
  filters: CompiledFilter[];
  /** type → matching ids, valid while `generation` is the tenant's. */
  matching?: Map<string, Set<string>>;
  generation?: number;
}

export class DomainService implements SearchDomains {
  private readonly cache = new Map<string, CachedDomain>();
  /** Rises whenever a contributor type, instance or domain of the tenant changes. */
  private readonly generations = new Map<string, number>();

  constructor(
    private readonly store: Definitions,
    private readonly tenants: TenantService,
    private readonly contributors: ContributorService,
    private readonly published: PublishedIndex,
    private readonly limits: DomainServiceLimits = DEFAULT_DOMAIN_SERVICE_LIMITS,
  ) {
    store.onChange((key) => {
      for (const prefix of [TYPE_PREFIX, INSTANCE_PREFIX, DOMAIN_PREFIX]) {
        if (!key.startsWith(prefix)) continue;
        const tenant = key.slice(prefix.length).split('/')[0]!;
        this.generations.set(tenant, this.generationOf(tenant) + 1);
        if (prefix === DOMAIN_PREFIX) this.cache.delete(key);
      }
    });
  }

  collections(tenant: string): string[] {
    this.tenants.get(tenant);
    return [...new Set(this.store.list(definitionKey('domain', tenant, '')).map((definition) => definition.key.split('/')[2]!))];
  }

  /** The domains of a collection; 404 when it has none (a collection exists while it has a domain). */
  domains(tenant: string, collection: string): string[] {
    this.tenants.get(tenant);
    const names = this.store.list(definitionKey('domain', tenant, checkName('collection', collection), '')).map((definition) => definition.key.split('/')[3]!);
    if (names.length === 0) throw new NotFoundError(`domain collection '${collection}' does not exist in tenant '${tenant}'`);
    return names;
  }

  get(tenant: string, collection: string, name: string): Definition<DomainDocument> {
    this.tenants.get(tenant);
    const definition = this.store.get<DomainDocument>(domainKey(tenant, collection, name));
    if (definition === undefined) throw new NotFoundError(`domain /domain/${tenant}/${collection}/${name} does not exist`);
    return definition;
  }

  put(tenant: string, collection: string, name: string, body: unknown, expectedVersion?: string): Promise<Definition<DomainDocument>> {
    this.tenants.get(tenant);
    const key = domainKey(tenant, collection, name);
    const { document, filters } = parseDomain(body, tenant, this.limits);
    filters.forEach((filter, index) => {
      if (!this.contributors.hasType(tenant, filter.type)) {
        throw new BadRequestError(`contributorFilters[${index}].contributor: contributor type '${filter.type}' does not exist in tenant '${tenant}'`);
      }
    });
    if (this.store.get(key) === undefined && this.store.list(definitionKey('domain', tenant, '')).length >= this.limits.domainsPerTenantMax) {
      throw new BadRequestError(`tenant '${tenant}' has ${this.limits.domainsPerTenantMax} domains, the most it may have`);
    }
    return this.store.put(key, document, expectedVersion);
  }

  async delete(tenant: string, collection: string, name: string, expectedVersion?: string): Promise<string> {
    this.get(tenant, collection, name);
    const version = await this.store.delete(domainKey(tenant, collection, name), expectedVersion);
    if (version === undefined) throw new NotFoundError(`domain /domain/${tenant}/${collection}/${name} does not exist`);
    return version;
  }

  /** The matching instances, grouped by type in filter order, ids sorted. */
  contributorsOf(tenant: string, collection: string, name: string): Array<{ type: string; items: Array<{ id: string }> }> {
    const matching = this.matching(tenant, this.get(tenant, collection, name));
    return [...matching].map(([type, ids]) => ({ type: filterTypeUri(tenant, type), items: [...ids].sort().map((id) => ({ id })) }));
  }

  /** URIs of the streams the domain's contributors published to, sorted. */
  streamsOf(tenant: string, collection: string, name: string): string[] {
    return [...this.publishedStreams(tenant, this.matching(tenant, this.get(tenant, collection, name)))].sort().map(keyToUri);
  }

  /** The scope of a search in `tenant` limited to the domain `uri`; 404 for an unknown domain. */
  scope(tenant: string, uri: string): DomainScope {
    const id = parseDomainUri(uri);
    if (id.tenant !== tenant) throw new BadRequestError(`domain ${uri} is not a domain of tenant '${tenant}'`);
    const matching = this.matching(tenant, this.get(id.tenant, id.collection, id.name));
    // Only types with matching contributors get a set; a search sends each set it uses once.
    const sets = new Map<string, readonly string[]>();
    let total = 0;
    for (const [type, ids] of matching) {
      if (ids.size === 0) continue;
      sets.set(`type:${type}`, [...ids]);
      total += ids.size;
    }
    if (total > this.limits.searchContributorsMax) {
      throw new BadRequestError(`domain ${uri} holds ${total} contributors; a search can be limited to at most ${this.limits.searchContributorsMax}`);
    }
    return {
      fieldsOf: (stream, schema) =>
        contributorFieldTargets(stream.tenant, schema).flatMap(({ path, target }) => {
          // A field that names no type takes a contributor of any type of the domain.
          if (target === undefined) return sets.size === 0 ? [] : [{ path, ids: [...sets.keys()] }];
          // Types of another tenant are never in this tenant's domain.
          const name = `type:${target.type}`;
          return target.tenant === tenant && sets.has(name) ? [{ path, ids: [name] }] : [];
        }),
      idSet: (name) => sets.get(name) ?? [],
      streams: this.publishedStreams(tenant, matching),
    };
  }

  private publishedStreams(tenant: string, matching: Map<string, Set<string>>): Set<string> {
    const streams = new Set<string>();
    for (const [type, ids] of matching) {
      for (const id of ids) for (const stream of this.published.streamsOf(tenant, type, id)) streams.add(stream);
    }
    return streams;
  }

  private matching(tenant: string, definition: Definition<DomainDocument>): Map<string, Set<string>> {
    let cached = this.cache.get(definition.key);
    if (cached?.version !== definition.version) {
      cached = { version: definition.version, filters: compileFilters(definition.value, tenant) };
      this.cache.set(definition.key, cached);
    }
    const generation = this.generationOf(tenant);
    if (cached.matching === undefined || cached.generation !== generation) {
      cached.matching = matchContributors(cached.filters, (type) => this.instancesOf(tenant, type));
      cached.generation = generation;
    }
    return cached.matching;
  }

  private *instancesOf(tenant: string, type: string): Iterable<[string, unknown]> {
    for (const id of this.contributors.instanceIds(tenant, type)) {
      const document = this.contributors.instanceDocument(tenant, type, id);
      if (document !== undefined) yield [id, document];
    }
  }

  private generationOf(tenant: string): number {
    return this.generations.get(tenant) ?? 0;
  }
}

function domainKey(tenant: string, collection: string, name: string): string {
  return definitionKey('domain', checkName('tenant', tenant), checkName('collection', collection), checkName('domain', name));
}

function keyToUri(key: string): string {
  const [tenant, collection, name] = key.split('/');
  return streamUri({ tenant: tenant!, collection: collection!, name: name! });
}
