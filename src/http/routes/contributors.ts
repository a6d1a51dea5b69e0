// Routes of the Contributors table (spec, "Contributors"): parse, call one service, shape
// the answer. The spec shows the bodies of three GETs with the status line 410 Gone; they
// answer 200 with those bodies.

import Router from '@koa/router';
import type Koa from 'koa';
import type { ContributorService } from '../../contributors/contributor-service.js';
import type { Definition } from '../../storage/definition-store.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

const TYPE = '/contributors/:tenant/:type';
const INSTANCE = `${TYPE}/instances/:id`;

export function contributorRoutes(contributors: ContributorService): Router {
  const router = new Router();

  router.get('/contributors/:tenant', (ctx) => {
    ctx.body = { instances: contributors.listTypes(ctx.params.tenant!) };
  });

  router.get(TYPE, (ctx) => respond(ctx, contributors.getType(ctx.params.tenant!, ctx.params.type!)));
  router.put(TYPE, async (ctx) => {
    respond(ctx, await contributors.putType(ctx.params.tenant!, ctx.params.type!, ctx.request.body, expectedVersion(ctx)));
  });
  router.delete(TYPE, async (ctx) => {
    setVersionHeaders(ctx, await contributors.deleteType(ctx.params.tenant!, ctx.params.type!, expectedVersion(ctx)));
    ctx.body = {};
  });

  router.get(`${TYPE}/instances`, (ctx) => {
    ctx.body = { instances: contributors.listInstances(ctx.params.tenant!, ctx.params.type!) };
  });
  router.get(INSTANCE, (ctx) => respond(ctx, contributors.getInstance(ctx.params.tenant!, ctx.params.type!, ctx.params.id!)));
  router.put(INSTANCE, async (ctx) => {
    const { tenant, type, id } = ctx.params;
    respond(ctx, await contributors.putInstance(tenant!, type!, id!, ctx.request.body, expectedVersion(ctx)));
  });
  router.delete(INSTANCE, async (ctx) => {
    setVersionHeaders(ctx, await contributors.deleteInstance(ctx.params.tenant!, ctx.params.type!, ctx.params.id!, expectedVersion(ctx)));
    ctx.body = {};
  });
  router.get(`${INSTANCE}/streams`, (ctx) => {
    ctx.body = { streams: contributors.streams(ctx.params.tenant!, ctx.params.type!, ctx.params.id!) };
  });

  return router;
}

function respond(ctx: Koa.Context, definition: Definition<unknown>): void {
  setVersionHeaders(ctx, definition.version);
  ctx.body = definition.value;
}
