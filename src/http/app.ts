// The Koa application: error mapping, JSON bodies, and one router per resource family.

import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { accessMiddleware, type AccessOptions } from './access-log.js';
import { jsonBodyMiddleware } from './body.js';
import { errorMiddleware, type ErrorRenderer } from './errors.js';

export interface AppOptions {
  log: Logger;
  bodyBytesMax: number;
  routers: Router[];
  /** Error formats of interfaces mounted under their own path prefix. */
  errorRenderers?: ErrorRenderer[];
  /** Access log lines and HTTP metrics (issue 14). */
  access?: Omit<AccessOptions, 'log'>;
}

export function createApp({ log, bodyBytesMax, routers, errorRenderers = [], access }: AppOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  // Errors are answered by errorMiddleware; Koa's own handler would only log them again.
  app.silent = true;
  if (access !== undefined) app.use(accessMiddleware({ log, ...access }));
  app.use(errorMiddleware(log, errorRenderers));
  app.use(jsonBodyMiddleware(bodyBytesMax));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
