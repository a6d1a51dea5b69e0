// Moving a stream's stored payloads to another repository, on one node (docs/storage.md,
// "Changing a stream's repository"): the pure core of the mover (repository-mover.ts runs
// it). Each owner moves what it holds, as a small state machine whose state is its
// durable cursor:
//
//   copying ──(every partition copied)──▶ copied ──(no read of the old repository for the
//   grace)──▶ deleting ──(every partition deleted)──▶ done
//
// - copying: the records of the old repository (`from`) are copied to the new one (`to`),
//   converted (repository-convert.ts), a chunk of one partition at a time, each chunk and
//   the cursor after it in one synced batch. Every store of the stream's records meanwhile
//   goes into both repositories, so `from` stays complete (reads use it) and `to` ends
//   complete.
// - copied: both are complete; reads use `to`, except those that began on `from` and
//   carry on there (a page read continues in the repository it began in: the two order a
//   partition differently). Stores still go into both.
// - deleting: no read of `from` came for the grace period; its records go, a chunk at a
//   time. Stores go into `to` only.
// - done: nothing of the stream is left in `from` here.
//
// A payload has the same identity in both repositories, so a copy made twice (a restart
// mid-chunk) writes the same keys again, and readers and the search index count it once.

import type { RepositoryName } from '../storage/repository.js';
import { assert } from '../lib/assert.js';

export type MovePhase = 'copying' | 'copied' | 'deleting' | 'done';

/** The move a repository mapping carries from the PUT that changed it (repository-mapping.ts). */
export interface MoveOrder {
  readonly id: string;
  readonly from: RepositoryName;
  readonly to: RepositoryName;
}

/** One stream's move on this node: its durable cursor. */
export interface MoveState extends MoveOrder {
  readonly stream: string;
  readonly phase: MovePhase;
  /** The partitions the phase walks (those holding records of `from` when it began), ascending. */
  readonly partitions: readonly number[];
  /** The index in `partitions` the phase is at, and the last key done there (undefined: none yet). */
  readonly at: number;
  readonly after: string | undefined;
  /** Records of `from` when the move began here (a tsr block is one), and those copied and deleted. */
  readonly total: number;
  readonly copied: number;
  readonly deleted: number;
  /** When copying ended (wall-clock ms). */
  readonly copiedAtMs: number | undefined;
}

/** What the mover does next. */
export type MoveStep =
  | { readonly kind: 'copy' | 'delete'; readonly partition: number; readonly after: string | undefined }
  /** Copying is over and the grace too: list the partitions `from` holds, then delete. */
  | { readonly kind: 'begin-deleting' }
  | { readonly kind: 'wait'; readonly ms: number }
  | { readonly kind: 'none' };

/**
 * A move about to begin here: copying, with nothing listed yet. It stands while the
 * partitions are listed, so that stores go into both repositories from the first.
 */
export function pendingMove(stream: string, order: MoveOrder): MoveState {
  assert(order.from !== order.to, `a move from ${order.from} to itself`);
  return { id: order.id, from: order.from, to: order.to, stream, phase: 'copying', partitions: [], at: 0, after: undefined, total: 0, copied: 0, deleted: 0, copiedAtMs: undefined };
}

/**
 * The move begins: copying the partitions `from` holds (`total` records). A node that
 * holds none (it joined later, or owns none of the stream) has copied all at once, and
 * long enough ago that no grace is due: no read can have begun in a `from` that held
 * nothing. It still deletes what stores put there while it was listing.
 */
export function startMove(stream: string, order: MoveOrder, partitions: readonly number[], total: number): MoveState {
  const state = { ...pendingMove(stream, order), partitions: [...partitions], total };
  return partitions.length === 0 ? { ...state, phase: 'copied', copiedAtMs: 0 } : state;
}

/** Copying is over: the partitions `from` holds now are what deleting walks. */
export function beginDeleting(state: MoveState, partitions: readonly number[], nowMs: number): MoveState {
  assert(state.phase === 'copied', `deleting begins after copying, not in ${state.phase}`);
  return finished({ ...state, phase: 'deleting', partitions: [...partitions], at: 0, after: undefined }, nowMs);
}

