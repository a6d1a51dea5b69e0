// The operator views of one node: health and readiness, the _cat tables, and
// the log lines about membership changes and transfers. It reads the node's state through
// the functions node.ts hands it, and asks peers for what they store with a StoreStatsRead (store-stats-peer.ts).

import { coordinatorOf } from '../cluster-core/placement.js';
import type { Membership, Slot, TransferPlan } from '../protocol/cluster-types.js';
import type { Logger } from '../lib/log.js';
import type { DiskState } from '../storage/disk-watch.js';
import type { SoftwareVersion } from '../lib/version.js';
import type { Cell } from './cat-table.js';
import { formatBytes, formatDuration } from './cat-table.js';
import { nodeRows, ownership, streamRows, transferRows, type StreamPlacement } from './cat-views.js';
import { Readiness, type RefusalReason } from './readiness.js';
import type { StoreStats } from './store-stats.js';
import { membershipChangeLine, type TransferEvent, type TransferWatch } from './transfer-watch.js';

/** What /ready answers (docs/operating.md). */
export interface ReadinessBody {
  /** The node serves client requests: no reason to refuse them holds. */
  ready: boolean;
  node: string;
  state: string;
  storage: 'open' | 'closed';
  stopping: boolean;
  /** Why the node refuses client requests, in sentences (empty when it is ready). */
  reasons: string[];
  /** The names of those reasons, in the same order (`stopping`, `storage`, `cluster`, …). */
  refusing: string[];
}

export interface OpsServiceDeps {
  localName: string;
  version: SoftwareVersion;
  startedAtMs: number;
  membership(): Membership;
  available(name: string): boolean;
  /** Who cannot reach whom, for how long (ms): the cluster core's view (transfer-watch.ts). */
  unreachableFor?(observer: string, node: string): number | undefined;
  storageOpen(): boolean;
  /** Reasons besides stopping and closed storage (which this service adds) for which the node refuses clients. */
  refusals: readonly RefusalReason[];
  /** The data folder's free space and whether the node takes writes (storage/disk-watch.ts). */
  storageState(): DiskState;
  localStats(): Promise<StoreStats>;
  remoteStats(node: string): Promise<StoreStats>;
  streams(): StreamPlacement[];
  /** The (partition, replicas) pairs in use; ownership is computed over these. */
  slots(): Slot[];
  watch: TransferWatch;
  log: Logger;
  clock?: () => number;
}

export class OpsService {
  private stopping = false;
  private lastMembership: Membership | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly refusals: Readiness;

  constructor(private readonly deps: OpsServiceDeps) {
    const name = deps.localName;
    this.refusals = new Readiness(
      [
        { name: 'stopping', check: () => (this.stopping ? `node ${name} is stopping` : undefined) },
        { name: 'storage', check: () => (deps.storageOpen() ? undefined : `node ${name} has no open storage`) },
        ...deps.refusals,
      ],
      deps.log,
    );
  }

