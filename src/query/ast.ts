// The syntax tree of one query of the query language (docs/query-language.md,
// "Grammar"). Expressions inside it are the shared expression module's trees, so the search
// query's `base`, domains and queries have one expression language and one evaluator.

import type { Expr, Position } from '../expression/index.js';

export type { Expr, Position } from '../expression/index.js';

/** A physical stream, `/streams/<tenant>/<collection>/<name>`, written bare or quoted. */
export interface PhysicalStreamRef {
  readonly kind: 'physical';
  readonly uri: string;
  readonly position: Position;
}

/** A logical stream of the session: what another query writes with `into <name>`. */
export interface LogicalStreamRef {
  readonly kind: 'logical';
  readonly name: string;
  readonly position: Position;
}

export type StreamRef = PhysicalStreamRef | LogicalStreamRef;

export type TimeUnit = 'millisecond' | 'second' | 'minute' | 'hour' | 'day' | 'week';

/** `1 minute`: the count and unit as written, and their length in milliseconds. */
export interface Duration {
  readonly count: number;
  readonly unit: TimeUnit;
  readonly ms: number;
}

/** `window of <size> [every <hop>]`: tumbling without `every`, hopping with it. */
export interface WindowSpec {
  readonly size: Duration;
  /** Absent for a tumbling window, whose hop is its size. */
  readonly hop?: Duration;
  readonly position: Position;
}

/** `expr [as name]`, a select item or a group key. */
export interface NamedExpression {
  readonly expression: Expr;
  /** The name given with `as`, if any. */
  readonly alias?: string;
  readonly position: Position;
}

export interface WhereStage {
  readonly kind: 'where';
  readonly condition: Expr;
  readonly position: Position;
}

export interface SelectStage {
  readonly kind: 'select';
  readonly items: readonly NamedExpression[];
  readonly position: Position;
}

/** `group by k1, k2 [window …]`; the parser guarantees a select follows it. */
export interface GroupStage {
  readonly kind: 'group';
  readonly keys: readonly NamedExpression[];
  /** A time window over the last key. */
  readonly window?: WindowSpec;
  readonly position: Position;
}

/** `window …` with no keys: a window over the rows' primary timestamp; a select follows. */
export interface WindowStage {
  readonly kind: 'window';
  readonly window: WindowSpec;
  readonly position: Position;
}

export interface OrderKey {
  readonly expression: Expr;
  readonly direction: 'asc' | 'desc';
}

export interface OrderStage {
  readonly kind: 'order';
  readonly keys: readonly OrderKey[];
  readonly position: Position;
}

export interface TakeStage {
  readonly kind: 'take';
  readonly count: number;
  readonly position: Position;
}

export type Stage = WhereStage | SelectStage | GroupStage | WindowStage | OrderStage | TakeStage;

export interface QueryAst {
  /** `from historical …`: read stored data (a bounded query) instead of live rows. */
  readonly historical: boolean;
  readonly source: StreamRef;
  readonly stages: readonly Stage[];
  /** `into …`; absent when the output is an output channel. */
  readonly into?: StreamRef;
}