/**
 * After a chunk of the current partition: `count` records done, `lastKey` the last key
 * of the chunk, undefined when the partition had no more (the next one is due).
 */
export function afterChunk(state: MoveState, count: number, lastKey: string | undefined, nowMs: number): MoveState {
  assert(state.phase === 'copying' || state.phase === 'deleting', `a chunk in phase ${state.phase}`);
  assert(Number.isSafeInteger(count) && count >= 0 && state.at < state.partitions.length, `chunk of ${count} at ${state.at}/${state.partitions.length}`);
  const counted = state.phase === 'copying' ? { copied: state.copied + count } : { deleted: state.deleted + count };
  const next = lastKey === undefined ? { at: state.at + 1, after: undefined } : { at: state.at, after: lastKey };
  return finished({ ...state, ...counted, ...next }, nowMs);
}

/** A phase that has walked every partition moves on. */
function finished(state: MoveState, nowMs: number): MoveState {
  if (state.at < state.partitions.length) return state;
  if (state.phase === 'copying') return { ...state, phase: 'copied', copiedAtMs: nowMs };
  if (state.phase === 'deleting') return { ...state, phase: 'done' };
  return state;
}

/** The next step, given when `from` was last read (a page read that carries on there). */
export function nextStep(state: MoveState, nowMs: number, lastFromReadMs: number, graceMs: number): MoveStep {
  switch (state.phase) {
    case 'copying':
    case 'deleting':
      // A pending move has nothing listed yet: the mover lists its partitions first.
      if (state.at >= state.partitions.length) return { kind: 'none' };
      return { kind: state.phase === 'copying' ? 'copy' : 'delete', partition: state.partitions[state.at]!, after: state.after };
    case 'copied': {
      const quietSinceMs = Math.max(state.copiedAtMs ?? nowMs, lastFromReadMs);
      const waitMs = quietSinceMs + graceMs - nowMs;
      return waitMs > 0 ? { kind: 'wait', ms: waitMs } : { kind: 'begin-deleting' };
    }
    default:
      return { kind: 'none' };
  }
}

/** How far the move has got here: copying is the first 90%, deleting the rest. */
export function percentComplete(state: MoveState): number {
  switch (state.phase) {
    case 'copying':
      return state.total === 0 ? 0 : Math.min(89, Math.floor((90 * state.copied) / state.total));
    case 'copied':
      return 90;
    case 'deleting': {
      const walked = state.partitions.length === 0 ? 1 : state.at / state.partitions.length;
      return Math.min(99, 90 + Math.floor(10 * walked));
    }
    default:
      return 100;
  }
}

/**
 * Where this node stores records of the stream that came tagged for `tagged`: both
 * repositories while `from` must stay complete; else the mapped one (records of a writer
 * that still knew the old mapping, or that knew the new one before this node did, are
 * converted), else the one they name.
 */
export function storeTargets(state: MoveState | undefined, mapped: RepositoryName | undefined, tagged: RepositoryName): RepositoryName[] {
  if (state !== undefined && (state.phase === 'copying' || state.phase === 'copied')) return [state.from, state.to];
  return [mapped ?? tagged];
}

/**
 * The repository a page of a partition is read from, asked for `requested` (the mapped
 * one for a read's first page, then the one its first page came from). A first page is
 * read from the repository that is complete here; a later one from the one it began in,
 * while that is complete here: otherwise the read must go to another owner (a string: why).
 */
export function readRepository(state: MoveState | undefined, requested: RepositoryName, firstPage: boolean): RepositoryName | string {
  if (state === undefined || state.phase === 'done') {
    if (state === undefined || requested === state.to) return requested;
    return `the stream's payloads moved from ${state.from} to ${state.to} on this node during the read`;
  }
  if (firstPage) return state.phase === 'copying' ? state.from : state.to;
  if (requested === state.from) {
    return state.phase === 'deleting' ? `the stream's payloads moved from ${state.from} to ${state.to} on this node during the read` : state.from;
  }
  return state.phase === 'copying' ? `this node is still copying the stream's payloads to ${state.to}` : state.to;
}
