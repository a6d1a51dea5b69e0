// Where contributor types, instances and the published-to index live in the definitions
// store (replicated to every node). Names never contain '/' (names.ts) and ids never do
// (contributor-schema.ts), so every part of a key is found again by splitting on '/'.

import { definitionKey } from '../storage/definition-store.js';

export const TYPE_PREFIX = 'contributor-type/';
export const INSTANCE_PREFIX = 'contributor/';
/** `published/<tenant>/<type>/<id>/<stream tenant>/<collection>/<name>` */
export const PUBLISHED_PREFIX = 'published/';
/** `published-untyped/<tenant>/<id>/<stream tenant>/<collection>/<name>`: fields naming no type. */
export const PUBLISHED_UNTYPED_PREFIX = 'published-untyped/';

export function typeKey(tenant: string, type: string): string {
  return definitionKey('contributor-type', tenant, type);
}

export function instanceKey(tenant: string, type: string, id: string): string {
  return definitionKey('contributor', tenant, type, id);
}

/** `type` undefined: the field named no type (see fieldTarget). */
export function publishedKey(tenant: string, type: string | undefined, id: string, streamKey: string): string {
  return type === undefined ? definitionKey('published-untyped', tenant, id, streamKey) : definitionKey('published', tenant, type, id, streamKey);
}

export type ParsedKey =
  | { kind: 'type'; tenant: string; type: string }
  | { kind: 'instance'; tenant: string; type: string; id: string }
  | { kind: 'published'; tenant: string; type: string | undefined; id: string; stream: string };

/** The parts of a key of this module, or undefined for any other key. */
export function parseKey(key: string): ParsedKey | undefined {
  const parts = key.split('/');
  const [prefix, tenant, a, b, c, d, e] = parts;
  if (tenant === undefined || a === undefined) return undefined;
  switch (prefix) {
    case 'contributor-type':
      return parts.length === 3 ? { kind: 'type', tenant, type: a } : undefined;
    case 'contributor':
      return parts.length === 4 && b !== undefined ? { kind: 'instance', tenant, type: a, id: b } : undefined;
    case 'published':
      return parts.length === 7 ? { kind: 'published', tenant, type: a, id: b!, stream: `${c}/${d}/${e}` } : undefined;
    case 'published-untyped':
      return parts.length === 6 ? { kind: 'published', tenant, type: undefined, id: a, stream: `${b}/${c}/${d}` } : undefined;
    default:
      return undefined;
  }
}
