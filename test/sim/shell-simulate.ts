// One seeded run of the shell simulation: the real core, shell and data plane of every node
// (sim-node.ts) under a random scenario: joins and removals while clients write through the
// real router; crashes (some losing unsynced writes, some restarting on another port, some with
// damaged data that is refilled from the other owners), pauses, cut links, dropped messages and
// failing storage I/O (transfers included). Then every fault heals and the run must settle with
// nothing lost:
//   SHELL_SIM_SEED=<seed> npx vitest run test/unit/cluster-shell.sim.test.ts

import { coordinatorOf, ownersOf, writeOwners } from '../../src/cluster-core/placement.js';
import { memberNamed } from '../../src/cluster-core/membership.js';
import { newestState } from '../../src/cluster/core-state-store.js';
import { notServingBecause } from '../../src/cluster/serving.js';
import type { AdminCommand, Membership } from '../../src/protocol/cluster-types.js';
import type { RepairStream } from '../../src/repair/repair-service.js';
import type { RepositoryName, StoredRecord } from '../../src/storage/repository.js';
import { Prng } from './prng.js';
import type { DiskFaults } from './sim-disk.js';
import { SimClusterNode, type SimNodeConfig } from './sim-node.js';
import { SimNetwork } from './sim-network.js';
import { VirtualWorld } from './virtual-world.js';

export interface ShellSimResult {
  seed: number;
  ok: boolean;
  failures: string[];
  log: string[];
  stats: {
    acknowledged: number;
    failedWrites: number;
    changes: number;
    crashes: number;
    damagedRestarts: number;
    /** Damaged restarts that took the node's table too. */
    tablesLost: number;
    /** Of those, the ones that took its copy as well (the node must be admitted again). */
    tableCopiesLost: number;
    /** Damaged copies brought back by the repair run after settling (settleWithRepair). */
    repairedAfterSettle: number;
    /**
     * Records whose write failed that sit on some owners and not others once settled, before
     * any repair run (docs/cluster.md, "Writes of unknown outcome"): nodes would answer
     * different totals.
     */
    unevenFailed: number;
    /** The same of records whose write never answered (its node crashed while writing them). */
    unevenUnanswered: number;
    moves: number;
    pauses: number;
    /** Storage operations that failed (chunk reads and stores, writes, hints, the core's state). */
    ioFailures: number;
    /** Nodes stopped by a failed write of the core's state, and restarted. */
    fatalStops: number;
    simulatedMs: number;
    messages: number;
  };
}

const NAMES = ['a', 'b', 'c', 'd', 'e'];
const FAULT_PHASE_MS = 4_000;
const SETTLE_LIMIT_MS = 40_000;

interface Acked {
  record: StoredRecord;
  repo: RepositoryName;
  replicas: number;
}

export function shellSimReplay(seed: number): string {
  return `SHELL_SIM_SEED=${seed} npx vitest run test/unit/cluster-shell.sim.test.ts`;
}

export async function simulateShell(seed: number, options: { nodeLogs?: boolean } = {}): Promise<ShellSimResult> {
  const prng = new Prng(seed);
  const run = new ShellSimRun(prng, options.nodeLogs ?? false);
  try {
    await run.play();
  } catch (error) {
    run.fail(`harness error: ${(error as Error).stack ?? String(error)}`);
  }
  return { seed, ok: run.failures.length === 0, failures: run.failures, log: run.log, stats: { ...run.stats, ioFailures: run.ioErrors(), simulatedMs: run.world.now, messages: run.network.messages } };
}

