// The distribution policy of a stream (spec, "Distribution policy").

import type { DistributionPolicy } from '../cluster/partitioner.js';
import { BadRequestError } from '../errors.js';
import { isPlainObject } from '../json.js';

/** Bounds that keep the owners table and partition keys small (4 hex digits). */
export const RING_SIZE_MAX = 65_536;
export const REPLICAS_MAX = 64;
export const HASH_BYTES_MAX = 1_048_576;

export function parsePolicy(body: unknown): DistributionPolicy {
  if (!isPlainObject(body)) throw new BadRequestError('policy must be a JSON object');
  const replicas = positiveInteger(body.replicas, 'replicas', REPLICAS_MAX);
  const ringSize = positiveInteger(body.ring_size, 'ring_size', RING_SIZE_MAX);
  if (!isPlainObject(body.hash_payload)) {
    throw new BadRequestError('hash_payload must be an object { bytes: integer }');
  }
  const bytes = positiveInteger(body.hash_payload.bytes, 'hash_payload.bytes', HASH_BYTES_MAX);
  if (replicas > ringSize) {
    throw new BadRequestError(`replicas (${replicas}) must not exceed ring_size (${ringSize})`);
  }
  return { replicas, ring_size: ringSize, hash_payload: { bytes } };
}

function positiveInteger(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new BadRequestError(`${field} must be an integer from 1 to ${max}, got ${JSON.stringify(value) ?? 'nothing'}`);
  }
  return value;
}
