// Routes of the Monitoring table.

import Router from '@koa/router';
import type { TenantService } from '../../replicated-definitions/tenants.js';
import { BadRequestError } from '../../lib/errors.js';
import { checkFilter, checkService, MONITORING_SERVICES, type MonitoringFilter, type MonitoringService, type NodeDetails } from '../../monitoring/monitoring.js';

export interface MonitoringRoutesDeps {
  tenants: TenantService;
  localName: string;
  local(service: MonitoringService, filter: MonitoringFilter): Promise<NodeDetails>;
  /** Details from one named peer, or from every live peer when `node` is undefined. */
  remote(service: MonitoringService, filter: MonitoringFilter, node: string | undefined): Promise<NodeDetails[]>;
}

export function monitoringRoutes(deps: MonitoringRoutesDeps): Router {
  const router = new Router();
  const checkTenant = (tenant: string) => tenant === 'system' || deps.tenants.get(tenant);

  router.get('/monitoring/:tenant', (ctx) => {
    checkTenant(ctx.params.tenant!);
    ctx.body = { instances: [...MONITORING_SERVICES] };
  });
  router.get('/monitoring/:tenant/:service', async (ctx) => {
    checkTenant(ctx.params.tenant!);
    const service = checkService(ctx.params.service!);
    const filter = checkFilter(service, ctx.params.tenant!, ctx.query.uri);
    const node = ctx.query.node;
    if (Array.isArray(node)) throw new BadRequestError('give the query parameter node at most once');
    if (node === 'local' || node === deps.localName) {
      ctx.body = { nodes: [await deps.local(service, filter)] };
    } else if (node !== undefined) {
      ctx.body = { nodes: await deps.remote(service, filter, node) };
    } else {
      const [local, remote] = await Promise.all([deps.local(service, filter), deps.remote(service, filter, undefined)]);
      ctx.body = { nodes: [local, ...remote] };
    }
  });

  return router;
}
