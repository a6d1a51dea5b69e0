// Tenants (spec, "Cluster tenant"): a definition each. When a tenant first appears on a
// node, written here or replicated from its coordinator, that node publishes TENANT_ADDED,
// so every node's event stream reports it; the tenant is active from then on.

import { NotFoundError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definition-store.js';

export interface Tenant {
  name: string;
}

const PREFIX = 'tenant/';

/**
 * Where a new tenant is announced: the cluster event bus (events.ts), seen only through what
 * this module publishes, so that tenants need not import the bus (whose cluster document
 * holds tenants: a file cycle).
 */
interface TenantEvents {
  publish(event: { type: 'TENANT_ADDED'; tenant: { name: string } }): void;
}

export class TenantService {
  private readonly known = new Set<string>();

  constructor(
    private readonly store: Definitions,
    private readonly events: TenantEvents,
  ) {
    for (const tenant of this.list()) this.known.add(tenant.name);
    store.onChange((key, definition) => {
      if (!key.startsWith(PREFIX) || definition === undefined) return;
      const name = (definition.value as Tenant).name;
      if (this.known.has(name)) return;
      this.known.add(name);
      this.events.publish({ type: 'TENANT_ADDED', tenant: { name } });
    });
  }

  list(): Tenant[] {
    return this.store.list<Tenant>(PREFIX).map((definition) => ({ name: definition.value.name }));
  }

  /** The tenant's definition; 404 when it does not exist. */
  get(name: string): Definition<Tenant> {
    const definition = this.store.get<Tenant>(definitionKey('tenant', checkName('tenant', name)));
    if (definition === undefined) throw new NotFoundError(`tenant '${name}' does not exist`);
    return definition;
  }

  exists(name: string): boolean {
    return this.store.get(definitionKey('tenant', name)) !== undefined;
  }

  /** Adds the tenant if it is new; an existing one is left as it is. */
  async put(name: string, expectedVersion?: string): Promise<Definition<Tenant>> {
    checkName('tenant', name);
    const existing = this.store.get<Tenant>(definitionKey('tenant', name));
    if (existing !== undefined && expectedVersion === undefined) return existing;
    return this.store.put<Tenant>(definitionKey('tenant', name), { name }, expectedVersion);
  }
}
