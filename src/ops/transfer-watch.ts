// What an operator wants to know about data transfers and membership changes, derived from
// the memberships a node sees (pure; the clock is passed in). Transfers: when each started,
// its progress in steps, when it finished, when it has made no progress for a while and
// why (an end unavailable, or nothing arriving), and its rate and ETA for status views.
// Progress moves in the tables of the coordinator (every target reports to it) and of the
// transfer's target (its own reports); other nodes see it at completion, so only those two
// say a transfer makes no progress (docs/operating.md, `_cat/transfers`).

import type { Membership, TransferPlan } from '../protocol/cluster-types.js';

export interface TransferView {
  id: string;
  repo: string;
  from: string;
  to: string;
  percentComplete: number;
  bytes: number;
  records: number;
  complete: boolean;
  /** Bytes per second over the last `rateWindowMs` (null until two samples differ in time). */
  rateBytesPerSecond: number | null;
  /** Seconds left at the current rate (null when unknown). */
  etaSeconds: number | null;
  /** Why it has made no progress for `stallMs`, while it has not. */
  stalled: string | null;
  startedAtMs: number;
  endedAtMs: number | null;
}

export type TransferEvent =
  | { type: 'started'; transfer: TransferView }
  | { type: 'progress'; transfer: TransferView }
  | { type: 'done'; transfer: TransferView; seconds: number }
  | { type: 'stalled'; transfer: TransferView; reason: string }
  | { type: 'resumed'; transfer: TransferView };

export interface TransferWatchOptions {
  /** No progress for this long is a stall (config cluster.transferStallMs). */
  stallMs: number;
  /** A progress event each time the percentage passes another step of this size. */
  progressStepPercent: number;
  rateWindowMs: number;
  /** Finished transfers kept for status views. */
  doneKeptMax: number;
}

interface Watched {
  view: TransferView;
  samples: Array<{ atMs: number; bytes: number }>;
  lastChangeAtMs: number;
  loggedStep: number;
}

/**
 * Who cannot reach whom, for how long (ms), as this node knows it: its own failure detector
 * (observer `self`) and what each peer's last heartbeat said (the cluster core's
 * unreachableFor); undefined when the observer hears the node.
 */
export interface Reachability {
  self: string;
  unreachableFor(observer: string, node: string): number | undefined;
}

export const DEFAULT_WATCH_OPTIONS: Omit<TransferWatchOptions, 'stallMs'> = { progressStepPercent: 10, rateWindowMs: 10_000, doneKeptMax: 64 };

export class TransferWatch {
  private readonly watched = new Map<string, Watched>();

  constructor(private readonly options: TransferWatchOptions) {}

  /**
   * Feeds the current membership (on every change, and periodically: stalls change nothing).
   * `seesProgress`: whether this node's table shows the plan's progress as it moves (else
   * only an unreachable end is a stall here).
   */
  observe(membership: Membership, nowMs: number, available: (node: string) => boolean, reach?: Reachability, seesProgress: (plan: TransferPlan) => boolean = () => true): TransferEvent[] {
    const events: TransferEvent[] = [];
    const current = new Map((membership.change?.transfers ?? []).map((plan) => [plan.id, plan]));
    for (const plan of current.values()) this.observePlan(plan, nowMs, (idleMs) => stallReason(plan, idleMs, available, reach, nowMs, seesProgress(plan)), events);
    // A transfer gone from the change (or the change gone) while incomplete has completed
    // with its change: the core ends a change only when its data is durable on the new owners.
    for (const entry of this.watched.values()) {
      if (!entry.view.complete && !current.has(entry.view.id)) this.finish(entry, nowMs, events);
    }
    this.forgetOldest();
    return events;
  }

  /** Running transfers first, then finished ones, newest first. */
  views(): TransferView[] {
    return [...this.watched.values()]
      .map((entry) => ({ ...entry.view }))
      .sort((a, b) => Number(a.complete) - Number(b.complete) || b.startedAtMs - a.startedAtMs || a.id.localeCompare(b.id));
  }

  private observePlan(plan: TransferPlan, nowMs: number, reasonFor: (idleMs: number) => string | undefined, events: TransferEvent[]): void {
    let entry = this.watched.get(plan.id);
    if (entry === undefined) {
      entry = {
        view: { id: plan.id, repo: plan.repo, from: plan.from, to: plan.to, percentComplete: 0, bytes: 0, records: 0, complete: false, rateBytesPerSecond: null, etaSeconds: null, stalled: null, startedAtMs: nowMs, endedAtMs: null },
        samples: [],
        lastChangeAtMs: nowMs,
        loggedStep: 0,
      };
      this.watched.set(plan.id, entry);
      this.update(entry, plan, nowMs);
      events.push({ type: 'started', transfer: { ...entry.view } });
      entry.loggedStep = this.step(entry.view.percentComplete);
      if (plan.complete) this.finish(entry, nowMs, events);
      return;
    }
    if (entry.view.complete) return;
    const moved = plan.bytes > entry.view.bytes || plan.records > entry.view.records || plan.percentComplete > entry.view.percentComplete;
    this.update(entry, plan, nowMs);
    if (moved) {
      entry.lastChangeAtMs = nowMs;
      if (entry.view.stalled !== null) {
        entry.view.stalled = null;
        events.push({ type: 'resumed', transfer: { ...entry.view } });
      }
    }
    if (plan.complete) return this.finish(entry, nowMs, events);
    const step = this.step(entry.view.percentComplete);
    if (step > entry.loggedStep) {
      entry.loggedStep = step;
      events.push({ type: 'progress', transfer: { ...entry.view } });
    }
    if (nowMs - entry.lastChangeAtMs < this.options.stallMs) return;
    // The reason is kept current while the stall lasts (a partition heals, another begins);
    // the event and its log line come once. With no reason known here, none is claimed.
    const first = entry.view.stalled === null;
    const reason = reasonFor(nowMs - entry.lastChangeAtMs);
    entry.view.stalled = reason ?? null;
    if (first && reason !== undefined) events.push({ type: 'stalled', transfer: { ...entry.view }, reason });
  }

