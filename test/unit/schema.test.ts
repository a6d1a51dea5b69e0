import { describe, it, expect } from 'vitest';
import { BadRequestError } from '../../src/lib/errors.js';
import {
  DEFAULT_TIMESTAMP_ANNOTATION,
  contributorFields,
  fieldAt,
  parseSchema,
  primaryTimestampField,
  type ScalarKind,
  type StreamSchema,
} from '../../src/streams/schema.js';

const SCALAR_KINDS: ScalarKind[] = [
  'string', 'double', 'int', 'datetime', 'ip', 'boolean', 'byte', 'short',
  'long', 'date', 'time', 'duration', 'uuid', 'email', 'uri', 'geoPoint',
];

function schemaOf(properties: Record<string, unknown>): unknown {
  return { version: '1.0', topDef: { type: 'record', properties } };
}

function parse(properties: Record<string, unknown>): StreamSchema {
  return parseSchema(schemaOf(properties));
}

/** The message of the BadRequestError that parseSchema throws (fails the test if none). */
function rejection(value: unknown, where?: string): string {
  try {
    parseSchema(value, where);
  } catch (error) {
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).status).toBe(400);
    return (error as Error).message;
  }
  throw new Error('parseSchema accepted the schema');
}

describe('schema', () => {
  it('parseSchema - accepts every scalar type and keeps property order', () => {
    const properties = Object.fromEntries(SCALAR_KINDS.map((kind) => [`f_${kind}`, { type: kind }]));
    const schema = parse(properties);
    expect(schema.version).toBe('1.0');
    expect(schema.topDef.kind).toBe('record');
    expect(schema.topDef.properties).toEqual(
      SCALAR_KINDS.map((kind) => [`f_${kind}`, { kind, optional: true, annotations: [] }]),
    );
  });

  it('parseSchema - parses nested records', () => {
    const schema = parse({
      host: { type: 'string' },
      position: {
        type: 'record',
        properties: { lat: { type: 'double' }, inner: { type: 'record', properties: { at: { type: 'datetime' } } } },
      },
    });
    expect(schema.topDef.properties[1]).toEqual([
      'position',
      {
        kind: 'record',
        optional: true,
        annotations: [],
        properties: [
          ['lat', { kind: 'double', optional: true, annotations: [] }],
          [
            'inner',
            {
              kind: 'record',
              optional: true,
              annotations: [],
              properties: [['at', { kind: 'datetime', optional: true, annotations: [] }]],
            },
          ],
        ],
      },
    ]);
  });

  it('parseSchema - parses contributors with uri, with definition and bare', () => {
    const schema = parse({
      byUri: { type: 'contributor', uri: { tenant: 'acme', collection: 'hosts' } },
      byDefinition: { type: 'contributor', definition: 'server' },
      bare: { type: 'contributor' },
    });
    expect(schema.topDef.properties).toStrictEqual([
      ['byUri', { kind: 'contributor', uri: { tenant: 'acme', collection: 'hosts' }, optional: true, annotations: [] }],
      ['byDefinition', { kind: 'contributor', definition: 'server', optional: true, annotations: [] }],
      ['bare', { kind: 'contributor', optional: true, annotations: [] }],
    ]);
  });

  it('parseSchema - reads sequence and every array form as kind array', () => {
    const schema = parse({
      sequence: { type: 'sequence', underlying: { type: 'int' } },
      underlying: { type: 'array', underlying: { type: 'string' } },
      items: { type: 'array', items: { type: 'record', properties: { n: { type: 'long' } } } },
      bare: { type: 'array' },
    });
    const element = (name: string): unknown => {
      const type = fieldAt(schema, name);
      return type?.kind === 'array' ? type.element : 'not an array';
    };
    expect(element('sequence')).toEqual({ kind: 'int', optional: true, annotations: [] });
    expect(element('underlying')).toEqual({ kind: 'string', optional: true, annotations: [] });
    expect(element('items')).toEqual({
      kind: 'record',
      optional: true,
      annotations: [],
      properties: [['n', { kind: 'long', optional: true, annotations: [] }]],
    });
    expect(element('bare')).toBeUndefined();
  });

  it('parseSchema - reads optional and keeps annotations', () => {
    const schema = parse({
      required: { type: 'string', optional: false },
      optional: { type: 'int', optional: true, annotations: ['urn:a', 'urn:b'] },
    });
    expect(fieldAt(schema, 'required')).toEqual({ kind: 'string', optional: false, annotations: [] });
    expect(fieldAt(schema, 'optional')).toEqual({ kind: 'int', optional: true, annotations: ['urn:a', 'urn:b'] });
  });

  it('parseSchema - fields are optional unless they say optional false, as a boolean or the string Valo documents', () => {
    const schema = parse({ plain: { type: 'string' }, nulled: { type: 'string', optional: null }, text: { type: 'string', optional: 'false' }, yes: { type: 'string', optional: 'true' } });
    expect(fieldAt(schema, 'plain')?.optional).toBe(true);
    expect(fieldAt(schema, 'nulled')?.optional).toBe(true);
    expect(fieldAt(schema, 'text')?.optional).toBe(false);
    expect(fieldAt(schema, 'yes')?.optional).toBe(true);
  });

  it('parseSchema - names the path of an unknown type deep in nested records', () => {
    const value = schemaOf({
      position: { type: 'record', properties: { lat: { type: 'dbl' } } },
    });
    expect(rejection(value)).toBe("schema.topDef.properties.position.properties.lat.type: unknown type 'dbl'");
    expect(rejection(value, 'body.schema')).toBe(
      "body.schema.topDef.properties.position.properties.lat.type: unknown type 'dbl'",
    );
  });

  it('parseSchema - rejects a missing or non-string version', () => {
    expect(rejection({ topDef: { type: 'record', properties: {} } })).toBe('schema.version: missing schema version');
    expect(rejection({ version: 2, topDef: { type: 'record', properties: {} } })).toBe(
      'schema.version: expected string, got number',
    );
  });

  it('parseSchema - rejects a topDef that is missing or not a record', () => {
    expect(rejection({ version: '1' })).toBe('schema.topDef: missing root type definition');
    expect(rejection({ version: '1', topDef: { type: 'string' } })).toBe(
      "schema.topDef.type: root type must be 'record', got 'string'",
    );
    expect(rejection({ version: '1', topDef: { type: 'array', items: { type: 'nope' } } })).toBe(
      "schema.topDef.type: root type must be 'record', got 'array'",
    );
  });

  it('parseSchema - rejects a schema that is not an object', () => {
    expect(rejection('x')).toBe('schema: expected object, got string');
    expect(rejection(null)).toBe('schema: expected object, got null');
  });

  it('parseSchema - rejects malformed type definitions with their path', () => {
    expect(rejection(schemaOf({ a: 'string' }))).toBe(
      'schema.topDef.properties.a: expected type definition object, got string',
    );
    expect(rejection(schemaOf({ a: {} }))).toBe('schema.topDef.properties.a.type: missing type');
    expect(rejection(schemaOf({ a: { type: 3 } }))).toBe('schema.topDef.properties.a.type: expected string, got number');
    expect(rejection(schemaOf({ a: { type: 'record' } }))).toBe(
      'schema.topDef.properties.a.properties: missing properties of record',
    );
    expect(rejection(schemaOf({ a: { type: 'int', optional: 'yes' } }))).toBe(
      "schema.topDef.properties.a.optional: expected true or false, got 'yes'",
    );
    expect(rejection(schemaOf({ a: { type: 'int', annotations: ['ok', 7] } }))).toBe(
      'schema.topDef.properties.a.annotations[1]: expected string, got number',
    );
  });

  it('parseSchema - rejects malformed arrays and sequences', () => {
    expect(rejection(schemaOf({ a: { type: 'sequence' } }))).toBe(
      'schema.topDef.properties.a.underlying: missing element type of sequence',
    );
    expect(rejection(schemaOf({ a: { type: 'array', items: { type: 'int' }, underlying: { type: 'int' } } }))).toBe(
      "schema.topDef.properties.a: give either 'underlying' or 'items', not both",
    );
    expect(rejection(schemaOf({ a: { type: 'array', items: { type: 'float' } } }))).toBe(
      "schema.topDef.properties.a.items.type: unknown type 'float'",
    );
  });

  it('parseSchema - rejects malformed contributor references', () => {
    expect(rejection(schemaOf({ c: { type: 'contributor', uri: 'acme/hosts' } }))).toBe(
      'schema.topDef.properties.c.uri: expected object, got string',
    );
    expect(rejection(schemaOf({ c: { type: 'contributor', uri: { tenant: 'acme' } } }))).toBe(
      'schema.topDef.properties.c.uri.collection: collection name must be a non-empty string',
    );
    expect(rejection(schemaOf({ c: { type: 'contributor', definition: 5 } }))).toBe(
      'schema.topDef.properties.c.definition: contributor type name must be a non-empty string',
    );
  });

  it('parseSchema - rejects invalid field names', () => {
    expect(rejection(schemaOf({ '': { type: 'int' } }))).toBe(
      "schema.topDef.properties: invalid field name '': must not be empty",
    );
    expect(rejection(schemaOf({ 'a.b': { type: 'int' } }))).toBe(
      "schema.topDef.properties: invalid field name 'a.b': must not contain '.'",
    );
    expect(rejection(schemaOf({ 'a\u0001': { type: 'int' } }))).toBe(
      "schema.topDef.properties: invalid field name 'a\\u0001': must not contain control characters",
    );
    expect(rejection(schemaOf({ ['x'.repeat(129)]: { type: 'int' } }))).toMatch(
      /^schema\.topDef\.properties: invalid field name 'x+…': longer than 128 characters$/,
    );
    expect(() => parse({ ['x'.repeat(128)]: { type: 'int' } })).not.toThrow();
  });

  it('parseSchema - bounds nesting depth', () => {
    const nested = (levels: number): unknown => {
      let type: unknown = { type: 'int' };
      for (let level = 0; level < levels; level++) type = { type: 'record', properties: { n: type } };
      return { version: '1', topDef: type };
    };
    // The root record is level 0; 32 nested levels below it are allowed, 33 are not.
    expect(() => parseSchema(nested(32))).not.toThrow();
    expect(rejection(nested(33))).toBe(`schema.topDef${'.properties.n'.repeat(33)}: types nested deeper than 32 levels`);
  });

  it('parseSchema - bounds the total field count', () => {
    const fields = (count: number): Record<string, unknown> =>
      Object.fromEntries(Array.from({ length: count }, (_, index) => [`f${index}`, { type: 'int' }]));
    expect(() => parse({ a: { type: 'record', properties: fields(4095) } })).not.toThrow();
    expect(rejection(schemaOf({ a: { type: 'record', properties: fields(4096) } }))).toBe(
      'schema.topDef.properties.a.properties: schema has more than 4096 fields',
    );
  });

  it('fieldAt - finds fields through records only', () => {
    const schema = parse({
      position: { type: 'record', properties: { latitude: { type: 'double' } } },
      list: { type: 'array', items: { type: 'record', properties: { x: { type: 'int' } } } },
    });
    expect(fieldAt(schema, 'position.latitude')).toEqual({ kind: 'double', optional: true, annotations: [] });
    expect(fieldAt(schema, 'position')?.kind).toBe('record');
    expect(fieldAt(schema, 'position.longitude')).toBeUndefined();
    expect(fieldAt(schema, 'position.latitude.x')).toBeUndefined();
    expect(fieldAt(schema, 'list.x')).toBeUndefined();
    expect(fieldAt(schema, 'missing')).toBeUndefined();
    expect(fieldAt(schema, '')).toBeUndefined();
  });

  it('fieldAt - does not find inherited object properties', () => {
    const schema = parse({ a: { type: 'int' } });
    expect(fieldAt(schema, 'constructor')).toBeUndefined();
    expect(fieldAt(schema, '__proto__')).toBeUndefined();
  });

  it('primaryTimestampField - is the first datetime field depth-first without an annotation', () => {
    const schema = parse({
      name: { type: 'string' },
      meta: { type: 'record', properties: { created: { type: 'datetime' } } },
      at: { type: 'datetime' },
    });
    expect(primaryTimestampField(schema)).toBe('meta.created');
  });

  it('primaryTimestampField - prefers the annotated field over an earlier datetime field', () => {
    const schema = parse({
      received: { type: 'datetime' },
      event: {
        type: 'record',
        properties: { at: { type: 'datetime', annotations: ['urn:other', DEFAULT_TIMESTAMP_ANNOTATION] } },
      },
    });
    expect(primaryTimestampField(schema)).toBe('event.at');
  });

  it('primaryTimestampField - is undefined without datetime fields outside arrays', () => {
    const schema = parse({
      name: { type: 'string' },
      times: { type: 'array', items: { type: 'datetime' } },
    });
    expect(primaryTimestampField(schema)).toBeUndefined();
  });

  it('contributorFields - lists contributor paths depth-first, skipping arrays', () => {
    const schema = parse({
      source: { type: 'contributor', definition: 'server' },
      nested: {
        type: 'record',
        properties: { owner: { type: 'contributor' }, other: { type: 'string' } },
      },
      many: { type: 'array', items: { type: 'contributor' } },
      last: { type: 'contributor', uri: { tenant: 't', collection: 'c' } },
    });
    expect(contributorFields(schema)).toEqual(['source', 'nested.owner', 'last']);
    expect(contributorFields(parse({ a: { type: 'int' } }))).toEqual([]);
  });
});
