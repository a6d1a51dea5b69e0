// Per-tenant permissions of service accounts on the platform interface.
// An account holds at most one level per tenant; a level includes the ones below it
// (admin ⊃ write ⊃ read). The `system` tenant is cluster administration: a level there
// holds on every tenant too, as the monitoring rule of the spec has it ("the tenant system
// gives access to all information in all tenants"). Pure.

export const ACCESS_LEVELS = ['read', 'write', 'admin'] as const;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];

/** Tenant name → the account's level there. */
export type Grants = Readonly<Record<string, AccessLevel>>;

export const SYSTEM_TENANT = 'system';
/** Tenants one account may hold grants on: they are checked on every request. */
export const GRANTS_MAX = 1_000;

export function isAccessLevel(value: unknown): value is AccessLevel {
  return typeof value === 'string' && (ACCESS_LEVELS as readonly string[]).includes(value);
}

function rank(level: AccessLevel | undefined): number {
  return level === undefined ? -1 : ACCESS_LEVELS.indexOf(level);
}

/** Whether `grants` allow `level` on `tenant` (directly, or through `system`). */
export function allows(grants: Grants, tenant: string, level: AccessLevel): boolean {
  const needed = rank(level);
  return rank(Object.hasOwn(grants, tenant) ? grants[tenant] : undefined) >= needed || rank(Object.hasOwn(grants, SYSTEM_TENANT) ? grants[SYSTEM_TENANT] : undefined) >= needed;
}