class ShellSimRun {
  readonly world = new VirtualWorld();
  readonly network: SimNetwork;
  readonly failures: string[] = [];
  readonly log: string[] = [];
  /** A damaged restart took a node's table (once per run). */
  private tableTaken = false;
  readonly stats = { acknowledged: 0, failedWrites: 0, changes: 0, crashes: 0, damagedRestarts: 0, tablesLost: 0, tableCopiesLost: 0, repairedAfterSettle: 0, unevenFailed: 0, unevenUnanswered: 0, moves: 0, pauses: 0, fatalStops: 0 };
  private readonly nodes = new Map<string, SimClusterNode>();
  private readonly acked: Acked[] = [];
  /** Records whose write failed: they may sit on some owners (write-follow-ups.ts). */
  private readonly failedRecords: Acked[] = [];
  /** Records whose write has not answered (yet, or ever: its node crashed meanwhile). */
  private readonly unanswered = new Set<Acked>();
  /** Copies the simulation destroyed (damaged disks), by writeId: the nodes that held them. */
  private readonly destroyed = new Map<string, string[]>();
  private readonly config: SimNodeConfig;
  private diskFaults: DiskFaults;
  private operations: Array<'add' | 'remove'>;
  private nextName = 1;
  private healed = false;
  private writeCounter = 0;

  constructor(
    private readonly prng: Prng,
    private readonly nodeLogs: boolean,
  ) {
    const ringSize = prng.int(3, 6);
    const replicaValues = prng.shuffle([1, 2, 3]).slice(0, prng.int(1, 2));
    const streams: RepairStream[] = replicaValues.flatMap((replicas) => [
      { key: `sim/ssr/r${replicas}`, repo: 'ssr' as const, replicas, ringSize },
      { key: `sim/tsr/r${replicas}`, repo: 'tsr' as const, replicas, ringSize },
    ]);
    this.config = {
      core: { heartbeatIntervalMs: 100, failureTimeoutMs: prng.pick([300, 500]), transferStallMs: prng.pick([300, 600]), transferWindowChunks: prng.int(1, 3) },
      streams,
      kvKeys: ['kv/streams/s1', 'kv/tenants/t1'],
      writeDeadlineMs: 150,
      peerDeadlineMs: 400,
      hintReplayIntervalMs: 200,
    };
    this.network = new SimNetwork(this.world, prng.fork(), { dropRate: prng.pick([0, 0.02, 0.05]), delayMs: [1, prng.pick([5, 20])] });
    this.diskFaults = { ioFailRate: prng.pick([0, 0.01, 0.03]), ioDelayMs: [1, prng.int(2, 8)], unsyncedLossRate: 0.5 };
    const adds = prng.int(1, 3);
    const removes = prng.int(0, 2);
    this.operations = prng.shuffle([...Array<'add'>(adds).fill('add'), ...Array<'remove'>(removes).fill('remove')]);
  }

  async play(): Promise<void> {
    const traced = process.env.SHELL_SIM_TRACE;
    if (traced !== undefined) {
      let last = '';
      this.world.afterEvent = () => {
        const where = [...this.nodes.values()].map((node) => {
          const stored = (['ssr', 'tsr'] as const).some((repo) => [...node.disk.records[repo].values()].some((records) => records.has(traced)));
          const hinted = [...node.disk.hints.values()].filter((hint) => (hint.payload.records as StoredRecord[]).some((record) => record.writeId === traced)).map((hint) => hint.target);
          return `${node.name}:${stored ? 'S' : '-'}${hinted.length > 0 ? `h(${hinted.join(',')})` : ''}`;
        }).join(' ');
        if (where !== last) this.note(`trace ${traced}: ${where}`);
        last = where;
      };
    }
    this.node(NAMES[0]!, true).start();
    this.note(`scenario: ${this.config.streams.map((stream) => stream.key).join(' ')}, operations ${this.operations.join(',')}, io failures ${this.diskFaults.ioFailRate}`);
    this.schedulePhase();
    await this.world.runUntil(FAULT_PHASE_MS, () => this.failures.length > 0);
    if (this.failures.length > 0) return;
    this.heal();
    for (let until = FAULT_PHASE_MS + 200; until <= FAULT_PHASE_MS + SETTLE_LIMIT_MS; until += 200) {
      await this.world.runUntil(until, () => this.failures.length > 0);
      if (this.failures.length > 0) return;
      if (this.operations.length === 0 && this.quiescent() === undefined) return this.settleWithRepair(until);
    }
    this.fail(`not settled ${SETTLE_LIMIT_MS} ms after healing: ${this.quiescent() ?? `operations left: ${this.operations.join(',')}`}`);
  }

