import { afterAll, describe, expect, it } from 'vitest';
import { BadRequestError } from '../../src/lib/errors.js';
import type { SandboxLimits } from '../../src/scripting/sandbox.js';
import { parseTags, TagRunner, type TagDefinition } from '../../src/streams/tags.js';
import { scriptFailure } from '../kit/script-errors.js';

const limits: SandboxLimits = { timeoutMs: 50, memoryMb: 16 };
// V8 may spend longer than 50 ms collecting garbage before it gives up on a full heap.
const memoryLimits: SandboxLimits = { timeoutMs: 2_000, memoryMb: 16 };

// Every isolate is disposed before the worker exits (see sandbox.test.ts).
const runners: TagRunner[] = [];
afterAll(() => {
  for (const runner of runners) runner.dispose();
});

function tag(field: string, script: string, enabled = true): TagDefinition {
  return { field, lang: 'javascript', enabled, script };
}

async function runnerFor(...tags: TagDefinition[]): Promise<TagRunner> {
  return runnerWith(limits, ...tags);
}

async function runnerWith(chosenLimits: SandboxLimits, ...tags: TagDefinition[]): Promise<TagRunner> {
  const runner = await TagRunner.compile(tags, chosenLimits);
  runners.push(runner);
  return runner;
}

function badRequest(body: unknown): string {
  try {
    parseTags(body);
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestError);
    return (error as BadRequestError).message;
  }
  throw new Error('expected parseTags to throw');
}

const words = tag('words', 'function tag(payload) { return payload.text.split(" ") }');

