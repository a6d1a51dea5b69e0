// Service accounts and their bearer tokens. A token is 32 random bytes (256 bits), shown once
// when made; the store keeps only its SHA-256. The same token is the account's credential on
// every interface that takes service-account tokens (spec, "Authentication"): `authenticate` is
// the one check they call.

import { createHash, timingSafeEqual } from 'node:crypto';
import { quoteForMessage } from '../lib/json.js';
import type { Definitions } from '../storage/definition-store.js';
import { GRANTS_MAX, isAccessLevel, type AccessLevel } from '../auth/permissions.js';
import { checkName } from '../lib/names.js';
import { ProblemError } from './problems.js';
import { compareAndSet, KEYS, systemEnvironment, type Environment } from './store.js';

export interface StoredAccount {
  /** Stable id: brains name it as their ownerUserId. */
  id: string;
  name: string;
  /** SHA-256 (hex) of the bearer token; null once revoked. */
  tokenSha256: string | null;
  /** The per-account gate of /api/v1 (spec: `api_access_enabled`, default off). */
  apiAccessEnabled: boolean;
  /** Levels on tenants of the platform interface; absent on accounts made before. */
  permissions?: Record<string, AccessLevel>;
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

/** An account as the admin endpoints show it: never its token or hash. */
export interface AccountView {
  id: string;
  name: string;
  apiAccessEnabled: boolean;
  permissions: Record<string, AccessLevel>;
  status: 'active' | 'revoked';
  createdAt: string;
  updatedAt: string;
  revokedAt: string | null;
}

export const TOKEN_PREFIX = 'trib_';
export const TOKEN_BYTES = 32;
/** Accounts are compared one by one on every request; keep them few. */
export const ACCOUNTS_MAX = 1_000;
export const ACCOUNT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** Longer Authorization values are not tokens of ours; they are refused without hashing. */
const PRESENTED_TOKEN_CHARS_MAX = 256;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export class AccountService {
  constructor(
    private readonly store: Definitions,
    private readonly env: Environment = systemEnvironment,
  ) {}

  list(): AccountView[] {
    return this.store.list<StoredAccount>(KEYS.accountPrefix).map((definition) => toView(definition.value));
  }

  get(name: string): AccountView {
    return toView(this.stored(name));
  }

  /**
   * Makes an account and its token. A revoked account's name gets a new token and its old
   * id back (its brains are reachable again), with API access off until granted again.
   */
  async create(name: string): Promise<{ account: AccountView; token: string }> {
    checkAccountName(name);
    const token = TOKEN_PREFIX + this.env.randomBytes(TOKEN_BYTES).toString('base64url');
    const now = this.env.now().toISOString();
    const account = await compareAndSet<StoredAccount, StoredAccount>(this.store, accountKey(name), (current) => {
      if (current !== undefined && current.value.tokenSha256 !== null) {
        throw new ProblemError('conflict', `account '${name}' exists; revoke it first to issue a new token`);
      }
      if (current === undefined && this.store.list(KEYS.accountPrefix).length >= ACCOUNTS_MAX) {
        throw new ProblemError('conflict', `there are already ${ACCOUNTS_MAX} accounts, the most this node keeps`);
      }
      const value: StoredAccount = {
        id: current?.value.id ?? this.env.randomUUID(),
        name,
        tokenSha256: hashToken(token),
        apiAccessEnabled: false,
        createdAt: current?.value.createdAt ?? now,
        updatedAt: now,
        revokedAt: null,
      };
      return { value, result: value };
    });
    return { account: toView(account), token };
  }

  setApiAccess(name: string, enabled: boolean): Promise<AccountView> {
    return this.update(name, (account) => (account.apiAccessEnabled === enabled ? undefined : { ...account, apiAccessEnabled: enabled }));
  }

  /**
   * Sets the account's level on each tenant named (null removes the grant); tenants not
   * named keep theirs. The platform interface checks these on every request.
   */
  setPermissions(name: string, changes: unknown): Promise<AccountView> {
    const parsed = parsePermissionChanges(changes);
    return this.update(name, (account) => {
      const permissions: Record<string, AccessLevel> = { ...account.permissions };
      for (const [tenant, level] of parsed) {
        if (level === null) delete permissions[tenant];
        else permissions[tenant] = level;
      }
      if (Object.keys(permissions).length > GRANTS_MAX) {
        throw new ProblemError('invalid-request', `an account holds grants on at most ${GRANTS_MAX} tenants`);
      }
      return { ...account, permissions };
    });
  }

  /** The token stops working at once; the account and what it owns stay. */
  revoke(name: string): Promise<AccountView> {
    return this.update(name, (account) =>
      account.tokenSha256 === null ? undefined : { ...account, tokenSha256: null, revokedAt: this.env.now().toISOString() },
    );
  }

  /**
   * The active account whose token this is, or undefined. Every account's hash is compared
   * in constant time, and all of them are, so the time taken says nothing about which or
   * how much of a hash matched.
   */
  authenticate(token: string): StoredAccount | undefined {
    if (token.length === 0 || token.length > PRESENTED_TOKEN_CHARS_MAX) return undefined;
    const presented = Buffer.from(hashToken(token), 'hex');
    let match: StoredAccount | undefined;
    for (const { value } of this.store.list<StoredAccount>(KEYS.accountPrefix)) {
      if (value.tokenSha256 === null) continue;
      if (timingSafeEqual(presented, Buffer.from(value.tokenSha256, 'hex')) && match === undefined) match = value;
    }
    return match;
  }

  private stored(name: string): StoredAccount {
    const definition = this.store.get<StoredAccount>(accountKey(name));
    if (definition === undefined) throw new ProblemError('not-found', `account ${quoteForMessage(name)} does not exist`);
    return definition.value;
  }

  private async update(name: string, change: (account: StoredAccount) => StoredAccount | undefined): Promise<AccountView> {
    const account = await compareAndSet<StoredAccount, StoredAccount>(this.store, accountKey(name), (current) => {
      if (current === undefined) throw new ProblemError('not-found', `account ${quoteForMessage(name)} does not exist`);
      const next = change(current.value);
      if (next === undefined) return { result: current.value };
      const value = { ...next, updatedAt: this.env.now().toISOString() };
      return { value, result: value };
    });
    return toView(account);
  }
}

export function checkAccountName(name: string): string {
  if (!ACCOUNT_NAME_PATTERN.test(name)) {
    throw new ProblemError('invalid-request', `account name ${quoteForMessage(name)} must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
  }
  return name;
}

function accountKey(name: string): string {
  return KEYS.accountPrefix + checkAccountName(name);
}

function toView(account: StoredAccount): AccountView {
  const { id, name, apiAccessEnabled, createdAt, updatedAt, revokedAt } = account;
  const permissions = { ...account.permissions };
  return { id, name, apiAccessEnabled, permissions, status: account.tokenSha256 === null ? 'revoked' : 'active', createdAt, updatedAt, revokedAt };
}

/** `{ "<tenant>": "read" | "write" | "admin" | null }`, checked whole before anything changes. */
function parsePermissionChanges(changes: unknown): Array<[string, AccessLevel | null]> {
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
    throw new ProblemError('invalid-request', 'permissions must be an object of tenant names to "read", "write", "admin" or null');
  }
  const entries = Object.entries(changes);
  if (entries.length > GRANTS_MAX) throw new ProblemError('invalid-request', `at most ${GRANTS_MAX} tenants may be named at once`);
  return entries.map(([tenant, level]) => {
    try {
      checkName('tenant', tenant);
    } catch (error) {
      throw new ProblemError('invalid-request', (error as Error).message);
    }
    if (level !== null && !isAccessLevel(level)) {
      throw new ProblemError('invalid-request', `permissions[${quoteForMessage(tenant)}] must be "read", "write", "admin" or null`);
    }
    return [tenant, level];
  });
}
