// Routes of the Execution table (spec, "Execution") and the output channels that serve
// query results as server-sent events (docs/query-language.md, "Outputs"): parse, call one
// service, shape the answer.

import Router from '@koa/router';
import { NotFoundError, TributaryError } from '../../lib/errors.js';
import type { ExecutionService } from '../../sessions/execution-service.js';
import type { OutputRegistry } from '../../sessions/output-registry.js';
import { openSse, type SseOptions } from '../sse.js';

const SESSION = '/execution/:tenant/sessions/:id';

export interface ExecutionRoutesDeps {
  readonly execution: ExecutionService;
  readonly outputs: OutputRegistry;
  /** Whether an output id belongs to a query of a session of the tenant. */
  outputExists(tenant: string, outputId: string): boolean;
  readonly sse: SseOptions & { clientsMax: number };
}

export function executionRoutes(deps: ExecutionRoutesDeps): Router {
  const router = new Router();
  sessionRoutes(router, deps.execution);
  queryRoutes(router, deps.execution);
  outputRoute(router, deps);
  return router;
}

/** A session, its domain and its variables. */
function sessionRoutes(router: Router, execution: ExecutionService): void {
  router.post('/execution/:tenant/sessions', async (ctx) => {
    ctx.body = await execution.create(ctx.params.tenant!);
  });
  router.get(SESSION, (ctx) => {
    ctx.body = execution.get(ctx.params.tenant!, ctx.params.id!);
  });
  router.put(SESSION, async (ctx) => {
    ctx.body = await execution.put(ctx.params.tenant!, ctx.params.id!, ctx.request.body);
  });
  router.delete(SESSION, async (ctx) => {
    await execution.delete(ctx.params.tenant!, ctx.params.id!);
    ctx.body = {};
  });

  router.get(`${SESSION}/domain`, (ctx) => {
    ctx.body = execution.getDomain(ctx.params.tenant!, ctx.params.id!);
  });
  router.put(`${SESSION}/domain`, async (ctx) => {
    ctx.body = await execution.putDomain(ctx.params.tenant!, ctx.params.id!, ctx.request.body);
  });
  router.delete(`${SESSION}/domain`, async (ctx) => {
    ctx.body = await execution.deleteDomain(ctx.params.tenant!, ctx.params.id!);
  });

  router.put(`${SESSION}/variables`, async (ctx) => {
    ctx.body = await execution.putVariable(ctx.params.tenant!, ctx.params.id!, ctx.request.body);
  });
  router.get(`${SESSION}/variables/:variableId`, (ctx) => {
    ctx.body = execution.getVariable(ctx.params.tenant!, ctx.params.id!, ctx.params.variableId!);
  });
  router.delete(`${SESSION}/variables/:variableId`, async (ctx) => {
    ctx.body = await execution.deleteVariable(ctx.params.tenant!, ctx.params.id!, ctx.params.variableId!);
  });
}

/** A session's queries, and starting and stopping one. */
function queryRoutes(router: Router, execution: ExecutionService): void {
  router.put(`${SESSION}/queries`, async (ctx) => {
    ctx.body = await execution.putQuery(ctx.params.tenant!, ctx.params.id!, ctx.request.body);
  });
  router.get(`${SESSION}/queries`, async (ctx) => {
    ctx.body = await execution.queries(ctx.params.tenant!, ctx.params.id!);
  });
  router.get(`${SESSION}/queries/:queryId`, async (ctx) => {
    ctx.body = await execution.query(ctx.params.tenant!, ctx.params.id!, ctx.params.queryId!);
  });
  router.delete(`${SESSION}/queries/:queryId`, async (ctx) => {
    ctx.body = await execution.deleteQuery(ctx.params.tenant!, ctx.params.id!, ctx.params.queryId!);
  });
  router.put(`${SESSION}/queries/:queryId/_start`, async (ctx) => {
    ctx.body = await execution.start(ctx.params.tenant!, ctx.params.id!, ctx.params.queryId!);
  });
  router.put(`${SESSION}/queries/:queryId/_stop`, async (ctx) => {
    ctx.body = await execution.stop(ctx.params.tenant!, ctx.params.id!, ctx.params.queryId!);
  });
}

/** An output channel followed as server-sent events, with at most `sse.clientsMax` clients at once. */
function outputRoute(router: Router, { outputs, outputExists, sse }: ExecutionRoutesDeps): void {
  // An output's response ends with its query (docs/query-language.md, "Outputs"): after
  // `eos`, or when the query stops or its session goes. An EventSource reconnects after an
  // end, sending the id of the last event it had as Last-Event-ID: when that is the end of
  // a channel that has not started again, 204 tells it not to come back (the SSE
  // standard's way); a deleted session's output is a 404, which stops it as well.
  let clients = 0;
  router.get('/output/:tenant/:outputId', async (ctx) => {
    const { tenant, outputId } = ctx.params;
    if (!outputExists(tenant!, outputId!)) throw new NotFoundError(`no output /output/${tenant}/${outputId}`);
    const lastEventId = ctx.get('last-event-id');
    if (lastEventId !== '' && (await outputs.endedAt(outputId!, lastEventId))) {
      ctx.status = 204;
      return;
    }
    if (clients >= sse.clientsMax) throw new TributaryError(503, 'TOO_MANY_CLIENTS', `at most ${sse.clientsMax} clients may follow outputs of this node`);
    clients += 1;
    const channel = openSse(ctx, sse);
    let dropped = false;
    const unsubscribe = await outputs.subscribe(
      outputId!,
      (_message, json, eventId) => {
        // A client that stopped reading is dropped by the SSE channel; stop feeding it.
        if (!dropped && !channel.sendJson(json, eventId)) dropped = true;
      },
      () => channel.close(),
    );
    void channel.closed.then(() => {
      unsubscribe();
      clients -= 1;
    });
  });
}
