// Runs the moves of streams' payloads to another repository on this node
// (repository-move.ts is the pure core; docs/storage.md, "Changing a stream's
// repository"). A change of mapping that carries a move starts one here at once, before
// any store that follows it: stores then go into both repositories. Each step is a chunk
// of one partition, written with the cursor after it in one synced batch, so a restart
// carries on from the last chunk written. Progress is reported where every node reads it
// (the definitions), and the end too: a move is over when every member has reported it.

import type { Logger } from '../lib/log.js';
import type { BatchOperation, Sublevel } from '../storage/database.js';
import { convertRecords } from '../storage/repository-convert.js';
import type { Repository, RepositoryName, StoredRecord } from '../storage/repository.js';
import { parseJson, stringifyJson } from '../lib/json.js';
import {
  afterChunk,
  beginDeleting,
  nextStep,
  pendingMove,
  percentComplete,
  readRepository,
  startMove,
  storeTargets,
  type MoveOrder,
  type MovePhase,
  type MoveState,
} from './repository-move.js';

export interface MoverLimits {
  /** Records read from the old repository per chunk. */
  readonly chunkRecords: number;
  /** Pause between two chunks: a move takes what the node can spare. */
  readonly pacingMs: number;
  /** Time without a read of the old repository before its copy is deleted. */
  readonly graceMs: number;
}

/** One node's progress in one move, as reported to every node. */
export interface MoveProgress {
  readonly id: string;
  readonly from: RepositoryName;
  readonly to: RepositoryName;
  readonly phase: MovePhase;
  readonly percentComplete: number;
  readonly copied: number;
  readonly total: number;
}

export interface MoverDeps {
  /** The cursors kept here (loadMoveStates), read before anything is stored or read. */
  readonly states: readonly MoveState[];
  readonly repositories: Record<RepositoryName, Repository>;
  commit(operations: BatchOperation[]): Promise<void>;
  /** Where the cursors are kept (this node's own data). */
  readonly local: Sublevel;
  /** Told of records stored or of a partition's records deleted, as writes tell the indexes and digests. */
  stored(repository: RepositoryName, records: readonly StoredRecord[]): void;
  dropped(repository: RepositoryName, stream: string, partition: number): void;
  /** The stream's mapping here: its repository and the move it carries. */
  mappingOf(stream: string): { name: RepositoryName; move?: MoveOrder } | undefined;
  /** Every stream whose mapping carries a move. */
  moving(): string[];
  /** Records this node's progress where every node reads it. */
  report(stream: string, progress: MoveProgress): Promise<void>;
  wallClock(): number;
  readonly log: Logger;
  readonly limits: MoverLimits;
}

const CURSOR_PREFIX = 'repository-move/';

/** The moves' cursors this node keeps, read at start before the node stores or reads anything. */
export async function loadMoveStates(local: Sublevel): Promise<MoveState[]> {
  const entries = await local.iterator({ gte: CURSOR_PREFIX, lt: `${CURSOR_PREFIX}\uffff` }).all();
  return entries.map(([, value]) => parseJson(value) as MoveState);
}
/** Progress is reported when it gained this much, or at every change of phase. */
const REPORT_PERCENT_STEP = 5;
const RETRY_MS = 2_000;
/** Longest wait between two looks at a move waiting for its grace. */
const WAIT_SLICE_MS = 1_000;

export class RepositoryMover {
  private readonly states = new Map<string, MoveState>();
  /** The loop of each stream whose move runs here now (one at a time; a new move's loop replaces the old). */
  private readonly loops = new Map<string, object>();
  private readonly lastFromReadMs = new Map<string, number>();
  private readonly reported = new Map<string, { phase: MovePhase; percent: number }>();
  private closed = false;

  constructor(private readonly deps: MoverDeps) {
    for (const state of deps.states) this.states.set(state.stream, state);
    // A move this node has not begun (or a newer one) begins before anything is stored:
    // stores go into both repositories from the first (its loop starts once its partitions are listed).
    for (const stream of deps.moving()) this.mappingChanged(stream);
  }

  /** Carries on with the moves of the cursors kept here. */
  start(): void {
    for (const [stream, state] of this.states) if (state.partitions.length > 0 || state.phase !== 'copying') this.run(stream);
  }

  close(): void {
    this.closed = true;
  }

  /**
   * The stream's mapping changed here (called as it is applied, before any store that
   * follows): a move this node has not begun starts, in phase copying at once.
   */
  mappingChanged(stream: string): void {
    const move = this.deps.mappingOf(stream)?.move;
    const state = this.states.get(stream);
    if (move === undefined || state?.id === move.id) return;
    this.states.set(stream, pendingMove(stream, move));
    this.loops.delete(stream);
    void this.begin(stream, move);
  }

  /** Where a store of the stream's records that came tagged for `tagged` goes here. */
  targets(stream: string, tagged: RepositoryName): RepositoryName[] {
    return storeTargets(this.states.get(stream), this.deps.mappingOf(stream)?.name, tagged);
  }

  /** The repository a page read is served from here; a string: why this node cannot serve it. */
  readRepository(stream: string, requested: RepositoryName, firstPage: boolean): RepositoryName | string {
    const state = this.states.get(stream);
    const served = readRepository(state, requested, firstPage);
    if (state !== undefined && served === state.from) this.lastFromReadMs.set(stream, this.deps.wallClock());
    return served;
  }

  /** The repository this node's search index of the stream is built from: the complete one here. */
  indexSource(stream: string): RepositoryName | undefined {
    const state = this.states.get(stream);
    return state?.phase === 'copying' ? state.from : undefined;
  }

