// Routes of the Cluster table (docs/platform-interface.md, "Cluster") served here: the node
// table as it is, and tenants.

import Router from '@koa/router';
import type { ClusterEventBus, Subscription } from '../../cluster/events.js';
import type { MembershipService } from '../../cluster/membership-service.js';
import type { TransferAction } from '../../protocol/cluster-types.js';
import type { ClusterRepair } from '../../repair/cluster-repair.js';
import type { NodeTable } from '../../cluster/node-table.js';
import type { TenantService } from '../../replicated-definitions/tenants.js';
import { TributaryError } from '../../lib/errors.js';
import { openSse, type SseChannel, type SseOptions } from '../sse.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';

export interface ClusterRoutesDeps {
  nodes: NodeTable;
  tenants: TenantService;
  events: ClusterEventBus;
  membership: MembershipService;
  repair: ClusterRepair;
  /** This node's repair runs and pending hand-offs, as rows of GET /cluster/transfers. */
  localActions(): TransferAction[];
  /** Why a running transfer has made no progress lately (null while it moves), from the transfer watch. */
  stalledBecause(transferId: string): string | null;
  sse: SseOptions & { clientsMax: number };
}

export function clusterRoutes(deps: ClusterRoutesDeps): Router {
  const router = new Router();
  changeRoutes(router, deps);
  eventRoute(router, deps);
  tableRoutes(router, deps);
  tenantRoutes(router, deps.tenants);
  return router;
}

/** The document of GET /cluster: the node table and the tenants. */
function clusterDocument({ nodes, tenants }: ClusterRoutesDeps) {
  return { nodes: nodes.list(), tenants: tenants.list() };
}

/** Changes of membership, the join token, transfers in flight and repair runs. */
function changeRoutes(router: Router, deps: ClusterRoutesDeps): void {
  const { membership, repair, localActions, stalledBecause } = deps;
  // Both answer as GET /cluster (spec), plus `changes`: whether each command started or
  // waits in the queue behind the change in flight (docs/cluster.md, "Several changes").
  router.post('/cluster/nodes', async (ctx) => {
    const changes = await membership.addNodes(ctx.request.body);
    ctx.body = { ...clusterDocument(deps), changes };
  });
  router.delete('/cluster/nodes/:name', async (ctx) => {
    const change = await membership.removeNode(ctx.params.name!);
    ctx.body = { ...clusterDocument(deps), changes: [change] };
  });
  router.get('/cluster/join-token', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { joinToken: membership.joinToken() };
  });
  router.get('/cluster/transfers', (ctx) => {
    const transfers = membership.transfers().map((action) => ({ ...action, info: { ...action.info, stalled: action.complete ? null : stalledBecause(action.info.id) } }));
    ctx.body = { actions: [...transfers, ...localActions()], ...membership.changeQueue() };
  });
  // Anti-entropy on demand: every member compares its partitions with the other owners; the
  // run's progress is read back under its id.
  router.post('/cluster/repair', async (ctx) => {
    ctx.status = 202;
    ctx.body = { repair: await repair.start(ctx.request.body) };
  });
  router.get('/cluster/repair/:id', async (ctx) => {
    ctx.body = { repair: await repair.status(ctx.params.id!) };
  });
}

/** The cluster's events as server-sent events, with at most `sse.clientsMax` clients at once. */
function eventRoute(router: Router, deps: ClusterRoutesDeps): void {
  const { events, sse } = deps;
  // Every client gets CLUSTER_STATE on connect, and so does every other client (spec, "Events").
  router.get('/output/cluster', (ctx) => {
    if (events.subscriberCount >= sse.clientsMax) {
      throw new TributaryError(503, 'TOO_MANY_CLIENTS', `at most ${sse.clientsMax} clients may follow /output/cluster`);
    }
    const subscription = events.subscribe();
    const channel = openSse(ctx, sse);
    events.publish({ type: 'CLUSTER_STATE', state: clusterDocument(deps) });
    void forward(subscription, channel);
  });
}

/** The node table as it is. */
function tableRoutes(router: Router, deps: ClusterRoutesDeps): void {
  const { nodes } = deps;
  router.get('/cluster', (ctx) => {
    ctx.body = clusterDocument(deps);
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
}

function tenantRoutes(router: Router, tenants: TenantService): void {
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
}

async function forward(subscription: Subscription, channel: SseChannel): Promise<void> {
  void channel.closed.then(() => subscription.close());
  for await (const event of subscription) {
    if (!channel.send(event)) break;
  }
  channel.close();
}
