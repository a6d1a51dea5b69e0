// Routes of the Search section: POST /ssr/:tenant/_search, _facet, _timeRangeHistogram, _discover.

import Router from '@koa/router';
import type { TenantService } from '../../replicated-definitions/tenants.js';
import type { SearchService } from '../../search/search-service.js';

export function searchRoutes(search: SearchService, tenants: TenantService): Router {
  const router = new Router();
  const tenantOf = (name: string | undefined) => tenants.get(name!).value.name;

  router.post('/ssr/:tenant/_search', async (ctx) => {
    ctx.body = await search.search(tenantOf(ctx.params.tenant), ctx.request.body);
  });
  router.post('/ssr/:tenant/_facet', async (ctx) => {
    ctx.body = await search.facet(tenantOf(ctx.params.tenant), ctx.request.body);
  });
  router.post('/ssr/:tenant/_timeRangeHistogram', async (ctx) => {
    ctx.body = await search.histogram(tenantOf(ctx.params.tenant), ctx.request.body);
  });
  router.post('/ssr/:tenant/_discover', async (ctx) => {
    ctx.body = await search.discover(tenantOf(ctx.params.tenant), ctx.request.body);
  });

  return router;
}
