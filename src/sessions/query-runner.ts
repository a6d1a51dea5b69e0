// Runs one query of a hosted session: feeds its input (live payloads, the stored data of a
// historical query, or a logical stream of the session) through its pipeline and hands the
// changes to its output (an output channel, a logical stream, or a physical stream through the
// ingest path). A runner runs once: a restart is a new runner. A failure at run time (a limit,
// a session function that throws, rows the target stream refuses) stops it in state `failed`
// with the error.

import type { QueryCheck } from '../query/index.js';
import type { CompileOptions } from '../expression/index.js';
import type { Logger } from '../lib/log.js';
import { outputSchemaToJson } from '../query/index.js';
import type { HistoricalSource } from '../historical/historical-reader.js';
import type { LiveFeed, LogicalBus, Payload } from './live-feed.js';
import type { OutputChannel } from './output-channel.js';
import type { Change, ColumnBatch, Pipeline, PipelineOptions } from '../pipeline/types.js';
import type { FunctionBudget } from './function-budget.js';
import { TimeSlice } from '../lib/time-slice.js';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export type RunState = 'running' | 'completed' | 'failed' | 'stopped';

/** A failure at run time; docs/query-language.md names no type for it, so it is ours. */
export interface RuntimeError {
  readonly type: 'RUNTIME_ERROR';
  readonly message: string;
}

export type RunnerInput =
  | { readonly kind: 'live'; readonly stream: string }
  | { readonly kind: 'historical'; readonly source: HistoricalSource }
  | { readonly kind: 'logical'; readonly name: string; readonly writers: readonly string[]; readonly bounded: boolean };

export interface RunnerSpec {
  readonly queryId: string;
  readonly check: QueryCheck;
  readonly compile: CompileOptions;
  readonly input: RunnerInput;
  /** A field every output row gets (a daemon's contributor decoration). */
  readonly decorate?: { readonly field: string; readonly value: string; readonly definition?: string };
  /** The session domain's test of input payloads; undefined: no domain. */
  readonly filter?: (payload: Payload) => boolean;
  /** The budget the query's session function calls are charged to; undefined: it calls none. */
  readonly functionBudget?: FunctionBudget;
}

export interface RunnerEnvironment {
  createPipeline(options: PipelineOptions): Pipeline;
  readonly feed: LiveFeed;
  readonly bus: LogicalBus;
  /** The output channel, when the query has no `into`. */
  readonly channel?: OutputChannel;
  /** Posts rows to a physical stream through ingest. */
  writeStream(uri: string, rows: readonly Payload[]): Promise<void>;
  readHistorical(source: HistoricalSource): AsyncIterable<Payload[]>;
  /** A historical source whose plan takes columns (source.rows.columns), as column batches. */
  readHistoricalColumns(source: HistoricalSource): AsyncIterable<ColumnBatch>;
  readonly limits: { readonly groupsMax: number; readonly rowsHeldMax: number; readonly pendingWriteRowsMax: number };
  readonly clock: () => number;
  /** How often live groupings are told the time: their windows close and their changes go out on it. */
  readonly tickIntervalMs: number;
  /** The wall-clock time over which a live grouping's changes are coalesced (hopping windows: their hop). */
  readonly emitIntervalMs: number;
  readonly log: Logger;
  onState(state: RunState, errors: readonly RuntimeError[]): void;
}

export class QueryRunner {
  private state: RunState = 'running';
  private pipeline: Pipeline | undefined;
  private readonly cleanups: Array<() => void> = [];
  private pendingWrite: Promise<void> = Promise.resolve();
  private pendingWriteRows = 0;
  /** Input waiting for the pipeline, in arrival order (drain). */
  private readonly inbox: Array<readonly Payload[]> = [];
  private inboxRows = 0;
  private draining = false;
  private idleWaiters: Array<() => void> = [];

  constructor(
    private readonly spec: RunnerSpec,
    private readonly env: RunnerEnvironment,
  ) {}

  get currentState(): RunState {
    return this.state;
  }

  /** Rows that came after a window of theirs had closed (monitoring). */
  get lateRows(): number {
    return this.pipeline?.lateRows ?? 0;
  }

  /** Rows waiting to be written into a physical stream: the runner's queue (monitoring). */
  get queuedRows(): number {
    return this.pendingWriteRows;
  }

