// What ingest checks of a request (spec, "Streams"), wherever the batch is checked: on the
// node's main thread (ingest.ts) or in an ingest worker (tsr-batch.ts), alike.

import { z } from 'zod';
import { assert } from '../lib/assert.js';
import { BadRequestError } from '../lib/errors.js';
import { isPlainObject } from '../lib/json.js';
import { validate } from '../lib/validation.js';
import type { PayloadValidator } from './payload-validator.js';

/** A payload: a JSON object whose fields follow the stream schema (fields it does not name are kept). */
export const payloadSchema = z.looseObject({}).meta({ id: 'Payload', examples: [{ host: 'web-1', cpu: 73.5, at: '2024-03-01T12:00:00Z' }] });

/**
 * The body of POST /streams/:tenant/:collection/:name: an array of payloads or one payload.
 * Elements are checked one by one at ingest, and those that fail answer 500 by their index
 * (spec, "Streams"), so the array's items are not checked here.
 */
export const ingestBodySchema = z
  .union([z.array(z.unknown().meta({ type: 'object', description: 'A payload.' })), payloadSchema])
  .meta({ id: 'IngestBody', examples: [[{ host: 'web-1', cpu: 73.5, at: '2024-03-01T12:00:00Z' }]] });

/**
 * The payloads of an ingest body: an array as it is (its items are checked one by one,
 * later: zod need not walk it), anything else checked to be one payload (400 if not).
 */
export function payloadsOf(body: unknown): readonly unknown[] {
  if (Array.isArray(body)) return body;
  validate(ingestBodySchema, body);
  return [body];
}

export function checkBatchSize(payloads: number, batchPayloadsMax: number): void {
  assert(batchPayloadsMax >= 1, `batchPayloadsMax ${batchPayloadsMax}`);
  if (payloads > batchPayloadsMax) throw new BadRequestError(`a batch holds at most ${batchPayloadsMax} payloads, got ${payloads}`);
}

/** The payload, checked against the schema (after its tags, if any); a string is why it is refused. */
export function checkPayload(validate: PayloadValidator, payload: unknown): Record<string, unknown> | string {
  if (!isPlainObject(payload)) return 'payload must be a JSON object';
  return validate(payload) ?? payload;
}