  /**
   * The settled cluster, checked as the chaos suite checks it. A copy the simulation damaged
   * whose other copy was then only a hint can reach its other owner after the damaged node
   * refilled: the one-shot refill cannot bring it back, anti-entropy does (the chaos suite
   * runs it before reading, as POST /cluster/repair). So when every copy missing is missing
   * only where the simulation damaged it, and was never stored there again since, and another
   * node holds it, every node runs one repair before the check; any other copy missing fails
   * as it is.
   */
  private async settleWithRepair(settledAt: number): Promise<void> {
    this.stats.unevenFailed = this.uneven(this.failedRecords, 'failed');
    this.stats.unevenUnanswered = this.uneven([...this.unanswered], 'unanswered');
    const missing = this.missingCopies();
    const damagedOnly = missing.every((copy) => copy.holders.length > 0 && this.nodes.get(copy.owner)!.disk.destroyedHere.has(copy.acked.record.writeId));
    if (missing.length > 0 && damagedOnly) {
      this.stats.repairedAfterSettle += missing.length;
      const runs = this.settledNodes().map((node) => node.process!.plane.repair.startRun('after-settling', undefined));
      for (let until = settledAt + 200; until <= FAULT_PHASE_MS + SETTLE_LIMIT_MS && !runs.every((run) => run.complete); until += 200) {
        await this.world.runUntil(until, () => this.failures.length > 0);
        if (this.failures.length > 0) return;
      }
    }
    this.checkFinal();
  }

  /** Failed records held by some owners under the newest table and not by others. */
  private uneven(records: readonly Acked[], what: string): number {
    const table = this.newestTable() ?? this.nodes.get(NAMES[0]!)!.process!.core.membership();
    let uneven = 0;
    for (const { record, repo, replicas } of records) {
      const owners = ownersOf(table, { partition: record.partition, replicas });
      const holders = owners.filter((owner) => this.nodes.get(owner)!.disk.partitionOf(repo, record.stream, record.partition).has(record.writeId));
      if (holders.length === 0 || holders.length === owners.length) continue;
      uneven += 1;
      this.note(`${what} ${repo} ${record.writeId} (${record.stream}/${record.partition}) is on ${holders.join(',')} of its owners ${owners.join(',')} once settled`);
    }
    return uneven;
  }

  /** Each acknowledged record's copy missing from an owner under the newest table, with the nodes that hold it. */
  private missingCopies(): Array<{ acked: Acked; owner: string; holders: string[] }> {
    const table = this.newestTable() ?? this.nodes.get(NAMES[0]!)!.process!.core.membership();
    const missing: Array<{ acked: Acked; owner: string; holders: string[] }> = [];
    for (const acked of this.acked) {
      const { stream, partition, writeId } = acked.record;
      for (const owner of ownersOf(table, { partition, replicas: acked.replicas })) {
        if (this.nodes.get(owner)!.disk.partitionOf(acked.repo, stream, partition).has(writeId)) continue;
        const holders = [...this.nodes.values()].filter((node) => node.disk.partitionOf(acked.repo, stream, partition).has(writeId)).map((node) => node.name);
        missing.push({ acked, owner, holders });
      }
    }
    return missing;
  }

  private schedulePhase(): void {
    const prng = this.prng;
    for (let index = prng.int(20, 60); index > 0; index -= 1) this.world.schedule(prng.int(0, FAULT_PHASE_MS), () => void this.write(2));
    for (let index = prng.int(0, 3); index > 0; index -= 1) this.world.schedule(prng.int(200, FAULT_PHASE_MS), () => this.crashSomeone());
    for (let index = prng.int(0, 2); index > 0; index -= 1) this.world.schedule(prng.int(200, FAULT_PHASE_MS), () => this.pauseSomeone());
    for (let index = prng.int(0, 2); index > 0; index -= 1) this.world.schedule(prng.int(200, FAULT_PHASE_MS), () => this.cutLinks());
    this.world.schedule(prng.int(0, 200), () => void this.nextOperation());
  }

