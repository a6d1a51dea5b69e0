// The time range a historical query can possibly keep ("a where on the timestamp narrows the
// scan"). Pure: from the `where` stages that read the stored rows (before any select changes
// them), every top-level conjunct comparing the primary timestamp with a constant bounds the
// range. Anything else leaves it open: the bounds only skip rows the where would drop anyway,
// and the where still runs on what is read.

import { datetimeMs, type Expr, type Value } from '../expression/index.js';
import type { PlanStep } from '../query/index.js';

export interface TimeBounds {
  /** Inclusive, epoch milliseconds. */
  readonly fromMs?: number;
  readonly toMs?: number;
}

export function timeBoundsOf(steps: readonly PlanStep[], timestampPath: readonly string[] | undefined, variable: (name: string) => Value | undefined): TimeBounds {
  if (timestampPath === undefined) return {};
  let bounds: TimeBounds = {};
  for (const step of steps) {
    if (step.kind !== 'where') break;
    for (const conjunct of conjuncts(step.condition)) {
      const bound = boundOf(conjunct, timestampPath.join('.'), variable);
      if (bound !== undefined) bounds = intersectBounds(bounds, bound);
    }
  }
  return bounds;
}

/**
 * The bounds a condition sets on the primary timestamp when it sets nothing else: every
 * top-level conjunct compares the timestamp with a constant. undefined otherwise.
 */
export function boundsOnly(condition: Expr, timestampPath: readonly string[], variable: (name: string) => Value | undefined): TimeBounds | undefined {
  let bounds: TimeBounds = {};
  for (const conjunct of conjuncts(condition)) {
    const bound = boundOf(conjunct, timestampPath.join('.'), variable);
    if (bound === undefined) return undefined;
    bounds = intersectBounds(bounds, bound);
  }
  return bounds;
}

/** The range both allow (an absent end: open). */
export function intersectBounds(a: TimeBounds, b: TimeBounds): TimeBounds {
  const fromMs = Math.max(a.fromMs ?? -Infinity, b.fromMs ?? -Infinity);
  const toMs = Math.min(a.toMs ?? Infinity, b.toMs ?? Infinity);
  return { ...(fromMs === -Infinity ? {} : { fromMs }), ...(toMs === Infinity ? {} : { toMs }) };
}

function conjuncts(expr: Expr): Expr[] {
  return expr.kind === 'logical' && expr.operator === '&&' ? expr.operands.flatMap(conjuncts) : [expr];
}

const MIRRORED = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '==': '==' } as const;

function boundOf(expr: Expr, path: string, variable: (name: string) => Value | undefined): TimeBounds | undefined {
  if (expr.kind !== 'binary' || !(expr.operator in MIRRORED)) return undefined;
  let operator = expr.operator as keyof typeof MIRRORED;
  let constant: Expr = expr.right;
  if (!isPath(expr.left, path)) {
    if (!isPath(expr.right, path)) return undefined;
    constant = expr.left;
    operator = MIRRORED[operator];
  }
  const ms = constantMs(constant, variable);
  if (ms === undefined) return undefined;
  switch (operator) {
    case '>':
      return { fromMs: Math.floor(ms) + 1 };
    case '>=':
      return { fromMs: Math.ceil(ms) };
    case '<':
      return { toMs: Math.ceil(ms) - 1 };
    case '<=':
      return { toMs: Math.floor(ms) };
    case '==':
      return { fromMs: Math.ceil(ms), toMs: Math.floor(ms) };
  }
}

function isPath(expr: Expr, path: string): boolean {
  return expr.kind === 'field' && expr.path.join('.') === path;
}

function constantMs(expr: Expr, variable: (name: string) => Value | undefined): number | undefined {
  const value = expr.kind === 'literal' ? expr.value : expr.kind === 'variable' ? variable(expr.name) : undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  return typeof value === 'string' ? datetimeMs(value) : undefined;
}
