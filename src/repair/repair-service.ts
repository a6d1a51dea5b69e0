// Anti-entropy repair (docs/cluster.md, "Anti-entropy repair"): owners of a partition
// compare digests of what they hold and each streams the other what it lacks
// (partition-sync.ts), so replicas converge after any fault, whether or not a hint
// survived. It runs:
// - in the background, one sweep every `intervalMs` (0: never), paced;
// - on demand, as a run of POST /cluster/repair: every member sweeps the partitions it
//   initiates and reports its progress under the run's id;
// - after this node found its own data damaged (storage-integrity.ts): it stops answering
//   reads from its data and refills every partition it owns from the other owners first.
// A partition's exchange is initiated by its lowest-named available owner, so each pair of
// replicas is compared once per sweep.
//
// Hand-offs use the same exchange, push only: a node hands a partition to its current
// owners before it drops it, and a leaving node hands everything to the next owners.

import type { Logger } from '../lib/log.js';
import type { RepairCounts } from './repair-messages.js';
import { writeOwners } from '../cluster-core/placement.js';
import type { Membership } from '../protocol/cluster-types.js';
import { TributaryError } from '../lib/errors.js';
import type { StorageDamage } from '../storage/integrity.js';
import type { RepositoryName } from '../storage/repository.js';
import type { Timer, Timers } from '../lib/timers.js';
import { syncPartition, type LocalPartitions, type PeerPartitions, type RepairPartitionRef } from './partition-sync.js';

/** A persisted stream as repair walks it. */
export interface RepairStream {
  key: string;
  repo: RepositoryName;
  replicas: number;
  ringSize: number;
}

export interface RepairRunStatus extends RepairCounts {
  id: string;
  kind: 'repair' | 'refill';
  /** undefined: every stream. */
  stream: string | undefined;
  startedAtMs: number;
}

/** Why this node's data cannot be trusted until it is refilled. */
export type Damage = StorageDamage;

export interface RepairServiceDeps {
  localName: string;
  membership(): Membership;
  available(node: string): boolean;
  streams(): RepairStream[];
  local: LocalPartitions;
  peers: PeerPartitions;
  /** Reads every definition back from a peer (the damage may have taken some). */
  refillDefinitions(): Promise<void>;
  /** Saves (or clears) the damage mark, so a restart in the middle of a refill goes on refilling. */
  persistDamage(damage: Damage | undefined): Promise<void>;
  /** The cluster core is told when the damage begins and ends (CoreInput 'damage'). */
  announceDamage(damaged: boolean): void;
  /**
   * The damage may have taken hints this node kept for other owners (they live in the same
   * database), for partitions it need not own: every partition of `streams` is noted for a
   * follow-up (write-follow-ups.ts), whose owners exchange what each lacks once all answer.
   */
  followUpAll(streams: readonly RepairStream[]): void;
  /** Background sweeps: one every this many ms; 0 turns them off. */
  intervalMs: number;
  /** Pause between two partitions of a background sweep (on-demand runs do not pause). */
  pacingMs: number;
  log: Logger;
  timers: Timers;
  /** Wall-clock epoch ms, for run ids and start times people read. */
  wallClock(): number;
}

interface SweepTarget {
  part: RepairPartitionRef;
  replicas: number;
  peers: string[];
}

const RUNS_KEPT_MAX = 32;
/** A refill that could not reach every partition's other owners is tried again after this. */
const REFILL_RETRY_MS = 2_000;

export class RepairService {
  private readonly runs = new Map<string, RepairRunStatus>();
  private damage: Damage | undefined;
  private timer: Timer | undefined;
  private sweeping: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly clock: () => number;

  constructor(private readonly deps: RepairServiceDeps) {
    this.clock = deps.wallClock;
  }

  /** Starts background sweeps, and the refill when this node starts out damaged. */
  start(damage: Damage | undefined): void {
    if (damage !== undefined) this.beginRefill(damage);
    if (this.deps.intervalMs > 0) {
      this.timer = this.deps.timers.setInterval(() => void this.background(), this.deps.intervalMs);
    }
  }

