// The stream schema as a client sends it (spec, "Stream"), as zod schemas: the shape every
// body holding a schema is checked against, and what the OpenAPI document shows. The type
// system's own rules (known type names, a record root, field names, nesting and field
// counts, what a sequence needs) are schema.ts's, which parses the checked value.

import { z } from 'zod';
import { DEFAULT_TIMESTAMP_ANNOTATION } from './schema.js';

const TYPE_NAMES =
  'string, double, int, long, short, byte, boolean, datetime, date, time, duration, uuid, email, uri, ip, geoPoint, contributor, record, sequence, array';

export interface TypeDefinitionInput {
  type: string;
  optional?: boolean | string | null | undefined;
  annotations?: string[] | null | undefined;
  properties?: Record<string, TypeDefinitionInput> | null | undefined;
  underlying?: TypeDefinitionInput | null | undefined;
  items?: TypeDefinitionInput | null | undefined;
  uri?: { tenant: string; collection: string } | null | undefined;
  definition?: string | null | undefined;
  [other: string]: unknown;
}

/** One type definition; records nest them in `properties`, arrays in `underlying` or `items`. */
export const typeDefinitionSchema: z.ZodType<TypeDefinitionInput> = z
  .looseObject({
    type: z.string().describe(`One of ${TYPE_NAMES}.`),
    // Valo's documentation also writes the strings "true" and "false"; schema.ts decides.
    optional: z.union([z.boolean(), z.string()]).nullish().describe('A field is required (present and not null) unless optional is true.'),
    annotations: z.array(z.string()).nullish().describe(`E.g. ${DEFAULT_TIMESTAMP_ANNOTATION} marks the primary timestamp.`),
    // Built in the getter, described inside: a described copy reached twice would be a
    // nameless component (document.ts refuses those).
    get properties() {
      return z.record(z.string(), typeDefinitionSchema).nullish();
    },
    get underlying() {
      return typeDefinitionSchema.nullish().describe('The element type of a sequence or array.');
    },
    get items() {
      return typeDefinitionSchema.nullish().describe('The element type of an array (same as underlying).');
    },
    uri: z
      .object({ tenant: z.string(), collection: z.string() })
      .nullish()
      .describe('A contributor field: the tenant and collection of its contributor type.'),
    definition: z.string().nullish().describe('A contributor field: the name of its contributor type.'),
  })
  .meta({ id: 'TypeDefinition', description: 'A type of the stream schema type system.' });

/** The `schema` of a stream definition. */
export const streamSchemaSchema = z
  .looseObject({
    version: z.string().describe('A label of the schema version.'),
    // Not described here: a described copy of a recursive schema is a second schema to zod.
    topDef: typeDefinitionSchema,
  })
  .meta({
    id: 'StreamSchema',
    description: "version: a label; topDef: the root, a type definition of type 'record'.",
    examples: [
      {
        version: '1.0',
        topDef: {
          type: 'record',
          properties: {
            host: { type: 'string' },
            cpu: { type: 'double' },
            at: { type: 'datetime', annotations: [DEFAULT_TIMESTAMP_ANNOTATION] },
          },
        },
      },
    ],
  });

/** The body of PUT /streams/:tenant/:collection/:name and of its GET. */
export const streamBodySchema = z.object({ schema: streamSchemaSchema }).meta({
  id: 'StreamDefinition',
  examples: [{ schema: { version: '1.0', topDef: { type: 'record', properties: { host: { type: 'string' }, cpu: { type: 'double' }, at: { type: 'datetime' } } } } }],
});
