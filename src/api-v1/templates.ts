// Brain templates: read once at start from config/brain-templates.json (or
// the file named by `brainApi.templatesFile`). A template seeds the neuron types of a new
// brain. A bad file refuses the start, naming what is wrong, like a bad config.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { ConfigError, defaultConfigPath } from '../config/config.js';

const neuronTypeSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'a letter, then up to 63 letters, digits, "_" or "-"'),
    description: z.string().max(1_000),
  })
  .strict();

const templateSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'lower-case letters, digits and "-", at most 64'),
    name: z.string().min(1).max(200),
    description: z.string().max(2_000),
    neuronTypes: z
      .array(neuronTypeSchema)
      .min(1)
      .max(200)
      .refine((types) => new Set(types.map((type) => type.name)).size === types.length, 'neuron type names must be unique'),
  })
  .strict();

const fileSchema = z
  .object({
    templates: z
      .array(templateSchema)
      .max(1_000)
      .refine((templates) => new Set(templates.map((template) => template.id)).size === templates.length, 'template ids must be unique'),
  })
  .strict();

export type NeuronType = z.infer<typeof neuronTypeSchema>;
export type BrainTemplate = z.infer<typeof templateSchema>;

export class BrainTemplates {
  private readonly byId: Map<string, BrainTemplate>;

  constructor(readonly all: readonly BrainTemplate[]) {
    this.byId = new Map(all.map((template) => [template.id, template]));
  }

  get(id: string): BrainTemplate | undefined {
    return this.byId.get(id);
  }
}

/** The packaged templates file, beside config/default.json. */
export function defaultTemplatesPath(): string {
  return join(dirname(defaultConfigPath()), 'brain-templates.json');
}

export function loadBrainTemplates(path: string | null): BrainTemplates {
  const file = path ?? defaultTemplatesPath();
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read brain templates from ${file} (config brainApi.templatesFile): ${(error as Error).message}`);
  }
  const result = fileSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new ConfigError(`invalid brain templates file ${file} at '${issue.path.join('.') || '(root)'}': ${issue.message}`);
  }
  return new BrainTemplates(result.data.templates);
}
