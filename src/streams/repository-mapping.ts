// Which repository persists a stream (spec, "Repository mapping"). No mapping: not persisted.

import { z } from 'zod';
import type { RepositoryName } from '../storage/repository.js';
import { validate } from '../lib/validation.js';
import type { MoveOrder } from './repository-move.js';

export interface RepositoryMapping {
  name: RepositoryName;
  config: Record<string, unknown>;
  /**
   * Set by the change of repository that found stored payloads: every owner moves them
   * to `name` (repository-move.ts). Kept with the mapping, so the two change at once; GET
   * answers the mapping without it.
   */
  move?: MoveOrder;
}

// `config` may be left out or null: no settings. Other settings are kept as sent.
const ssrMappingSchema = z.object({
  name: z.literal('ssr').describe('The searchable repository: full-text search, facets, histograms.'),
  config: z
    .looseObject({
      defaultStringAnalyzer: z
        .string()
        .optional()
        .describe("How string fields are split into terms: 'standard' (lowercased runs of letters and digits, the default) or 'keyword' (the whole value)."),
    })
    .nullish()
    .transform((config) => config ?? {}),
});
const tsrMappingSchema = z.object({
  name: z.literal('tsr').describe('The time-series repository: payloads by partition and time.'),
  config: z
    .looseObject({})
    .nullish()
    .transform((config) => config ?? {})
    .describe('No settings.'),
});

/** The body of PUT …/repository and of GET …/repository. */
export const repositoryMappingSchema = z
  .discriminatedUnion('name', [ssrMappingSchema, tsrMappingSchema])
  .meta({ id: 'RepositoryMapping', description: 'Which repository persists the stream (spec, "Repository mapping").', examples: [{ name: 'ssr', config: { defaultStringAnalyzer: 'standard' } }] });

export function parseRepositoryMapping(body: unknown): RepositoryMapping {
  return validate(repositoryMappingSchema, body, 'repository mapping');
}
