// The query checker: types a parsed query against the streams, logical streams, variables,
// functions and contributor types of its session, and says what it reads, what it depends on
// and what it outputs. Pure: the context is passed in, and every problem becomes a query error
// in the result rather than an exception.
//
// Rows flow through the stages (docs/query-language.md): each stage is checked against the row
// type the stage before it produced. Decisions the language leaves open:
// - `group by` (or `window`) and the select after it are one step. In that select,
//   expressions outside aggregates read the keys (by name, or by the key's own path);
//   aggregate arguments read the input rows.
// - A select with aggregates and no grouping aggregates the whole input into one row;
//   outside its aggregates it can read no fields.
// - `config.key` lists the keys a select passes on by name, in key order; a key the select
//   leaves out is not in the output, and so not in `config.key`.
// - Two output fields with one name are an UNNAMED_EXPRESSION: the second has no name of
//   its own.
// - A query reading a logical stream is bounded when every writer of that stream is
//   (`historical` before a logical name changes nothing: the writers decide); it depends
//   on each writer, and reads the first writer's schema and keys (LOGICAL_STREAM_CONFLICT
//   keeps the writers in agreement).
// - Aggregates in the wrong place (where, order by, group keys, inside another aggregate)
//   and search functions over a source that is not historical in the ssr are reported as
//   UNKNOWN_FUNCTION: in that place the function does not exist.

import { assert } from '../lib/assert.js';
import type { Expr, FieldExpr, Position } from '../expression/index.js';
import type { GroupStage, NamedExpression, QueryAst, SelectStage, Stage, WindowStage, WindowSpec } from './ast.js';
import { contributorRowType, streamRowType, variableType, variableValue, type CheckContext } from './context.js';
import type { QueryDiagnostic, QueryError } from './errors.js';
import { containsAggregate, ExpressionTyper, isAggregateCall, type FieldScope, type Frame, type TypingEnvironment } from './expressions.js';
import { formatExpression } from './format.js';
import { checkOutputTarget, type OutputTarget } from './outputs.js';
import {
  isOpen,
  OUTPUT_SCHEMA_VERSION,
  primaryTimestampPath,
  recordType,
  resolveFieldType,
  scalarType,
  typeName,
  UNKNOWN,
  type QueryOutputSchema,
  type RecordValueType,
  type ValueType,
} from './types.js';

export type QueryInput =
  | { readonly kind: 'physical'; readonly uri: string }
  | { readonly kind: 'logical'; readonly name: string; readonly queryIds: readonly string[] };

export interface QueryDependency {
  readonly type: 'query' | 'variable';
  readonly id: string;
}

/** An expression with the name its output field gets. */
export interface NamedStep {
  readonly name: string;
  readonly expression: Expr;
}

/** The query as steps for the runtime, each with the row type it reads (for numeric kinds). */
export type PlanStep =
  | { readonly kind: 'where'; readonly condition: Expr; readonly input: RecordValueType }
  | {
      readonly kind: 'select';
      readonly items: readonly NamedStep[];
      /** Whether the select folds rows with aggregates (per group, or the whole input). */
      readonly aggregating: boolean;
      /** Keys of `group by` (a `window` alone groups by the primary timestamp), window on the last. */
      readonly grouping?: { readonly keys: readonly NamedStep[]; readonly window?: WindowSpec };
      readonly input: RecordValueType;
      readonly output: RecordValueType;
    }
  | { readonly kind: 'order'; readonly keys: readonly { expression: Expr; direction: 'asc' | 'desc' }[]; readonly input: RecordValueType }
  | { readonly kind: 'take'; readonly count: number };

export interface QueryOutput {
  readonly target: OutputTarget;
  readonly schema: QueryOutputSchema;
  readonly outputType: 'BOUNDED' | 'UNBOUNDED';
  readonly isHistorical: boolean;
}

export interface QueryCheck {
  /** Every error found, in the shapes of docs/query-language.md, "Errors"; empty when the query is sound. */
  readonly errors: readonly QueryError[];
  /** The same errors with line, column and a sentence. */
  readonly diagnostics: readonly QueryDiagnostic[];
  readonly inputs: readonly QueryInput[];
  readonly dependencies: readonly QueryDependency[];
  /** Contributor types whose instances the query reads through contributor fields. */
  readonly contributorTypes: readonly string[];
  /** Best effort even when there are errors: unknown types stand in for what failed. */
  readonly output: QueryOutput;
  readonly steps: readonly PlanStep[];
}

/** Checks a parsed query in its session's context. Never throws for a problem of the query. */
export function checkQuery(ast: QueryAst, context: CheckContext): QueryCheck {
  assert(Array.isArray(ast.stages) && ast.source !== undefined, 'checking a query tree without a source or stages');
  const check = new QueryChecker(ast, context).run();
  assertCheck(ast, check);
  return check;
}