  /** Damage found while running (a reopened database lacks acknowledged batches): saved, then refilled as at start. */
  async found(damage: Damage): Promise<void> {
    if (this.damage !== undefined || this.stopped) return;
    await this.deps.persistDamage(damage);
    this.beginRefill(damage);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  damaged(): Damage | undefined {
    return this.damage;
  }

  /** Whether this node answers reads of its data: not while damaged data is being refilled. */
  serving(): boolean {
    return this.damage === undefined;
  }

  /**
   * Throws 503 REPAIRING while this node's data is damaged and not yet refilled: readers
   * go to another owner instead of getting an answer from partial data.
   */
  checkServing(what: string): void {
    if (this.damage === undefined) return;
    throw new TributaryError(503, 'REPAIRING', `${this.deps.localName} is refilling damaged data (${this.damage.reason}); ${what} is read from another owner`);
  }

  /** This node's part of an on-demand run (POST /cluster/repair here or on another node). */
  startRun(id: string, stream: string | undefined): RepairRunStatus {
    const known = this.runs.get(id);
    if (known !== undefined) return known;
    const targets = this.initiatedTargets(stream);
    const run = this.newRun(id, 'repair', stream, targets.length);
    this.enqueue(() => this.sweep(run, targets, 'both', 0));
    return run;
  }

  status(id: string): RepairRunStatus | undefined {
    return this.runs.get(id);
  }

  list(): RepairRunStatus[] {
    return [...this.runs.values()];
  }

  /**
   * Pushes this node's records of the partition to each of `owners` (push only) and
   * resolves once every one of them holds them all; throws if one could not be reached.
   */
  async handOff(part: RepairPartitionRef, replicas: number, owners: readonly string[], theirDigests?: ReadonlyMap<string, ArrayLike<number>>): Promise<number> {
    let sent = 0;
    for (const owner of owners) {
      if (owner === this.deps.localName) continue;
      if (!this.deps.available(owner)) throw new Error(`${owner} is unavailable`);
      sent += (await syncPartition(this.deps.local, this.deps.peers, owner, part, replicas, 'push', theirDigests?.get(owner))).sent;
    }
    return sent;
  }

  /**
   * Fetches what each of `owners` holds of the partition and this node lacks; resolves once
   * this node holds all they hold, throws if one could not be reached.
   */
  async catchUp(part: RepairPartitionRef, replicas: number, owners: readonly string[], theirDigests?: ReadonlyMap<string, ArrayLike<number>>): Promise<number> {
    let received = 0;
    for (const owner of owners) {
      if (owner === this.deps.localName) continue;
      if (!this.deps.available(owner)) throw new Error(`${owner} is unavailable`);
      received += (await syncPartition(this.deps.local, this.deps.peers, owner, part, replicas, 'pull', theirDigests?.get(owner))).received;
    }
    return received;
  }

  // -------------------------------------------------------------------------------------

  private background(): void {
    if (this.stopped) return;
    const id = `auto-${this.clock().toString(36)}-${this.deps.localName}`;
    const targets = this.initiatedTargets(undefined);
    const run = this.newRun(id, 'repair', undefined, targets.length);
    this.enqueue(() => this.sweep(run, targets, 'both', this.deps.pacingMs));
  }

  /** Refills every partition this node owns from its other owners, then serves again. */
  private beginRefill(damage: Damage): void {
    this.damage = damage;
    this.deps.announceDamage(true);
    this.deps.log.warn({ reason: damage.reason }, 'local data is damaged: reads go to other owners until it is refilled from them');
    let followedUp = false;
    const attempt = (): void => {
      if (this.stopped) return;
      this.enqueue(async () => {
        if (this.deps.membership().epoch === 0) {
          // The damage took the table too: the node owns nothing it knows of until a member
          // admits it again (cluster-shell.ts, readmit), and a refill now would end at once
          // with nothing refilled and the damage cleared. It waits for the table.
          this.deps.timers.setTimeout(attempt, REFILL_RETRY_MS);
          return;
        }
        if (this.hasLeft()) {
          // A node that has left owns no partition and serves nothing, and its peers no
          // longer answer it: there is nothing to refill, and waiting would never end
          // (the chaos suite found leavers stuck here after a damaged restart).
          await this.clearDamage();
          this.deps.log.info('this node has left the cluster: its damaged data needs no refill');
          return;
        }
        try {
          await this.deps.refillDefinitions();
        } catch (error) {
          this.deps.log.warn({ err: error }, 'refill: definitions could not be read from a peer; trying again');
          this.deps.timers.setTimeout(attempt, REFILL_RETRY_MS);
          return;
        }
        // A hint lost here leaves its record on fewer owners, and no hint remains to say so
        // (the chaos suite found records missing on one owner after settling): the owners of
        // every partition compare what they hold, before the damage mark goes, so nothing
        // counts this node (or the cluster) settled until then.
        if (!followedUp) this.deps.followUpAll(this.deps.streams());
        followedUp = true;
        // A run is listed only once it sweeps: waits above would fill the kept runs with
        // runs that never end.
        const targets = this.ownedTargets();
        const run = this.newRun(`refill-${this.clock().toString(36)}-${this.deps.localName}`, 'refill', undefined, targets.length);
        await this.sweep(run, targets, 'both', 0);
        if (run.failures > 0) {
          this.deps.log.warn({ failures: run.failures }, 'refill incomplete: some partitions had no reachable owner; trying again');
          this.deps.timers.setTimeout(attempt, REFILL_RETRY_MS);
          return;
        }
        await this.clearDamage();
        this.deps.log.info({ received: run.recordsReceived, partitions: run.partitionsTotal }, 'damaged data refilled from the other owners; serving reads again');
      });
    };
    attempt();
  }

  /** The damage mark goes from disk, then from reads and the core (which tells its peers). */
  private async clearDamage(): Promise<void> {
    await this.deps.persistDamage(undefined);
    this.damage = undefined;
    this.deps.announceDamage(false);
  }

  private hasLeft(): boolean {
    return this.deps.membership().members.find((member) => member.name === this.deps.localName)?.state === 'Left';
  }

  /** Partitions this node initiates: it is their lowest-named available owner. */
  private initiatedTargets(stream: string | undefined): SweepTarget[] {
    return this.targets(stream, (owners) => owners.filter((owner) => this.deps.available(owner)).sort()[0] === this.deps.localName);
  }

  /** Every partition this node owns, with every other available owner. */
  private ownedTargets(): SweepTarget[] {
    return this.targets(undefined, () => true);
  }

  private targets(stream: string | undefined, initiates: (owners: readonly string[]) => boolean): SweepTarget[] {
    const membership = this.deps.membership();
    const self = this.deps.localName;
    const targets: SweepTarget[] = [];
    for (const each of this.deps.streams()) {
      if (stream !== undefined && each.key !== stream) continue;
      for (let partition = 0; partition < each.ringSize; partition += 1) {
        // Every node a write of the partition goes to: during a change the joining node
        // holds what the transfers brought it, and a refill must count it too.
        const owners = writeOwners(membership, { partition, replicas: each.replicas });
        if (!owners.includes(self) || !initiates(owners)) continue;
        targets.push({ part: { repo: each.repo, stream: each.key, partition }, replicas: each.replicas, peers: owners.filter((owner) => owner !== self) });
      }
    }
    return targets;
  }

  private async sweep(run: RepairRunStatus, targets: readonly SweepTarget[], mode: 'both' | 'push', pacingMs: number): Promise<void> {
    for (const target of targets) {
      if (this.stopped) break;
      // The table may have moved on since the run was planned: a partition this node no
      // longer owns is not filled again (it would hold what it does not own).
      const owners = writeOwners(this.deps.membership(), { partition: target.part.partition, replicas: target.replicas });
      for (const peer of owners.includes(this.deps.localName) ? target.peers.filter((name) => owners.includes(name)) : []) {
        if (!this.deps.available(peer)) {
          run.failures += 1;
          continue;
        }
        try {
          const result = await syncPartition(this.deps.local, this.deps.peers, peer, target.part, target.replicas, mode);
          if (result.segments > 0) run.partitionsCompared += 1;
          run.recordsSent += result.sent;
          run.recordsReceived += result.received;
          if (result.sent + result.received > 0) {
            this.deps.log.info({ run: run.id, peer, stream: target.part.stream, partition: target.part.partition, sent: result.sent, received: result.received }, 'repair moved records');
          }
        } catch (error) {
          run.failures += 1;
          this.deps.log.debug({ err: error, run: run.id, peer, stream: target.part.stream, partition: target.part.partition }, 'repair exchange failed');
        }
      }
      run.partitionsDone += 1;
      if (pacingMs > 0) await new Promise<void>((resolve) => this.deps.timers.setTimeout(resolve, pacingMs));
    }
    run.complete = true;
    this.deps.log.info({ run: run.id, kind: run.kind, partitions: run.partitionsTotal, compared: run.partitionsCompared, sent: run.recordsSent, received: run.recordsReceived, failures: run.failures }, 'repair run done');
  }

  /** Sweeps run one at a time: two at once would compare the same partitions twice. */
  private enqueue(sweep: () => Promise<void>): void {
    this.sweeping = this.sweeping.then(sweep).catch((error: unknown) => this.deps.log.error({ err: error }, 'repair sweep failed'));
  }

  private newRun(id: string, kind: RepairRunStatus['kind'], stream: string | undefined, partitionsTotal: number): RepairRunStatus {
    const run: RepairRunStatus = { id, kind, stream, startedAtMs: this.clock(), complete: false, partitionsTotal, partitionsDone: 0, partitionsCompared: 0, recordsSent: 0, recordsReceived: 0, failures: 0 };
    this.runs.set(id, run);
    while (this.runs.size > RUNS_KEPT_MAX) this.runs.delete(this.runs.keys().next().value!);
    return run;
  }
}
