import { BadRequestError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';

/** A stream's identity: URI `/streams/<tenant>/<collection>/<name>`. */
export interface StreamId {
  tenant: string;
  collection: string;
  name: string;
}

/** Reserved for internal use: only GET is allowed on its streams (spec, "Stream"). */
export const SYSTEM_COLLECTION = 'system';

export function streamId(tenant: unknown, collection: unknown, name: unknown): StreamId {
  return {
    tenant: checkName('tenant', tenant),
    collection: checkName('collection', collection),
    name: checkName('stream', name),
  };
}

/** "tenant/collection/name": the stream's part of storage keys. */
export function streamKey(id: StreamId): string {
  return `${id.tenant}/${id.collection}/${id.name}`;
}

export function streamUri(id: StreamId): string {
  return `/streams/${id.tenant}/${id.collection}/${id.name}`;
}

export function parseStreamUri(uri: unknown): StreamId {
  const parts = typeof uri === 'string' ? uri.split('/') : [];
  if (parts.length !== 5 || parts[0] !== '' || parts[1] !== 'streams') {
    throw new BadRequestError(`'${String(uri)}' is not a stream URI (/streams/<tenant>/<collection>/<name>)`);
  }
  return streamId(parts[2], parts[3], parts[4]);
}