  start(): void {
    const { check, compile, input } = this.spec;
    const bounded = check.output.outputType === 'BOUNDED';
    // Wheres that a block read applies itself are not run again (block-row-plan.ts).
    const absorbed = input.kind === 'historical' ? (input.source.rows?.absorbed?.steps ?? 0) : 0;
    try {
      const columns = input.kind === 'historical' ? input.source.rows?.columns : undefined;
      this.pipeline = this.env.createPipeline({
        check: absorbed === 0 ? check : { ...check, steps: check.steps.slice(absorbed) },
        historical: bounded,
        compile,
        limits: this.env.limits,
        emitIntervalMs: this.env.emitIntervalMs,
        ...(columns === undefined ? {} : { columns }),
      });
    } catch (error) {
      this.fail(error);
      return;
    }
    const retention = this.pipeline.mode === 'table' ? 'table' : bounded ? 'rows' : 'none';
    this.env.channel?.begin(decoratedSchema(check, this.spec.decorate), retention);
    if (input.kind === 'live') this.startLive(input.stream);
    else if (input.kind === 'logical') this.startLogical(input.name, input.writers, input.bounded);
    else void this.runHistorical(input.source);
  }

  /**
   * Stops the run. `endOutput`: the query stopped or went (not a restart, not a move to
   * another host), so its output channel's clients are ended. Resolves once a write into
   * a physical stream that was under way has finished: nothing is written after.
   */
  stop(endOutput = false): Promise<void> {
    if (this.state === 'running') this.state = 'stopped';
    this.release();
    if (endOutput) this.env.channel?.stop();
    return this.pendingWrite;
  }

  private startLive(stream: string): void {
    this.cleanups.push(this.env.feed.subscribe(stream, (payloads) => this.push(payloads)));
    this.startTicks();
  }

  private startLogical(name: string, writers: readonly string[], bounded: boolean): void {
    const waiting = new Set(writers);
    this.cleanups.push(
      this.env.bus.subscribe(name, {
        rows: (rows) => this.push(rows),
        end: (writerId) => {
          waiting.delete(writerId);
          if (bounded && waiting.size === 0) void this.idle().then(() => this.complete());
        },
      }),
    );
    if (!bounded) this.startTicks();
  }

  private startTicks(): void {
    const timer = setInterval(() => this.guard(() => this.emit(this.pipeline!.tick(this.env.clock()))), this.env.tickIntervalMs);
    timer.unref();
    this.cleanups.push(() => clearInterval(timer));
  }

  private async runHistorical(source: HistoricalSource): Promise<void> {
    if (source.rows?.columns !== undefined) return this.runColumns(source);
    try {
      for await (const payloads of this.env.readHistorical(source)) {
        if (this.state !== 'running') return;
        this.push(payloads);
        await this.idle();
      }
      if (this.state === 'running') this.complete();
    } catch (error) {
      this.fail(error);
    }
  }

  /** A historical read whose grouping takes the stored columns whole (block-row-plan.ts). */
  private async runColumns(source: HistoricalSource): Promise<void> {
    const slice = new TimeSlice();
    try {
      for await (const batch of this.env.readHistoricalColumns(source)) {
        if (this.state !== 'running') return;
        this.guard(() => this.pipeline!.pushColumns(batch));
        // A slice of work done: the event loop gets a turn.
        if (slice.due()) await slice.pause();
      }
      if (this.state === 'running') this.complete();
    } catch (error) {
      this.fail(error);
    }
  }

  private push(payloads: readonly Payload[]): void {
    if (this.state !== 'running') return;
    const filter = this.spec.filter;
    const rows = filter === undefined ? payloads : payloads.filter(filter);
    if (rows.length === 0) return;
    if (this.inboxRows + rows.length > this.env.limits.pendingWriteRowsMax) {
      const budget = this.spec.functionBudget;
      const why = budget === undefined ? '' : ` (its session functions may use ${budget.budgetMsPerSecond} ms per second)`;
      this.fail(new Error(`the query does not keep up with its input: ${this.inboxRows} rows are waiting${why}`));
      return;
    }
    this.inbox.push(rows);
    this.inboxRows += rows.length;
    if (!this.draining) void this.drain();
  }