/**
 * What every check gives, sound or not: one error per diagnostic, one input, at most one
 * step per stage; and for a sound query, an output whose keys are among its fields (a key
 * a select leaves out is not in `config.key`) and steps the runtime can run.
 */
function assertCheck(ast: QueryAst, check: QueryCheck): void {
  assert(check.errors.length === check.diagnostics.length, `${check.errors.length} errors for ${check.diagnostics.length} diagnostics`);
  assert(check.inputs.length === 1 && check.steps.length <= ast.stages.length, `${check.inputs.length} inputs, ${check.steps.length} steps for ${ast.stages.length} stages`);
  assert(new Set(check.dependencies.map((dependency) => `${dependency.type}:${dependency.id}`)).size === check.dependencies.length, 'a dependency listed twice');
  if (check.errors.length > 0) return;
  const fields = new Set(check.output.schema.topDef.properties.map(([name]) => name));
  assert(check.output.schema.config.key.every((key) => fields.has(key)), `output keys ${check.output.schema.config.key.join(',')} not among its fields`);
  assert(check.steps.every((step) => step.kind !== 'take' || (Number.isSafeInteger(step.count) && step.count >= 0)), 'a take of a count that is not an integer >= 0');
  assert(check.output.isHistorical === (check.output.outputType === 'BOUNDED'), `a ${check.output.outputType} output with isHistorical ${check.output.isHistorical}`);
}

/** The rows between two stages: their type and the names of their key fields. */
interface Scope {
  readonly row: RecordValueType;
  readonly keys: readonly string[];
  /** The source could not be resolved: every field reads as unknown, to avoid an error per use. */
  readonly open?: boolean;
}

interface GroupKey extends NamedStep {
  readonly type: ValueType;
  /** The key's dotted path when it is a field path, which the select may also use. */
  readonly path?: string;
}

const EMPTY_ROW = recordType([]);

class QueryChecker implements TypingEnvironment {
  private readonly diagnostics: QueryDiagnostic[] = [];
  private readonly dependencies = new Map<string, QueryDependency>();
  private readonly contributorTypesUsed = new Set<string>();
  private readonly contributorRows = new Map<string, RecordValueType | undefined>();
  private readonly functionIds: ReadonlySet<string>;
  private readonly typer = new ExpressionTyper(this);
  private searchAllowed = false;

  constructor(
    private readonly ast: QueryAst,
    private readonly context: CheckContext,
  ) {
    this.functionIds = new Set(context.functions ?? []);
  }

  run(): QueryCheck {
    const source = this.source();
    let scope = source.scope;
    const steps: PlanStep[] = [];
    const stages = this.ast.stages;
    for (let i = 0; i < stages.length; i++) {
      const stage = stages[i] as Stage;
      if (stage.kind === 'group' || stage.kind === 'window') {
        const select = stages[++i];
        // The parser guarantees the pairing; a hand-built tree without it is a bug.
        assert(select?.kind === 'select', `a ${stage.kind} stage must be followed by a select`);
        const [next, step] = this.select(select, scope, this.grouping(stage, scope));
        scope = next;
        steps.push(step);
      } else if (stage.kind === 'select') {
        const [next, step] = this.select(stage, scope, undefined);
        scope = next;
        steps.push(step);
      } else {
        steps.push(this.simpleStage(stage, scope));
      }
    }
    const schema: QueryOutputSchema = { version: OUTPUT_SCHEMA_VERSION, config: { key: scope.keys }, topDef: scope.row };
    const target = checkOutputTarget(this.ast, schema, this.context, (position, error, message) =>
      this.report(position, error, message),
    );
    const outputType = source.isHistorical ? 'BOUNDED' : 'UNBOUNDED';
    return {
      errors: this.diagnostics.map((diagnostic) => diagnostic.error),
      diagnostics: this.diagnostics,
      inputs: [source.input],
      dependencies: [...this.dependencies.values()],
      contributorTypes: [...this.contributorTypesUsed],
      output: { target, schema, outputType, isHistorical: source.isHistorical },
      steps,
    };
  }

