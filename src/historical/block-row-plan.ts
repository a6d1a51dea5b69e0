// Which historical queries read a tsr stream's blocks column by column: a query
// whose rows go, after wheres, straight into a grouping reads only the fields they use.
// Its rows are built from the blocks' columns with those fields alone, in the order the
// payload reader gives (event time, then writeId), so the grouping sees the same values in
// the same order as from whole payloads, without a payload object per row. Pure.
//
// - Leading wheres whose every conjunct bounds the primary timestamp (`at >= '…' && at <
//   '…'`) are the reader's: it keeps the rows whose timestamp field holds a datetime in the
//   bounds, and the pipeline runs from the first step after them. Those are exactly the rows
//   such a where keeps (a field without a datetime compares false, time-bounds.ts).
// - The primary timestamp field goes to the grouping as epoch milliseconds, not its text,
//   when only the window reads it: a window takes either (values.ts, eventTimeMs), and the
//   text would be parsed again for every row.
// Anything else (no grouping, a select or an order before it, a domain filter) reads whole
// payloads (historical-reader.ts).

import { visit, type Expr, type Value } from '../expression/index.js';
import type { PlanStep } from '../query/index.js';
import { extractAggregates } from '../pipeline/aggregates.js';
import { boundsOnly, intersectBounds, type TimeBounds } from './time-bounds.js';
import type { ColumnFields } from '../pipeline/types.js';

export interface BlockRowPlan {
  /**
   * Set when the query asks only for the last values per key: one plain key field, no
   * window, every aggregate `last` of a plain field, no where. Its owners answer with the
   * newest values per key (latest-values.ts), read from the newest blocks back.
   */
  readonly latest?: { readonly key: string; readonly fields: readonly string[] };
  /**
   * Set when the grouping takes the blocks' columns without rows at all (pushColumns): it is
   * the first step after the absorbed wheres, its keys and aggregate arguments are plain
   * top-level fields, its window (if any) tumbles, and no aggregate depends on the order of
   * rows (first, last). The rows' order then does not matter, and blocks are read partition
   * by partition with no merge: sums may round differently from rows taken in time order.
   */
  readonly columns?: ColumnFields;
  /** Top-level fields the rows need, as the payloads hold them. */
  readonly fields: readonly string[];
  /** The primary timestamp field, when the rows carry it as epoch milliseconds (only the window reads it). */
  readonly timestampAsMs: string | undefined;
  /** Leading where steps the reader replaces, and the bounds they set. */
  readonly absorbed: { readonly steps: number; readonly field: string; readonly bounds: TimeBounds } | undefined;
}

export interface BlockRowContext {
  /** The path of the source's primary timestamp field, if it has one. */
  readonly timestampPath: readonly string[] | undefined;
  variable(name: string): Value | undefined;
  isSessionFunction(name: string): boolean;
  /** Whether a top-level field reads as the row's own value (not through a contributor, query-context.ts). */
  isPlainField(name: string): boolean;
}

/** Aggregates whose value does not depend on the order rows come in (but for rounding). */
const ORDERLESS_AGGREGATES: ReadonlySet<string> = new Set(['count', 'sum', 'avg', 'min', 'max', 'stddev', 'bivar']);

