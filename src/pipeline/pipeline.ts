// The query operator runtime: a checked query's steps as a chain of pure
// operators. Rows go in through push(), wall-clock time through tick(), the end of a
// bounded input through finish(); output changes come back. No I/O, no clock read: the
// execution session around it carries rows in and changes out.
//
// The chain is the row stages (where, select, take over rows, run fused) up to the first
// stage that makes a table (a grouping, or an ordering), then operators over table
// changes (src/pipeline/changes.ts, grouping.ts, ordering.ts).
//
// Decisions the language leaves open (more in each module's header):
// - mode is 'table' when the query groups, or when a live query orders a stream with a
//   take (its top N, with removes); otherwise 'stream', every change an add.
// - A live `order by` over rows without a take right after it has no effect: an unbounded
//   stream has no end to sort against, and rows pass in arrival order. Over a table, and
//   over bounded input, it orders.
// - A bounded (historical) query whose chain makes a table emits nothing from push():
//   finish() gives the whole final result as adds, in the order of its order by, else by
//   key. One that does not (where, select, take over rows) passes rows straight through
//   push(), holding none, and finish() gives nothing more.
// - Output rows of a query with no select are the input rows cut to the output schema's
//   fields (missing ones null), so a consumer never sees fields the schema lacks.

import { assert } from '../lib/assert.js';
import { defaultFieldAccessor } from '../expression/index.js';
import { compileCondition, compileProjection, DROPPED, projectionOf, RowStages, SelectChanges, WhereChanges, type RowStage } from './changes.js';
import { GroupingOperator } from './grouping.js';
import { planGrouping } from './grouping-plan.js';
import { PanedWindowGrouping } from './paned-windows.js';
import { compileOrderKeys, HistoricalOrder, LiveOrder, type OrderStep } from './ordering.js';
import {
  Budget,
  type Change,
  type ColumnBatch,
  type Delta,
  type OutputRow,
  type Pipeline,
  type PipelineOptions,
  type RowConsumer,
  type TableOperator,
} from './types.js';

/** Builds the runtime of a checked query. Throws for a query with errors: check it first. */
export function createPipeline(options: PipelineOptions): Pipeline {
  assert(options.check.errors.length === 0, `a query with errors cannot run: ${options.check.errors.map((error) => error.type).join(', ')}`);
  const { groupsMax, rowsHeldMax } = options.limits;
  assert(Number.isSafeInteger(groupsMax) && groupsMax > 0 && Number.isSafeInteger(rowsHeldMax) && rowsHeldMax > 0, `pipeline limits ${groupsMax} groups, ${rowsHeldMax} rows`);
  const chain = buildChain(options);
  // Only a chain that makes a table is in table mode, and its operators follow its first one.
  assert(chain.mode === 'stream' || chain.first !== undefined, 'a table-mode pipeline without a table');
  assert(chain.first !== undefined || chain.operators.length === 0, 'table operators without a table');
  return new QueryPipeline(options, chain);
}

/**
 * What flows between operators (types.ts, Delta): an update carries the row it replaces.
 * Checked at every operator boundary: a broken operator fails here, not in a consumer.
 */
function checkedDeltas(deltas: Delta[]): Delta[] {
  for (let i = 0; i < deltas.length; i++) {
    const delta = deltas[i] as Delta;
    assert(delta.action !== 'update' || delta.old !== undefined, 'an update without the row it replaces');
  }
  return deltas;
}

interface Chain {
  readonly stages: RowStage[];
  /** The first table-making operator, then the operators over its changes. */
  readonly first: RowConsumer | undefined;
  readonly operators: TableOperator[];
  readonly groupings: Array<{ readonly lateRows: number }>;
  readonly mode: 'stream' | 'table';
}

function buildChain(options: PipelineOptions): Chain {
  const { check, historical, compile } = options;
  const budget = new Budget(options.limits);
  const chain = { stages: [] as RowStage[], first: undefined as RowConsumer | undefined, operators: [] as TableOperator[], groupings: [] as Array<{ readonly lateRows: number }>, mode: 'stream' as 'stream' | 'table' };
  let selected = false;
  const last = (): TableOperator => chain.operators[chain.operators.length - 1] ?? (chain.first as RowConsumer);
  const place = (operator: TableOperator & RowConsumer): void => {
    if (chain.first === undefined) chain.first = operator;
    else chain.operators.push(operator);
  };
  const placeOrder = (step: OrderStep | undefined, limit: number): void => {
    // Rows reaching an ordering unselected are cut to the schema's fields first.
    if (chain.first === undefined && !selected) chain.stages.push(schemaProjection(options));
    const keys = compileOrderKeys(step, compile);
    place(historical ? new HistoricalOrder(keys, limit, budget) : new LiveOrder(keys, limit, budget));
  };
  const steps = check.steps;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i] as (typeof steps)[number];
    const inTable = chain.first !== undefined;
    if (step.kind === 'where') {
      const condition = compileCondition(step, compile);
      if (inTable) chain.operators.push(new WhereChanges(condition, last()));
      else chain.stages.push({ kind: 'where', condition });
    } else if (step.kind === 'select' && step.aggregating) {
      const plan = planGrouping(step, compile);
      const grouping = PanedWindowGrouping.suits(plan, inTable)
        ? new PanedWindowGrouping(plan, historical, budget, options.emitIntervalMs)
        : new GroupingOperator(step, compile, historical, inTable, budget, options.emitIntervalMs);
      chain.groupings.push(grouping);
      place(grouping);
      chain.mode = 'table';
    } else if (step.kind === 'select') {
      selected = true;
      const projection = compileProjection(step, compile);
      if (inTable) chain.operators.push(new SelectChanges(projection, last()));
      else chain.stages.push({ kind: 'select', projection });
    } else if (step.kind === 'order') {
      const next = steps[i + 1];
      const limit = next?.kind === 'take' ? next.count : Infinity;
      if (next?.kind === 'take') i++;
      if (!inTable && !historical && limit === Infinity) continue;
      placeOrder(step, limit);
      if (!historical) chain.mode = 'table';
    } else if (inTable) {
      placeOrder(undefined, step.count);
    } else {
      chain.stages.push({ kind: 'take', count: step.count });
    }
  }
  if (chain.first === undefined && !selected) chain.stages.push(schemaProjection(options));
  return chain;
}