  private heal(): void {
    this.healed = true;
    this.network.faults = { dropRate: 0, delayMs: [1, 5] };
    this.network.cuts.clear();
    this.diskFaults = { ...this.diskFaults, ioFailRate: 0 };
    for (const node of this.nodes.values()) {
      node.pausedUntil = 0;
      if (node.everStarted && !node.alive) node.start();
    }
    this.note('--- faults heal ---');
  }

  // ---- The operator

  private async nextOperation(): Promise<void> {
    const operation = this.operations[0];
    if (operation === undefined) return;
    const command = this.commandFor(operation);
    if (command === undefined) {
      this.operations.shift();
      this.world.schedule(this.world.now + 1, () => void this.nextOperation());
      return;
    }
    const accepted = (await this.sendAdmin(command)) || this.alreadyMade(command);
    if (accepted) {
      this.operations.shift();
      this.stats.changes += 1;
      this.note(`change accepted: ${command.type === 'add' ? `add ${command.member.name}` : `remove ${command.name}`}`);
    }
    this.world.schedule(this.world.now + this.prng.int(accepted ? 300 : 100, accepted ? 1_500 : 400), () => void this.nextOperation());
  }

  private commandFor(operation: 'add' | 'remove'): AdminCommand | undefined {
    if (operation === 'add') {
      const name = NAMES[this.nextName];
      if (name === undefined) return undefined;
      const node = this.nodes.get(name) ?? this.node(name, false);
      const { state: _state, ...member } = node.member();
      return { type: 'add', member };
    }
    const view = this.newestTable();
    if (view === undefined) return undefined;
    const joined = view.members.filter((member) => member.state === 'Joined').map((member) => member.name);
    return joined.length < 2 ? undefined : { type: 'remove', name: this.prng.pick(joined) };
  }

  private alreadyMade(command: AdminCommand): boolean {
    if (command.type !== 'add') return false;
    const made = this.newestTable()?.members.some((member) => member.name === command.member.name) === true;
    if (made) this.nextName += 1;
    return made;
  }

  private async sendAdmin(command: AdminCommand): Promise<boolean> {
    if (command.type === 'add') {
      const joining = this.nodes.get(command.member.name)!;
      if (!joining.everStarted) joining.start();
      // The node may have been moved to another port since the command was made.
      command = { type: 'add', member: { ...command.member, port: joining.port } };
    }
    const live = this.live().filter((node) => node.process!.core.membership().epoch > 0);
    if (live.length === 0) return false;
    const via = this.prng.pick(live);
    const core = via.process!.core;
    const target = coordinatorOf(core.membership(), (name) => core.available(name));
    const coordinator = target === undefined ? undefined : this.nodes.get(target);
    if (coordinator?.process === undefined || coordinator.pausedUntil > this.world.now) return false;
    const result = await coordinator.process.shell.admin(command);
    if (result.ok && command.type === 'add') this.nextName += 1;
    if (!result.ok) this.note(`admin ${command.type} refused by ${coordinator.name}: ${result.status} ${result.message}`);
    return result.ok;
  }

  // ---- The clients