  /**
   * Feeds waiting input through the pipeline, in order. Without session functions a batch goes
   * in whole, as it came; with them, a row at a time. Between two pushes the runner waits while
   * the query's function budget is spent, and gives the event loop a turn once a slice of work
   * is done, so no query holds the node. Nothing waits when neither is due: a live batch is
   * then handled in the turn it arrived.
   */
  private async drain(): Promise<void> {
    this.draining = true;
    const slice = new TimeSlice();
    try {
      while (this.inbox.length > 0 && this.state === 'running') {
        const rows = this.inbox.shift()!;
        this.inboxRows -= rows.length;
        const step = this.spec.functionBudget === undefined ? rows.length : 1;
        for (let at = 0; at < rows.length && this.state === 'running'; at += step) {
          const waitMs = this.spec.functionBudget?.waitMs() ?? 0;
          if (waitMs > 0) await sleep(waitMs);
          else if (slice.due()) await slice.pause();
          const chunk = step === rows.length ? rows : rows.slice(at, at + step);
          this.guard(() => this.emit(this.pipeline!.push(chunk, this.env.clock())));
        }
      }
    } finally {
      this.draining = false;
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  /** Resolves once every row pushed so far went through the pipeline (or the query ended). */
  private idle(): Promise<void> {
    if (!this.draining && this.inbox.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private complete(): void {
    this.guard(() => this.emit(this.pipeline!.finish()));
    if (this.state !== 'running') return;
    const target = this.spec.check.output.target;
    if (target.kind === 'logical') this.env.bus.end(target.name, this.spec.queryId);
    void this.pendingWrite.then(() => {
      if (this.state !== 'running') return;
      this.env.channel?.end();
      this.state = 'completed';
      this.release();
      this.env.onState('completed', []);
    });
  }

  private emit(output: readonly Change[]): void {
    if (output.length === 0) return;
    const decorate = this.spec.decorate;
    const changes = decorate === undefined ? output : output.map((change) => ({ action: change.action, data: { ...change.data, [decorate.field]: decorate.value } }));
    const target = this.spec.check.output.target;
    if (target.kind === 'channel') {
      this.env.channel?.increment(changes);
      return;
    }
    const rows = changes.filter((change) => change.action !== 'remove').map((change) => change.data as Payload);
    if (rows.length === 0) return;
    if (target.kind === 'logical') this.env.bus.publish(target.name, rows);
    else this.write(target.uri, rows);
  }

  /** Rows for a physical stream go through ingest one batch at a time, in order. */
  private write(uri: string, rows: readonly Payload[]): void {
    if (this.pendingWriteRows + rows.length > this.env.limits.pendingWriteRowsMax) {
      this.fail(new Error(`the stream ${uri} does not take rows as fast as the query writes them (${this.pendingWriteRows} waiting)`));
      return;
    }
    this.pendingWriteRows += rows.length;
    this.pendingWrite = this.pendingWrite.then(async () => {
      try {
        if (this.state === 'running') await this.env.writeStream(uri, rows);
      } catch (error) {
        this.fail(error);
      } finally {
        this.pendingWriteRows -= rows.length;
      }
    });
  }

  private guard(action: () => void): void {
    if (this.state !== 'running') return;
    try {
      action();
    } catch (error) {
      this.fail(error);
    }
  }

  private fail(error: unknown): void {
    if (this.state !== 'running') return;
    this.state = 'failed';
    this.release();
    // Nothing more will come: the output's clients are ended (docs/query-language.md, "Outputs").
    this.env.channel?.stop();
    const message = error instanceof Error ? error.message : String(error);
    this.env.log.warn({ query: this.spec.queryId, err: message }, 'query failed');
    this.env.onState('failed', [{ type: 'RUNTIME_ERROR', message }]);
  }

  private release(): void {
    for (const cleanup of this.cleanups.splice(0)) cleanup();
  }
}

/** The output schema as clients see it, with the decoration's field when there is one. */
export function decoratedSchema(check: QueryCheck, decorate: { field: string; definition?: string } | undefined): Record<string, unknown> {
  const schema = outputSchemaToJson(check.output.schema);
  if (decorate === undefined) return schema;
  const topDef = schema.topDef as { properties?: Record<string, unknown> };
  const field = decorate.definition === undefined ? { type: 'contributor' } : { type: 'contributor', definition: decorate.definition };
  return { ...schema, topDef: { ...topDef, properties: { ...topDef.properties, [decorate.field]: field } } };
}
