// Tenants (spec, "Cluster tenant"): a definition each; adding one publishes TENANT_ADDED,
// and the tenant is active from then on.

import { NotFoundError } from '../errors.js';
import { checkName } from '../names.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definitions.js';
import type { ClusterEventBus } from './events.js';

export interface Tenant {
  name: string;
}

const PREFIX = 'tenant/';

export class TenantService {
  constructor(
    private readonly store: Definitions,
    private readonly events: ClusterEventBus,
  ) {}

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

  /** Adds the tenant if it is new (publishing TENANT_ADDED); an existing one is left as it is. */
  async put(name: string, expectedVersion?: string): Promise<Definition<Tenant>> {
    checkName('tenant', name);
    const existing = this.store.get<Tenant>(definitionKey('tenant', name));
    if (existing !== undefined && expectedVersion === undefined) return existing;
    const definition = await this.store.put<Tenant>(definitionKey('tenant', name), { name }, expectedVersion);
    if (existing === undefined) this.events.publish({ type: 'TENANT_ADDED', tenant: { name } });
    return definition;
  }
}
