// The JSON documents peer messages carry (proto/peer.proto, "Reads between nodes"): a
// search's request and answer, an output's log entries, a query's errors, monitoring
// details, stored payloads. Each is parsed here within the peer JSON bounds and checked
// against the schema its subsystem declares with the kind (kinds.ts), so no handler or
// caller casts a peer's JSON: a document that does not fit is a BadPeerMessageError naming
// the field and the problem.

import { z } from 'zod';
import { parseJsonWithin, stringifyJson } from '../lib/json.js';
import { BadRequestError } from '../lib/errors.js';
import { validate } from '../lib/validation.js';
import { BadPeerMessageError } from './errors.js';
import { MESSAGE_BYTES_MAX } from './wire.js';

/**
 * How deep a peer's JSON may nest: payloads are accepted up to the configured
 * limits.jsonDepthMax (at most 1,000), and a search answer or an output entry wraps one in a
 * few levels more.
 */
export const PEER_JSON_DEPTH_MAX = 1_100;
/** Characters of one JSON field: no more than the message that carries it. */
export const PEER_JSON_CHARS_MAX = MESSAGE_BYTES_MAX;

/** Parses the JSON text of `field` within the peer bounds; anything else is refused. */
export function parsePeerJson(field: string, text: string): unknown {
  if (text.length > PEER_JSON_CHARS_MAX) throw new BadPeerMessageError(`field ${field}: ${text.length} characters of JSON; the limit is ${PEER_JSON_CHARS_MAX}`);
  let parsed: { value: unknown } | undefined;
  try {
    parsed = parseJsonWithin(text, PEER_JSON_DEPTH_MAX);
  } catch (error) {
    throw new BadPeerMessageError(`field ${field}: not JSON (${(error as Error).message})`, { cause: error });
  }
  if (parsed === undefined) throw new BadPeerMessageError(`field ${field}: JSON nested deeper than ${PEER_JSON_DEPTH_MAX} levels`);
  return parsed.value;
}

/** Parses `field` and checks it against `schema`. */
export function readDocument<Schema extends z.ZodType>(field: string, text: string, schema: Schema): z.output<Schema> {
  const value = parsePeerJson(field, text);
  try {
    return validate(schema, value, field, { prefixPaths: true });
  } catch (error) {
    if (error instanceof BadRequestError) throw new BadPeerMessageError(`field ${error.message}`, { cause: error });
    throw error;
  }
}

export function writeDocument(value: unknown): string {
  return stringifyJson(value);
}
