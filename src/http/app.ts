// The Koa application: error mapping, JSON bodies, and one router per resource family.

import Koa from 'koa';
import type Router from '@koa/router';
import type { Logger } from 'pino';
import { accessMiddleware, type AccessOptions } from './access-log.js';
import { DEFAULT_JSON_DEPTH_MAX, jsonBodyMiddleware, jsonResponseMiddleware } from './body.js';
import { corsMiddleware } from './cors.js';
import { errorMiddleware, type ErrorRenderer } from './errors.js';

export interface AppOptions {
  log: Logger;
  bodyBytesMax: number;
  /** Deepest nesting of a JSON body; deeper is a 400 before it is parsed. */
  jsonDepthMax?: number;
  /** Requests whose body their route decodes and parses (ingest): given as `ctx.request.bodyBytes`. */
  keepsBytes?: (ctx: Koa.Context) => boolean;
  routers: Router[];
  /** Error formats of interfaces mounted under their own path prefix. */
  errorRenderers?: ErrorRenderer[];
  /** Access log lines and HTTP metrics. */
  access?: Omit<AccessOptions, 'log'>;
  /** Origins allowed to call from browsers ("*": any); none: no CORS headers. */
  corsOrigins?: readonly string[];
  /** Checks the caller before any body is read (http/authentication.ts). */
  authentication?: Koa.Middleware;
  /** Runs before bodies are read: refuses what the node cannot serve now (serving-gate.ts). */
  gate?: Koa.Middleware;
}

export function createApp({ log, bodyBytesMax, jsonDepthMax = DEFAULT_JSON_DEPTH_MAX, routers, errorRenderers = [], access, corsOrigins = [], authentication, gate, keepsBytes }: AppOptions): Koa {
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
  if (authentication !== undefined) app.use(authentication);
  if (gate !== undefined) app.use(gate);
  app.use(jsonBodyMiddleware(bodyBytesMax, jsonDepthMax, keepsBytes));
  for (const router of routers) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