  private async write(attemptsLeft: number): Promise<void> {
    // Clients reach only nodes whose front end serves them (http/serving-gate.ts).
    const live = this.live().filter((node) => notServingBecause(node.process!.core, node.name) === undefined && node.pausedUntil <= this.world.now);
    const stream = this.prng.pick(this.config.streams);
    if (live.length === 0 || attemptsLeft === 0) return;
    const via = this.prng.pick(live);
    const records: StoredRecord[] = Array.from({ length: this.prng.int(1, 4) }, () => ({
      stream: stream.key,
      partition: this.prng.int(0, stream.ringSize - 1),
      timestamp: this.world.now,
      writeId: `w${String(this.writeCounter++).padStart(5, '0')}.${via.name}`,
      value: '{}',
    }));
    // Copies wanted are decided by the table the write is routed with.
    const routedBy = via.process!.core.membership();
    const owners = records.map((record) => writeOwners(routedBy, { partition: record.partition, replicas: stream.replicas }).length);
    const pending = records.map((record) => ({ record, repo: stream.repo, replicas: stream.replicas }));
    for (const each of pending) this.unanswered.add(each);
    const failures = await via.process!.plane.router.write(stream.repo, { replicas: stream.replicas, ring_size: stream.ringSize, hash_payload: { bytes: 128 } }, records);
    // Unless the ring shrank meanwhile (a leave down to one node): then fewer copies can exist.
    const ackedBy = via.process?.core.membership() ?? routedBy;
    const ownersNow = records.map((record) => writeOwners(ackedBy, { partition: record.partition, replicas: stream.replicas }).length);
    for (const each of pending) this.unanswered.delete(each);
    records.forEach((record, position) => {
      if (failures.has(position)) {
        this.failedRecords.push({ record, repo: stream.repo, replicas: stream.replicas });
        return void (this.stats.failedWrites += 1);
      }
      this.stats.acknowledged += 1;
      this.acked.push({ record, repo: stream.repo, replicas: stream.replicas });
      // Acknowledged means durable on two distinct nodes (stored or hinted) whenever the
      // stream keeps two copies and the ring has two owners (partition-router.ts).
      // A copy damaged after it became durable still counted when the write was made.
      const holders = [...new Set([...this.holders(stream.repo, record), ...(this.destroyed.get(record.writeId) ?? [])])];
      const wanted = Math.min(2, stream.replicas, owners[position]!, ownersNow[position]!);
      if (holders.length < wanted) this.fail(`${record.writeId} acknowledged by ${via.name} while only ${holders.join(',') || 'nobody'} held it (wanted ${wanted} nodes)`);
    });
    if (failures.size > 0 && !this.healed) this.world.schedule(this.world.now + this.prng.int(50, 200), () => void this.write(attemptsLeft - 1));
  }

  // ---- The faults

  private crashSomeone(): void {
    if (this.healed) return;
    const victim = this.prng.pick([...this.nodes.values()].filter((node) => node.everStarted));
    let kind = this.prng.pick(['plain', 'unsynced', 'move', 'damaged'] as const);
    // One node moves, and only while the others run: two nodes that both moved while the
    // other could not hear it cannot find each other without a third that knows both
    // (README, "Moving a node").
    // And only a Joined node: a Pending one has no table to announce its new address with
    // (README, "Moving a node").
    const joined = victim.process?.core.membership().members.find((member) => member.name === victim.name)?.state === 'Joined';
    if (kind === 'move' && (!joined || this.stats.moves > 0 || [...this.nodes.values()].some((node) => node !== victim && node.everStarted && !node.alive))) kind = 'plain';
    victim.crash(kind === 'unsynced');
    this.stats.crashes += 1;
    if (kind === 'move') {
      victim.port += 1;
      this.stats.moves += 1;
    }
    if (kind === 'damaged') this.damage(victim);
    this.note(`${victim.name} crashes (${kind})`);
    this.world.schedule(this.world.now + this.prng.int(100, 1_000), () => {
      if (!victim.alive) victim.start();
      this.note(`${victim.name} restarts${kind === 'move' ? ` on port ${victim.port}` : ''}`);
    });
  }

