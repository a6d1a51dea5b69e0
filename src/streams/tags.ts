// Per-stream tags (docs/platform-interface.md, "Tags"): each tag is a tenant script defining
// `tag(payload)`, which returns an array of strings that is stored in the payload field the tag
// names. Scripts run in the sandbox (src/scripting/sandbox.ts) and are compiled once per
// definition version by TagRunner.compile, not per payload.

import { z } from 'zod';
import { uniqueField, validate } from '../lib/validation.js';
import { setField } from '../lib/json.js';
import {
  compileFunction,
  ScriptError,
  sourceBytesMax,
  type SandboxedFunction,
  type SandboxLimits,
} from '../scripting/sandbox.js';

export const tagsMax = 32;
export const tagFieldCharsMax = 128;
export const tagResultStringsMax = 1024;
export const tagResultStringCharsMax = 4096;

const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/;

const tagSchema = z.object({
  field: z
    .string()
    .min(1)
    .max(tagFieldCharsMax)
    .refine((field) => !controlCharacter.test(field), 'must not contain control characters')
    .describe('The payload field that receives the array of strings tag() returns.'),
  lang: z.literal('javascript'),
  enabled: z.boolean().default(true).describe('A disabled tag is kept but not run.'),
  // Checked here too, not only when compiling, so that a disabled tag cannot store a huge script.
  script: z
    .string()
    .refine((script) => Buffer.byteLength(script, 'utf8') <= sourceBytesMax, {
      error: (issue) => `at most ${sourceBytesMax} bytes are allowed, got ${Buffer.byteLength(issue.input as string, 'utf8')}`,
    })
    .describe('JavaScript defining `function tag(payload)` that returns an array of strings; run in a sandbox with time and memory limits.'),
});

/**
 * The body of PUT …/tags and of GET …/tags, `{ tags: [ { field, lang, enabled, script } ] }`.
 * `enabled` defaults to true; other keys of a tag are ignored and not kept. Fields are unique.
 */
export const tagsBodySchema = z
  .object({
    tags: z
      .array(tagSchema)
      .max(tagsMax)
      .superRefine(uniqueField('field', (field, earlier) => `duplicate field '${field}' (also tags[${earlier}])`)),
  })
  .meta({
    id: 'TagsBody',
    description: 'Scripted derived fields (spec, "Tags").',
    examples: [{ tags: [{ field: 'words', lang: 'javascript', enabled: true, script: "function tag(p) { return String(p.summary).split(' ') }" }] }],
  });

export type TagDefinition = z.output<typeof tagSchema>;

/** Validates the body of PUT …/tags; throws BadRequestError naming the path, e.g. "tags[1].lang: expected 'javascript', …". */
export function parseTags(body: unknown): TagDefinition[] {
  return validate(tagsBodySchema, body).tags;
}

interface CompiledTag {
  field: string;
  label: string;
  run: SandboxedFunction;
}

/** The enabled tags of one definition version, each compiled into its own sandbox. */
export class TagRunner {
  private disposed = false;

  private constructor(private readonly tags: readonly CompiledTag[]) {}

  /** Compiles every enabled tag; throws ScriptError naming the tag if one does not compile or defines no `tag` function. */
  static async compile(tags: TagDefinition[], limits: SandboxLimits): Promise<TagRunner> {
    const enabled = tags.filter((tag) => tag.enabled);
    const settled = await Promise.allSettled(enabled.map((tag) => compileTag(tag, limits)));
    const compiled = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const failure = settled.find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) {
      for (const tag of compiled) tag.run.dispose();
      throw failure.reason;
    }
    return new TagRunner(compiled);
  }

  /** Number of enabled tags compiled. */
  get size(): number {
    return this.tags.length;
  }

  /**
   * Runs each enabled tag in order and stores its result in payload[field]; a tag sees the
   * payload with the fields of earlier tags filled. On a ScriptError the payload is left as
   * it was: results are only written once every tag has succeeded.
   */
  async apply(payload: Record<string, unknown>): Promise<void> {
    if (this.disposed) throw new Error('TagRunner.apply after dispose()');
    if (this.tags.length === 0) return;
    const working: Record<string, unknown> = { ...payload };
    for (const tag of this.tags) {
      const result = checkResult(await tag.run.call([working]), tag.label);
      setField(working, tag.field, result);
    }
    for (const tag of this.tags) setField(payload, tag.field, working[tag.field]);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const tag of this.tags) tag.run.dispose();
  }
}

async function compileTag(tag: TagDefinition, limits: SandboxLimits): Promise<CompiledTag> {
  const label = `tag '${tag.field}'`;
  return { field: tag.field, label, run: await compileFunction(tag.script, 'tag', label, limits) };
}

function checkResult(result: unknown, label: string): string[] {
  if (!Array.isArray(result)) throw new ScriptError(`${label} must return an array of strings, got ${typeName(result)}`);
  if (result.length > tagResultStringsMax) {
    throw new ScriptError(`${label} returned ${result.length} strings; at most ${tagResultStringsMax} are allowed`);
  }
  for (let index = 0; index < result.length; index++) {
    const item: unknown = result[index];
    if (typeof item !== 'string') {
      throw new ScriptError(`${label} must return an array of strings, got ${typeName(item)} at index ${index}`);
    }
    if (item.length > tagResultStringCharsMax) {
      throw new ScriptError(
        `${label} returned a string of ${item.length} characters at index ${index}; at most ${tagResultStringCharsMax} are allowed`,
      );
    }
  }
  return result as string[];
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
