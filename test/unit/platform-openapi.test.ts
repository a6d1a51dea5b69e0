// The platform interface's OpenAPI document without a node: valid, built
// from the same zod schemas the services check bodies with, naming every route the
// platform routers serve and no other, and every route of docs/platform-interface.md.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import type Router from '@koa/router';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { platformOpenApiDocument } from '../../src/http/openapi/document.js';
import { platformOperations } from '../../src/http/openapi/operations.js';
import { adminRoutes } from '../../src/http/routes/admin.js';
import { clusterRoutes } from '../../src/http/routes/cluster.js';
import { consoleRoutes } from '../../src/http/routes/console.js';
import { contributorRoutes } from '../../src/http/routes/contributors.js';
import { daemonRoutes } from '../../src/http/routes/daemons.js';
import { domainRoutes } from '../../src/http/routes/domains.js';
import { executionRoutes } from '../../src/http/routes/execution.js';
import { monitoringRoutes } from '../../src/http/routes/monitoring.js';
import { nodePageRoutes } from '../../src/http/routes/node-pages.js';
import { opsRoutes } from '../../src/http/routes/ops.js';
import { searchRoutes } from '../../src/http/routes/search.js';
import { streamRoutes } from '../../src/http/routes/streams.js';
import { packageRoot } from '../../src/lib/package-root.js';
import { validate } from '../../src/lib/validation.js';

const LIMITS = { sessionQueriesMax: 100 };
const document = platformOpenApiDocument({ limits: LIMITS, version: '0.0.0-test' }) as any;

function documented(): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method.toUpperCase()} ${path}`));
}

function served(routers: Router[]): string[] {
  const routes = new Set<string>();
  for (const router of routers) {
    for (const layer of router.stack) {
      const path = String(layer.path).replace(/:([A-Za-z]+)/g, '{$1}');
      for (const method of layer.methods) if (method !== 'HEAD') routes.add(`${method} ${path}`);
    }
  }
  return [...routes];
}

describe('platform docs - the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document whose every schema compiles', async () => {
    const result = await new Validator().validate(structuredClone(document));
    expect(result.errors ?? []).toEqual([]);
    const ajv = new Ajv2020({ strict: true, strictTypes: false });
    ajv.addVocabulary(['openapi', 'info', 'tags', 'paths', 'components', 'example']);
    ajv.addSchema({ ...structuredClone(document), $id: 'openapi' }, undefined, undefined, false);
    for (const name of Object.keys(document.components.schemas)) {
      expect(() => ajv.getSchema(`openapi#/components/schemas/${name}`), name).not.toThrow();
    }
  });

  it('names every route the platform routers serve, and no other', () => {
    const deps = {} as never;
    const routers = [
      streamRoutes(deps), clusterRoutes(deps), adminRoutes(deps), searchRoutes(deps, deps), contributorRoutes(deps),
      domainRoutes(deps), daemonRoutes(deps), executionRoutes(deps), monitoringRoutes(deps), nodePageRoutes(deps), consoleRoutes(deps), opsRoutes(deps),
    ];
    expect(served(routers).sort()).toEqual(documented().sort());
  });

  it('names every route of docs/platform-interface.md', () => {
    const reference = readFileSync(join(packageRoot(), 'docs', 'platform-interface.md'), 'utf8');
    // Rows of the endpoint tables: | GET | /streams/:tenant | … ; paths with … continue the one above.
    const rows = [...reference.matchAll(/^\| (GET|PUT|POST|DELETE|PATCH) \| `?([^ |`]+)`? \|/gm)].map(([, method, path]) => [method!, path!] as const);
    expect(rows.length).toBeGreaterThan(60);
    const shape = (path: string) => path.replace(/:\w+|\{\w+\}/g, '{}');
    const shapes = new Set(documented().map((operation) => shape(operation)));
    const missing = rows.map(([method, path]) => `${method} ${shape(path)}`).filter((operation) => !shapes.has(operation));
    expect(missing).toEqual([]);
  });

  it('shows, for each body, an example the body schema accepts', () => {
    let checked = 0;
    for (const operation of platformOperations(LIMITS)) {
      if (operation.body === undefined) continue;
      const example = document.paths[operation.path][operation.method].requestBody.content['application/json'].example;
      expect(example, `${operation.method} ${operation.path} has an example`).toBeDefined();
      expect(() => validate(operation.body!.schema, example), `${operation.method} ${operation.path}`).not.toThrow();
      checked += 1;
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('cites only documents a reader of the repository has', () => {
    // The document is public: a file it names must be one a clone holds.
    const cited = [...new Set(JSON.stringify(document).match(/[\w./-]+\.md\b/g) ?? [])];
    expect(cited.length).toBeGreaterThan(0);
    expect(cited.filter((file) => !existsSync(join(packageRoot(), file)))).toEqual([]);
  });
});