/** The plan, or undefined when the query reads whole payloads. */
export function planBlockRows(steps: readonly PlanStep[], context: BlockRowContext): BlockRowPlan | undefined {
  const timestampField = context.timestampPath?.length === 1 ? context.timestampPath[0]! : undefined;
  let first = 0;
  let bounds: TimeBounds = {};
  while (timestampField !== undefined && steps[first]?.kind === 'where') {
    const step = steps[first] as Extract<PlanStep, { kind: 'where' }>;
    const only = boundsOnly(step.condition, [timestampField], (name) => context.variable(name));
    if (only === undefined) break;
    bounds = intersectBounds(bounds, only);
    first += 1;
  }
  const wheres: Expr[] = [];
  let grouping = first;
  while (steps[grouping]?.kind === 'where') wheres.push((steps[grouping] as Extract<PlanStep, { kind: 'where' }>).condition), (grouping += 1);
  const select = steps[grouping];
  if (select?.kind !== 'select' || !select.aggregating) return undefined;
  const keys = select.grouping?.keys ?? [];
  const windowKey = select.grouping?.window === undefined ? undefined : keys[keys.length - 1]?.expression;
  const plainKeys = (windowKey === undefined ? keys : keys.slice(0, -1)).map((key) => key.expression);
  const calls = extractAggregates(select.items.map((item) => item.expression), (name) => context.isSessionFunction(name)).calls;
  const read = [...wheres, ...plainKeys, ...calls.flatMap((call) => call.args)];
  const fields = new Set<string>();
  for (const expr of read) collectFields(expr, fields);
  const windowOnTimestamp = windowKey?.kind === 'field' && windowKey.path.length === 1 && windowKey.path[0] === timestampField;
  if (windowKey !== undefined && !windowOnTimestamp) collectFields(windowKey, fields);
  const timestampAsMs = windowOnTimestamp && !fields.has(timestampField!) ? timestampField : undefined;
  if (windowOnTimestamp && timestampAsMs === undefined) fields.add(timestampField!);
  if (timestampAsMs !== undefined) fields.delete(timestampAsMs);
  const columns = wheres.length === 0 ? columnFields(select, windowKey, plainKeys, calls, context) : undefined;
  const latest = first === 0 && wheres.length === 0 ? latestFields(windowKey, plainKeys, calls, context) : undefined;
  return {
    ...(columns === undefined ? {} : { columns }),
    ...(latest === undefined ? {} : { latest }),
    fields: [...fields].sort(),
    timestampAsMs,
    absorbed: first === 0 ? undefined : { steps: first, field: timestampField!, bounds },
  };
}

function columnFields(
  select: Extract<PlanStep, { kind: 'select' }>,
  windowKey: Expr | undefined,
  plainKeys: readonly Expr[],
  calls: ReadonlyArray<{ name: string; args: readonly Expr[] }>,
  context: BlockRowContext,
): ColumnFields | undefined {
  const plain = (expr: Expr | undefined): string | undefined =>
    expr?.kind === 'field' && expr.path.length === 1 && context.isPlainField(expr.path[0]!) ? expr.path[0] : undefined;
  const window = select.grouping?.window;
  if (window !== undefined && window.hop !== undefined && window.hop.ms !== window.size.ms) return undefined;
  const windowField = plain(windowKey);
  if (windowKey !== undefined && windowField === undefined) return undefined;
  const keys = plainKeys.map(plain);
  if (keys.some((key) => key === undefined)) return undefined;
  const slots = calls.map((call) => call.args.map(plain));
  if (calls.some((call, index) => !ORDERLESS_AGGREGATES.has(call.name) || slots[index]!.some((arg) => arg === undefined))) return undefined;
  return { keys: keys as string[], window: windowField, slots };
}

function latestFields(windowKey: Expr | undefined, plainKeys: readonly Expr[], calls: ReadonlyArray<{ name: string; args: readonly Expr[] }>, context: BlockRowContext): BlockRowPlan['latest'] {
  const plain = (expr: Expr | undefined): string | undefined =>
    expr?.kind === 'field' && expr.path.length === 1 && context.isPlainField(expr.path[0]!) ? expr.path[0] : undefined;
  const key = plain(plainKeys[0]);
  if (windowKey !== undefined || plainKeys.length !== 1 || key === undefined || calls.length === 0) return undefined;
  const fields = calls.map((call) => (call.name === 'last' && call.args.length === 1 ? plain(call.args[0]) : undefined));
  return fields.every((field) => field !== undefined) ? { key, fields: fields as string[] } : undefined;
}

/** The top-level field of every field an expression reads. */
function collectFields(expr: Expr, into: Set<string>): void {
  visit(expr, (node) => {
    if (node.kind === 'field' && node.path.length > 0) into.add(node.path[0]!);
  });
}