  private source(): { scope: Scope; input: QueryInput; isHistorical: boolean } {
    const source = this.ast.source;
    const unresolved = (stream: string, message: string): Scope => {
      this.report(source.position, { type: 'INVALID_STREAM_REFERENCE', stream }, message);
      return { row: EMPTY_ROW, keys: [], open: true };
    };
    if (source.kind === 'physical') {
      const info = this.context.streams.get(source.uri);
      const row = info === undefined ? undefined : streamRowType(info.schema);
      this.searchAllowed = this.ast.historical && info?.repository === 'ssr';
      const scope = row === undefined ? unresolved(source.uri, `no stream '${source.uri}'`) : { row, keys: [] };
      return { scope, input: { kind: 'physical', uri: source.uri }, isHistorical: this.ast.historical };
    }
    const writers = this.context.logicalStreams?.get(source.name) ?? [];
    for (const writer of writers) this.depend('query', writer.queryId);
    const input: QueryInput = { kind: 'logical', name: source.name, queryIds: writers.map((writer) => writer.queryId) };
    // A logical stream is bounded when everything written into it is.
    const isHistorical = writers.length > 0 && writers.every((writer) => writer.isHistorical);
    const first = writers[0];
    if (first === undefined) {
      return { scope: unresolved(source.name, `no query of the session writes into '${source.name}'`), input, isHistorical };
    }
    return { scope: { row: first.schema.topDef, keys: first.schema.config.key }, input, isHistorical };
  }

  private simpleStage(stage: Exclude<Stage, GroupStage | WindowStage | SelectStage>, scope: Scope): PlanStep {
    const frame = this.frame(this.rowScope(scope), undefined);
    switch (stage.kind) {
      case 'where':
        this.typer.check(stage.condition, frame, 'boolean');
        return { kind: 'where', condition: stage.condition, input: scope.row };
      case 'order':
        for (const key of stage.keys) this.typer.check(key.expression, frame);
        return { kind: 'order', keys: stage.keys, input: scope.row };
      case 'take':
        return { kind: 'take', count: stage.count };
    }
  }

  /** The keys of a group by, or the primary timestamp of a window alone, with their names. */
  private grouping(stage: GroupStage | WindowStage, scope: Scope): { keys: GroupKey[]; window?: WindowSpec } {
    if (stage.kind === 'window') return { keys: [this.timestampKey(stage, scope)], window: stage.window };
    const frame = this.frame(this.rowScope(scope), undefined);
    const names = new Set<string>();
    const keys: GroupKey[] = [];
    stage.keys.forEach((key, index) => {
      let type = this.typer.check(key.expression, frame);
      if (stage.window !== undefined && index === stage.keys.length - 1) type = this.windowKeyType(key.expression, type);
      const name = this.outputName(key, names);
      const path = key.expression.kind === 'field' ? key.expression.path.join('.') : undefined;
      if (name !== undefined) keys.push({ name, expression: key.expression, type, ...(path === undefined ? {} : { path }) });
    });
    return stage.window === undefined ? { keys } : { keys, window: stage.window };
  }

  /** The last key of a window is a datetime; in the output it holds the window's start. */
  private windowKeyType(expression: Expr, type: ValueType): ValueType {
    if (!isOpen(type) && type.kind !== 'datetime') {
      const error: QueryError = { type: 'TYPE_MISMATCH', expected: 'datetime', actual: typeName(type), expression: formatExpression(expression) };
      this.report(expression.position, error, `a window needs a datetime key, but '${error.expression}' is ${typeName(type)}`);
    }
    return scalarType('datetime', false);
  }

  private timestampKey(stage: WindowStage, scope: Scope): GroupKey {
    const path = scope.open === true ? undefined : primaryTimestampPath(scope.row);
    if (path === undefined) {
      const expression = `window of ${stage.window.size.count} ${stage.window.size.unit}`;
      const message = 'a window without group by needs a datetime field in the rows, and they have none';
      if (scope.open !== true) {
        this.report(stage.position, { type: 'TYPE_MISMATCH', expected: 'datetime', actual: 'record', expression }, message);
      }
      const field: FieldExpr = { kind: 'field', path: ['timestamp'], position: stage.position };
      return { name: 'timestamp', expression: field, type: scalarType('datetime', false) };
    }
    const field: FieldExpr = { kind: 'field', path, position: stage.position };
    return { name: path[path.length - 1] as string, expression: field, type: scalarType('datetime', false), path: path.join('.') };
  }

  private select(
    stage: SelectStage,
    scope: Scope,
    grouping: { keys: GroupKey[]; window?: WindowSpec } | undefined,
  ): [Scope, PlanStep] {
    const aggregating = grouping !== undefined || stage.items.some((item) => containsAggregate(item.expression, this));
    const fields = grouping !== undefined ? this.keyScope(grouping.keys) : aggregating ? NO_FIELDS : this.rowScope(scope);
    const frame = this.frame(fields, this.rowScope(scope));
    const names = new Set<string>();
    const items: NamedStep[] = [];
    const properties: Array<[string, ValueType]> = [];
    for (const item of stage.items) {
      const type = this.typer.check(item.expression, frame);
      const name = this.outputName(item, names);
      if (name === undefined) continue;
      items.push({ name, expression: item.expression });
      properties.push([name, type]);
    }
    const keyNames = grouping?.keys ?? (aggregating ? [] : scope.keys.map((name) => ({ name, path: name })));
    const keys = keyNames.flatMap((key) => {
      const item = items.find(({ expression }) => refersTo(expression, key.name, key.path));
      return item === undefined ? [] : [item.name];
    });
    const output = recordType(properties);
    const step: PlanStep = {
      kind: 'select',
      items,
      aggregating,
      ...(grouping === undefined ? {} : { grouping: planGrouping(grouping) }),
      input: scope.row,
      output,
    };
    return [{ row: output, keys }, step];
  }

