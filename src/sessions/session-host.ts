// Runs the sessions this node hosts (a session runs on the ring owner of its id among Joined
// nodes, and moves when that node leaves or fails: docs/platform-decisions.md, "Execution
// sessions, queries and daemons"). Every node holds every session document; whenever one
// changes, or the membership does, each node reconciles: it stops what it no longer hosts and
// makes the runners of what it hosts match the documents (a running query with a new runToken
// starts again from scratch). Reconciles run one at a time, in order.

import { compileFunction, type SandboxedFunction, type SandboxLimits } from '../scripting/sandbox.js';
import type { Definitions } from '../storage/definition-store.js';
import type { Logger } from '../lib/log.js';
import { primaryTimestampPath, streamRowType, type QueryAnalysis, type QueryError } from '../query/index.js';
import type { DomainScope } from '../search/search-service.js';
import { parseStreamUri, streamKey } from '../streams/stream-id.js';
import type { RepositoryName } from '../storage/repository.js';
import type { HistoricalSource } from '../historical/historical-reader.js';
import type { ColumnBatch } from '../pipeline/types.js';
import { LogicalBus, type LiveFeed, type Payload } from './live-feed.js';
import type { OutputRegistry } from './output-registry.js';
import { compileOptionsOf, domainFilter, tenantWorld, type TenantWorld } from './query-context.js';
import { FunctionBudget } from './function-budget.js';
import { QueryRunner, type RunnerEnvironment, type RunnerInput, type RunnerSpec, type RunState, type RuntimeError } from './query-runner.js';
import { analysedSession, type SessionAnalysis } from './session-analysis.js';
import { sessionUri, upstreamOf, type StoredQuery, type StoredSession } from './session-model.js';
import { timeBoundsOf } from '../historical/time-bounds.js';
import { planBlockRows } from '../historical/block-row-plan.js';

/** What the host knows of one query's run: reported in the queries response. */
export interface RunStatus {
  readonly runToken: number;
  readonly state: RunState;
  readonly errors: readonly (RuntimeError | QueryError)[];
}

export interface StreamPlacement {
  readonly repo: RepositoryName | undefined;
  readonly ringSize: number;
  readonly replicas: number;
  /** Its payloads are moving to another repository (docs/storage.md): only page reads follow them there. */
  readonly moving: boolean;
}

export interface SessionHostDeps {
  readonly localName: string;
  readonly definitions: Definitions;
  /** The node that should host the session now; undefined when none can. */
  hostOf(sessionId: string): string | undefined;
  readonly feed: LiveFeed;
  createPipeline: RunnerEnvironment['createPipeline'];
  readonly outputs: OutputRegistry;
  domainScope(tenant: string, uri: string): DomainScope;
  placementOf(stream: string): StreamPlacement;
  writeStream(uri: string, rows: readonly Payload[]): Promise<void>;
  readHistorical(source: HistoricalSource): AsyncIterable<Payload[]>;
  readHistoricalColumns(source: HistoricalSource): AsyncIterable<ColumnBatch>;
  readonly sandboxLimits: SandboxLimits;
  readonly limits: { readonly groupsMax: number; readonly rowsHeldMax: number; readonly pendingWriteRowsMax: number };
  /** Milliseconds per second the session functions of one query may use (function-budget.ts); undefined: not paced. */
  readonly functionBudgetMs?: number;
  readonly tickIntervalMs: number;
  /** Live groupings' changes go out at most once per this long (hopping windows: per hop). */
  readonly emitIntervalMs: number;
  readonly log: Logger;
}

interface HostedSession {
  document: StoredSession;
  readonly bus: LogicalBus;
  readonly runners: Map<string, { runToken: number; runner: QueryRunner }>;
  readonly statuses: Map<string, RunStatus>;
  /** Compiled session functions by id, with the source they were compiled from. */
  readonly functions: Map<string, { body: string; fn: SandboxedFunction }>;
}

const SESSION_PREFIX = 'session/';