  /**
   * A damaged disk: some records are gone, and the node knows (the commit ledger's check at
   * open). It must refill from the other owners before anyone counts on it again.
   */
  private damage(node: SimClusterNode): void {
    let lost = 0;
    for (const repo of ['ssr', 'tsr'] as const) {
      for (const records of node.disk.records[repo].values()) {
        for (const [key, record] of [...records]) {
          // One replica is damaged at a time: what only this node holds is not taken (no
          // system keeps data whose every copy is destroyed); the ack check above makes
          // sure nothing acknowledged is ever held by one node only.
          if (this.lastingHolders(repo, record).length > 1 && this.prng.chance(0.3)) {
            records.delete(key);
            node.disk.destroyedHere.add(key);
            this.destroyed.set(key, [...(this.destroyed.get(key) ?? []), node.name]);
            lost += 1;
          }
        }
      }
    }
    // The table lives in the same database: damage takes it now and then (as in join-leave-r3
    // seed 17), and the node takes its copy beside the database; now and then the copy is gone
    // too, and the node must be admitted again. Once per run, and only while another member
    // (not one that has left) holds a table: with every member's table gone there is no cluster
    // to rejoin.
    const member = (other: SimClusterNode) => {
      const table = newestState(other.disk.coreState, other.disk.tableCopy)?.membership;
      return table !== undefined && memberNamed(table, other.name)?.state !== 'Left';
    };
    // Nor from a node that moved and has not announced it yet: with its table gone it cannot,
    // and no one finds it (README, "Moving a node": a node that moves before it has a table).
    const knownHere = [...this.nodes.values()].some((other) => other !== node && (other.process !== undefined && memberNamed(other.process.core.membership(), node.name)?.port === node.port));
    const tableLost = !this.tableTaken && knownHere && [...this.nodes.values()].some((other) => other !== node && member(other)) && this.prng.chance(0.3);
    const copyLost = tableLost && this.prng.chance(0.5);
    // Or the database keeps the table it held before its last save (a truncated log).
    const rolledBack = tableLost && !copyLost && node.disk.olderCoreState !== undefined && this.prng.chance(0.5);
    if (tableLost) {
      node.disk.coreState = rolledBack ? node.disk.olderCoreState : undefined;
      this.tableTaken = true;
      this.stats.tablesLost += 1;
    }
    if (copyLost) {
      node.disk.tableCopy = undefined;
      this.stats.tableCopiesLost += 1;
    }
    const what = copyLost ? ', its table and the copy' : rolledBack ? ', its table rolled back (not the copy)' : tableLost ? ', and its table (not the copy)' : '';
    node.disk.damage = { reason: `the simulation damaged it (${lost} records lost${what})`, sinceMs: this.world.now };
    this.stats.damagedRestarts += 1;
  }

  private pauseSomeone(): void {
    if (this.healed) return;
    const live = this.live();
    if (live.length === 0) return;
    const victim = this.prng.pick(live);
    const until = this.world.now + this.prng.int(200, 1_500);
    victim.pause(until);
    this.stats.pauses += 1;
    this.note(`${victim.name} paused until ${until}`);
  }

  private cutLinks(): void {
    if (this.healed) return;
    const names = [...this.nodes.values()].filter((node) => node.everStarted).map((node) => node.name);
    if (names.length < 2) return;
    const shuffled = this.prng.shuffle(names);
    const split = this.prng.int(1, shuffled.length - 1);
    const cut: string[] = [];
    for (const a of shuffled.slice(0, split)) for (const b of shuffled.slice(split)) cut.push(`${a}>${b}`, `${b}>${a}`);
    for (const link of cut) this.network.cuts.add(link);
    this.note(`partition ${shuffled.slice(0, split).join('')} | ${shuffled.slice(split).join('')}`);
    this.world.schedule(this.world.now + this.prng.int(100, 1_000), () => cut.forEach((link) => this.network.cuts.delete(link)));
  }

  // ---- Checks

