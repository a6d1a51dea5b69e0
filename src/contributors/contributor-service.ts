// Contributor types and their instances (spec, "Contributors"). Each is one
// definition with its own version, so every write follows the definitions store's 409 rule.
// Which types and instances exist is kept in memory from the store's changes: listing and
// counting never scan the store, and every node knows what any node wrote.

import type { TenantService } from '../replicated-definitions/tenants.js';
import { BadRequestError, NotFoundError, StateConflictError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';
import type { Definition, Definitions } from '../storage/definition-store.js';
import {
  checkContributorId,
  checkInstance,
  parseContributorType,
  type ContributorType,
  type ContributorTypeDocument,
} from './contributor-schema.js';
import { INSTANCE_PREFIX, instanceKey, parseKey, TYPE_PREFIX, typeKey } from './keys.js';
import type { PublishedIndex } from './published-index.js';
import { streamUri } from '../streams/stream-id.js';
import { stringifyJson } from '../lib/json.js';

export type InstanceDocument = Record<string, unknown>;

export interface ContributorLimits {
  typesPerTenantMax: number;
  instancesPerTypeMax: number;
  /** JSON length of one instance document. */
  instanceBytesMax: number;
}

export const DEFAULT_CONTRIBUTOR_LIMITS: ContributorLimits = {
  typesPerTenantMax: 1_000,
  instancesPerTypeMax: 100_000,
  instanceBytesMax: 65_536,
};

export class ContributorService {
  /** tenant → type names. */
  private readonly types = new Map<string, Set<string>>();
  /** "tenant/type" → instance ids. */
  private readonly instances = new Map<string, Set<string>>();
  /** Schemas compiled once per version of the type. */
  private readonly compiled = new Map<string, { version: string; type: ContributorType }>();

  constructor(
    private readonly store: Definitions,
    private readonly tenants: TenantService,
    private readonly published: PublishedIndex,
    private readonly limits: ContributorLimits = DEFAULT_CONTRIBUTOR_LIMITS,
  ) {
    store.onChange((key, definition) => this.observe(key, definition !== undefined));
    for (const definition of store.list(TYPE_PREFIX)) this.observe(definition.key, true);
    for (const definition of store.list(INSTANCE_PREFIX)) this.observe(definition.key, true);
  }

  listTypes(tenant: string): string[] {
    this.tenants.get(tenant);
    return sorted(this.types.get(tenant));
  }

  getType(tenant: string, type: string): Definition<ContributorTypeDocument> {
    this.tenants.get(tenant);
    const definition = this.store.get<ContributorTypeDocument>(typeKey(tenant, checkName('contributor type', type)));
    if (definition === undefined) throw new NotFoundError(`contributor type '${type}' does not exist in tenant '${tenant}'`);
    return definition;
  }

  /** Creates or replaces a type. Instances already stored are kept as they are. */
  putType(tenant: string, type: string, body: unknown, expectedVersion?: string): Promise<Definition<ContributorTypeDocument>> {
    this.tenants.get(tenant);
    checkName('contributor type', type);
    parseContributorType(body);
    const known = this.types.get(tenant);
    if (!known?.has(type) && (known?.size ?? 0) >= this.limits.typesPerTenantMax) {
      throw new BadRequestError(`tenant '${tenant}' has ${this.limits.typesPerTenantMax} contributor types, the most it may have`);
    }
    return this.store.put<ContributorTypeDocument>(typeKey(tenant, type), { schema: (body as ContributorTypeDocument).schema }, expectedVersion);
  }

  /** Deletes a type that has no instances left (409 otherwise). */
  async deleteType(tenant: string, type: string, expectedVersion?: string): Promise<string> {
    this.getType(tenant, type);
    const count = this.instances.get(`${tenant}/${type}`)?.size ?? 0;
    if (count > 0) throw new StateConflictError(`contributor type '${type}' still has ${count} instances; delete them first`);
    const version = await this.store.delete(typeKey(tenant, type), expectedVersion);
    if (version === undefined) throw new NotFoundError(`contributor type '${type}' does not exist in tenant '${tenant}'`);
    return version;
  }

  listInstances(tenant: string, type: string): string[] {
    this.getType(tenant, type);
    return sorted(this.instances.get(`${tenant}/${type}`));
  }

  getInstance(tenant: string, type: string, id: string): Definition<InstanceDocument> {
    this.getType(tenant, type);
    const definition = this.store.get<InstanceDocument>(instanceKey(tenant, type, checkContributorId(id)));
    if (definition === undefined) throw new NotFoundError(`contributor '${id}' of type '${type}' does not exist in tenant '${tenant}'`);
    return definition;
  }

  /** Creates or replaces an instance: it must follow its type's schema and carry the path's id. */
  putInstance(tenant: string, type: string, id: string, body: unknown, expectedVersion?: string): Promise<Definition<InstanceDocument>> {
    const compiled = this.compiledType(tenant, type);
    checkContributorId(id);
    const document = checkInstance(compiled, id, body);
    if (stringifyJson(document).length > this.limits.instanceBytesMax) {
      throw new BadRequestError(`an instance document is at most ${this.limits.instanceBytesMax} characters of JSON`);
    }
    const known = this.instances.get(`${tenant}/${type}`);
    if (!known?.has(id) && (known?.size ?? 0) >= this.limits.instancesPerTypeMax) {
      throw new BadRequestError(`contributor type '${type}' has ${this.limits.instancesPerTypeMax} instances, the most it may have`);
    }
    return this.store.put(instanceKey(tenant, type, id), document, expectedVersion);
  }

  async deleteInstance(tenant: string, type: string, id: string, expectedVersion?: string): Promise<string> {
    this.getInstance(tenant, type, id);
    const version = await this.store.delete(instanceKey(tenant, type, id), expectedVersion);
    if (version === undefined) throw new NotFoundError(`contributor '${id}' of type '${type}' does not exist in tenant '${tenant}'`);
    return version;
  }

  /** URIs of the streams the instance has published to, sorted. */
  streams(tenant: string, type: string, id: string): string[] {
    this.getInstance(tenant, type, id);
    return this.published.streamsOf(tenant, type, id).map((key) => {
      const [streamTenant, collection, name] = key.split('/');
      return streamUri({ tenant: streamTenant!, collection: collection!, name: name! });
    });
  }

  /** Whether the type exists (no tenant check: for domains, which checked it already). */
  hasType(tenant: string, type: string): boolean {
    return this.types.get(tenant)?.has(type) ?? false;
  }

  /** Ids of the type's instances; empty for an unknown type. */
  instanceIds(tenant: string, type: string): ReadonlySet<string> {
    return this.instances.get(`${tenant}/${type}`) ?? EMPTY;
  }

  instanceDocument(tenant: string, type: string, id: string): InstanceDocument | undefined {
    return this.store.get<InstanceDocument>(instanceKey(tenant, type, id))?.value;
  }

  /** The type's schema, compiled once per version; 404 for an unknown type. */
  private compiledType(tenant: string, type: string): ContributorType {
    const definition = this.getType(tenant, type);
    const key = definition.key;
    const cached = this.compiled.get(key);
    if (cached?.version === definition.version) return cached.type;
    const compiled = parseContributorType(definition.value);
    this.compiled.set(key, { version: definition.version, type: compiled });
    return compiled;
  }

  private observe(key: string, exists: boolean): void {
    const parsed = parseKey(key);
    if (parsed?.kind === 'type') {
      if (!exists) this.compiled.delete(key);
      update(this.types, parsed.tenant, parsed.type, exists);
    } else if (parsed?.kind === 'instance') {
      update(this.instances, `${parsed.tenant}/${parsed.type}`, parsed.id, exists);
    }
  }
}

const EMPTY: ReadonlySet<string> = new Set();

function update(index: Map<string, Set<string>>, group: string, member: string, exists: boolean): void {
  let members = index.get(group);
  if (exists) {
    if (members === undefined) index.set(group, (members = new Set()));
    members.add(member);
  } else if (members !== undefined) {
    members.delete(member);
    if (members.size === 0) index.delete(group);
  }
}

function sorted(values: ReadonlySet<string> | undefined): string[] {
  return values === undefined ? [] : [...values].sort();
}
