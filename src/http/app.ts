// The Koa application: error mapping, JSON bodies, and one router per resource family.

import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { DEFAULT_JSON_DEPTH_MAX, jsonBodyMiddleware } from './body.js';
import { errorMiddleware, type ErrorRenderer } from './errors.js';

export interface AppOptions {
  log: Logger;
  bodyBytesMax: number;
  /** Deepest nesting of a JSON body; deeper is a 400 before it is parsed. */
  jsonDepthMax?: number;
  routers: Router[];
  /** Error formats of interfaces mounted under their own path prefix. */
  errorRenderers?: ErrorRenderer[];
  /** Checks the caller before any body is read (http/authentication.ts). */
  authentication?: Koa.Middleware;
}

export function createApp({ log, bodyBytesMax, jsonDepthMax = DEFAULT_JSON_DEPTH_MAX, routers, errorRenderers = [], authentication }: AppOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  // Errors are answered by errorMiddleware; Koa's own handler would only log them again.
  app.silent = true;
  app.use(errorMiddleware(log, errorRenderers));
  if (authentication !== undefined) app.use(authentication);
  app.use(jsonBodyMiddleware(bodyBytesMax, jsonDepthMax));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
