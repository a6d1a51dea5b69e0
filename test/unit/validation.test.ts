// Bodies checked by zod schemas: the 400's message names the JSON path of the first problem in
// the platform's words, and no body crashes the check.

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BadRequestError } from '../../src/lib/errors.js';
import { streamBodySchema } from '../../src/streams/schema-document.js';
import { validate, withDefault } from '../../src/lib/validation.js';

function message(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('validation - zod schemas as 400s', () => {
  const schema = z.object({
    name: z.string().min(1).max(5),
    count: withDefault(z.int().min(0).max(10), 3),
    kind: z.enum(['a', 'b']),
    items: z.array(z.object({ id: z.string() })).max(2),
    target: z.discriminatedUnion('type', [z.object({ type: z.literal('QUERY') }), z.object({ type: z.literal('STREAM'), uri: z.string() })]),
  });
  const good = { name: 'x', kind: 'a', items: [], target: { type: 'QUERY' } };

  it('names the path and says what was expected and what came', () => {
    expect(validate(schema, good)).toEqual({ ...good, count: 3 });
    expect(validate(schema, { ...good, count: null }).count).toBe(3);
    expect(message(() => validate(schema, 'text'))).toBe('body: expected an object, got string');
    expect(message(() => validate(schema, { ...good, name: 7 }))).toBe('name: expected a string, got number');
    expect(message(() => validate(schema, { ...good, name: '' }))).toBe('name: must not be empty');
    expect(message(() => validate(schema, { ...good, name: 'longer' }))).toBe('name: at most 5 characters are allowed, got 6');
    expect(message(() => validate(schema, { ...good, count: 2.5 }))).toBe('count: expected an integer, got 2.5');
    expect(message(() => validate(schema, { ...good, count: 11 }))).toBe('count: must be at most 10, got 11');
    expect(message(() => validate(schema, { ...good, kind: 'c' }))).toBe("kind: expected 'a' or 'b', got 'c'");
    expect(message(() => validate(schema, { ...good, items: [{ id: 'a' }, { id: 1 }] }))).toBe('items[1].id: expected a string, got number');
    expect(message(() => validate(schema, { ...good, items: [{}, {}, {}] }))).toMatch(/^items: at most 2 items are allowed, got 3/);
    expect(message(() => validate(schema, { ...good, target: { type: 'X' } }))).toBe("target.type: expected 'QUERY' or 'STREAM', got 'X'");
    expect(message(() => validate(schema, { ...good, target: { type: 'STREAM' } }))).toBe('target.uri: expected a string, got nothing');
    expect(message(() => validate(schema, {}))).toBe('name: expected a string, got nothing (and 3 more problems)');
    expect(message(() => validate(z.array(z.int()), ['x'], 'facets', { prefixPaths: true }))).toBe('facets[0]: expected a number, got string');
  });

  it('a schema nested deeper than the stack is a 400, not a crash', () => {
    let type: Record<string, unknown> = { type: 'string' };
    for (let depth = 0; depth < 200_000; depth += 1) type = { type: 'record', properties: { a: type } };
    expect(message(() => validate(streamBodySchema, { schema: { version: '1', topDef: type } }))).toBe('body: nested too deeply');
  });
});
