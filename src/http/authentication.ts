// Authentication of the platform interface: one middleware that applies the route table of
// auth/access-rules.ts before any body is read. A caller shows `Authorization: Bearer <token>`:
// the node's admin secret (every permission), or a service account's token from /api/v1's
// account machinery (the permissions granted to it). SSE clients that cannot set headers
// (browsers' EventSource) may send `?access_token=` on GET /output/… instead (RFC 6750, section
// 2.3).
//
// With tokens off (`auth` auto on loopback, or off) tenant and cluster routes are open and
// only membership changes still need the admin secret when one is configured.

import type Koa from 'koa';
import { accessRule, type AccessRule } from '../auth/access-rules.js';
import { allows, SYSTEM_TENANT, type Grants } from '../auth/permissions.js';
import { BadRequestError, ForbiddenError, TributaryError } from '../lib/errors.js';

export interface Principal {
  /** The account's name, or `admin` for the admin secret. */
  name: string;
  /** Every permission (the admin secret). */
  admin: boolean;
  grants: Grants;
}

export interface AuthenticationOptions {
  /** Whether tenant and cluster routes need a token. */
  tokensRequired: boolean;
  adminSecret: { readonly configured: boolean; matches(presented: string): boolean };
  accounts: { authenticate(token: string): { name: string; permissions?: Grants } | undefined };
}

export const BEARER_REALM = 'tributary';
const QUERY_TOKEN_PATH = '/output/';

/** 401, with the WWW-Authenticate challenge the middleware answers with. */
export class UnauthenticatedError extends TributaryError {
  readonly challenge: string;

  constructor(message: string, challenge: string) {
    super(401, 'UNAUTHENTICATED', message);
    this.challenge = challenge;
  }
}

export function authenticationMiddleware(options: AuthenticationOptions): Koa.Middleware {
  return async (ctx, next) => {
    let rule: AccessRule;
    try {
      rule = accessRule(ctx.method, ctx.path);
    } catch {
      throw new BadRequestError('malformed percent-encoding in the path');
    }
    if (!needsCredential(rule, options)) return next();
    try {
      ctx.state.principal = authorise(rule, presentedToken(ctx), options);
    } catch (error) {
      if (error instanceof UnauthenticatedError) ctx.set('WWW-Authenticate', error.challenge);
      throw error;
    }
    return next();
  };
}

function needsCredential(rule: AccessRule, options: AuthenticationOptions): boolean {
  if (rule.kind === 'public') return false;
  if (options.tokensRequired) return true;
  return rule.kind === 'membership' && options.adminSecret.configured;
}

/** The principal behind `token` if it may do what `rule` needs; throws 401 or 403 otherwise. */
export function authorise(rule: AccessRule, token: string | undefined, options: AuthenticationOptions): Principal {
  if (token === undefined) {
    throw new UnauthenticatedError(`send a token as Authorization: Bearer <token>${rule.kind === 'membership' ? ' (the admin secret)' : ''}`, `Bearer realm="${BEARER_REALM}"`);
  }
  const principal = identify(token, options);
  if (principal === undefined) {
    throw new UnauthenticatedError('the bearer token is unknown or has been revoked', `Bearer realm="${BEARER_REALM}", error="invalid_token"`);
  }
  if (principal.admin) return principal;
  if (rule.kind === 'membership') {
    if (options.tokensRequired && allows(principal.grants, SYSTEM_TENANT, 'admin')) return principal;
    throw new ForbiddenError(`adding and removing nodes needs the admin secret${options.tokensRequired ? " or 'admin' on tenant 'system'" : ''}; account '${principal.name}' has neither`);
  }
  if (rule.kind === 'tenant' && !allows(principal.grants, rule.tenant, rule.level)) {
    throw new ForbiddenError(`account '${principal.name}' lacks '${rule.level}' on tenant '${rule.tenant}'`);
  }
  return principal;
}

function identify(token: string, options: AuthenticationOptions): Principal | undefined {
  if (options.adminSecret.matches(token)) return { name: 'admin', admin: true, grants: {} };
  const account = options.accounts.authenticate(token);
  return account === undefined ? undefined : { name: account.name, admin: false, grants: account.permissions ?? {} };
}

function presentedToken(ctx: Koa.Context): string | undefined {
  const header = ctx.get('Authorization');
  if (header !== '') return /^Bearer[ ]+([^ ]+)[ ]*$/i.exec(header)?.[1] ?? '';
  if (ctx.method === 'GET' && ctx.path.startsWith(QUERY_TOKEN_PATH)) {
    const fromQuery = ctx.query.access_token;
    if (typeof fromQuery === 'string' && fromQuery !== '') return fromQuery;
  }
  return undefined;
}
