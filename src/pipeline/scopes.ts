// How the runtime compiles expressions (src/expression) for each place of a query.
// The session's options come first and are passed on unchanged; on top of them:
// - over rows, numeric kinds (which decide integer division) come from the row type the
//   checker gave the step, and from the session's numericKindOf where that type cannot
//   tell (paths through a contributor);
// - in a select after group by, fields read the group's keys, by the key's dotted path or
//   by its name (the checker's rule, src/query/checker.ts keyScope), and each aggregate
//   call has been replaced by a reader of the group's aggregate values.

import { numericKindOfType, resolveFieldType, type RecordValueType } from '../query/index.js';
import {
  compile,
  defaultFieldAccessor,
  type CompiledNode,
  type CompileOptions,
  type Evaluator,
  type Expr,
  type FunctionDefinition,
  type NumericKind,
  type Value,
} from '../expression/index.js';

/** What a grouped select's items read: the group's keys by name and its aggregate values by slot. */
export interface GroupView {
  readonly keys: Record<string, Value>;
  readonly aggregates: Value[];
}

/** Function names no query can write: the parser's identifiers hold no NUL. */
const PROBE = '\u0000probe';

export function aggregateReaderName(slot: number): string {
  return `\u0000aggregate${slot}`;
}

/**
 * Compiles an expression and also returns its numeric kind, which `compile` keeps to
 * itself: the expression is compiled as the argument of a function that hands it back.
 */
export function compileNode(expr: Expr, options: CompileOptions): CompiledNode {
  let captured: CompiledNode | undefined;
  const probe: FunctionDefinition = {
    minArgs: 1,
    maxArgs: 1,
    compile: (args) => {
      captured = args[0];
      return captured?.evaluate ?? (() => null);
    },
  };
  const call: Expr = { kind: 'call', name: PROBE, args: [expr], position: expr.position };
  compile(call, { ...options, functions: { ...options.functions, [PROBE]: probe } });
  if (captured === undefined) throw new Error('the probe function was not compiled');
  return captured;
}

/** Options for expressions over rows of `row`, the type the checker gave the step's input. */
export function rowOptions(base: CompileOptions, row: RecordValueType): CompileOptions {
  const sessionKind = base.numericKindOf;
  const numericKindOf = (path: readonly string[]): NumericKind | undefined => {
    const type = resolveFieldType(row, path, () => undefined);
    if (type !== undefined && type.kind !== 'unknown') return numericKindOfType(type);
    return sessionKind?.(path) ?? (type === undefined ? undefined : 'unknown');
  };
  return { ...base, numericKindOf };
}

/** A key of a grouping as a grouped select reads it. */
export interface ScopeKey {
  readonly name: string;
  /** The key's dotted path when it is a field path. */
  readonly path: string | undefined;
  readonly kind: NumericKind;
}

/** An aggregate value as an expression reads it: its slot and numeric kind. */
export interface ScopeAggregate {
  readonly kind: NumericKind;
}

/** Options for a grouped select's items, evaluated over a GroupView. */
export function keyScopeOptions(base: CompileOptions, keys: readonly ScopeKey[], aggregates: readonly ScopeAggregate[]): CompileOptions {
  const findKey = (path: readonly string[]): ScopeKey | undefined => {
    const written = path.join('.');
    return keys.find((key) => key.path === written) ?? keys.find((key) => key.name === written);
  };
  const resolveField = (path: readonly string[]): ((view: unknown) => unknown) => {
    const key = findKey(path);
    if (key !== undefined) {
      const name = key.name;
      return (view) => (view as GroupView).keys[name];
    }
    // A path into a key (`contributor.user.name` after `group by contributor`) reads the
    // keys as a row, through the session's resolver when it follows contributors.
    const inner: (row: unknown) => unknown = base.resolveField?.(path) ?? defaultFieldAccessor(path);
    return (view) => inner((view as GroupView).keys);
  };
  const numericKindOf = (path: readonly string[]): NumericKind | undefined => findKey(path)?.kind ?? base.numericKindOf?.(path);
  const functions: Record<string, FunctionDefinition> = { ...base.functions };
  aggregates.forEach((aggregate, slot) => {
    functions[aggregateReaderName(slot)] = aggregateReader(slot, aggregate.kind);
  });
  return { ...base, resolveField, numericKindOf, functions };
}

function aggregateReader(slot: number, kind: NumericKind): FunctionDefinition {
  const read: Evaluator = (view) => (view as GroupView).aggregates[slot] ?? null;
  return { minArgs: 0, maxArgs: 0, resultKind: () => kind, compile: () => read };
}
