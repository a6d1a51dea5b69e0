// The shapes of the query operator runtime: what a pipeline takes and gives, the
// error it throws when a query outgrows its bounds, and the internal change records that
// flow between its operators. Pure: nothing here does I/O or reads a clock.

import { assert } from '../lib/assert.js';
import { TributaryError } from '../lib/errors.js';
import type { QueryCheck } from '../query/index.js';
import type { CompileOptions, Value } from '../expression/index.js';

export type ChangeAction = 'add' | 'update' | 'remove';

/** One output row: exactly the output schema's fields, in the order the select lists them. */
export type OutputRow = Record<string, Value>;

/** One output change, as an SSE `increment` item carries it. */
export interface Change {
  readonly action: ChangeAction;
  readonly data: OutputRow;
}

export interface PipelineLimits {
  /** Groups held at once by all the grouping stages of one pipeline. */
  readonly groupsMax: number;
  /** Rows held at once for ordering, take over tables and grouping over grouped rows. */
  readonly rowsHeldMax: number;
}

/**
 * Rows given as columns (a tsr block): per field, each row's value, as a row
 * object holding that field would give it (null where a row lacks it).
 */
export interface ColumnBatch {
  readonly count: number;
  /** Each row's event time, epoch milliseconds (the 'timestamp' columns read it). */
  readonly timestamps: ArrayLike<number>;
  column(field: string): ColumnView;
  /** Whether a row is in the input at all; undefined: every row is. */
  readonly keep: ((index: number) => boolean) | undefined;
}

export type ColumnView =
  /** Values drawn from a few distinct ones: `distinct[codes[row]]`. */
  | { readonly kind: 'codes'; readonly distinct: readonly Value[]; readonly codes: ArrayLike<number> }
  | { readonly kind: 'values'; readonly values: ArrayLike<Value> }
  /** Each row's own event time as an ISO string (its datetime field): `timestamps[row]` as a window reads it. */
  | { readonly kind: 'timestamp' };

/**
 * The fields a grouping reads when it takes column batches (historical, tumbling window
 * or none): the plain keys', the window's and each aggregate's argument (undefined: none).
 */
export interface ColumnFields {
  readonly keys: readonly string[];
  readonly window: string | undefined;
  readonly slots: ReadonlyArray<readonly (string | undefined)[]>;
}

export interface PipelineOptions {
  /** The checked query: its steps and output schema. Must have no errors. */
  readonly check: QueryCheck;
  /** Bounded input that ends with finish(). */
  readonly historical: boolean;
  /** Set when the input comes as column batches (pushColumns) into a grouping that is the query's first step. */
  readonly columns?: ColumnFields;
  /**
   * Variables, session functions, contributor field resolution, clock and numeric kinds of
   * the source; passed to every compile. The pipeline adds its aggregates and key scopes.
   */
  readonly compile: CompileOptions;
  readonly limits: PipelineLimits;
  /**
   * Live groupings coalesce their changes over this much wall-clock time, hopping windows
   * over their hop (live-clock.ts); undefined: every push and tick emits what it changed.
   */
  readonly emitIntervalMs?: number;
}

export interface Pipeline {
  /** 'stream': append-only rows (every change is an add); 'table': keyed rows with add/update/remove. */
  readonly mode: 'stream' | 'table';
  /** Rows dropped because every window they fell into had closed, or some of them had. */
  readonly lateRows: number;
  /** Feeds input rows in arrival order; returns the changes they cause, in order. */
  push(rows: readonly unknown[], nowMs: number): Change[];
  /** Feeds rows as columns (only with `columns` in the options); a bounded query emits at finish(). */
  pushColumns(batch: ColumnBatch): void;
  /** Wall-clock tick: moves the watermark on with the clock when no row came (live-clock.ts), emits what is due. */
  tick(nowMs: number): Change[];
  /** End of a bounded input: what is still to emit (for grouped or ordered queries, the whole result). */
  finish(): Change[];
  /** The current output table as adds (table mode), for a late subscriber; [] in stream mode. */
  snapshot(): Change[];
}

const LIMIT_NOUNS: Record<keyof PipelineLimits, string> = {
  groupsMax: 'groups',
  rowsHeldMax: 'rows held for ordering or regrouping',
};

/**
 * A query outgrew a runtime bound. The query fails with it (state `failed`); the pipeline
 * that threw must not be used again, as the operator that threw stopped half-way.
 */
export class PipelineLimitError extends TributaryError {
  readonly limit: keyof PipelineLimits;
  readonly max: number;

  constructor(limit: keyof PipelineLimits, max: number) {
    super(
      400,
      'PIPELINE_LIMIT',
      `the query needs more than ${max} ${LIMIT_NOUNS[limit]} (limit ${limit}); narrow it with where, fewer keys or a smaller window`,
      { details: { limit, max } },
    );
    this.limit = limit;
    this.max = max;
  }
}

/** What a pipeline holds, counted against its limits; shared by all its operators. */
export class Budget {
  private groups = 0;
  private rows = 0;

  constructor(private readonly limits: PipelineLimits) {}

  addGroup(): void {
    if (++this.groups > this.limits.groupsMax) throw new PipelineLimitError('groupsMax', this.limits.groupsMax);
  }

  releaseGroup(): void {
    this.groups--;
    assert(this.groups >= 0, 'released a group never added');
  }

  addRows(count: number): void {
    assert(Number.isSafeInteger(count) && count >= 0, `adding ${count} rows`);
    this.rows += count;
    if (this.rows > this.limits.rowsHeldMax) throw new PipelineLimitError('rowsHeldMax', this.limits.rowsHeldMax);
  }

  releaseRows(count: number): void {
    assert(Number.isSafeInteger(count) && count >= 0, `releasing ${count} rows`);
    this.rows -= count;
    assert(this.rows >= 0, `released ${-this.rows} rows more than were held`);
  }
}

/**
 * A change between operators. `key` identifies the row in its table (a group, an entry of
 * an ordered table) because the output's named keys may not: a select may leave a key out.
 * An update carries the row it replaces, so that where and select after a table need no
 * state of their own; a remove carries the row as last emitted.
 */
export interface Delta {
  readonly action: ChangeAction;
  readonly key: unknown;
  readonly data: OutputRow;
  readonly old?: OutputRow;
}

/** An operator over a table's changes. */
export interface TableOperator {
  push(deltas: readonly Delta[], nowMs: number): Delta[];
  tick(nowMs: number): Delta[];
  /** Bounded input only: takes the last changes of the operator before, returns the final table as adds. */
  finish(deltas: readonly Delta[]): Delta[];
  /** The current table as adds, in output order. */
  snapshot(): Delta[];
}

/** The first operator after the row stages, which turns rows into a table. */
export interface RowConsumer extends TableOperator {
  pushRows(rows: readonly unknown[], nowMs: number): Delta[];
}
