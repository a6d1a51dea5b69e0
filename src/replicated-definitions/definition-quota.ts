// Byte quotas of definitions. Every definition is held in memory on every
// node, so one tenant must not be able to fill them: vendor documents of 15 MiB each were
// stored on every node. A write is refused (413, naming the limit) when its value's JSON is
// larger than `definitionBytesMax`, or when it would take the tenant's definitions past
// `tenantDefinitionBytesMax`. Deletes and shrinking writes always pass. The sizes are kept
// per key from the store's changes, so a check costs one serialisation of the new value.

import { PayloadTooLargeError, TributaryError } from '../lib/errors.js';
import type { Definitions } from '../storage/definition-store.js';
import { stringifyJson } from '../lib/json.js';

export interface DefinitionQuotaLimits {
  definitionBytesMax: number;
  tenantDefinitionBytesMax: number;
}

/** The tenant a key belongs to: `kind/<tenant>/…`; the brain interface's `api/…` keys are the system's. */
export function tenantOfKey(key: string): string {
  const [kind, tenant] = key.split('/', 2);
  return kind === 'api' || tenant === undefined ? 'system' : tenant;
}

export class DefinitionQuota {
  private readonly bytesByKey = new Map<string, number>();
  private readonly bytesByTenant = new Map<string, number>();

  constructor(
    store: Pick<Definitions, 'list' | 'onChange'>,
    private readonly limits: DefinitionQuotaLimits,
  ) {
    for (const definition of store.list('')) this.account(definition.key, definition.value);
    store.onChange((key, definition) => this.account(key, definition?.value));
  }

  /** Bytes the tenant's definitions hold now. */
  tenantBytes(tenant: string): number {
    return this.bytesByTenant.get(tenant) ?? 0;
  }

  /** Throws when writing `value` at `key` would break a quota. */
  check(key: string, value: unknown): void {
    const bytes = sizeOf(value);
    if (bytes > this.limits.definitionBytesMax) {
      throw new PayloadTooLargeError(`the definition ${key.slice(0, 200)} would hold ${bytes} bytes of JSON; the limit of one definition is ${this.limits.definitionBytesMax}`);
    }
    const tenant = tenantOfKey(key);
    const after = this.tenantBytes(tenant) - (this.bytesByKey.get(key) ?? 0) + bytes;
    if (bytes > (this.bytesByKey.get(key) ?? 0) && after > this.limits.tenantDefinitionBytesMax) {
      throw new TributaryError(413, 'QUOTA_EXCEEDED', `tenant '${tenant}' would hold ${after} bytes of definitions; its quota is ${this.limits.tenantDefinitionBytesMax}`);
    }
  }

  private account(key: string, value: unknown): void {
    const tenant = tenantOfKey(key);
    const before = this.bytesByKey.get(key) ?? 0;
    const after = value === undefined ? 0 : sizeOf(value);
    if (after === 0) this.bytesByKey.delete(key);
    else this.bytesByKey.set(key, after);
    const total = this.tenantBytes(tenant) - before + after;
    if (total === 0) this.bytesByTenant.delete(tenant);
    else this.bytesByTenant.set(tenant, total);
  }
}

function sizeOf(value: unknown): number {
  // stringifyJson: definitions may hold longs beyond 2^53 as BigInt.
  return value === undefined ? 0 : Buffer.byteLength(stringifyJson(value) ?? '', 'utf8');
}