  private update(entry: Watched, plan: TransferPlan, nowMs: number): void {
    const view = entry.view;
    view.percentComplete = Math.max(view.percentComplete, plan.percentComplete);
    view.bytes = Math.max(view.bytes, plan.bytes);
    view.records = Math.max(view.records, plan.records);
    const last = entry.samples[entry.samples.length - 1];
    if (last === undefined || last.bytes !== view.bytes || nowMs - last.atMs >= this.options.rateWindowMs / 2) entry.samples.push({ atMs: nowMs, bytes: view.bytes });
    while (entry.samples.length > 2 && nowMs - entry.samples[1]!.atMs >= this.options.rateWindowMs) entry.samples.shift();
    view.rateBytesPerSecond = rateOf(entry.samples);
    view.etaSeconds = etaOf(view.bytes, view.percentComplete, view.rateBytesPerSecond);
  }

  private finish(entry: Watched, nowMs: number, events: TransferEvent[]): void {
    const view = entry.view;
    view.complete = true;
    view.percentComplete = 100;
    view.stalled = null;
    view.etaSeconds = 0;
    view.endedAtMs = nowMs;
    const seconds = (nowMs - view.startedAtMs) / 1000;
    view.rateBytesPerSecond = seconds > 0 ? view.bytes / seconds : null;
    events.push({ type: 'done', transfer: { ...view }, seconds });
  }

  private step(percent: number): number {
    return Math.floor(percent / this.options.progressStepPercent);
  }

  private forgetOldest(): void {
    const done = [...this.watched.values()].filter((entry) => entry.view.complete).sort((a, b) => (a.view.endedAtMs ?? 0) - (b.view.endedAtMs ?? 0));
    for (const entry of done.slice(0, Math.max(0, done.length - this.options.doneKeptMax))) this.watched.delete(entry.view.id);
  }
}

/**
 * Why a transfer waits: an end this node cannot reach, or an end the other cannot (a
 * partition between them that this node is outside of), with since when (UTC, from the
 * failure detector); else how long nothing has moved, where that is seen (`seesProgress`),
 * or undefined.
 */
export function stallReason(plan: TransferPlan, idleMs: number, available: (node: string) => boolean, reach?: Reachability, nowMs = Date.now(), seesProgress = true): string | undefined {
  const since = (forMs: number) => new Date(nowMs - forMs).toISOString().slice(11, 19);
  if (reach !== undefined) {
    const cuts: Array<[observer: string, node: string]> = [[reach.self, plan.from], [reach.self, plan.to], [plan.to, plan.from], [plan.from, plan.to]];
    for (const [observer, node] of cuts) {
      const forMs = reach.unreachableFor(observer, node);
      if (forMs === undefined) continue;
      return `${node} unreachable${observer === reach.self ? '' : ` from ${observer}`} since ${since(forMs)} UTC`;
    }
  }
  if (!available(plan.from)) return `source ${plan.from} unavailable`;
  if (!available(plan.to)) return `target ${plan.to} unavailable`;
  return seesProgress ? `no progress for ${Math.round(idleMs / 1000)} s` : undefined;
}

/** Bytes per second between the first and last sample, or null without time between them. */
export function rateOf(samples: ReadonlyArray<{ atMs: number; bytes: number }>): number | null {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (first === undefined || last === undefined || last.atMs <= first.atMs) return null;
  return ((last.bytes - first.bytes) * 1000) / (last.atMs - first.atMs);
}

/** Seconds left: the bytes still to move (estimated from the percentage) at `rate`. */
export function etaOf(bytes: number, percentComplete: number, rate: number | null): number | null {
  if (percentComplete >= 100) return 0;
  if (rate === null || rate <= 0 || percentComplete <= 0) return null;
  const total = (bytes * 100) / percentComplete;
  return Math.max(0, (total - bytes) / rate);
}

/** A log line's worth about a membership that replaces `previous`, or undefined when nothing an operator cares about changed. */
export function membershipChangeLine(previous: Membership | undefined, next: Membership): { message: string; fields: Record<string, unknown> } | undefined {
  const before = previous?.change?.id;
  const after = next.change?.id;
  if (after !== undefined && after !== before) {
    const change = next.change!;
    return { message: `membership change: ${change.kind} ${change.node}`, fields: { epoch: next.epoch, change: change.id, kind: change.kind, peer: change.node, transfers: change.transfers.length } };
  }
  if (after === undefined && before !== undefined) {
    const change = previous!.change!;
    return { message: `membership change complete: ${change.kind} ${change.node}`, fields: { epoch: next.epoch, change: change.id, kind: change.kind, peer: change.node, members: next.members.filter((member) => member.state !== 'Left').map((member) => member.name) } };
  }
  return undefined;
}
