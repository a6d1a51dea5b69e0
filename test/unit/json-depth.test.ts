import { describe, expect, it } from 'vitest';
import { jsonDeeperThan } from '../../src/json.js';
import { Prng } from '../sim/prng.js';

/** How deep the text nests, by the definition jsonDeeperThan checks: brackets outside strings. */
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
  it('counts brackets outside strings only, whatever the strings hold', () => {
    expect(jsonDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(jsonDeeperThan('{"a\\"[[":[["\\\\"]]}', 2)).toBe(true);
    expect(jsonDeeperThan('{"a\\"[[":[["\\\\"]]}', 3)).toBe(false);
    expect(jsonDeeperThan('["\\\\\\"]]]"]', 1)).toBe(false);
    expect(jsonDeeperThan('[[[', 2)).toBe(true);
    // An unterminated string hides what follows: JSON.parse refuses the text anyway.
    expect(jsonDeeperThan('["abc', 0)).toBe(true);
    expect(jsonDeeperThan('"abc[[[', 0)).toBe(false);
  });

  it('agrees with the depth of 2,000 random documents, at and around their depth', () => {
    const prng = new Prng(17);
    for (let i = 0; i < 2_000; i++) {
      const value = randomValue(prng, 0);
      const text = JSON.stringify(value);
      const depth = depthOf(value);
      expect(jsonDeeperThan(text, depth), text).toBe(false);
      if (depth > 0) expect(jsonDeeperThan(text, depth - 1), text).toBe(true);
    }
  });
});
