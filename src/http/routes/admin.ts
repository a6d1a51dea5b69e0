// Routes of the Admin (vendors) table.

import Router from '@koa/router';
import type { VendorService } from '../../admin/vendors.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

export function adminRoutes(vendors: VendorService): Router {
  const router = new Router();
  const VENDOR = '/admin/:tenant/vendors/:id';

  router.get('/admin/:tenant/vendors', (ctx) => {
    ctx.body = { instances: vendors.list(ctx.params.tenant!) };
  });
  router.get(VENDOR, (ctx) => {
    const definition = vendors.get(ctx.params.tenant!, ctx.params.id!);
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.put(VENDOR, async (ctx) => {
    const definition = await vendors.put(ctx.params.tenant!, ctx.params.id!, ctx.request.body, expectedVersion(ctx));
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.delete(VENDOR, async (ctx) => {
    setVersionHeaders(ctx, await vendors.delete(ctx.params.tenant!, ctx.params.id!, expectedVersion(ctx)));
    ctx.body = {};
  });

  return router;
}
