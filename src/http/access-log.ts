// One access log line per request (method, path, status, ms) at a configurable level, and
// the same figures for the HTTP metrics. Both are taken when the response is finished (or
// the client went away), so the status is the one sent and an SSE request's time is its
// connection's. The route family comes from the route that matched, never from the raw
// path, so the metric's labels stay bounded.

import { performance } from 'node:perf_hooks';
import type Koa from 'koa';
import type { Logger } from '../lib/log.js';
import { routeFamily } from '../metrics/metrics.js';

export type AccessLogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface AccessOptions {
  log: Logger;
  /** The level of access lines; `silent` writes none. */
  level: AccessLogLevel;
  observe?(family: string, method: string, status: number, seconds: number): void;
}

/** Longer paths are cut in the log line (a client chooses the path). */
const LOGGED_PATH_LENGTH_MAX = 512;

export function accessMiddleware({ log, level, observe }: AccessOptions): Koa.Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    let recorded = false;
    const record = () => {
      if (recorded) return;
      recorded = true;
      const ms = performance.now() - started;
      const status = ctx.res.statusCode;
      observe?.(routeFamily((ctx as { _matchedRoute?: string | RegExp })._matchedRoute), ctx.method, status, ms / 1000);
      if (level !== 'silent') {
        const path = ctx.path.length > LOGGED_PATH_LENGTH_MAX ? `${ctx.path.slice(0, LOGGED_PATH_LENGTH_MAX)}…` : ctx.path;
        log[level]({ method: ctx.method, path, status, ms: Math.round(ms * 10) / 10 }, 'request');
      }
    };
    ctx.res.once('finish', record);
    ctx.res.once('close', record);
    await next();
  };
}
