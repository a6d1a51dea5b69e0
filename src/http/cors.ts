// Cross-origin requests: browser dashboards served from another origin call every endpoint and
// read the SSE channels. @koa/cors does the protocol; this module decides the origin from the
// configured list: "*" answers any origin with `*` (what Valo answered), otherwise a listed
// origin is echoed (with `Vary: Origin`) and any other gets no CORS headers, so the browser
// refuses it. An empty list turns CORS off.

import cors from '@koa/cors';
import type Koa from 'koa';

/** Both version headers, which clients read on GET and PUT of definitions. */
const EXPOSED_HEADERS = ['Service-Config-Version', 'Valo-Config-Version', 'Content-Type', 'Location'];
const ALLOWED_HEADERS = ['Content-Type', 'Authorization', 'Service-Config-Version', 'Valo-Config-Version', 'Last-Event-ID', 'Cache-Control'];
const ALLOWED_METHODS = ['GET', 'HEAD', 'PUT', 'POST', 'DELETE', 'PATCH', 'OPTIONS'];
/** How long a browser may reuse a preflight's answer. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

export function corsMiddleware(origins: readonly string[]): Koa.Middleware | undefined {
  if (origins.length === 0) return undefined;
  const any = origins.includes('*');
  const listed = new Set(origins);
  return cors({
    origin: (ctx) => {
      const origin = ctx.get('Origin');
      if (origin === '') return '';
      if (any) return '*';
      return listed.has(origin) ? origin : '';
    },
    allowMethods: ALLOWED_METHODS,
    allowHeaders: ALLOWED_HEADERS,
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    keepHeadersOnError: true,
  });
}
