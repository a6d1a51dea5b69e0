// A stream's taxonomy: named hierarchies of facet levels (spec, "Taxonomy"). Each level is
// a field path of the schema or year/month/day of a datetime field.

import { isPlainObject } from '../json.js';
import { BadRequestError } from '../errors.js';
import { fieldAt, type StreamSchema } from './schema.js';

export interface TaxonomyNode {
  name: string;
  expression: string[];
}

export interface Taxonomy {
  nodes: TaxonomyNode[];
}

const NODES_MAX = 64;
const LEVELS_MAX = 16;
const DATE_PART = /^(year|month|day)\(\s*([^()\s]+)\s*\)$/;

export function parseTaxonomy(body: unknown, schema: StreamSchema): Taxonomy {
  const taxonomy = isPlainObject(body) ? body.taxonomy : undefined;
  if (!isPlainObject(taxonomy) || !Array.isArray(taxonomy.nodes)) {
    throw new BadRequestError('body must be { taxonomy: { nodes: [ { name, expression: [string] } ] } }');
  }
  if (taxonomy.nodes.length > NODES_MAX) throw new BadRequestError(`taxonomy.nodes: at most ${NODES_MAX} nodes`);
  const names = new Set<string>();
  const nodes = taxonomy.nodes.map((node, index) => {
    const where = `taxonomy.nodes[${index}]`;
    if (!isPlainObject(node) || typeof node.name !== 'string' || node.name === '' || node.name.length > 128) {
      throw new BadRequestError(`${where}.name must be a non-empty string of at most 128 characters`);
    }
    if (names.has(node.name)) throw new BadRequestError(`${where}.name '${node.name}' is used twice`);
    names.add(node.name);
    if (!Array.isArray(node.expression) || node.expression.length === 0 || node.expression.length > LEVELS_MAX) {
      throw new BadRequestError(`${where}.expression must be an array of 1 to ${LEVELS_MAX} strings`);
    }
    node.expression.forEach((level, position) => checkLevel(level, `${where}.expression[${position}]`, schema));
    return { name: node.name, expression: [...(node.expression as string[])] };
  });
  return { nodes };
}

function checkLevel(level: unknown, where: string, schema: StreamSchema): void {
  if (typeof level !== 'string' || level.trim() === '') throw new BadRequestError(`${where} must be a non-empty string`);
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
