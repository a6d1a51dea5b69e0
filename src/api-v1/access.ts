// The two gates of /api/v1 (spec, "Authentication"), both closed by default: the hive-wide
// switch and the account's api_access_enabled. A caller is identified first (401 when the
// token is missing, unknown or revoked), then both gates are checked (403).
//
// The hive-wide switch is the config key `brainApi.enabled` until an administrator sets it
// (the CLI's api-enable / api-disable); from then on the stored setting, the same on every
// node of the cluster, decides.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { Definitions } from '../storage/definition-store.js';
import type { AccountService, StoredAccount } from './accounts.js';
import { ProblemError, WWW_AUTHENTICATE_DETAIL } from './problems.js';
import { KEYS, systemEnvironment, type Environment } from './store.js';

export interface ApiSettings {
  apiEnabled: boolean;
  updatedAt: string;
}

export interface ApiSwitchState {
  apiEnabled: boolean;
  /** `stored`: set by an administrator; `config`: the node's brainApi.enabled. */
  source: 'stored' | 'config';
  updatedAt: string | null;
}

export class ApiSwitch {
  constructor(
    private readonly store: Definitions,
    private readonly configured: boolean,
    private readonly env: Environment = systemEnvironment,
  ) {}

  state(): ApiSwitchState {
    const stored = this.store.get<ApiSettings>(KEYS.settings)?.value;
    if (stored === undefined) return { apiEnabled: this.configured, source: 'config', updatedAt: null };
    return { apiEnabled: stored.apiEnabled, source: 'stored', updatedAt: stored.updatedAt };
  }

  /** The last administrator to set it wins: a switch has no merge. */
  async set(apiEnabled: boolean): Promise<ApiSwitchState> {
    await this.store.put<ApiSettings>(KEYS.settings, { apiEnabled, updatedAt: this.env.now().toISOString() });
    return this.state();
  }
}

export const BEARER_REALM = 'tributary';

/** The account behind `authorization`, if both gates are open; a problem otherwise. */
export function authorise(accounts: AccountService, apiSwitch: ApiSwitch, authorization: string | undefined): StoredAccount {
  const token = bearerToken(authorization);
  if (token === undefined) {
    throw new ProblemError('unauthenticated', 'send the service account token as Authorization: Bearer <token>', {
      details: { [WWW_AUTHENTICATE_DETAIL]: `Bearer realm="${BEARER_REALM}"` },
    });
  }
  const account = accounts.authenticate(token);
  if (account === undefined) {
    throw new ProblemError('unauthenticated', 'the bearer token is unknown or has been revoked', {
      details: { [WWW_AUTHENTICATE_DETAIL]: `Bearer realm="${BEARER_REALM}", error="invalid_token"` },
    });
  }
  if (!apiSwitch.state().apiEnabled) {
    throw new ProblemError('api-disabled', 'the brain management API is disabled for the whole installation; an administrator enables it');
  }
  if (!account.apiAccessEnabled) {
    throw new ProblemError('api-access-not-granted', `service account '${account.name}' has not been granted API access (api_access_enabled)`);
  }
  return account;
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
export function bearerToken(authorization: string | undefined): string | undefined {
  const match = /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(authorization ?? '');
  return match?.[1];
}

export const ADMIN_REALM = 'tributary-admin';

/**
 * The node's admin secret (config `adminSecret`), sent by the CLI as
 * `Authorization: Bearer <secret>` to /api/v1/admin. Compared as SHA-256 digests in
 * constant time, so neither its content nor its length leaks through timing. Without a
 * configured secret the admin endpoints are closed (403) rather than open.
 */
export class AdminGate {
  private readonly digest: Buffer | undefined;

  constructor(secret: string | null) {
    this.digest = secret === null ? undefined : sha256(secret);
  }

  /** Whether an admin secret is configured at all. */
  get configured(): boolean {
    return this.digest !== undefined;
  }

  /** Whether `presented` is the admin secret (false when none is configured). */
  matches(presented: string): boolean {
    return this.digest !== undefined && timingSafeEqual(sha256(presented), this.digest);
  }

  check(authorization: string | undefined): void {
    if (this.digest === undefined) {
      throw new ProblemError('admin-disabled', 'this node has no admin secret (config adminSecret, TRIBUTARY_ADMIN_SECRET): its admin endpoints are closed');
    }
    const presented = bearerToken(authorization);
    if (presented === undefined || !this.matches(presented)) {
      throw new ProblemError('admin-unauthenticated', presented === undefined ? 'send the admin secret as Authorization: Bearer <secret>' : 'the admin secret is wrong', {
        details: { [WWW_AUTHENTICATE_DETAIL]: `Bearer realm="${ADMIN_REALM}"${presented === undefined ? '' : ', error="invalid_token"'}` },
      });
    }
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
