// Interactive documentation (the platform's at /docs): Swagger UI from the swagger-ui-dist
// package, served by the node itself so it works without internet. Only the files the page
// needs are served (no directory is exposed), read once and kept in memory. The page's own
// script is a file too, so the Content-Security-Policy can forbid inline scripts and every
// other origin.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const DOCS_PATH = '/api/v1/docs';
export const OPENAPI_PATH = '/api/v1/openapi.json';

export interface DocsAsset {
  contentType: string;
  body: Buffer | string;
}

/**
 * Swagger UI's files this page uses, by the name they are served under. A Map: the name
 * comes from the request path, and an object would answer `constructor` or `__proto__`.
 */
const PACKAGED_ASSETS = new Map<string, string>([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['favicon-32x32.png', 'image/png'],
]);

export interface DocsPageOptions {
  /** Where the page is served; its files are served below it. */
  docsPath: string;
  /** The OpenAPI document the page renders. */
  openapiPath: string;
  title: string;
}

const BRAIN_API_PAGE: DocsPageOptions = { docsPath: DOCS_PATH, openapiPath: OPENAPI_PATH, title: 'Tributary brain management interface (/api/v1)' };

function initialiser(openapiPath: string): string {
  return `window.onload = function () {
  window.ui = SwaggerUIBundle({
    url: '${openapiPath}',
    dom_id: '#swagger-ui',
    deepLinking: true,
    // No call to the public validator: the page must work without internet.
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  });
};
`;
}

function page({ docsPath, title }: DocsPageOptions): string {
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>${title}</title>
    <link rel="stylesheet" href="${docsPath}/swagger-ui.css">
    <link rel="icon" type="image/png" href="${docsPath}/favicon-32x32.png">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${docsPath}/swagger-ui-bundle.js"></script>
    <script src="${docsPath}/initialiser.js"></script>
  </body>
</html>
`;
}

/** Same origin only; Swagger UI sets inline styles and shows data: images. */
export const DOCS_CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Swagger UI's files, read once per process: every docs page shares them. */
const packagedCache = new Map<string, DocsAsset>();

/** One Swagger UI page (the brain interface's by default; the platform's at /docs). */
export class DocsAssets {
  private readonly cache = packagedCache;
  private readonly folder = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  private readonly html: string;
  private readonly script: string;

  constructor(options: DocsPageOptions = BRAIN_API_PAGE) {
    this.html = page(options);
    this.script = initialiser(options.openapiPath);
  }

  page(): DocsAsset {
    return { contentType: 'text/html; charset=utf-8', body: this.html };
  }

  /** A file of the page by name, or undefined when it is not one of them. */
  asset(name: string): DocsAsset | undefined {
    if (name === 'initialiser.js') return { contentType: 'text/javascript; charset=utf-8', body: this.script };
    const contentType = PACKAGED_ASSETS.get(name);
    if (contentType === undefined) return undefined;
    let asset = this.cache.get(name);
    if (asset === undefined) {
      asset = { contentType, body: readFileSync(join(this.folder, name)) };
      this.cache.set(name, asset);
    }
    return asset;
  }
}