  /** Watches transfers between membership changes too: a stall changes nothing. */
  start(intervalMs: number): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), intervalMs);
    this.timer.unref();
  }

  /** The node is stopping: /ready answers 503, and data requests are refused, from now on. */
  stop(): void {
    this.stopping = true;
    clearInterval(this.timer);
    this.refusals.current();
  }

  /** Why the node refuses client requests now (the first reason that holds), or undefined when it serves. */
  refusal(): string | undefined {
    return this.refusals.refusal();
  }

  /** Readiness is looked at every heartbeat too, so its changes are logged without a probe. */
  private tick(): void {
    this.observe(this.deps.membership());
    this.refusals.current();
  }

  observe(membership: Membership): void {
    const line = membershipChangeLine(this.lastMembership, membership);
    this.lastMembership = membership;
    if (line !== undefined) this.deps.log.info(line.fields, line.message);
    const unreachableFor = this.deps.unreachableFor;
    const reach = unreachableFor === undefined ? undefined : { self: this.deps.localName, unreachableFor: (observer: string, node: string) => unreachableFor(observer, node) };
    // Progress moves in the coordinator's table and in the target's own (transfer-watch.ts).
    const self = this.deps.localName;
    const coordinator = coordinatorOf(membership, (name) => this.deps.available(name));
    const seesProgress = (plan: TransferPlan) => plan.to === self || coordinator === self;
    for (const event of this.deps.watch.observe(membership, this.now(), (name) => this.deps.available(name), reach, seesProgress)) this.logTransfer(event);
  }

  /** Why the transfer has made no progress for the stall time, or null (unknown, moving or done). */
  stalledBecause(transferId: string): string | null {
    return this.deps.watch.views().find((view) => view.id === transferId)?.stalled ?? null;
  }

  health(): Record<string, unknown> {
    return { status: 'up', node: this.deps.localName, version: this.deps.version, uptimeSeconds: Math.round((Date.now() - this.deps.startedAtMs) / 1000), disk: this.deps.storageState() };
  }

  /** GET /ready: ready exactly when the node serves client requests; else every reason it refuses them. */
  readiness(): ReadinessBody {
    const self = this.deps.membership().members.find((member) => member.name === this.deps.localName);
    const refusals = this.refusals.current();
    return {
      ready: refusals.length === 0,
      node: this.deps.localName,
      state: self?.state ?? 'unknown',
      storage: this.deps.storageOpen() ? 'open' : 'closed',
      stopping: this.stopping,
      reasons: refusals.map((refusal) => refusal.message),
      refusing: refusals.map((refusal) => refusal.name),
    };
  }

  async catNodes(): Promise<Array<Record<string, Cell>>> {
    const membership = this.deps.membership();
    const stats = await this.allStats(membership);
    const coordinator = coordinatorOf(membership, (name) => this.deps.available(name));
    return nodeRows(membership, (name) => this.deps.available(name), coordinator, ownership(membership, this.deps.slots()), stats);
  }

  catTransfers(): Array<Record<string, Cell>> {
    this.observe(this.deps.membership());
    return transferRows(this.deps.watch.views(), this.now());
  }

  async catStreams(): Promise<Array<Record<string, Cell>>> {
    return streamRows(this.deps.streams(), await this.allStats(this.deps.membership()));
  }

  /** Every member's stats (not Left); undefined for one that did not answer. */
  private async allStats(membership: Membership): Promise<Map<string, StoreStats | undefined>> {
    const members = membership.members.filter((member) => member.state !== 'Left');
    const answers = await Promise.all(
      members.map(async (member) => {
        if (member.name === this.deps.localName) return [member.name, await this.deps.localStats()] as const;
        if (!this.deps.available(member.name)) return [member.name, undefined] as const;
        return [member.name, await this.deps.remoteStats(member.name).catch(() => undefined)] as const;
      }),
    );
    return new Map(answers);
  }

  /** Transfer lines go to the logs of the two nodes the transfer runs between. */
  private logTransfer(event: TransferEvent): void {
    const transfer = event.transfer;
    if (transfer.from !== this.deps.localName && transfer.to !== this.deps.localName) return;
    const fields = { transfer: transfer.id, repo: transfer.repo, from: transfer.from, to: transfer.to, percent: transfer.percentComplete, bytes: transfer.bytes, records: transfer.records };
    const route = `${transfer.repo} ${transfer.from} → ${transfer.to}`;
    switch (event.type) {
      case 'started':
        return this.deps.log.info(fields, `transfer started: ${route}`);
      case 'progress': {
        const rate = transfer.rateBytesPerSecond === null ? '' : `, ${formatBytes(transfer.rateBytesPerSecond)}/s`;
        const eta = transfer.etaSeconds === null ? '' : `, ETA ${formatDuration(transfer.etaSeconds)}`;
        return this.deps.log.info({ ...fields, rateBytesPerSecond: transfer.rateBytesPerSecond, etaSeconds: transfer.etaSeconds }, `transfer progress: ${route} ${transfer.percentComplete}%${rate}${eta}`);
      }
      case 'done':
        return this.deps.log.info({ ...fields, seconds: Math.round(event.seconds * 10) / 10 }, `transfer done: ${route}, ${formatBytes(transfer.bytes)} in ${formatDuration(event.seconds)}`);
      case 'stalled':
        return this.deps.log.warn({ ...fields, reason: event.reason }, `transfer stalled: ${route}: ${event.reason}`);
      case 'resumed':
        return this.deps.log.info(fields, `transfer resumed: ${route}`);
    }
  }

  private now(): number {
    return (this.deps.clock ?? Date.now)();
  }
}
