// Per-stream tags (spec/platform-interface.md "Tags (per stream)"): each tag is a tenant
// script defining `tag(payload)`, which returns an array of strings that is stored in the
// payload field the tag names. Scripts run in the sandbox (DESIGN.md "Scripts") and are
// compiled once per definition version by TagRunner.compile, not per payload.

import { BadRequestError } from '../errors.js';
import {
  compileFunction,
  ScriptError,
  sourceBytesMax,
  type SandboxedFunction,
  type SandboxLimits,
} from '../scripting/sandbox.js';

export interface TagDefinition {
  field: string;
  lang: 'javascript';
  enabled: boolean;
  script: string;
}

export const tagsMax = 32;
export const tagFieldCharsMax = 128;
export const tagResultStringsMax = 1024;
export const tagResultStringCharsMax = 4096;

const controlCharacter = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Validates the body of PUT .../tags, `{ tags: [ { field, lang, enabled, script } ] }`.
 * Throws BadRequestError naming the path, e.g. "tags[1].lang: must be 'javascript'".
 * `enabled` defaults to true; other keys of a tag are ignored and not kept.
 */
export function parseTags(body: unknown): TagDefinition[] {
  if (!isObject(body)) throw new BadRequestError(`body: must be an object with a tags array, got ${typeName(body)}`);
  const tags = body['tags'];
  if (!Array.isArray(tags)) throw new BadRequestError(`tags: must be an array, got ${typeName(tags)}`);
  if (tags.length > tagsMax) throw new BadRequestError(`tags: at most ${tagsMax} tags are allowed, got ${tags.length}`);
  const firstIndexByField = new Map<string, number>();
  return tags.map((entry: unknown, index) => {
    const tag = parseTag(entry, `tags[${index}]`);
    const earlier = firstIndexByField.get(tag.field);
    if (earlier !== undefined) {
      throw new BadRequestError(`tags[${index}].field: duplicate field '${tag.field}' (also tags[${earlier}])`);
    }
    firstIndexByField.set(tag.field, index);
    return tag;
  });
}

function parseTag(entry: unknown, path: string): TagDefinition {
  if (!isObject(entry)) throw new BadRequestError(`${path}: must be an object, got ${typeName(entry)}`);
  const { field, lang, enabled, script } = entry;
  if (typeof field !== 'string') throw new BadRequestError(`${path}.field: must be a string, got ${typeName(field)}`);
  if (field === '') throw new BadRequestError(`${path}.field: must not be empty`);
  if (field.length > tagFieldCharsMax) {
    throw new BadRequestError(`${path}.field: at most ${tagFieldCharsMax} characters are allowed, got ${field.length}`);
  }
  if (controlCharacter.test(field)) throw new BadRequestError(`${path}.field: must not contain control characters`);
  if (lang !== 'javascript') throw new BadRequestError(`${path}.lang: must be 'javascript'`);
  if (enabled !== undefined && typeof enabled !== 'boolean') {
    throw new BadRequestError(`${path}.enabled: must be a boolean, got ${typeName(enabled)}`);
  }
  if (typeof script !== 'string') throw new BadRequestError(`${path}.script: must be a string, got ${typeName(script)}`);
  // Checked here too, not only when compiling, so that a disabled tag cannot store a huge script.
  const scriptBytes = Buffer.byteLength(script, 'utf8');
  if (scriptBytes > sourceBytesMax) {
    throw new BadRequestError(`${path}.script: at most ${sourceBytesMax} bytes are allowed, got ${scriptBytes}`);
  }
  return { field, lang, enabled: enabled ?? true, script };
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
      setOwn(working, tag.field, result);
    }
    for (const tag of this.tags) setOwn(payload, tag.field, working[tag.field]);
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

/** Defines an own property, so a field named '__proto__' is stored as data, not as the prototype. */
function setOwn(target: Record<string, unknown>, field: string, value: unknown): void {
  Object.defineProperty(target, field, { value, writable: true, enumerable: true, configurable: true });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
