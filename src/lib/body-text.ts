// A request body's bytes made into its text, and its text into its JSON value, bounded in
// depth. Pure: the body middleware runs them on the main thread, and the ingest workers on
// the bodies of the ingests they take (streams/ingest-pool.ts), so both answer a bad body
// alike.

import { BadRequestError } from './errors.js';
import { parseJsonWithin } from './json.js';

// Decodes whole, not chunk by chunk (the pieces of a chunked decode are joined as a rope,
// which the parser then flattens, a second copy), and leaves out a leading byte order mark,
// as raw-body's decoder did. Invalid sequences become U+FFFD, as Buffer's decoding makes
// them.
const UTF8 = new TextDecoder('utf-8');

/** The body's bytes as one flat string, a leading byte order mark left out. */
export function bodyTextOf(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}

/** parseBodyText of the body's bytes, decoded first (bodyTextOf). */
export function parseBodyBytes(bytes: Uint8Array, depthMax: number): unknown {
  return parseBodyText(bodyTextOf(bytes), depthMax);
}

/**
 * The body's value; undefined for a body of only whitespace. 400 for JSON that does not
 * parse or nests deeper than `depthMax`: no code after the parser (schema checks,
 * canonical JSON, indexing, all recursive) ever meets a payload deep enough to overflow
 * the stack.
 */
export function parseBodyText(text: string, depthMax: number): unknown {
  if (text.trim() === '') return undefined;
  let parsed: { value: unknown } | undefined;
  try {
    parsed = parseJsonWithin(text, depthMax);
  } catch (error) {
    throw new BadRequestError(`invalid JSON in the request body: ${(error as Error).message}`);
  }
  if (parsed === undefined) throw new BadRequestError(`the request body nests arrays and objects deeper than the limit of ${depthMax} levels`);
  return parsed.value;
}
