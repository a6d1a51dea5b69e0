// A stream's taxonomy: named hierarchies of facet levels (spec, "Taxonomy"). Each level is
// a field path of the schema or year/month/day of a datetime field.

import { z } from 'zod';
import { BadRequestError } from '../lib/errors.js';
import { uniqueField, validate } from '../lib/validation.js';
import { fieldAt, type StreamSchema } from './schema.js';

const NODES_MAX = 64;
const LEVELS_MAX = 16;
const NODE_NAME_CHARS_MAX = 128;
const DATE_PART = /^(year|month|day)\(\s*([^()\s]+)\s*\)$/;

const taxonomyNodeSchema = z.object({
  name: z.string().min(1).max(NODE_NAME_CHARS_MAX).describe('The dimension: what facet requests and taxonomy filters name.'),
  expression: z
    .array(z.string().refine((level) => level.trim() !== '', 'must not be blank'))
    .min(1)
    .max(LEVELS_MAX)
    .describe("The levels, top down: each a field path of the schema (dotted for nested records) or year(field), month(field), day(field) of a datetime field."),
});

/** The body of PUT …/taxonomy and of GET …/taxonomy. */
export const taxonomyBodySchema = z
  .object({
    taxonomy: z.object({
      nodes: z
        .array(taxonomyNodeSchema)
        .max(NODES_MAX)
        .superRefine(uniqueField('name', (name, earlier) => `'${name}' is used twice (also nodes[${earlier}])`)),
    }),
  })
  .meta({
    id: 'TaxonomyBody',
    description: 'Named hierarchies of facet levels (spec, "Taxonomy"). Node names are unique.',
    examples: [{ taxonomy: { nodes: [{ name: 'place', expression: ['country', 'city'] }, { name: 'when', expression: ['year(observed)', 'month(observed)'] }] } }],
  });

export type Taxonomy = z.output<typeof taxonomyBodySchema>['taxonomy'];

/** Checks the body and that every level names a field of the schema that can be a level. */
export function parseTaxonomy(body: unknown, schema: StreamSchema): Taxonomy {
  const { taxonomy } = validate(taxonomyBodySchema, body);
  taxonomy.nodes.forEach((node, index) =>
    node.expression.forEach((level, position) => checkLevel(level, `taxonomy.nodes[${index}].expression[${position}]`, schema)),
  );
  return taxonomy;
}

function checkLevel(level: string, where: string, schema: StreamSchema): void {
  const datePart = DATE_PART.exec(level.trim());
  const path = datePart ? datePart[2]! : level.trim();
  const field = fieldAt(schema, path);
  if (field === undefined) throw new BadRequestError(`${where}: the schema has no field '${path}'`);
  if (datePart && field.kind !== 'datetime' && field.kind !== 'date') {
    throw new BadRequestError(`${where}: ${datePart[1]}() needs a datetime field, '${path}' is ${field.kind}`);
  }
  if (!datePart && field.kind === 'record') {
    throw new BadRequestError(`${where}: '${path}' is a record; a level must be a scalar field`);
  }
}
