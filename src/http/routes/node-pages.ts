// The node's own pages: GET / says what the node is and where its pages are, and
// the platform interface's OpenAPI document and its Swagger UI page (served by the node from
// the swagger-ui-dist package, as /api/v1/docs is: no other origin).

import Router from '@koa/router';
import type Koa from 'koa';
import { DOCS_CONTENT_SECURITY_POLICY, DOCS_PATH as BRAIN_DOCS_PATH, type DocsAsset, type DocsAssets } from '../../api-v1/docs.js';
import { NotFoundError } from '../../lib/errors.js';
import { quoteForMessage } from '../../lib/json.js';
import { PLATFORM_DOCS_PATH, PLATFORM_OPENAPI_PATH } from '../openapi/document.js';

export const CONSOLE_PATH = '/console';

export interface NodeIdentity {
  name: string;
  state: string;
  version: { number: string; revision: string };
}

export interface NodePagesDeps {
  identity(): NodeIdentity;
  /** Built on first use (about 0.1 s), not at every start. */
  openapi(): Record<string, unknown>;
  docs: DocsAssets;
}

const LINKS = {
  console: CONSOLE_PATH,
  docs: PLATFORM_DOCS_PATH,
  openapi: PLATFORM_OPENAPI_PATH,
  brainApiDocs: BRAIN_DOCS_PATH,
  cluster: '/cluster',
  events: '/output/cluster',
};

export function nodePageRoutes(deps: NodePagesDeps): Router {
  const router = new Router();

  // Browsers get a page of links; curl and programs (Accept */* or JSON) get JSON.
  router.get('/', (ctx) => {
    const identity = deps.identity();
    if (ctx.accepts('json', 'html') === 'html') {
      send(ctx, { contentType: 'text/html; charset=utf-8', body: indexPage(identity) });
      ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
      return;
    }
    ctx.body = { name: identity.name, state: identity.state, version: identity.version, tagline: 'Tributary: a clustered streaming data platform', links: LINKS };
  });

  let openapi: Record<string, unknown> | undefined;
  router.get(PLATFORM_OPENAPI_PATH, (ctx) => {
    ctx.body = openapi ??= deps.openapi();
  });
  router.get(PLATFORM_DOCS_PATH, (ctx) => {
    send(ctx, deps.docs.page());
    ctx.set('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
  });
  router.get(`${PLATFORM_DOCS_PATH}/:asset`, (ctx) => {
    const asset = deps.docs.asset(ctx.params.asset!);
    if (asset === undefined) throw new NotFoundError(`no documentation file ${quoteForMessage(ctx.params.asset!)}`);
    send(ctx, asset);
    ctx.set('Cache-Control', 'public, max-age=3600');
  });

  return router;
}

export function send(ctx: Koa.Context, asset: DocsAsset): void {
  ctx.body = asset.body;
  ctx.type = asset.contentType;
  ctx.set('X-Content-Type-Options', 'nosniff');
}

function indexPage(identity: NodeIdentity): string {
  const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  const link = (href: string, text: string, what: string) => `<li><a href="${href}">${text}</a>: ${what}</li>`;
  return `<!DOCTYPE html>
<html lang="en">
  <head><meta charset="utf-8"><title>Tributary ${escape(identity.name)}</title>
  <style>body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem; color: #1d2733 } code { background: #eef1f4; padding: 0 .3em }</style></head>
  <body>
    <h1>Tributary node <code>${escape(identity.name)}</code></h1>
    <p>State <strong>${escape(identity.state)}</strong>, version ${escape(identity.version.number)} (${escape(identity.version.revision)}).</p>
    <ul>
      ${link(CONSOLE_PATH, 'Console', 'the ring, nodes, transfers, streams, search and a live query, as they change')}
      ${link(PLATFORM_DOCS_PATH, 'Platform interface', 'every route, tried from the browser')}
      ${link(PLATFORM_OPENAPI_PATH, 'OpenAPI document', 'the same, as OpenAPI 3.1')}
      ${link(BRAIN_DOCS_PATH, 'Brain management interface', '/api/v1')}
      ${link('/cluster', 'GET /cluster', 'nodes and tenants as JSON')}
    </ul>
  </body>
</html>
`;
}
