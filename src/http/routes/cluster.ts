// Routes of the Cluster table that this issue serves: the node table as it is, and tenants.

import Router from '@koa/router';
import type { NodeTable } from '../../cluster/node-table.js';
import type { TenantService } from '../../cluster/tenants.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

export interface ClusterRoutesDeps {
  nodes: NodeTable;
  tenants: TenantService;
}

export function clusterRoutes({ nodes, tenants }: ClusterRoutesDeps): Router {
  const router = new Router();

  router.get('/cluster', (ctx) => {
    ctx.body = { nodes: nodes.list(), tenants: tenants.list() };
  });
  router.get('/cluster/nodes', (ctx) => {
    ctx.body = { nodes: nodes.list() };
  });
  router.get('/cluster/localNode', (ctx) => {
    ctx.body = { node: nodes.local() };
  });
  router.get('/cluster/nodes/:name', (ctx) => {
    ctx.body = { node: nodes.get(ctx.params.name!) };
  });

  router.get('/cluster/tenants', (ctx) => {
    ctx.body = { tenants: tenants.list() };
  });
  router.get('/cluster/tenants/:name', (ctx) => {
    const definition = tenants.get(ctx.params.name!);
    setVersionHeaders(ctx, definition.version);
    ctx.body = { name: definition.value.name };
  });
  router.put('/cluster/tenants/:name', async (ctx) => {
    const definition = await tenants.put(ctx.params.name!, expectedVersion(ctx));
    setVersionHeaders(ctx, definition.version);
    ctx.body = {};
  });

  return router;
}
