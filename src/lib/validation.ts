// Request bodies checked against zod schemas. Every body of the platform
// interface has a schema next to the code that uses it; the same schemas generate the
// OpenAPI document (src/http/openapi/). A body that does not match is a 400 whose message
// starts with the JSON path of the first problem, e.g. "tags[1].lang: expected 'javascript',
// got 'python'", as the hand-written checks it replaced did.

import { z } from 'zod';
import { BadRequestError } from './errors.js';
import { isPlainObject, jsonTypeName } from './json.js';

/**
 * Checks `value` against `schema` and returns the parsed value (defaults applied). Throws a
 * BadRequestError naming the path of the first problem; `root` names the value itself
 * when the problem is the whole of it ("body", "vendor"), and starts every path when
 * `prefixPaths` is set (a part of a body checked on its own: "facets[0].topN").
 */
export function validate<Schema extends z.ZodType>(schema: Schema, value: unknown, root = 'body', options: { prefixPaths?: boolean } = {}): z.output<Schema> {
  let result: z.ZodSafeParseResult<z.output<Schema>>;
  try {
    result = schema.safeParse(value, { error: describeIssue, reportInput: true });
  } catch (error) {
    // Recursive schemas (the stream schema's type definitions, search filter groups) recurse
    // as deep as the client nests; walking every body's depth first would cost every ingest.
    if (error instanceof RangeError) throw new BadRequestError(`${root}: nested too deeply`);
    throw error;
  }
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const more = result.error.issues.length > 1 ? ` (and ${result.error.issues.length - 1} more problem${result.error.issues.length > 2 ? 's' : ''})` : '';
  const path = options.prefixPaths === true ? [root, ...issue.path] : issue.path;
  throw new BadRequestError(`${formatPath(path, root)}: ${issue.message}${more}`);
}

/** `tags[1].lang`; the root's name when the path is empty. */
export function formatPath(path: readonly PropertyKey[], root: string): string {
  if (path.length === 0) return root;
  let text = '';
  for (const part of path) {
    if (typeof part === 'number') text += `[${part}]`;
    else text += text === '' ? String(part) : `.${String(part)}`;
  }
  return text;
}

/**
 * A field that takes `fallback` when it is left out or null (JSON clients send null for
 * "not set"); the document shows the default.
 */
export function withDefault<Schema extends z.ZodType>(schema: Schema, fallback: NonNullable<z.output<Schema>>) {
  return schema
    .nullish()
    .meta({ default: fallback })
    .transform((value) => (value ?? fallback) as NonNullable<z.output<Schema>>);
}

/**
 * For `.superRefine` on an array: `field` is unique among its items. Each repeat is a
 * problem at the repeating item's field, or at the array itself with `atArray`.
 */
export function uniqueField<Item extends Record<Field, unknown>, Field extends string>(
  field: Field,
  message: (value: string, earlier: number) => string,
  options: { atArray?: boolean } = {},
) {
  return (items: readonly Item[], context: z.RefinementCtx): void => {
    const firstIndex = new Map<string, number>();
    items.forEach((item, index) => {
      const value = String(item[field]);
      const earlier = firstIndex.get(value);
      if (earlier === undefined) firstIndex.set(value, index);
      else context.addIssue({ code: 'custom', path: options.atArray === true ? [] : [index, field], message: message(value, earlier) });
    });
  };
}

/**
 * A JSON object taken as it is, not copied: zod's object schemas copy, and a copy loses a
 * field named `__proto__` (JSON.parse makes it an own field, and clients' free-form
 * documents are kept as sent).
 */
export function jsonObject(description: string) {
  return z
    .custom<Record<string, unknown>>((value) => isPlainObject(value), { error: (issue) => `expected an object, got ${jsonTypeName(issue.input)}` })
    .meta({ type: 'object', description });
}

/** Messages in the platform's words: what was expected, and what came instead. */
function describeIssue(issue: z.core.$ZodRawIssue): string | undefined {
  const input = issue.input;
  switch (issue.code) {
    case 'invalid_type':
      // 1.5 where an integer belongs: the value says more than its type.
      if (typeof input === 'number' && issue.expected === 'int') return `expected an integer, got ${input}`;
      return `expected ${withArticle(typeName(issue.expected))}, got ${input === undefined ? 'nothing' : jsonTypeName(input)}`;
    case 'invalid_value':
      return `expected ${issue.values.map(quote).join(' or ')}, got ${describeValue(input)}`;
    case 'too_big':
      return tooBig(issue.origin, issue.maximum, input);
    case 'too_small':
      return tooSmall(issue.origin, issue.minimum, input);
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map(quote).join(', ')}`;
    case 'invalid_union': {
      // A discriminated union names the field that chooses the form and the values it takes.
      const { discriminator, options } = issue as { discriminator?: string; options?: unknown[] };
      if (discriminator === undefined || options === undefined) return unionMismatch(issue.errors, input);
      const chosen = typeof input === 'object' && input !== null ? (input as Record<string, unknown>)[discriminator] : undefined;
      return `expected ${options.map(quote).join(' or ')}, got ${describeValue(chosen)}`;
    }
    default:
      return undefined;
  }
}

/**
 * Neither form fits: a value of the wrong type names the types accepted; otherwise the form
 * that got furthest names its first problem.
 */
function unionMismatch(branches: readonly (readonly z.core.$ZodIssue[])[], input: unknown): string {
  const rootTypes = branches.map((issues) => issues.find((issue) => issue.path.length === 0 && issue.code === 'invalid_type') as z.core.$ZodIssueInvalidType | undefined);
  if (rootTypes.every((issue) => issue !== undefined)) {
    const expected = [...new Set(rootTypes.map((issue) => withArticle(typeName(issue!.expected))))];
    return `expected ${expected.join(' or ')}, got ${input === undefined ? 'nothing' : jsonTypeName(input)}`;
  }
  const furthest = branches.map((issues) => issues[0]!).sort((a, b) => b.path.length - a.path.length)[0]!;
  return `${formatPath(furthest.path, 'value')}: ${furthest.message}`;
}

function tooBig(origin: string, maximum: number | bigint, input: unknown): string {
  if (origin === 'string') return `at most ${maximum} characters are allowed, got ${(input as string).length}`;
  if (origin === 'array') return `at most ${maximum} items are allowed, got ${(input as unknown[]).length}`;
  return `must be at most ${maximum}, got ${describeValue(input)}`;
}

function tooSmall(origin: string, minimum: number | bigint, input: unknown): string {
  if (origin === 'string') return minimum === 1 ? 'must not be empty' : `at least ${minimum} characters are needed, got ${(input as string).length}`;
  if (origin === 'array') return `at least ${minimum} item${minimum === 1 ? ' is' : 's are'} needed, got ${(input as unknown[]).length}`;
  return `must be at least ${minimum}, got ${describeValue(input)}`;
}

function typeName(expected: string): string {
  if (expected === 'int') return 'integer';
  if (expected === 'record') return 'object';
  return expected;
}

function withArticle(type: string): string {
  if (type === 'null' || type === 'undefined') return type;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

const QUOTED_CHARS_MAX = 80;

function quote(value: unknown): string {
  if (typeof value !== 'string') return String(value);
  return `'${value.length > QUOTED_CHARS_MAX ? `${value.slice(0, QUOTED_CHARS_MAX)}…` : value}'`;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return quote(value);
  return jsonTypeName(value);
}
