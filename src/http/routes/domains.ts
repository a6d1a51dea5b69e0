// Routes of the Domains table (spec, "Domains"): parse, call one service, shape the answer.

import Router from '@koa/router';
import type { DomainService } from '../../domains/domain-service.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

const DOMAIN = '/domain/:tenant/:collection/:name';

export function domainRoutes(domains: DomainService): Router {
  const router = new Router();

  router.get('/domain/:tenant', (ctx) => {
    ctx.body = { instances: domains.collections(ctx.params.tenant!) };
  });
  router.get('/domain/:tenant/:collection', (ctx) => {
    ctx.body = { instances: domains.domains(ctx.params.tenant!, ctx.params.collection!) };
  });

  router.get(DOMAIN, (ctx) => {
    const definition = domains.get(ctx.params.tenant!, ctx.params.collection!, ctx.params.name!);
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.put(DOMAIN, async (ctx) => {
    const { tenant, collection, name } = ctx.params;
    const definition = await domains.put(tenant!, collection!, name!, ctx.request.body, expectedVersion(ctx));
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.delete(DOMAIN, async (ctx) => {
    setVersionHeaders(ctx, await domains.delete(ctx.params.tenant!, ctx.params.collection!, ctx.params.name!, expectedVersion(ctx)));
    ctx.body = {};
  });

  router.get(`${DOMAIN}/contributors`, (ctx) => {
    ctx.body = { contributors: domains.contributorsOf(ctx.params.tenant!, ctx.params.collection!, ctx.params.name!) };
  });
  router.get(`${DOMAIN}/streams`, (ctx) => {
    ctx.body = { streams: domains.streamsOf(ctx.params.tenant!, ctx.params.collection!, ctx.params.name!) };
  });

  return router;
}
