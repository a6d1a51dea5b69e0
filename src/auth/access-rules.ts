// What each route of the platform interface needs: one table from method and path to a
// requirement, so that every router stays free of access checks and a new route family is one
// line here. Pure; the middleware (http/authentication.ts) applies it.
//
// - Tenant routes need a level on the tenant in the path: reads `read`, changes `write`;
//   searches are reads although they are POSTs; vendors (which hold keys) need `admin`.
// - Cluster routes are the `system` tenant's: reading the cluster `read`, adding a tenant
//   `admin`; a tenant's own document is readable with `read` on that tenant.
// - Membership (POST and DELETE /cluster/nodes, GET /cluster/join-token) is an
//   administrative act: the admin secret, or `admin` on `system` when tokens are on.
// - Operators' views read the whole cluster: /metrics, the /_cat tables and the
//   console's ring (/console/data/…) need `read` on `system`, like GET /cluster.
// - Public: GET /cluster/localNode (the node's name, key and state: what an operator needs
//   to add it, and what health checks poll), /health and /ready (what orchestrators probe;
//   the node's name, state and version, as localNode shows), the node's pages (GET /, /docs,
//   /openapi.json, the console's page and files: they hold no data; the console asks for a
//   token and sends it with every read) and the brain interface under /api/v1, which
//   authenticates its own callers.

import type { AccessLevel } from './permissions.js';
import { SYSTEM_TENANT } from './permissions.js';

export type AccessRule =
  | { kind: 'public' }
  | { kind: 'membership' }
  | { kind: 'tenant'; tenant: string; level: AccessLevel };

const PUBLIC: AccessRule = { kind: 'public' };
const MEMBERSHIP: AccessRule = { kind: 'membership' };
const system = (level: AccessLevel): AccessRule => ({ kind: 'tenant', tenant: SYSTEM_TENANT, level });

/** Path families whose second segment is the tenant. */
const TENANT_FAMILIES = new Set(['streams', 'ssr', 'contributors', 'domain', 'execution', 'output', 'daemon', 'monitoring', 'admin']);
/** Operators' views over the whole cluster. */
const SYSTEM_READ_FAMILIES = new Set(['metrics', '_cat']);

/**
 * The requirement of a request. `path` is the raw path (percent-encoded, as Koa's ctx.path
 * gives it); throws URIError when a segment does not decode (the app answers 400).
 */
export function accessRule(method: string, path: string): AccessRule {
  if (path === '/api/v1' || path.startsWith('/api/v1/')) return PUBLIC;
  const segments = path.split('/').slice(1).map((segment) => decodeURIComponent(segment));
  const [family, second] = segments;
  const reading = method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
  if (family === 'cluster') return clusterRule(method, segments, reading);
  if (family === '_internal') return system('admin');
  if (family !== undefined && SYSTEM_READ_FAMILIES.has(family)) return system('read');
  if (family === 'console' && second === 'data') return system('read');
  if (family === 'output' && second === 'cluster' && segments.length === 2) return system('read');
  if (family === undefined || second === undefined || second === '' || !TENANT_FAMILIES.has(family)) return PUBLIC;
  if (family === 'admin') return { kind: 'tenant', tenant: second, level: 'admin' };
  // Searches only read, whatever their method.
  const level: AccessLevel = reading || family === 'ssr' ? 'read' : 'write';
  return { kind: 'tenant', tenant: second, level };
}

function clusterRule(method: string, segments: readonly string[], reading: boolean): AccessRule {
  const [, part, name] = segments;
  if (part === 'localNode' && segments.length === 2) return PUBLIC;
  if (part === 'join-token' && segments.length === 2) return MEMBERSHIP;
  if (part === 'nodes' && (method === 'POST' || method === 'DELETE')) return MEMBERSHIP;
  if (part === 'tenants' && name !== undefined && name !== '') {
    return reading ? { kind: 'tenant', tenant: name, level: 'read' } : system('admin');
  }
  return system(reading ? 'read' : 'admin');
}
