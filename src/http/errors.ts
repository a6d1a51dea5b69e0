// The one error middleware: domain errors become their status and a body; anything unknown is a
// 500 with no details, and is logged. No response ever carries a stack trace. The platform
// interface answers `{ error: { type, message } }` (docs/platform-interface.md, "Errors"); an
// interface mounted elsewhere (the brain interface's RFC 7807 problems) renders the same error
// shape its own way, chosen by path prefix.

import type Koa from 'koa';
import type { Logger } from 'pino';
import { TributaryError, type ErrorShape } from '../lib/errors.js';
import { setVersionHeaders } from './version-header.js';

/** Renders errors under one path prefix its own way (api-v1/problems.ts's problemRenderer). */
export interface ErrorRenderer {
  pathPrefix: string;
  render(ctx: Koa.Context, error: ErrorShape): void;
}

export function errorMiddleware(log: Logger, renderers: readonly ErrorRenderer[] = []): Koa.Middleware {
  const renderFor = (ctx: Koa.Context) => renderers.find((renderer) => ctx.path.startsWith(renderer.pathPrefix))?.render ?? renderPlatformError;
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status >= 400 && ctx.body === undefined) {
        // Nothing answered (no route), or the router refused the method.
        const status = ctx.status;
        const message = status === 404 ? `no route for ${ctx.method} ${ctx.path}` : ctx.message;
        renderFor(ctx)(ctx, { status, code: status === 404 ? 'NOT_FOUND' : 'HTTP_ERROR', message });
        // Koa makes an implicit status 200 once a body is set; keep the one we had.
        ctx.status = status;
      }
    } catch (error) {
      const shape = toShape(error, ctx, log);
      renderFor(ctx)(ctx, shape);
      ctx.status = shape.status;
      if (shape.status === 413) ctx.set('Connection', 'close');
    }
  };
}

function toShape(error: unknown, ctx: Koa.Context, log: Logger): ErrorShape {
  if (error instanceof TributaryError) {
    return { status: error.status, code: error.code, message: error.message, details: error.details };
  }
  const status = (error as { status?: unknown }).status;
  if (typeof status === 'number' && status >= 400 && status < 500 && (error as { expose?: unknown }).expose) {
    // Errors of Koa and its helpers that are safe to show (http-errors with expose).
    return { status, code: 'HTTP_ERROR', message: (error as Error).message };
  }
  if (error instanceof URIError) return { status: 400, code: 'BAD_REQUEST', message: 'malformed percent-encoding in the path' };
  log.error({ err: error, method: ctx.method, path: ctx.path }, 'unexpected error');
  return { status: 500, code: 'INTERNAL', message: 'internal error; see the node log' };
}

function renderPlatformError(ctx: Koa.Context, error: ErrorShape): void {
  ctx.status = error.status;
  if (error.code === 'VERSION_CONFLICT' && ctx.get('Valo-Config-Version') !== '') {
    // Clients that send Valo-Config-Version find the current version with a regular
    // expression over the raw text, after their HTTP library has turned any JSON body into
    // an object: they get the message as plain text.
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = `${error.message}\n`;
  } else {
    ctx.body = { error: { type: error.code, message: error.message }, ...error.details };
  }
  const current = error.details?.currentVersion;
  if (typeof current === 'string') setVersionHeaders(ctx, current);
}
