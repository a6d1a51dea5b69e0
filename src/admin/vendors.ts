// Approved vendors of a tenant (spec, "Vendor"): free-form documents with a required `id`
// and `key`; extra fields are kept as sent.

import { isPlainObject } from '../json.js';
import { BadRequestError, NotFoundError } from '../errors.js';
import { checkName } from '../names.js';
import type { TenantService } from '../cluster/tenants.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definitions.js';

export type Vendor = Record<string, unknown> & { id: string; key: string };

export class VendorService {
  constructor(
    private readonly store: Definitions,
    private readonly tenants: TenantService,
  ) {}

  list(tenant: string): string[] {
    this.tenants.get(tenant);
    return this.store.list<Vendor>(definitionKey('vendor', tenant, '')).map((definition) => definition.value.id);
  }

  get(tenant: string, id: string): Definition<Vendor> {
    this.tenants.get(tenant);
    const definition = this.store.get<Vendor>(vendorKey(tenant, id));
    if (definition === undefined) throw new NotFoundError(`vendor '${id}' does not exist in tenant '${tenant}'`);
    return definition;
  }

  put(tenant: string, id: string, body: unknown, expectedVersion?: string): Promise<Definition<Vendor>> {
    this.tenants.get(tenant);
    return this.store.put(vendorKey(tenant, id), parseVendor(body, id), expectedVersion);
  }

  async delete(tenant: string, id: string, expectedVersion?: string): Promise<string> {
    this.get(tenant, id);
    const version = await this.store.delete(vendorKey(tenant, id), expectedVersion);
    if (version === undefined) throw new NotFoundError(`vendor '${id}' does not exist in tenant '${tenant}'`);
    return version;
  }
}

function vendorKey(tenant: string, id: string): string {
  return definitionKey('vendor', checkName('tenant', tenant), checkName('vendor', id));
}

function parseVendor(body: unknown, id: string): Vendor {
  if (!isPlainObject(body)) throw new BadRequestError('vendor must be a JSON object');
  if (typeof body.id !== 'string' || body.id === '') throw new BadRequestError('vendor field id is required (a string)');
  if (typeof body.key !== 'string' || body.key === '') throw new BadRequestError('vendor field key is required (a string)');
  if (body.id !== id) throw new BadRequestError(`vendor id '${body.id}' differs from the id '${id}' in the path`);
  return body as Vendor;
}
