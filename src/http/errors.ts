// The one error middleware (STYLE.md, "From Koa"): domain errors become their status and a
// JSON body `{ error: { type, message } }`; anything unknown is a 500 with no details, and
// is logged. No response ever carries a stack trace.

import type Koa from 'koa';
import type { Logger } from 'pino';
import { TributaryError } from '../errors.js';
import { setVersionHeaders } from './version-header.js';

export function errorMiddleware(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status >= 400 && ctx.body === undefined) {
        // Nothing answered (no route), or the router refused the method.
        const status = ctx.status;
        const message = status === 404 ? `no route for ${ctx.method} ${ctx.path}` : ctx.message;
        ctx.body = { error: { type: status === 404 ? 'NOT_FOUND' : 'HTTP_ERROR', message } };
        // Koa makes an implicit status 200 once a body is set; keep the one we had.
        ctx.status = status;
      }
    } catch (error) {
      respondWithError(ctx, error, log);
    }
  };
}

function respondWithError(ctx: Koa.Context, error: unknown, log: Logger): void {
  if (error instanceof TributaryError) {
    ctx.status = error.status;
    ctx.body = { error: { type: error.code, message: error.message }, ...error.details };
    const current = error.details?.currentVersion;
    if (typeof current === 'string') setVersionHeaders(ctx, current);
    if (error.status === 413) ctx.set('Connection', 'close');
    return;
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (error as { expose?: unknown }).expose) {
    // Errors of Koa and its helpers that are safe to show (http-errors with expose).
    ctx.status = status;
    ctx.body = { error: { type: 'HTTP_ERROR', message: (error as Error).message } };
    return;
  }
  if (error instanceof URIError) {
    ctx.status = 400;
    ctx.body = { error: { type: 'BAD_REQUEST', message: 'malformed percent-encoding in the path' } };
    return;
  }
  log.error({ err: error, method: ctx.method, path: ctx.path }, 'unexpected error');
  ctx.status = 500;
  ctx.body = { error: { type: 'INTERNAL', message: 'internal error; see the node log' } };
}
