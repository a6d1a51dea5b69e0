// The Koa application: error mapping, JSON bodies, and one router per resource family.

import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { accessMiddleware, type AccessOptions } from './access-log.js';
import { jsonBodyMiddleware, jsonResponseMiddleware } from './body.js';
import { corsMiddleware } from './cors.js';
import { errorMiddleware, type ErrorRenderer } from './errors.js';

export interface AppOptions {
  log: Logger;
  bodyBytesMax: number;
  routers: Router[];
  /** Error formats of interfaces mounted under their own path prefix. */
  errorRenderers?: ErrorRenderer[];
  /** Access log lines and HTTP metrics (issue 14). */
  access?: Omit<AccessOptions, 'log'>;
  /** Origins allowed to call from browsers ("*": any); none: no CORS headers. */
  corsOrigins?: readonly string[];
}

export function createApp({ log, bodyBytesMax, routers, errorRenderers = [], access, corsOrigins = [] }: AppOptions): Koa {
  const app = new Koa();
  app.proxy = false;
  // Errors are answered by errorMiddleware; Koa's own handler would only log them again.
  app.silent = true;
  // Outermost, so that errors and preflights carry the CORS headers too.
  const cors = corsMiddleware(corsOrigins);
  if (cors !== undefined) app.use(cors);
  if (access !== undefined) app.use(accessMiddleware({ log, ...access }));
  app.use(jsonResponseMiddleware());
  app.use(errorMiddleware(log, errorRenderers));
  app.use(jsonBodyMiddleware(bodyBytesMax));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