describe('tags', () => {
  it('tags - parseTags accepts a valid body and defaults enabled to true', () => {
    const parsed = parseTags({
      tags: [
        { field: 'words', lang: 'javascript', script: 'function tag() { return [] }', extra: 1 },
        { field: 'off', lang: 'javascript', enabled: false, script: '' },
      ],
    });
    expect(parsed).toEqual([
      { field: 'words', lang: 'javascript', enabled: true, script: 'function tag() { return [] }' },
      { field: 'off', lang: 'javascript', enabled: false, script: '' },
    ]);
    expect(parseTags({ tags: [] })).toEqual([]);
  });

  it('tags - parseTags names the path of what is wrong', () => {
    const good = { field: 'f', lang: 'javascript', script: '' };
    expect(badRequest(null)).toBe('body: expected an object, got null');
    expect(badRequest({})).toBe('tags: expected an array, got nothing');
    expect(badRequest({ tags: [good, 'x'] })).toBe('tags[1]: expected an object, got string');
    expect(badRequest({ tags: [good, { ...good, field: 'g', lang: 'python' }] })).toBe(
      "tags[1].lang: expected 'javascript', got 'python'",
    );
    expect(badRequest({ tags: [{ ...good, field: '' }] })).toBe('tags[0].field: must not be empty');
    expect(badRequest({ tags: [{ ...good, field: 7 }] })).toBe('tags[0].field: expected a string, got number');
    expect(badRequest({ tags: [{ ...good, field: 'x'.repeat(129) }] })).toMatch(/^tags\[0\]\.field: at most 128/);
    expect(badRequest({ tags: [{ ...good, field: 'a\nb' }] })).toBe('tags[0].field: must not contain control characters');
    expect(badRequest({ tags: [{ ...good, enabled: 'yes' }] })).toBe('tags[0].enabled: expected a boolean, got string');
    expect(badRequest({ tags: [{ ...good, script: null }] })).toBe('tags[0].script: expected a string, got null');
    expect(badRequest({ tags: [{ ...good, script: 'x'.repeat(65537) }] })).toMatch(/^tags\[0\]\.script: at most 65536 bytes/);
    expect(badRequest({ tags: [good, { ...good, field: 'g' }, good] })).toBe(
      "tags[2].field: duplicate field 'f' (also tags[0])",
    );
    const tooMany = Array.from({ length: 33 }, (_, index) => ({ ...good, field: `f${index}` }));
    expect(badRequest({ tags: tooMany })).toBe('tags: at most 32 items are allowed, got 33');
    expect(parseTags({ tags: tooMany.slice(0, 32) })).toHaveLength(32);
  });

  it('tags - a tag puts its result in its field', async () => {
    const runner = await runnerFor(words);
    const payload: Record<string, unknown> = { text: 'to be or not' };
    await runner.apply(payload);
    expect(payload).toEqual({ text: 'to be or not', words: ['to', 'be', 'or', 'not'] });
    expect(runner.size).toBe(1);
  });

  it('tags - tags run in order and see the fields of earlier tags', async () => {
    const runner = await runnerFor(
      words,
      tag('long', 'function tag(payload) { return payload.words.filter((word) => word.length > 2) }'),
      tag('count', 'function tag(payload) { return [String(payload.words.length + payload.long.length)] }'),
    );
    const payload: Record<string, unknown> = { text: 'the quick fox is' };
    await runner.apply(payload);
    expect(payload['long']).toEqual(['the', 'quick', 'fox']);
    expect(payload['count']).toEqual(['7']);
  });

  it('tags - disabled tags are skipped and not even compiled', async () => {
    const runner = await runnerFor(tag('broken', 'this is not javascript', false), words);
    expect(runner.size).toBe(1);
    const payload: Record<string, unknown> = { text: 'a b' };
    await runner.apply(payload);
    expect(Object.keys(payload)).toEqual(['text', 'words']);
  });

  it('tags - a result that is not an array of strings is an error naming the tag', async () => {
    const cases: Array<[string, RegExp]> = [
      ['return 3', /^tag 'bad' must return an array of strings, got number$/],
      ['return null', /got null$/],
      ['return { a: 1 }', /got object$/],
      ['return ["a", 2]', /^tag 'bad' must return an array of strings, got number at index 1$/],
      ['return Array(1025).fill("x")', /^tag 'bad' returned 1025 strings; at most 1024 are allowed$/],
      ['return ["x".repeat(4097)]', /^tag 'bad' returned a string of 4097 characters at index 0; at most 4096/],
    ];
    for (const [body, expected] of cases) {
      const runner = await runnerFor(tag('bad', `function tag() { ${body} }`));
      expect((await scriptFailure(runner.apply({}))).message).toMatch(expected);
    }
  });

  it('tags - a failing tag leaves the payload untouched', async () => {
    const runner = await runnerFor(words, tag('bad', 'function tag() { throw new Error("no") }'));
    const payload: Record<string, unknown> = { text: 'a b' };
    expect((await scriptFailure(runner.apply(payload))).message).toBe("tag 'bad' threw: Error: no");
    expect(payload).toEqual({ text: 'a b' });
  });

  it('tags - a looping tag is stopped at the time limit and the runner keeps working', async () => {
    const runner = await runnerFor(tag('slow', 'function tag(payload) { if (payload.loop) for (;;); return ["ok"] }'));
    const started = performance.now();
    const error = await scriptFailure(runner.apply({ loop: true }));
    const elapsedMs = performance.now() - started;
    expect(error.message).toBe("tag 'slow' exceeded its time limit of 50 ms");
    expect(elapsedMs).toBeGreaterThanOrEqual(limits.timeoutMs * 0.8);
    expect(elapsedMs).toBeLessThan(limits.timeoutMs * 10);
    const payload: Record<string, unknown> = { loop: false };
    await runner.apply(payload);
    expect(payload['slow']).toEqual(['ok']);
  });

  it('tags - a tag that exhausts memory gives the memory error and works on the next payload', async () => {
    const runner = await runnerWith(
      memoryLimits,
      tag('hog', `function tag(payload) {
        if (!payload.explode) return ['ok'];
        const kept = []; let text = 'x';
        for (;;) { text = text + text; kept.push(text.slice(1)); }
      }`),
    );
    expect((await scriptFailure(runner.apply({ explode: true }))).message).toBe(
      "tag 'hog' exceeded its memory limit of 16 MiB",
    );
    const payload: Record<string, unknown> = {};
    await runner.apply(payload);
    expect(payload['hog']).toEqual(['ok']);
  });

  it('tags - compile names the tag that does not compile or has no tag function', async () => {
    await expect(TagRunner.compile([words, tag('broken', 'function tag( {')], limits)).rejects.toThrow(
      /^tag 'broken' does not compile: SyntaxError/,
    );
    await expect(TagRunner.compile([tag('other', 'function other() {}')], limits)).rejects.toThrow(
      "tag 'other' does not define a function named 'tag'",
    );
  });

  it("tags - a field named '__proto__' is stored as a plain field", async () => {
    const runner = await runnerFor(tag('__proto__', 'function tag() { return ["x"] }'));
    const payload: Record<string, unknown> = {};
    await runner.apply(payload);
    expect(Object.getPrototypeOf(payload)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(payload, '__proto__')?.value).toEqual(['x']);
  });
});
