// Small helpers for untrusted JSON values and for quoting them in error messages.

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON type of a value, as error messages name it: null, array, object, string, … */
export function jsonTypeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

const QUOTED_CHARS_MAX = 64;

/** A client's string, shortened and with control characters escaped, for an error message. */
export function quoteForMessage(text: string): string {
  const shortened = text.length > QUOTED_CHARS_MAX ? `${text.slice(0, QUOTED_CHARS_MAX)}…` : text;
  return `'${JSON.stringify(shortened).slice(1, -1)}'`;
}

/** Reads a dotted path ("position.latitude") of a payload's own fields; undefined when a part is missing. */
export function pathReader(path: string): (payload: Record<string, unknown>) => unknown {
  const parts = path.split('.');
  return (payload) => {
    let value: unknown = payload;
    for (const part of parts) {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return value;
  };
}
