// The live console: a small hand-written page (console/ at the package root: index.html,
// console.js, console.css) served by every node, with no other origin, and the one view it
// reads besides the platform interface and the operators' tables: the ring. The page follows
// GET /output/cluster for nodes and tenants, and counts stored payloads with GET
// /_cat/streams?format=json.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Router from '@koa/router';
import type { RingView } from '../../console/ring-view.js';
import { NotFoundError } from '../../errors.js';
import { quoteForMessage } from '../../json.js';
import { packageRoot } from '../../package-root.js';
import { CONSOLE_PATH, send } from './node-pages.js';

export const CONSOLE_RING_PATH = `${CONSOLE_PATH}/data/ring`;

/** Same origin only, no inline script or style. */
export const CONSOLE_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The page's files by name. A Map: the name comes from the request path, and an object would answer `constructor`. */
const FILES = new Map<string, string>([
  ['index.html', 'text/html; charset=utf-8'],
  ['console.js', 'text/javascript; charset=utf-8'],
  ['console.css', 'text/css; charset=utf-8'],
]);

/** The page's files, read once from the package. */
export class ConsoleAssets {
  private readonly cache = new Map<string, Buffer>();

  constructor(private readonly folder = join(packageRoot(), 'console')) {}

  file(name: string): { contentType: string; body: Buffer } | undefined {
    const contentType = FILES.get(name);
    if (contentType === undefined) return undefined;
    let body = this.cache.get(name);
    if (body === undefined) {
      body = readFileSync(join(this.folder, name));
      this.cache.set(name, body);
    }
    return { contentType, body };
  }
}

export interface ConsoleRoutesDeps {
  assets: ConsoleAssets;
  ring(): RingView;
}

export function consoleRoutes({ assets, ring }: ConsoleRoutesDeps): Router {
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

  return router;
}