  /** An item's output name (docs/query-language.md, "Names of output fields"), or undefined after reporting why not. */
  private outputName(item: NamedExpression, taken: Set<string>): string | undefined {
    const expression = item.expression;
    const name =
      item.alias ??
      (expression.kind === 'field'
        ? expression.path[expression.path.length - 1]
        : isAggregateCall(expression, this) && expression.kind === 'call'
          ? expression.name.toLowerCase()
          : undefined);
    const text = formatExpression(expression);
    if (name === undefined) {
      const message = `'${text}' needs a name: write it as '${text} as <name>'`;
      this.report(item.position, { type: 'UNNAMED_EXPRESSION', expression: text }, message);
      return undefined;
    }
    if (taken.has(name)) {
      const message = `'${text}' would be a second field named '${name}': give it another name with 'as'`;
      this.report(item.position, { type: 'UNNAMED_EXPRESSION', expression: text }, message);
      return undefined;
    }
    taken.add(name);
    return name;
  }

  private frame(fields: FieldScope, aggregateFields: FieldScope | undefined): Frame {
    const frame = { fields, searchAllowed: this.searchAllowed };
    return aggregateFields === undefined ? frame : { ...frame, aggregateFields };
  }

  private rowScope(scope: Scope): FieldScope {
    if (scope.open === true) return { resolve: () => UNKNOWN, unresolvedReason: '' };
    return { resolve: (path) => this.resolvePath(scope.row, path), unresolvedReason: 'no such field in the rows read here' };
  }

  /** Outside aggregates, a grouped select reads its keys: by name, or by the key's own path. */
  private keyScope(keys: readonly GroupKey[]): FieldScope {
    const keyRow = recordType(keys.map((key) => [key.name, key.type] as const));
    return {
      resolve: (path) => keys.find((key) => key.path === path.join('.'))?.type ?? this.resolvePath(keyRow, path),
      unresolvedReason: 'not a key of the grouping; use it inside an aggregate',
    };
  }

  private resolvePath(row: RecordValueType, path: readonly string[]): ValueType | undefined {
    return resolveFieldType(row, path, (definition) => this.contributorRow(definition));
  }

  private contributorRow(definition: string): RecordValueType | undefined {
    if (!this.contributorRows.has(definition)) {
      const schema = this.context.contributorTypes?.get(definition);
      this.contributorRows.set(definition, schema === undefined ? undefined : contributorRowType(schema));
    }
    const row = this.contributorRows.get(definition);
    if (row !== undefined) this.contributorTypesUsed.add(definition);
    return row;
  }

  variable(name: string): { type: ValueType; value: ReturnType<typeof variableValue> } | undefined {
    const own = this.context.queryVariables?.find((variable) => variable.id === name);
    const found = own ?? this.context.variables?.find((variable) => variable.id === name);
    if (found === undefined) return undefined;
    // The query's own variables change only with the query; session ones restart it.
    if (own === undefined) this.depend('variable', name);
    return { type: variableType(found), value: variableValue(found) };
  }

  isSessionFunction(name: string): boolean {
    return this.functionIds.has(name);
  }

  report(position: Position, error: QueryError, message: string): void {
    this.diagnostics.push({ error, line: position.line, column: position.column, message });
  }

  private depend(type: 'query' | 'variable', id: string): void {
    this.dependencies.set(`${type}:${id}`, { type, id });
  }
}

const NO_FIELDS: FieldScope = {
  resolve: () => undefined,
  unresolvedReason: 'a select with aggregates and no group by reads fields only inside aggregates',
};

/** Whether an expression is a bare reference to a key, by its name or its path. */
function refersTo(expression: Expr, name: string, path: string | undefined): boolean {
  if (expression.kind !== 'field') return false;
  const written = expression.path.join('.');
  return written === name || (path !== undefined && written === path);
}

function planGrouping(grouping: { keys: GroupKey[]; window?: WindowSpec }): { keys: NamedStep[]; window?: WindowSpec } {
  const keys = grouping.keys.map(({ name, expression }) => ({ name, expression }));
  return grouping.window === undefined ? { keys } : { keys, window: grouping.window };
}