function schemaProjection(options: PipelineOptions): RowStage {
  const names = options.check.output.schema.topDef.properties.map(([name]) => name);
  return { kind: 'select', projection: projectionOf(names, names.map((name) => defaultFieldAccessor([name]))) };
}

function toChanges(deltas: readonly Delta[]): Change[] {
  const changes: Change[] = new Array<Change>(deltas.length);
  for (let i = 0; i < deltas.length; i++) {
    const delta = deltas[i] as Delta;
    changes[i] = { action: delta.action, data: delta.data };
  }
  return changes;
}

class QueryPipeline implements Pipeline {
  readonly mode: 'stream' | 'table';
  private readonly rowStages: RowStages;
  private finished = false;

  constructor(
    private readonly options: PipelineOptions,
    private readonly chain: Chain,
  ) {
    this.mode = chain.mode;
    this.rowStages = new RowStages(chain.stages);
  }

  get lateRows(): number {
    return this.chain.groupings.reduce((total, grouping) => total + grouping.lateRows, 0);
  }

  push(rows: readonly unknown[], nowMs: number): Change[] {
    assert(Number.isFinite(nowMs), `rows pushed at ${nowMs}`);
    const first = this.chain.first;
    if (first === undefined) return this.streamOut(this.streamChanges(rows));
    let deltas = checkedDeltas(first.pushRows(this.rowStages.processAll(rows), nowMs));
    for (const operator of this.chain.operators) {
      if (deltas.length === 0) break;
      deltas = checkedDeltas(operator.push(deltas, nowMs));
    }
    return this.options.historical ? [] : this.streamOut(toChanges(deltas));
  }

  pushColumns(batch: ColumnBatch): void {
    const columns = this.options.columns;
    const first = this.chain.first;
    assert(columns !== undefined && this.options.historical && this.rowStages.empty && first instanceof GroupingOperator, 'columns pushed into a pipeline that does not take them');
    first.placeColumns(batch, columns);
  }

  tick(nowMs: number): Change[] {
    assert(Number.isFinite(nowMs), `pipeline ticked at ${nowMs}`);
    const first = this.chain.first;
    if (this.options.historical || first === undefined) return [];
    let deltas = checkedDeltas(first.tick(nowMs));
    for (const operator of this.chain.operators) {
      const passed = deltas.length > 0 ? checkedDeltas(operator.push(deltas, nowMs)) : [];
      const own = checkedDeltas(operator.tick(nowMs));
      deltas = own.length > 0 ? passed.concat(own) : passed;
    }
    return this.streamOut(toChanges(deltas));
  }

  finish(): Change[] {
    const first = this.chain.first;
    if (!this.options.historical || first === undefined || this.finished) return [];
    this.finished = true;
    let deltas = checkedDeltas(first.finish([]));
    for (const operator of this.chain.operators) deltas = checkedDeltas(operator.finish(deltas));
    const changes = toChanges(deltas);
    // A bounded query's final result is its whole table, as adds.
    assert(changes.every((change) => change.action === 'add'), 'finish() gave other changes than adds');
    return changes;
  }

  snapshot(): Change[] {
    if (this.mode === 'stream') return [];
    const last = this.chain.operators[this.chain.operators.length - 1] ?? this.chain.first;
    const changes = last === undefined ? [] : toChanges(last.snapshot());
    assert(changes.every((change) => change.action === 'add'), 'a snapshot with other changes than adds');
    return changes;
  }

  /** In stream mode every change is an add (Pipeline.mode). */
  private streamOut(changes: Change[]): Change[] {
    assert(this.mode === 'table' || changes.every((change) => change.action === 'add'), `a ${this.mode}-mode pipeline gave a remove or an update`);
    return changes;
  }

  /** The hot path of a query without tables: rows through the fused stages, straight out. */
  private streamChanges(rows: readonly unknown[]): Change[] {
    const out: Change[] = [];
    const stages = this.rowStages;
    for (let i = 0; i < rows.length; i++) {
      const result = stages.process(rows[i]);
      if (result !== DROPPED) out.push({ action: 'add', data: result as OutputRow });
    }
    return out;
  }
}
