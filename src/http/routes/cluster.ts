// Routes of the Cluster table that this issue serves: the node table as it is, and tenants.

import Router from '@koa/router';
import type { ClusterEventBus, Subscription } from '../../cluster/events.js';
import type { MembershipService } from '../../cluster/membership-service.js';
import type { NodeTable } from '../../cluster/node-table.js';
import type { TenantService } from '../../cluster/tenants.js';
import { TributaryError } from '../../errors.js';
import { openSse, type SseChannel, type SseOptions } from '../sse.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

export interface ClusterRoutesDeps {
  nodes: NodeTable;
  tenants: TenantService;
  events: ClusterEventBus;
  membership: MembershipService;
  sse: SseOptions & { clientsMax: number };
}

export function clusterRoutes({ nodes, tenants, events, membership, sse }: ClusterRoutesDeps): Router {
  const router = new Router();
  const clusterDocument = () => ({ nodes: nodes.list(), tenants: tenants.list() });

  router.post('/cluster/nodes', async (ctx) => {
    await membership.addNodes(ctx.request.body);
    ctx.body = clusterDocument();
  });
  router.delete('/cluster/nodes/:name', async (ctx) => {
    await membership.removeNode(ctx.params.name!);
    ctx.body = clusterDocument();
  });
  router.get('/cluster/join-token', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { joinToken: membership.joinToken() };
  });
  router.get('/cluster/transfers', (ctx) => {
    ctx.body = { actions: membership.transfers() };
  });

  // Every client gets CLUSTER_STATE on connect, and so does every other client (spec, "Events").
  router.get('/output/cluster', (ctx) => {
    if (events.subscriberCount >= sse.clientsMax) {
      throw new TributaryError(503, 'TOO_MANY_CLIENTS', `at most ${sse.clientsMax} clients may follow /output/cluster`);
    }
    const subscription = events.subscribe();
    const channel = openSse(ctx, sse);
    events.publish({ type: 'CLUSTER_STATE', state: clusterDocument() });
    void forward(subscription, channel);
  });

  router.get('/cluster', (ctx) => {
    ctx.body = clusterDocument();
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

async function forward(subscription: Subscription, channel: SseChannel): Promise<void> {
  void channel.closed.then(() => subscription.close());
  for await (const event of subscription) {
    if (!channel.send(event)) break;
  }
  channel.close();
}