  /** A node drops a partition only after every current owner holds every acknowledged record it held. */
  private checkDrop(node: string, repo: RepositoryName, stream: string, partition: number, held: readonly string[]): void {
    const table = this.nodes.get(node)!.process?.core.membership();
    if (table === undefined) return;
    const replicas = this.config.streams.find((each) => each.key === stream)!.replicas;
    if (table.members.find((member) => member.name === node)?.state === 'Left') return;
    const heldSet = new Set(held);
    for (const acked of this.acked) {
      if (acked.record.stream !== stream || acked.record.partition !== partition || acked.repo !== repo || !heldSet.has(acked.record.writeId)) continue;
      // A copy the simulation damaged after the hand-off is the refill's to bring back.
      const lacking = (owners: readonly string[]) => owners.filter((owner) => owner !== node && !this.destroyed.get(acked.record.writeId)?.includes(owner) && !this.nodes.get(owner)!.disk.partitionOf(repo, stream, partition).has(acked.record.writeId));
      const missing = lacking(ownersOf(table, { partition, replicas }));
      // A node back from a pause drops by its own older table: an owner by that table may
      // since have handed the partition to the owners of a newer one and dropped it too.
      if (missing.length > 0 && lacking(ownersOf(this.newestTable() ?? table, { partition, replicas })).length > 0) {
        this.fail(`${node} dropped ${repo} ${stream}/${partition} while owner ${missing[0]} lacked acknowledged ${acked.record.writeId}`);
        return;
      }
    }
  }


  /**
   * The nodes that must settle: every node started, but one removed while down that lost its
   * table at the same time: it has none, and hears of it only at the next change (leftWithoutTable).
   */
  private settledNodes(): SimClusterNode[] {
    const newest = this.newestTable();
    return [...this.nodes.values()].filter((node) => node.everStarted && (newest === undefined || !this.leftWithoutTable(node, newest)));
  }

  /** Undefined once every node runs with one table, no change, no hints, nothing left to hand off. */
  private quiescent(): string | undefined {
    const started = [...this.nodes.values()].filter((node) => node.everStarted);
    if (started.some((node) => !node.alive)) return 'a node is down';
    const counted = this.settledNodes();
    const tables = counted.map((node) => node.process!.core.membership());
    if (new Set(tables.map((table) => table.epoch)).size > 1) return `epochs differ: ${tables.map((table) => table.epoch).join(',')}`;
    if (tables[0]!.change !== undefined) return `change ${tables[0]!.change.id} in flight`;
    if ((tables[0]!.queue ?? []).length > 0) return `changes queued: ${tables[0]!.queue!.map((entry) => entry.id).join(',')}`;
    for (const node of counted) {
      const process = node.process!;
      if (!process.shell.idle()) return `${node.name} is carrying out a step`;
      if (process.disk.hintedRecords() > 0) return `${node.name} holds hints`;
      if (process.plane.handOff.pendingDrops() > 0) return `${node.name} has partitions to hand off`;
      if (process.plane.repair.damaged() !== undefined) return `${node.name} is refilling damaged data`;
      if (process.plane.followUps.pending() > 0) return `${node.name} has follow-ups of failed writes`;
      if (process.core.incomingTransfers().length > 0) return `${node.name} receives transfers`;
    }
    return undefined;
  }

  /**
   * A node that has left and lost its table since: it serves nothing, and only the next
   * change's table (sent to Left nodes too) would tell it to drop what it still holds; a run
   * may end before one (README, "A lost cluster table").
   */
  private leftWithoutTable(node: SimClusterNode, newest: Membership): boolean {
    return node.process?.core.membership().epoch === 0 && memberNamed(newest, node.name)?.state === 'Left';
  }

