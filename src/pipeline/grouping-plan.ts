// A grouping select compiled for the runtime: key evaluators over input rows, the window
// on the last key, one slot per aggregate call with its argument evaluators, and the
// select's items compiled over a GroupView (src/pipeline/scopes.ts).

import type { PlanStep } from '../query/index.js';
import { compile, type CompileOptions, type Evaluator } from '../expression/index.js';
import { aggregateKind, createAccumulator, extractAggregates, type Accumulator, type AggregateName } from './aggregates.js';
import { compileNode, keyScopeOptions, rowOptions, type ScopeKey } from './scopes.js';

export type SelectStep = Extract<PlanStep, { kind: 'select' }>;

export interface AggregateSlot {
  readonly name: AggregateName;
  readonly argCount: number;
  /** Argument evaluators over input rows; a constant null for an argument the call lacks. */
  readonly first: Evaluator;
  readonly second: Evaluator;
}

export interface GroupingPlan {
  /** Output names of all keys, the window key last. */
  readonly keyNames: readonly string[];
  /** Evaluators of the keys that are not the window key. */
  readonly plainKeys: readonly Evaluator[];
  readonly window: { readonly eventTime: Evaluator; readonly sizeMs: number; readonly hopMs: number } | undefined;
  readonly slots: readonly AggregateSlot[];
  readonly itemNames: readonly string[];
  /** Items over a GroupView. */
  readonly items: readonly Evaluator[];
}

const NOTHING: Evaluator = () => null;

export function planGrouping(step: SelectStep, base: CompileOptions): GroupingPlan {
  const input = rowOptions(base, step.input);
  const keys = step.grouping?.keys ?? [];
  const window = step.grouping?.window;
  const compiledKeys = keys.map((key) => compileNode(key.expression, input));
  const plainCount = window === undefined ? keys.length : keys.length - 1;
  const scopeKeys: ScopeKey[] = keys.map((key, index) => ({
    name: key.name,
    path: key.expression.kind === 'field' ? key.expression.path.join('.') : undefined,
    // The window key reads as its start, an ISO string: not a number.
    kind: index < plainCount ? (compiledKeys[index]?.kind ?? 'unknown') : 'unknown',
  }));
  const isSessionFunction = (name: string): boolean => base.functions !== undefined && Object.hasOwn(base.functions, name);
  const extracted = extractAggregates(
    step.items.map((item) => item.expression),
    isSessionFunction,
  );
  const compiledSlots = extracted.calls.map((call) => ({ call, args: call.args.map((arg) => compileNode(arg, input)) }));
  const scope = keyScopeOptions(
    base,
    scopeKeys,
    compiledSlots.map(({ call, args }) => ({ kind: aggregateKind(call.name, args[0]?.kind ?? 'unknown') })),
  );
  const windowKey = compiledKeys[plainCount];
  return {
    keyNames: keys.map((key) => key.name),
    plainKeys: compiledKeys.slice(0, plainCount).map((node) => node.evaluate),
    window:
      window === undefined || windowKey === undefined
        ? undefined
        : { eventTime: windowKey.evaluate, sizeMs: window.size.ms, hopMs: window.hop?.ms ?? window.size.ms },
    slots: compiledSlots.map(({ call, args }) => ({
      name: call.name,
      argCount: args.length,
      first: args[0]?.evaluate ?? NOTHING,
      second: args[1]?.evaluate ?? NOTHING,
    })),
    itemNames: step.items.map((item) => item.name),
    items: extracted.items.map((expr) => compile(expr, scope)),
  };
}

export function createAccumulators(plan: GroupingPlan): Accumulator[] {
  return plan.slots.map((slot) => createAccumulator(slot.name, slot.argCount));
}
