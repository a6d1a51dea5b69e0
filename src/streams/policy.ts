// The distribution policy of a stream (spec, "Distribution policy").

import { z } from 'zod';
import { validate } from '../lib/validation.js';

/** How a stream is spread over the ring: its partitions, their copies, what is hashed. */
export interface DistributionPolicy {
  replicas: number;
  ring_size: number;
  hash_payload: { bytes: number };
}

export const DEFAULT_POLICY: DistributionPolicy = Object.freeze({
  replicas: 3,
  ring_size: 128,
  hash_payload: Object.freeze({ bytes: 128 }),
}) as DistributionPolicy;

/** Bounds that keep the owners table and partition keys small (4 hex digits). */
export const RING_SIZE_MAX = 65_536;
export const REPLICAS_MAX = 64;
export const HASH_BYTES_MAX = 1_048_576;

/** The body of PUT …/policy and of GET …/policy. Other fields are dropped. */
export const policySchema = z
  .object({
    replicas: z.int().min(1).max(REPLICAS_MAX).describe('Copies of each partition, on distinct nodes; at most ring_size.'),
    ring_size: z.int().min(1).max(RING_SIZE_MAX).describe('Partitions of the stream; cannot change once the stream holds stored payloads (409).'),
    hash_payload: z
      .object({ bytes: z.int().min(1).max(HASH_BYTES_MAX).describe('How many bytes of the canonical JSON of a payload choose its partition.') })
      .describe('Cannot change once the stream holds stored payloads (409).'),
  })
  .refine((policy) => policy.replicas <= policy.ring_size, {
    path: ['replicas'],
    error: (issue) => {
      const policy = issue.input as DistributionPolicy;
      return `must not exceed ring_size (${policy.ring_size}), got ${policy.replicas}`;
    },
  })
  .meta({ id: 'DistributionPolicy', description: 'How a stream is spread over the ring (spec, "Distribution policy").', examples: [DEFAULT_POLICY] });

export function parsePolicy(body: unknown): DistributionPolicy {
  return validate(policySchema, body, 'policy');
}
