// `where` and `select` (without aggregates) in both places they can stand:
// - over rows (RowStages): all the row stages before the first grouping or ordering run
//   fused, row by row, with no change records and no closures made per row; `take`
//   there passes the first N rows and then nothing.
// - over a table's changes (WhereChanges, SelectChanges): each change is mapped. A row
//   that stops matching a where is removed, one that starts matching is added; an update
//   whose selected row is unchanged is not sent. Updates carry the row they replace
//   (Delta.old), so these operators keep no state.

import { compile, type CompileOptions, type Evaluator, type Expr, type Value } from '../expression/index.js';
import type { PlanStep } from '../query/index.js';
import { rowOptions } from './scopes.js';
import type { Delta, OutputRow, TableOperator } from './types.js';
import { rowsEqual } from './values.js';

export type WhereStep = Extract<PlanStep, { kind: 'where' }>;

/** A select's items: output names, their evaluators, and the row builder made of them. */
export interface Projection {
  readonly names: readonly string[];
  readonly items: readonly Evaluator[];
  /** One output row: the fields in the select's order. */
  readonly project: (row: unknown) => OutputRow;
}

export function compileProjection(step: Extract<PlanStep, { kind: 'select' }>, base: CompileOptions): Projection {
  const options = rowOptions(base, step.input);
  return projectionOf(
    step.items.map((item) => item.name),
    step.items.map((item) => compile(item.expression, options)),
    step.items.map((item) => topLevelField(item.expression, base)),
  );
}

/** The field a plain top-level path reads, when the session resolves it no differently. */
function topLevelField(expr: Expr, base: CompileOptions): string | undefined {
  if (expr.kind !== 'field' || expr.path.length !== 1) return undefined;
  return base.resolveField?.(expr.path) === undefined ? expr.path[0] : undefined;
}

/**
 * A row's own field, as the expression compiler's defaultFieldAccessor reads it (own
 * properties of a non-array object, missing as null), for the builder to inline.
 */
function readField(row: unknown, name: string): Value {
  return typeof row === 'object' && row !== null && !Array.isArray(row) && Object.hasOwn(row, name)
    ? (((row as Record<string, unknown>)[name] ?? null) as Value)
    : null;
}

export function compileCondition(step: WhereStep, base: CompileOptions): Evaluator {
  return compile(step.condition, rowOptions(base, step.input));
}

/** Above this many fields a row is built in a loop: a literal that large gains nothing. */
const LITERAL_FIELDS_MAX = 64;

/**
 * A projection whose row builder is one object literal with the output names as constant
 * keys: V8 then builds every row from one boilerplate, about twice as fast as assigning
 * the names one by one (measured: 25 vs 54 ms per million rows of two fields), and the
 * select is the hot path of every stream query. The names enter the source only as JSON
 * string literals, which cannot end the literal they are in; `__proto__` is written as a
 * computed key, which defines a field instead of setting the prototype.
 */
export function projectionOf(
  names: readonly string[],
  items: readonly Evaluator[],
  fields: readonly (string | undefined)[] = [],
): Projection {
  if (names.length > LITERAL_FIELDS_MAX) return { names, items, project: (row) => projectByLoop(names, items, row) };
  const parameters = ['readField', ...items.map((_, index) => `item${index}`)];
  const entries = names.map((name, index) => {
    const key = name === '__proto__' ? `[${JSON.stringify(name)}]` : JSON.stringify(name);
    const field = fields[index];
    return field === undefined ? `${key}: item${index}(row)` : `${key}: readField(row, ${JSON.stringify(field)})`;
  });
  const source = `'use strict'; return function project(row) { return { ${entries.join(', ')} }; };`;
  type Builder = (read: typeof readField, ...evaluators: Evaluator[]) => (row: unknown) => OutputRow;
  const build = new Function(...parameters, source) as Builder;
  return { names, items, project: build(readField, ...items) };
}

function projectByLoop(names: readonly string[], items: readonly Evaluator[], row: unknown): OutputRow {
  const out: OutputRow = {};
  for (let i = 0; i < names.length; i++) out[names[i] as string] = (items[i] as Evaluator)(row);
  return out;
}

export type RowStage =
  | { readonly kind: 'where'; readonly condition: Evaluator }
  | { readonly kind: 'select'; readonly projection: Projection }
  | { readonly kind: 'take'; readonly count: number };

/** What RowStages.process gives for a row that does not come out. */
export const DROPPED: unique symbol = Symbol('dropped');

export class RowStages {
  /** Rows each take stage has passed so far. */
  private readonly taken: number[];

  constructor(private readonly stages: readonly RowStage[]) {
    this.taken = stages.map(() => 0);
  }

  get empty(): boolean {
    return this.stages.length === 0;
  }

  /** The row after every stage, or DROPPED. */
  process(row: unknown): unknown {
    let current = row;
    const stages = this.stages;
    for (let i = 0; i < stages.length; i++) {
      const stage = stages[i] as RowStage;
      if (stage.kind === 'where') {
        if (stage.condition(current) !== true) return DROPPED;
      } else if (stage.kind === 'select') {
        current = stage.projection.project(current);
      } else {
        if ((this.taken[i] as number) >= stage.count) return DROPPED;
        this.taken[i] = (this.taken[i] as number) + 1;
      }
    }
    return current;
  }

  /** The rows that come out of all the stages, in order. */
  processAll(rows: readonly unknown[]): unknown[] {
    if (this.stages.length === 0) return rows as unknown[];
    const out: unknown[] = [];
    for (let i = 0; i < rows.length; i++) {
      const result = this.process(rows[i]);
      if (result !== DROPPED) out.push(result);
    }
    return out;
  }
}

/** A where over a table's changes. */
export class WhereChanges implements TableOperator {
  constructor(
    private readonly condition: Evaluator,
    private readonly upstream: TableOperator,
  ) {}

  push(deltas: readonly Delta[]): Delta[] {
    const out: Delta[] = [];
    for (const delta of deltas) {
      const now = this.condition(delta.data) === true;
      if (delta.action === 'add') {
        if (now) out.push(delta);
        continue;
      }
      const before = delta.action === 'remove' ? now : this.condition(delta.old ?? null) === true;
      if (delta.action === 'remove') {
        if (before) out.push(delta);
      } else if (before && now) {
        out.push(delta);
      } else if (before) {
        out.push({ action: 'remove', key: delta.key, data: delta.old as OutputRow });
      } else if (now) {
        out.push({ action: 'add', key: delta.key, data: delta.data });
      }
    }
    return out;
  }

  tick(): Delta[] {
    return [];
  }

  finish(deltas: readonly Delta[]): Delta[] {
    return this.push(deltas);
  }

  snapshot(): Delta[] {
    return this.push(this.upstream.snapshot());
  }
}

/** A select over a table's changes. */
export class SelectChanges implements TableOperator {
  constructor(
    private readonly projection: Projection,
    private readonly upstream: TableOperator,
  ) {}

  push(deltas: readonly Delta[]): Delta[] {
    const out: Delta[] = [];
    for (const delta of deltas) {
      const data = this.projection.project(delta.data);
      if (delta.action !== 'update') {
        out.push({ action: delta.action, key: delta.key, data });
        continue;
      }
      const old = this.projection.project(delta.old ?? null);
      if (!rowsEqual(old, data, this.projection.names)) out.push({ action: 'update', key: delta.key, data, old });
    }
    return out;
  }

  tick(): Delta[] {
    return [];
  }

  finish(deltas: readonly Delta[]): Delta[] {
    return this.push(deltas);
  }

  snapshot(): Delta[] {
    return this.push(this.upstream.snapshot());
  }
}
