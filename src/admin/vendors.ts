// Approved vendors of a tenant (spec, "Vendor"): free-form documents with a required `id`
// and `key`; extra fields are kept as sent.

import { z } from 'zod';
import { BadRequestError, NotFoundError } from '../lib/errors.js';
import { validate } from '../lib/validation.js';
import { checkName } from '../lib/names.js';
import type { TenantService } from '../replicated-definitions/tenants.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definition-store.js';

/** The body of PUT /admin/:tenant/vendors/:id, as stored and returned. */
export const vendorSchema = z
  .looseObject({
    id: z.string().min(1).describe('The vendor name, unique in the tenant; must equal the `:id` of the path.'),
    key: z.string().min(1).describe("The vendor's public key."),
  })
  .meta({
    id: 'Vendor',
    description: 'An approved vendor: `id` and `key` are required; any other field (support, contact, …) is kept as sent.',
    examples: [{ id: 'acme', key: 'MCowBQYDK2VwAyEA3t5K1b1T8q5hLQ2l5Zy0mWl7q8oXbq3v8m8p3Yh4b9Q=', support: 'support@acme.example' }],
  });

export type Vendor = z.infer<typeof vendorSchema>;

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
  const { id: sentId } = validate(vendorSchema, body, 'vendor');
  if (sentId !== id) throw new BadRequestError(`id: the vendor id '${sentId}' differs from the id '${id}' in the path`);
  // Kept as sent: the checked copy would drop a field named __proto__.
  return body as Vendor;
}