  /** Whether this node is still copying the stream into `repository`, which it does not hold whole yet. */
  copyingInto(stream: string, repository: RepositoryName): boolean {
    const state = this.states.get(stream);
    return state !== undefined && state.phase === 'copying' && state.to === repository;
  }

  /** This node's moves, as reported. */
  progress(): Array<{ stream: string; progress: MoveProgress }> {
    return [...this.states.values()].map((state) => ({ stream: state.stream, progress: progressOf(state) }));
  }

  /** Whether a move of the stream has not ended here. */
  busy(stream: string): boolean {
    const state = this.states.get(stream);
    return state !== undefined && state.phase !== 'done';
  }

  private async begin(stream: string, move: MoveOrder): Promise<void> {
    try {
      const from = this.deps.repositories[move.from];
      const partitions = await from.partitionsHeld(stream);
      const counts = await from.countByPartition(stream);
      const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
      if (this.states.get(stream)?.id !== move.id) return;
      const state = startMove(stream, move, partitions, total);
      await this.deps.commit([this.cursorPut(state)]);
      this.states.set(stream, state);
      this.deps.log.info({ stream, from: move.from, to: move.to, records: total }, 'moving the stream to another repository');
      this.run(stream);
    } catch (error) {
      this.deps.log.warn({ stream, err: (error as Error).message }, 'a repository move could not begin; trying again');
      setTimeout(() => this.states.get(stream)?.id === move.id && void this.begin(stream, move), RETRY_MS).unref();
    }
  }

  /** Runs the stream's move here until it is done (one loop per stream). */
  private run(stream: string): void {
    if (this.loops.has(stream) || this.closed) return;
    const token = {};
    this.loops.set(stream, token);
    void this.loop(stream, token).finally(() => this.loops.get(stream) === token && this.loops.delete(stream));
  }

  private async loop(stream: string, token: object): Promise<void> {
    let state = this.states.get(stream);
    while (!this.closed && state !== undefined && this.loops.get(stream) === token) {
      const reported = await this.reportProgress(state);
      const step = nextStep(state, this.deps.wallClock(), this.lastFromReadMs.get(stream) ?? 0, this.deps.limits.graceMs);
      if (step.kind === 'none') {
        // Done here once every node can read that it is.
        if (reported) return;
        await sleep(RETRY_MS);
        continue;
      }
      try {
        if (step.kind === 'wait') await sleep(Math.min(step.ms, WAIT_SLICE_MS));
        else if (step.kind === 'begin-deleting') state = await this.persisted(beginDeleting(state, await this.deps.repositories[state.from].partitionsHeld(stream), this.deps.wallClock()));
        else state = await this.chunk(state, step.kind, step.partition, step.after);
      } catch (error) {
        this.deps.log.warn({ stream, err: (error as Error).message }, 'a repository move step failed; trying again');
        await sleep(RETRY_MS);
      }
      if (this.states.get(stream)?.id !== state.id) return;
      if (this.deps.limits.pacingMs > 0) await sleep(this.deps.limits.pacingMs);
      state = this.states.get(stream);
    }
  }

  /** One chunk of one partition, copied or deleted with the cursor after it in one synced batch. */
  private async chunk(state: MoveState, kind: 'copy' | 'delete', partition: number, after: string | undefined): Promise<MoveState> {
    const { repositories, limits } = this.deps;
    const from = repositories[state.from];
    const page = await from.recordPage(state.stream, partition, after, limits.chunkRecords);
    const lastKey = page.length < limits.chunkRecords ? undefined : page[page.length - 1]!.key;
    const records = page.map((entry) => entry.record);
    if (kind === 'copy') {
      const converted = convertRecords(records, state.from, state.to);
      const next = afterChunk(state, converted.length, lastKey, this.deps.wallClock());
      await this.deps.commit([...repositories[state.to].writeOperations(converted), this.cursorPut(next)]);
      this.deps.stored(state.to, converted);
      return this.kept(next);
    }
    const next = afterChunk(state, records.length, lastKey, this.deps.wallClock());
    await this.deps.commit([...from.deleteOperations(state.stream, partition, page.map((entry) => entry.key)), this.cursorPut(next)]);
    if (page.length > 0) this.deps.dropped(state.from, state.stream, partition);
    return this.kept(next);
  }

  private async persisted(state: MoveState): Promise<MoveState> {
    await this.deps.commit([this.cursorPut(state)]);
    return this.kept(state);
  }

  /** The state a step left, unless another move of the stream began meanwhile. */
  private kept(state: MoveState): MoveState {
    if (this.states.get(state.stream)?.id === state.id) this.states.set(state.stream, state);
    return state;
  }

  private cursorPut(state: MoveState): BatchOperation {
    return { type: 'put', sublevel: this.deps.local, key: `${CURSOR_PREFIX}${state.stream}`, value: stringifyJson(state) };
  }

  /**
   * Reports progress at each change of phase and every REPORT_PERCENT_STEP; whether the
   * report of this state is made (a failed one is made again later).
   */
  private async reportProgress(state: MoveState): Promise<boolean> {
    const progress = progressOf(state);
    const last = this.reported.get(state.stream);
    if (last !== undefined && last.phase === progress.phase && progress.percentComplete - last.percent < REPORT_PERCENT_STEP) return true;
    try {
      await this.deps.report(state.stream, progress);
      this.reported.set(state.stream, { phase: progress.phase, percent: progress.percentComplete });
      return true;
    } catch (error) {
      this.deps.log.debug({ stream: state.stream, err: (error as Error).message }, 'move progress not reported');
      return false;
    }
  }
}

function progressOf(state: MoveState): MoveProgress {
  return { id: state.id, from: state.from, to: state.to, phase: state.phase, percentComplete: percentComplete(state), copied: state.copied, total: state.total };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
