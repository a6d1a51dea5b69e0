// The live console: a small hand-written page (console/ at the package
// root: index.html, console.js, console.css) served by every node, with no other origin, and
// the one view it reads besides the platform interface and the operators' tables: the ring.
// The page follows GET /output/cluster for nodes and tenants, counts stored payloads
// with GET /_cat/streams?format=json, and charts every member's recent figures from
// GET /console/data/history with uPlot (the uplot package, served from node_modules).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import Router from '@koa/router';
import type { ClusterHistory } from '../../node-history/history.js';
import type { RingView } from '../../ops/ring-view.js';
import { NotFoundError } from '../../lib/errors.js';
import { quoteForMessage } from '../../lib/json.js';
import { packageRoot } from '../../lib/package-root.js';
import { CONSOLE_PATH, send } from './node-pages.js';

export const CONSOLE_RING_PATH = `${CONSOLE_PATH}/data/ring`;
export const CONSOLE_HISTORY_PATH = `${CONSOLE_PATH}/data/history`;

/** Same origin only, no inline script or style. */
export const CONSOLE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Where a file of the page comes from: the console's folder, or the uplot package's dist/. */
type Origin = 'console' | 'uplot';

/** The page's files by name. A Map: the name comes from the request path, and an object would answer `constructor`. */
const FILES = new Map<string, { contentType: string; origin: Origin }>([
  ['index.html', { contentType: 'text/html; charset=utf-8', origin: 'console' }],
  ['console.js', { contentType: 'text/javascript; charset=utf-8', origin: 'console' }],
  ['console.css', { contentType: 'text/css; charset=utf-8', origin: 'console' }],
  ['uPlot.iife.min.js', { contentType: 'text/javascript; charset=utf-8', origin: 'uplot' }],
  ['uPlot.min.css', { contentType: 'text/css; charset=utf-8', origin: 'uplot' }],
]);

/** The uplot package's built files (the package has no `exports`, so its package.json resolves). */
function uplotFolder(): string {
  return join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
}

/** The page's files, read once from the package (uPlot's from its npm package, as installed). */
export class ConsoleAssets {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly folders: Record<Origin, string> = { console: join(packageRoot(), 'console'), uplot: uplotFolder() }) {}

  file(name: string): { contentType: string; body: Buffer } | undefined {
    const known = FILES.get(name);
    if (known === undefined) return undefined;
    let body = this.cache.get(name);
    if (body === undefined) {
      body = readFileSync(join(this.folders[known.origin], name));
      this.cache.set(name, body);
    }
    return { contentType: known.contentType, body };
  }
}

export interface ConsoleRoutesDeps {
  assets: ConsoleAssets;
  ring(): RingView;
  /** Every member's recent figures and readiness, each asked within a short deadline. */
  history(): Promise<ClusterHistory>;
}

export function consoleRoutes({ assets, ring, history }: ConsoleRoutesDeps): Router {
  const router = new Router();

  router.get(CONSOLE_PATH, (ctx) => {
    send(ctx, assets.file('index.html')!);
    ctx.set('Content-Security-Policy', CONSOLE_CONTENT_SECURITY_POLICY);
  });
  router.get(`${CONSOLE_PATH}/:asset`, (ctx) => {
    const file = ctx.params.asset === 'index.html' ? undefined : assets.file(ctx.params.asset!);
    if (file === undefined) throw new NotFoundError(`no console file ${quoteForMessage(ctx.params.asset!)}`);
    send(ctx, file);
  });
  router.get(CONSOLE_RING_PATH, (ctx) => {
    ctx.body = ring();
  });
  router.get(CONSOLE_HISTORY_PATH, async (ctx) => {
    ctx.body = await history();
  });

  return router;
}