  private checkFinal(): void {
    const table = this.newestTable() ?? this.nodes.get(NAMES[0]!)!.process!.core.membership();
    for (const { acked, owner, holders } of this.missingCopies()) {
      const { stream, partition, writeId } = acked.record;
      this.fail(`acknowledged ${acked.repo} ${writeId} (${stream}/${partition}) is not on owner ${owner}; held by ${holders.join(',') || 'nobody'}`);
    }
    for (const node of this.nodes.values()) {
      if (!node.everStarted || this.leftWithoutTable(node, table)) continue;
      for (const repo of ['ssr', 'tsr'] as const) {
        for (const [where, records] of node.disk.records[repo]) {
          if (records.size === 0) continue;
          const [stream, partition] = [where.slice(0, where.lastIndexOf('|')), Number(where.slice(where.lastIndexOf('|') + 1))];
          const replicas = this.config.streams.find((each) => each.key === stream)!.replicas;
          if (!writeOwners(table, { partition, replicas }).includes(node.name)) this.fail(`${node.name} still holds ${records.size} ${repo} records of ${where}, which it does not own`);
        }
      }
      const state = table.members.find((member) => member.name === node.name)?.state;
      if (state === 'Joined' && this.config.kvKeys.some((key) => !node.disk.kv.has(key))) this.fail(`${node.name} is Joined without every KV key`);
    }
  }

  // ---- Helpers

  private node(name: string, lone: boolean): SimClusterNode {
    const node = new SimClusterNode(
      name, lone, this.world, this.network, this.prng.fork(), this.config,
      () => this.diskFaults,
      (dropper, repo, stream, partition, held) => this.checkDrop(dropper, repo, stream, partition, held),
      (dead, error) => {
        this.note(`${dead} stops on a fatal error: ${(error as Error).message}`);
        if ((error as Error).name !== 'SimIoError') this.fail(`${dead} failed: ${(error as Error).stack ?? String(error)}`);
        this.world.schedule(this.world.now, () => {
          this.nodes.get(dead)!.crash(false);
          this.stats.fatalStops += 1;
          this.world.schedule(this.world.now + 100, () => this.nodes.get(dead)!.start());
        });
      },
      this.nodeLogs ? (line) => this.note(line) : undefined,
    );
    this.nodes.set(name, node);
    return node;
  }

  /** Nodes that hold the record, stored or in a hint. */
  private holders(repo: RepositoryName, record: StoredRecord): string[] {
    return [...this.nodes.values()]
      .filter((node) => node.disk.partitionOf(repo, record.stream, record.partition).has(record.writeId) || [...node.disk.hints.values()].some((hint) => hint.payload.repository === repo && (hint.payload.records as StoredRecord[]).some((held) => held.writeId === record.writeId)))
      .map((node) => node.name);
  }

  ioErrors(): number {
    return [...this.nodes.values()].reduce((sum, node) => sum + node.disk.ioErrors, 0);
  }

  /**
   * Holders whose copy lasts: stored on an owner of its partition that stays (a copy on a
   * node handing the partition off, leaving or Left is about to go), or hinted anywhere.
   */
  private lastingHolders(repo: RepositoryName, record: StoredRecord): string[] {
    const table = this.newestTable();
    if (table === undefined) return [];
    const replicas = this.config.streams.find((stream) => stream.key === record.stream)!.replicas;
    const owners = ownersOf(table, { partition: record.partition, replicas }).filter((name) => table.members.find((member) => member.name === name)?.state === 'Joined');
    return [...this.nodes.values()]
      .filter((node) => (owners.includes(node.name) && node.disk.partitionOf(repo, record.stream, record.partition).has(record.writeId)) || [...node.disk.hints.values()].some((hint) => hint.payload.repository === repo && (hint.payload.records as StoredRecord[]).some((held) => held.writeId === record.writeId)))
      .map((node) => node.name);
  }

  private live(): SimClusterNode[] {
    return [...this.nodes.values()].filter((node) => node.alive && node.process !== undefined);
  }

  private newestTable(): Membership | undefined {
    let newest: Membership | undefined;
    for (const node of this.live()) {
      const table = node.process!.core.membership();
      if (table.epoch > 0 && (newest === undefined || table.epoch > newest.epoch)) newest = table;
    }
    return newest;
  }

  note(line: string): void {
    this.log.push(`${String(this.world.now).padStart(6)}ms ${line}`);
    if (this.log.length > 2_000) this.log.splice(0, 500);
  }

  fail(message: string): void {
    this.failures.push(`t=${this.world.now}ms: ${message}`);
    this.note(`FAILURE ${message}`);
  }
}
