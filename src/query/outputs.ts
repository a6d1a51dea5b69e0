// Where a query's rows go (docs/query-language.md, "Outputs") and whether they may go there:
// an output channel, a logical stream that must keep one schema across its writers, or a
// physical stream that must exist and accept the rows.

import type { Position } from '../expression/index.js';
import type { QueryAst } from './ast.js';
import { streamRowType, type CheckContext } from './context.js';
import type { QueryError } from './errors.js';
import {
  assignable,
  propertyOf,
  sameOutputSchema,
  typeName,
  type QueryOutputSchema,
  type RecordValueType,
  type ValueType,
} from './types.js';

export type OutputTarget =
  | { readonly kind: 'channel' }
  | { readonly kind: 'logical'; readonly name: string }
  | { readonly kind: 'physical'; readonly uri: string };

type Report = (position: Position, error: QueryError, message: string) => void;

/** The output's target, reporting why the rows cannot go there. */
export function checkOutputTarget(ast: QueryAst, schema: QueryOutputSchema, context: CheckContext, report: Report): OutputTarget {
  const into = ast.into;
  if (into === undefined) return { kind: 'channel' };
  if (into.kind === 'logical') {
    const name = into.name;
    if (ast.source.kind === 'logical' && ast.source.name === name) {
      report(into.position, { type: 'INVALID_STREAM_REFERENCE', stream: name }, `a query cannot write into the logical stream '${name}' it reads`);
      return { kind: 'logical', name };
    }
    const writers = context.logicalStreams?.get(name) ?? [];
    const other = writers.find((writer) => !sameOutputSchema(writer.schema, schema));
    if (other !== undefined) {
      const message = `query '${other.queryId}' writes rows of another schema into the logical stream '${name}'`;
      report(into.position, { type: 'LOGICAL_STREAM_CONFLICT', stream: name }, message);
    }
    return { kind: 'logical', name };
  }
  const uri = into.uri;
  const info = context.streams.get(uri);
  const row = info === undefined ? undefined : streamRowType(info.schema);
  if (row === undefined) {
    report(into.position, { type: 'INVALID_STREAM_REFERENCE', stream: uri }, `no stream '${uri}' to write into`);
  } else if (!ast.historical && ast.source.kind === 'physical' && ast.source.uri === uri) {
    // Each row written would be read again, without end.
    report(into.position, { type: 'INVALID_STREAM_REFERENCE', stream: uri }, 'a live query cannot write into the stream it reads');
  } else {
    checkAccepts(row, decorated(schema.topDef, context.outputDecoration), '', into.position, report);
  }
  return { kind: 'physical', uri };
}

/** The rows as the target receives them: with the decoration's contributor field when there is one. */
function decorated(row: RecordValueType, decoration: CheckContext['outputDecoration']): RecordValueType {
  if (decoration === undefined) return row;
  const field: ValueType = { kind: 'contributor', optional: false, annotations: [], ...(decoration.definition === undefined ? {} : { definition: decoration.definition }) };
  return { ...row, properties: [...row.properties.filter(([name]) => name !== decoration.field), [decoration.field, field]] };
}

/** Reports each output field the stream has not, or types differently, and each required field left out. */
function checkAccepts(target: RecordValueType, output: RecordValueType, prefix: string, position: Position, report: Report): void {
  for (const [name, type] of output.properties) {
    const field = `${prefix}${name}`;
    const wanted = propertyOf(target, name);
    if (wanted === undefined) {
      report(position, { type: 'INVALID_FIELD_REFERENCE', field }, `the target stream has no field '${field}'`);
    } else if (wanted.kind === 'record' && type.kind === 'record') {
      checkAccepts(wanted, type, `${field}.`, position, report);
    } else if (!assignable(wanted, type)) {
      const error: QueryError = { type: 'TYPE_MISMATCH', expected: typeName(wanted), actual: typeName(type), expression: field };
      report(position, error, `the target stream's field '${field}' is ${typeName(wanted)}, not ${typeName(type)}`);
    }
  }
  for (const [name, wanted] of target.properties) {
    if (wanted.optional || propertyOf(output, name) !== undefined) continue;
    const field = `${prefix}${name}`;
    const error: QueryError = { type: 'TYPE_MISMATCH', expected: typeName(wanted), actual: 'null', expression: field };
    report(position, error, `the target stream requires the field '${field}', which the query does not give`);
  }
}
