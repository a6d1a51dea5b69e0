import { describe, expect, it } from 'vitest';
import { parseJsonWithin } from '../../src/lib/json.js';
import { Prng } from '../sim/prng.js';

/** How deep a value nests: `[[1]]` is 2 deep, a string holding brackets 0. */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  const items = Array.isArray(value) ? value : Object.values(value);
  return 1 + Math.max(0, ...items.map(depthOf));
}

/** Strings full of what could fool a scanner: brackets, quotes, runs of backslashes. */
function trickyString(prng: Prng): string {
  const parts = ['[', ']', '{', '}', '"', '\\', '\\\\', '\\"', 'a', ' ', 'é', '\u2028'];
  let text = '';
  for (let i = prng.int(0, 8); i > 0; i--) text += parts[prng.int(0, parts.length - 1)];
  return text;
}

function randomValue(prng: Prng, depth: number): unknown {
  const pick = prng.int(0, depth > 6 ? 2 : 4);
  if (pick === 0) return trickyString(prng);
  if (pick === 1) return prng.int(-5, 5);
  if (pick === 2) return null;
  if (pick === 3) return Array.from({ length: prng.int(0, 4) }, () => randomValue(prng, depth + 1));
  const record: Record<string, unknown> = {};
  for (let i = prng.int(0, 4); i > 0; i--) record[trickyString(prng)] = randomValue(prng, depth + 1);
  return record;
}

describe('json - depth check of request and peer text', () => {
  it('counts arrays and objects, not the brackets strings hold', () => {
    expect(parseJsonWithin('{"a":"[[[[{{{{"}', 1)).toEqual({ value: { a: '[[[[{{{{' } });
    expect(parseJsonWithin('{"a\\"[[":[["\\\\"]]}', 2)).toBeUndefined();
    expect(parseJsonWithin('{"a\\"[[":[["\\\\"]]}', 3)).toEqual({ value: { 'a"[[': [['\\']] } });
    expect(parseJsonWithin('[[[]]]', 2)).toBeUndefined();
    expect(parseJsonWithin('"abc[[["', 0)).toEqual({ value: 'abc[[[' });
    expect(parseJsonWithin('[]', 0)).toBeUndefined();
    expect(() => parseJsonWithin('[[[', 8)).toThrow(SyntaxError);
  });

  it('agrees with the depth of 2,000 random documents, at and around their depth', () => {
    const prng = new Prng(17);
    for (let i = 0; i < 2_000; i++) {
      const value = randomValue(prng, 0);
      const text = JSON.stringify(value);
      const depth = depthOf(value);
      expect(parseJsonWithin(text, depth), text).toEqual({ value });
      if (depth > 0) expect(parseJsonWithin(text, depth - 1), text).toBeUndefined();
    }
  });

  it('keeps a long beyond 2^53 within the depth, and refuses it beyond', () => {
    expect(parseJsonWithin('[{"id": 855448618232418304}]', 2)).toEqual({ value: [{ id: 855448618232418304n }] });
    expect(parseJsonWithin('[{"id": 855448618232418304}]', 1)).toBeUndefined();
  });

  it('refuses a million levels without overflowing the stack', () => {
    expect(parseJsonWithin(`${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`, 128)).toBeUndefined();
    expect(parseJsonWithin(`${'{"a":'.repeat(1_000_000)}1${'}'.repeat(1_000_000)}`, 128)).toBeUndefined();
  });
});