export class SessionHost {
  private readonly hosted = new Map<string, HostedSession>();
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly deps: SessionHostDeps) {}

  /** Reconciles one session, or all of them, after the reconciles already asked for. */
  reconcile(key?: string): Promise<void> {
    this.queue = this.queue.then(async () => {
      if (this.closed) return;
      const keys = key === undefined ? this.allKeys() : [key];
      for (const each of keys) {
        try {
          await this.reconcileOne(each);
        } catch (error) {
          this.deps.log.error({ session: each, err: (error as Error).message }, 'session reconcile failed');
        }
      }
    });
    return this.queue;
  }

  /** The run statuses of a session hosted here; undefined when it is not. */
  statuses(key: string): ReadonlyMap<string, RunStatus> | undefined {
    return this.hosted.get(key)?.statuses;
  }

  /** The query runners of this node, for the `actors` monitoring service. */
  runners(): Array<{ session: string; query: string; state: RunState; queuedRows: number }> {
    return [...this.hosted.values()].flatMap((hosted) =>
      [...hosted.runners].map(([query, { runner }]) => ({
        session: sessionUri(hosted.document.tenant, hosted.document.id),
        query,
        state: runner.currentState,
        queuedRows: runner.queuedRows,
      })),
    );
  }

  /** The sessions hosted here and their queries' run states and late rows, for monitoring. */
  summary(): Array<{ session: string; queries: Array<{ id: string; state: RunState; lateRows: number }> }> {
    return [...this.hosted.values()].map((hosted) => ({
      session: sessionUri(hosted.document.tenant, hosted.document.id),
      queries: [...hosted.statuses].map(([id, status]) => ({ id, state: status.state, lateRows: hosted.runners.get(id)?.runner.lateRows ?? 0 })),
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await Promise.all([...this.hosted.keys()].map((key) => this.drop(key, false)));
  }

  private allKeys(): string[] {
    const keys = new Set(this.deps.definitions.list(SESSION_PREFIX).map((definition) => definition.key));
    for (const key of this.hosted.keys()) keys.add(key);
    return [...keys];
  }

  private async reconcileOne(key: string): Promise<void> {
    const document = this.deps.definitions.get<StoredSession>(key)?.value;
    if (document === undefined || this.deps.hostOf(document.id) !== this.deps.localName) {
      // A deleted session's outputs end; one that moves to another host goes on there.
      await this.drop(key, document === undefined);
      return;
    }
    let hosted = this.hosted.get(key);
    if (hosted === undefined) {
      hosted = { document, bus: new LogicalBus(), runners: new Map(), statuses: new Map(), functions: new Map() };
      this.hosted.set(key, hosted);
    }
    hosted.document = document;
    await this.compileFunctions(hosted);
    const world = tenantWorld(this.deps.definitions, document.tenant);
    const analysis = analysedSession(document, world);
    await this.stopUnwanted(hosted);
    // Readers subscribe to their logical streams before the writers they read start.
    const starting = document.queries
      .filter((query) => query.desired === 'running' && hosted.runners.get(query.id)?.runToken !== query.runToken)
      .sort((a, b) => upstreamOf(analysis.links, b.id).size - upstreamOf(analysis.links, a.id).size);
    for (const query of starting) this.startQuery(hosted, query, analysis, world);
  }

  /** Stops the runners the document no longer wants; a query that stopped or went ends its output, one that restarts does not. */
  private async stopUnwanted(hosted: HostedSession): Promise<void> {
    const wanted = new Map(hosted.document.queries.filter((query) => query.desired === 'running').map((query) => [query.id, query.runToken]));
    const stops: Array<Promise<void>> = [];
    for (const [id, { runToken, runner }] of hosted.runners) {
      const token = wanted.get(id);
      if (token === runToken) continue;
      stops.push(runner.stop(token === undefined));
      hosted.runners.delete(id);
    }
    await Promise.all(stops);
    const present = new Set(hosted.document.queries.map((query) => query.id));
    for (const id of hosted.statuses.keys()) if (!present.has(id)) hosted.statuses.delete(id);
  }

  private startQuery(hosted: HostedSession, query: StoredQuery, analysis: SessionAnalysis, world: TenantWorld): void {
    const result = analysis.queries.get(query.id)!;
    const setStatus = (state: RunState, errors: readonly (RuntimeError | QueryError)[]) =>
      hosted.statuses.set(query.id, { runToken: query.runToken, state, errors });
    if (result.errors.length > 0 || result.check === undefined || result.ast === undefined) {
      setStatus('failed', result.errors);
      return;
    }
    let runner: QueryRunner;
    try {
      runner = this.buildRunner(hosted, query, result, world, (state, errors) => {
        if (hosted.runners.get(query.id)?.runner === runner) setStatus(state, errors);
      });
    } catch (error) {
      setStatus('failed', [{ type: 'RUNTIME_ERROR', message: (error as Error).message }]);
      return;
    }
    hosted.runners.set(query.id, { runToken: query.runToken, runner });
    setStatus('running', []);
    runner.start();
  }

  private buildRunner(hosted: HostedSession, query: StoredQuery, result: QueryAnalysis, world: TenantWorld, onState: (state: RunState, errors: readonly RuntimeError[]) => void): QueryRunner {
    const document = hosted.document;
    const check = result.check!;
    const source = result.ast!.source;
    const schema = source.kind === 'physical' ? world.schemaOf(source.uri) : undefined;
    const sourceRow = schema === undefined ? undefined : streamRowType(schema);
    const functionBudget = this.functionBudgetFor(hosted, query);
    const compile = compileOptionsOf({
      world,
      sourceRow,
      sessionVariables: document.variables,
      queryVariables: query.variables,
      functions: new Map([...hosted.functions].map(([id, entry]) => [id, entry.fn])),
      clock: Date.now,
      ...(functionBudget === undefined ? {} : { functionBudget }),
    });
    const { input, filter } = this.runnerInput(hosted, check, source, { schema, sourceRow, compile });
    const decorate = decorationOf(document, query);
    return new QueryRunner(
      {
        queryId: query.id,
        check,
        compile,
        input,
        ...(filter === undefined ? {} : { filter }),
        ...(decorate === undefined ? {} : { decorate }),
        ...(functionBudget === undefined ? {} : { functionBudget }),
      },
      {
        feed: this.deps.feed,
        createPipeline: this.deps.createPipeline,
        bus: hosted.bus,
        ...(check.output.target.kind === 'channel' ? { channel: this.deps.outputs.channel(query.outputId) } : {}),
        writeStream: this.deps.writeStream,
        readHistorical: this.deps.readHistorical,
        readHistoricalColumns: this.deps.readHistoricalColumns,
        limits: this.deps.limits,
        clock: Date.now,
        tickIntervalMs: this.deps.tickIntervalMs,
        emitIntervalMs: this.deps.emitIntervalMs,
        log: this.deps.log,
        onState,
      },
    );
  }

  /** Where a runner reads: a physical stream live or historical (by block rows when it can), or a logical stream; and the session's domain filter. */
  private runnerInput(
    hosted: HostedSession,
    check: RunnerSpec['check'],
    source: NonNullable<QueryAnalysis['ast']>['source'],
    { schema, sourceRow, compile }: { schema: ReturnType<TenantWorld['schemaOf']>; sourceRow: ReturnType<typeof streamRowType> | undefined; compile: RunnerSpec['compile'] },
  ): { input: RunnerInput; filter: RunnerSpec['filter'] } {
    const document = hosted.document;
    if (source.kind !== 'physical') {
      const writers = check.inputs[0]?.kind === 'logical' ? check.inputs[0].queryIds : [];
      return { input: { kind: 'logical', name: source.name, writers, bounded: check.output.isHistorical }, filter: undefined };
    }
    const id = parseStreamUri(source.uri);
    const key = streamKey(id);
    const filter = document.domain !== null && schema !== undefined ? domainFilter(this.deps.domainScope(document.tenant, document.domain), id, schema) : undefined;
    if (!check.output.isHistorical) return { input: { kind: 'live', stream: key }, filter };
    const placement = this.deps.placementOf(key);
    if (placement.repo === undefined) throw new Error(`the stream ${source.uri} is not persisted: it has no history to read`);
    const timestampPath = sourceRow === undefined ? undefined : primaryTimestampPath(sourceRow);
    const variable = (name: string) => compile.variable?.(name);
    const bounds = timeBoundsOf(check.steps, timestampPath, variable);
    // A tsr stream's blocks are read column by column when the query allows (block-row-plan.ts).
    // Block and latest-value reads know the tsr only: a stream moving between repositories is read a page at a time.
    const rows =
      placement.repo === 'tsr' && filter === undefined && !placement.moving
        ? planBlockRows(check.steps, {
            timestampPath,
            variable,
            isSessionFunction: (name) => hosted.functions.has(name),
            isPlainField: (name) => compile.resolveField?.([name]) === undefined,
          })
        : undefined;
    const historical = { stream: key, repo: placement.repo, ringSize: placement.ringSize, replicas: placement.replicas, ...bounds, ...(rows === undefined ? {} : { rows }) };
    return { input: { kind: 'historical', source: historical }, filter };
  }

  /** A budget for a query whose text names one of the session's functions. */
  private functionBudgetFor(hosted: HostedSession, query: StoredQuery): FunctionBudget | undefined {
    if (this.deps.functionBudgetMs === undefined || hosted.functions.size === 0) return undefined;
    const text = query.body;
    const calls = [...hosted.functions.keys()].some((id) => new RegExp(`(^|[^A-Za-z0-9_$])${id.replace(/[$]/g, '\\$')}\\s*\\(`).test(text));
    return calls ? new FunctionBudget(this.deps.functionBudgetMs) : undefined;
  }

  /** Compiles the session's functions that are new or changed; disposes the ones that went. */
  private async compileFunctions(hosted: HostedSession): Promise<void> {
    const wanted = new Map(hosted.document.functions.map((fn) => [fn.id, fn.body]));
    for (const [id, entry] of hosted.functions) {
      if (wanted.get(id) === entry.body) continue;
      entry.fn.dispose();
      hosted.functions.delete(id);
    }
    for (const [id, body] of wanted) {
      if (hosted.functions.has(id)) continue;
      try {
        const fn = await compileFunction(functionSource(id, body), id, `session function '${id}'`, this.deps.sandboxLimits);
        hosted.functions.set(id, { body, fn });
      } catch (error) {
        this.deps.log.warn({ function: id, err: (error as Error).message }, 'session function does not compile');
      }
    }
  }

  /** Stops a session here; resolves once no write of its queries is under way. */
  private async drop(key: string, endOutputs: boolean): Promise<void> {
    const hosted = this.hosted.get(key);
    if (hosted === undefined) return;
    this.hosted.delete(key);
    const stops = [...hosted.runners.values()].map(({ runner }) => runner.stop(endOutputs));
    for (const { fn } of hosted.functions.values()) fn.dispose();
    await Promise.all(stops);
  }
}

/**
 * A function's `body` as a script defining the global function `id`. Clients send a
 * declaration (`function double(x) { … }`), a function expression or arrow function, or
 * the statements of a body that reads `arguments`; all three are accepted (docs/platform-decisions.md).
 */
export function functionSource(id: string, body: string): string {
  const trimmed = body.trim();
  if (new RegExp(`^function\\s+${id.replace(/\$/g, '\\$')}\\s*\\(`).test(trimmed)) return trimmed;
  if (/^(async\s+)?function\b/.test(trimmed) || /^(\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>/.test(trimmed)) return `var ${id} = (${trimmed});`;
  return `function ${id}() {\n${trimmed}\n}`;
}

/** The decoration a session gives one of its queries' output, when it names this query and says what to set. */
function decorationOf(document: StoredSession, query: StoredQuery): RunnerSpec['decorate'] {
  const decoration = document.decoration;
  if (decoration?.queryId !== query.id || decoration.field === undefined || decoration.value === undefined) return undefined;
  return { field: decoration.field, value: decoration.value, ...(decoration.definition === undefined ? {} : { definition: decoration.definition }) };
}
