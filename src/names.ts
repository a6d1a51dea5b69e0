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
