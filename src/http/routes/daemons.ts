// Routes of the Daemons table (spec, "Daemons") and `_daemonise` of a session's query:
// parse, call one service, shape the answer.

import Router from '@koa/router';
import type { DaemonService } from '../../sessions/daemon-service.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

const DAEMON = '/daemon/:tenant/:collection/:id';

export function daemonRoutes(daemons: DaemonService): Router {
  const router = new Router();

  router.get('/daemon/:tenant/:collection', (ctx) => {
    ctx.body = { instances: daemons.list(ctx.params.tenant!, ctx.params.collection!) };
  });
  router.get(DAEMON, (ctx) => {
    const definition = daemons.get(ctx.params.tenant!, ctx.params.collection!, ctx.params.id!);
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.put(DAEMON, async (ctx) => {
    const { tenant, collection, id } = ctx.params;
    const definition = await daemons.put(tenant!, collection!, id!, ctx.request.body, expectedVersion(ctx));
    setVersionHeaders(ctx, definition.version);
    ctx.body = definition.value;
  });
  router.get(`${DAEMON}/details`, async (ctx) => {
    ctx.body = await daemons.details(ctx.params.tenant!, ctx.params.collection!, ctx.params.id!);
  });
  router.delete(DAEMON, async (ctx) => {
    setVersionHeaders(ctx, await daemons.delete(ctx.params.tenant!, ctx.params.collection!, ctx.params.id!, expectedVersion(ctx)));
    ctx.body = {};
  });

  router.put('/execution/:tenant/sessions/:id/queries/:queryId/_daemonise', async (ctx) => {
    ctx.body = await daemons.daemonise(ctx.params.tenant!, ctx.params.id!, ctx.params.queryId!, ctx.request.body);
  });

  return router;
}
