// Routes of /api/v1 (spec, "Endpoints"), the admin endpoints the accounts CLI calls, and the
// documentation. Routers parse, call one service and shape the response; errors are
// problem documents (problems.ts), rendered by the app's error middleware.

import Router from '@koa/router';
import type Koa from 'koa';
import { isPlainObject, quoteForMessage } from '../lib/json.js';
import type { AccountService, StoredAccount } from './accounts.js';
import { authorise, type AdminGate, type ApiSwitch } from './access.js';
import type { BrainService } from './brains.js';
import { DOCS_CONTENT_SECURITY_POLICY, DOCS_PATH, OPENAPI_PATH, type DocsAsset, type DocsAssets } from './docs.js';
import type { Licence, LicencePool } from './licence.js';
import { openApiDocument } from './openapi.js';
import { API_PREFIX, ProblemError } from './problems.js';
import type { BrainTemplates } from './templates.js';

export interface BrainApiDeps {
  accounts: AccountService;
  apiSwitch: ApiSwitch;
  adminGate: AdminGate;
  brains: BrainService;
  templates: BrainTemplates;
  pool: LicencePool;
  docs: DocsAssets;
}

export function brainApiRoutes(deps: BrainApiDeps): Router {
  const router = new Router();
  brainRoutes(router, deps);
  adminRoutes(router, deps);
  docsRoutes(router, deps.docs);
  return router;
}

function brainRoutes(router: Router, { accounts, apiSwitch, brains, templates }: BrainApiDeps): void {
  const account = async (ctx: Koa.Context, next: Koa.Next) => {
    // Token-authenticated answers are never cached by intermediaries.
    ctx.set('Cache-Control', 'no-store');
    ctx.state.account = authorise(accounts, apiSwitch, ctx.get('Authorization') || undefined);
    await next();
  };
  const caller = (ctx: Koa.Context) => ctx.state.account as StoredAccount;
  const BRAIN = `${API_PREFIX}/brains/:brainId`;

  router.get(`${API_PREFIX}/brains`, account, (ctx) => {
    ctx.body = { brains: brains.list(caller(ctx)) };
  });
  router.post(`${API_PREFIX}/brains`, account, async (ctx) => {
    const brain = await brains.create(caller(ctx), ctx.request.body);
    ctx.status = 201;
    ctx.set('Location', `${API_PREFIX}/brains/${brain.id}`);
    ctx.body = brain;
  });
  router.get(BRAIN, account, (ctx) => {
    ctx.body = brains.get(caller(ctx), ctx.params.brainId!);
  });
  router.patch(BRAIN, account, async (ctx) => {
    ctx.body = await brains.patch(caller(ctx), ctx.params.brainId!, ctx.request.body);
  });
  router.delete(BRAIN, account, async (ctx) => {
    await brains.delete(caller(ctx), ctx.params.brainId!);
    ctx.status = 204;
  });
  router.get(`${API_PREFIX}/brain-templates`, account, (ctx) => {
    ctx.body = { templates: templates.all };
  });
}

function adminRoutes(router: Router, { accounts, apiSwitch, adminGate, brains, pool }: BrainApiDeps): void {
  const ADMIN = `${API_PREFIX}/admin`;
  const admin = async (ctx: Koa.Context, next: Koa.Next) => {
    ctx.set('Cache-Control', 'no-store');
    adminGate.check(ctx.get('Authorization') || undefined);
    await next();
  };

  router.get(`${ADMIN}/accounts`, admin, (ctx) => {
    ctx.body = { accounts: accounts.list() };
  });
  router.post(`${ADMIN}/accounts`, admin, async (ctx) => {
    const name = field(ctx.request.body, 'name', 'string');
    ctx.body = await accounts.create(name);
    ctx.status = 201;
  });
  router.get(`${ADMIN}/accounts/:name`, admin, (ctx) => {
    ctx.body = accounts.get(ctx.params.name!);
  });
  router.patch(`${ADMIN}/accounts/:name`, admin, async (ctx) => {
    // Either or both of apiAccessEnabled (the brain API gate) and permissions (the platform's).
    const body = ctx.request.body;
    const permissions = isPlainObject(body) ? body.permissions : undefined;
    if (permissions === undefined || (isPlainObject(body) && body.apiAccessEnabled !== undefined)) {
      ctx.body = await accounts.setApiAccess(ctx.params.name!, field(body, 'apiAccessEnabled', 'boolean'));
    }
    if (permissions !== undefined) ctx.body = await accounts.setPermissions(ctx.params.name!, permissions);
  });
  router.post(`${ADMIN}/accounts/:name/revoke`, admin, async (ctx) => {
    ctx.body = await accounts.revoke(ctx.params.name!);
  });
  router.get(`${ADMIN}/settings`, admin, (ctx) => {
    ctx.body = apiSwitch.state();
  });
  router.patch(`${ADMIN}/settings`, admin, async (ctx) => {
    ctx.body = await apiSwitch.set(field(ctx.request.body, 'apiEnabled', 'boolean'));
  });
  router.get(`${ADMIN}/licence`, admin, (ctx) => {
    ctx.body = pool.state();
  });
  router.patch(`${ADMIN}/licence`, admin, async (ctx) => {
    ctx.body = await pool.setLicence(licencePatch(ctx.request.body));
  });
  router.get(`${ADMIN}/brains/:brainId`, admin, (ctx) => {
    ctx.body = brains.inspect(ctx.params.brainId!);
  });
}

function docsRoutes(router: Router, docs: DocsAssets): void {
  router.get(OPENAPI_PATH, (ctx) => {
    ctx.body = openApiDocument;
  });
  router.get(DOCS_PATH, (ctx) => {
    send(ctx, docs.page());
    ctx.set('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
  });
  router.get(`${DOCS_PATH}/:asset`, (ctx) => {
    const asset = docs.asset(ctx.params.asset!);
    if (asset === undefined) throw new ProblemError('not-found', `no documentation file ${quoteForMessage(ctx.params.asset!)}`);
    send(ctx, asset);
    ctx.set('Cache-Control', 'public, max-age=3600');
  });
}

function send(ctx: Koa.Context, asset: DocsAsset): void {
  ctx.body = asset.body;
  ctx.type = asset.contentType;
  ctx.set('X-Content-Type-Options', 'nosniff');
}

function licencePatch(body: unknown): Partial<Licence> {
  if (!isPlainObject(body) || (body.tier === undefined && body.brainAllowance === undefined)) {
    throw new ProblemError('invalid-request', 'the body must be a JSON object with tier ("free" or "paid"), brainAllowance (an integer from 0 to 1000000), or both');
  }
  const change: Partial<Licence> = {};
  if (body.tier !== undefined) {
    if (body.tier !== 'free' && body.tier !== 'paid') throw new ProblemError('invalid-request', 'tier must be "free" or "paid"');
    change.tier = body.tier;
  }
  if (body.brainAllowance !== undefined) {
    const allowance = body.brainAllowance;
    if (typeof allowance !== 'number' || !Number.isInteger(allowance) || allowance < 0 || allowance > 1_000_000) {
      throw new ProblemError('invalid-request', 'brainAllowance must be an integer from 0 to 1000000');
    }
    change.brainAllowance = allowance;
  }
  return change;
}

function field<T extends 'string' | 'boolean'>(body: unknown, name: string, type: T): T extends 'string' ? string : boolean {
  const value = isPlainObject(body) ? body[name] : undefined;
  if (typeof value !== type) throw new ProblemError('invalid-request', `the body must be a JSON object with ${name} (a ${type})`);
  return value as T extends 'string' ? string : boolean;
}
