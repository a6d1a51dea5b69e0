import { z } from 'zod';
import { BadRequestError } from './errors.js';

export const NAME_LENGTH_MAX = 128;

// Control characters, and the two characters that would let a name escape its place in a
// key or a path. Names become parts of LevelDB keys (joined with '/' and '\x00') and of URIs.
const FORBIDDEN_CHARACTERS = /[\u0000-\u001f\u007f/]/;

/**
 * Checks a user-chosen name (tenant, collection, stream, vendor id, …) taken from a path
 * segment or a body. Returns it unchanged, or throws a 400 that names what is wrong.
 */
export function checkName(kind: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new BadRequestError(`${kind} name must be a non-empty string`);
  }
  if (value.length > NAME_LENGTH_MAX) {
    throw new BadRequestError(`${kind} name is longer than ${NAME_LENGTH_MAX} characters`);
  }
  if (FORBIDDEN_CHARACTERS.test(value)) {
    throw new BadRequestError(`${kind} name '${printable(value)}' contains '/' or a control character`);
  }
  if (value.includes('..')) {
    throw new BadRequestError(`${kind} name '${value}' contains '..'`);
  }
  return value;
}

function printable(value: string): string {
  return value.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A name in a body, checked by the rules of checkName, for zod schemas. */
export function nameSchema(kind: string): z.ZodType<string> {
  return z
    .string()
    .min(1)
    .max(NAME_LENGTH_MAX)
    .superRefine((value, context) => {
      try {
        checkName(kind, value);
      } catch (error) {
        if (!(error instanceof BadRequestError)) throw error;
        context.addIssue({ code: 'custom', message: error.message });
      }
    })
    .describe(`1 to ${NAME_LENGTH_MAX} characters; no '/', no '..', no control characters.`);
}
