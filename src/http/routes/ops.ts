// Routes for operators: liveness, readiness, Prometheus metrics and the _cat
// tables. Thin: every answer is computed by the ops service handed in.

import Router from '@koa/router';
import type Koa from 'koa';
import { parseCatRequest, renderCat, type CatColumn, type Cell } from '../../ops/cat-table.js';
import { NODE_COLUMNS, STREAM_COLUMNS, TRANSFER_COLUMNS } from '../../ops/cat-views.js';
import type { ReadinessBody } from '../../ops/ops-service.js';

export interface OpsRoutesDeps {
  health(): Record<string, unknown>;
  readiness(): ReadinessBody;
  metrics: { text(): Promise<string>; readonly contentType: string };
  catNodes(): Promise<Array<Record<string, Cell>>>;
  catTransfers(): Array<Record<string, Cell>>;
  catStreams(): Promise<Array<Record<string, Cell>>>;
}

const CAT_TABLES = ['/_cat/nodes', '/_cat/transfers', '/_cat/streams'];

export function opsRoutes(deps: OpsRoutesDeps): Router {
  const router = new Router();
  router.get('/health', (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = deps.health();
  });
  router.get('/ready', (ctx) => {
    const readiness = deps.readiness();
    ctx.set('Cache-Control', 'no-store');
    ctx.status = readiness.ready ? 200 : 503;
    ctx.body = readiness;
  });
  router.get('/metrics', async (ctx) => {
    ctx.set('Content-Type', deps.metrics.contentType);
    ctx.body = await deps.metrics.text();
  });
  router.get('/_cat', (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = ['=^.^=', ...CAT_TABLES].join('\n') + '\n';
  });
  router.get('/_cat/nodes', async (ctx) => answerCat(ctx, NODE_COLUMNS, () => deps.catNodes()));
  router.get('/_cat/transfers', async (ctx) => answerCat(ctx, TRANSFER_COLUMNS, async () => deps.catTransfers()));
  router.get('/_cat/streams', async (ctx) => answerCat(ctx, STREAM_COLUMNS, () => deps.catStreams()));
  return router;
}

async function answerCat(ctx: Koa.Context, columns: CatColumn[], rows: () => Promise<Array<Record<string, Cell>>>): Promise<void> {
  // Parse first: a bad parameter is a 400 before any counting starts.
  const request = parseCatRequest(ctx.query, columns);
  const { body, type } = renderCat(request, request.help ? [] : await rows());
  ctx.type = type;
  ctx.body = body;
}
