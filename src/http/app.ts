// The Koa application: error mapping, JSON bodies, and one router per resource family.

import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { jsonBodyMiddleware } from './body.js';
import { errorMiddleware, type ErrorRenderer } from './errors.js';

export interface AppOptions {
  log: Logger;
  bodyBytesMax: number;
  routers: Router[];
  /** Error formats of interfaces mounted under their own path prefix. */
  errorRenderers?: ErrorRenderer[];
  /** Checks the caller before any body is read (http/authentication.ts). */
  authentication?: Koa.Middleware;
}

export function createApp({ log, bodyBytesMax, routers, errorRenderers = [], authentication }: AppOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  // Errors are answered by errorMiddleware; Koa's own handler would only log them again.
  app.silent = true;
  app.use(errorMiddleware(log, errorRenderers));
  if (authentication !== undefined) app.use(authentication);
  app.use(jsonBodyMiddleware(bodyBytesMax));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
