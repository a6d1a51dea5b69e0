// One seeded run of the cluster simulation: a random scenario of joins and removals under
// dropped, delayed, duplicated and reordered messages, partitions, crashes (some in the middle
// of a step) and client writes; then every fault heals and the run must settle. Everything
// random comes from the seed, so a failure replays exactly:
//   SIM_SEED=<seed> npx vitest run test/unit/cluster-core.sim.test.ts

import { coordinatorOf } from '../../src/cluster-core/placement.js';
import type { AdminCommand, Membership, Slot } from '../../src/protocol/cluster-types.js';
import { SimCluster, SimFailure, type SimConfig } from './cluster.js';
import { Prng } from './prng.js';
import type { DataRepo } from './storage.js';

export interface SimulateOptions {
  /** Log every step and effect. */
  verbose?: boolean;
  /** How long faults are injected, in simulated ms. */
  faultPhaseMs?: number;
  /** How long the healed cluster may take to settle, in simulated ms. */
  settleLimitMs?: number;
}

export interface SimulationResult {
  seed: number;
  ok: boolean;
  failures: string[];
  trace: string[];
  stats: SimCluster['stats'] & { simulatedMs: number; nodes: number; changes: number };
  replay: string;
}

const NAMES = ['a', 'b', 'c', 'd', 'e'];

interface Scenario {
  config: SimConfig;
  operations: Array<'add' | 'remove'>;
  writes: number;
  crashes: number;
  partitions: number;
  tornCrashRate: number;
  faultPhaseMs: number;
}

export function replayCommand(seed: number): string {
  return `SIM_SEED=${seed} npx vitest run test/unit/cluster-core.sim.test.ts`;
}

function buildScenario(prng: Prng, faultPhaseMs: number): Scenario {
  const ringSize = prng.int(3, 8);
  const replicaValues = prng.shuffle([1, 2, 3]).slice(0, prng.int(1, 2));
  const slots: Slot[] = [];
  for (const replicas of replicaValues) for (let partition = 0; partition < ringSize; partition += 1) slots.push({ partition, replicas });
  const adds = prng.int(1, 4); // the first may be the "second starting node"
  const removes = prng.int(0, 2);
  const operations = prng.shuffle([...Array<'add'>(adds).fill('add'), ...Array<'remove'>(removes).fill('remove')]);
  const config: SimConfig = {
    core: {
      heartbeatIntervalMs: 50,
      failureTimeoutMs: prng.pick([200, 300]),
      transferStallMs: prng.pick([150, 250, 400]),
      transferWindowChunks: prng.int(1, 4),
    },
    tickMs: prng.pick([10, 20]),
    chunkRecords: prng.int(1, 6),
    ioDelayMs: [1, prng.int(2, 15)],
    hintReplayMs: 100,
    slots,
    kvKeys: ['kv/streams/s1', 'kv/tenants/t1', 'kv/domains/d1'],
    network: 'random',
    faults: {
      dropRate: prng.pick([0, 0.02, 0.1, 0.2]),
      duplicateRate: prng.pick([0, 0.03, 0.1]),
      delayMs: [1, prng.pick([5, 20, 60])],
    },
  };
  // From a draw already made, so every seed plays as before: sources that count late, in two seeds of three.
  config.uncountedChunks = config.chunkRecords % 3;
  return {
    config,
    operations,
    writes: prng.int(40, 160),
    crashes: prng.int(0, 4),
    partitions: prng.int(0, 3),
    tornCrashRate: prng.pick([0, 0.3, 0.6]),
    faultPhaseMs,
  };
}

export function simulate(seed: number, options: SimulateOptions = {}): SimulationResult {
  const prng = new Prng(seed);
  const scenario = buildScenario(prng.fork(), options.faultPhaseMs ?? 5_000);
  const cluster = new SimCluster(prng.fork(), scenario.config);
  cluster.verbose = options.verbose ?? false;
  const driver = new Driver(cluster, prng.fork(), scenario);
  const settleLimitMs = options.settleLimitMs ?? 60_000;
  try {
    driver.begin();
    cluster.runUntil(scenario.faultPhaseMs);
    driver.heal();
    let settledAt: number | undefined;
    for (let until = scenario.faultPhaseMs + 100; until <= scenario.faultPhaseMs + settleLimitMs; until += 100) {
      cluster.runUntil(until);
      if (driver.done() && cluster.isQuiescent()) {
        settledAt = until;
        break;
      }
    }
    if (settledAt === undefined) cluster.fail(`not settled ${settleLimitMs}ms after healing: ${driver.status()}`);
    else cluster.checkFinalState();
  } catch (error) {
    if (!(error instanceof SimFailure)) cluster.fail(`harness error: ${(error as Error).stack ?? error}`);
  }
  return {
    seed,
    ok: cluster.failures.length === 0,
    failures: [...cluster.failures],
    trace: cluster.trace,
    stats: { ...cluster.stats, simulatedMs: cluster.now, nodes: driver.startedCount(), changes: driver.changesAccepted },
    replay: replayCommand(seed),
  };
}

/** Plays the operator, the clients and the faults of one scenario. */
class Driver {
  changesAccepted = 0;
  private healed = false;
  private nextName = 1;
  private requestCounter = 0;
  private recordCounter = 0;
  /** The node that answered the last admin command (where the 409 probe goes). */
  private lastAdminTarget: string | undefined;
  private readonly operations: Array<'add' | 'remove'>;

  constructor(
    private readonly cluster: SimCluster,
    private readonly prng: Prng,
    private readonly scenario: Scenario,
  ) {
    this.operations = [...scenario.operations];
  }

  begin(): void {
    this.cluster.addNode(NAMES[0]!, true);
    this.cluster.start(NAMES[0]!);
    const phase = this.scenario.faultPhaseMs;
    for (let index = 0; index < this.scenario.writes; index += 1) this.cluster.schedule(this.prng.int(0, phase), () => this.write(3));
    for (let index = 0; index < this.scenario.crashes; index += 1) this.cluster.schedule(this.prng.int(0, phase), () => this.crashSomeone());
    for (let index = 0; index < this.scenario.partitions; index += 1) this.cluster.schedule(this.prng.int(0, phase), () => this.partition());
    this.cluster.schedule(this.prng.int(0, 200), () => this.nextOperation());
  }

  heal(): void {
    this.healed = true;
    this.cluster.faults = { dropRate: 0, duplicateRate: 0, delayMs: [1, 5] };
    this.cluster.cuts.clear();
    this.cluster.log('--- faults heal ---');
    for (const node of this.cluster.nodes.values()) {
      node.tornCrashAfter = undefined;
      if (node.everStarted && !node.alive) this.cluster.start(node.name);
    }
  }

  done(): boolean {
    return this.operations.length === 0;
  }

  startedCount(): number {
    return [...this.cluster.nodes.values()].filter((node) => node.everStarted).length;
  }

  status(): string {
    const nodes = [...this.cluster.nodes.values()].filter((node) => node.everStarted);
    const tables = nodes.map((node) => {
      const core = node.core;
      if (core === undefined) return `${node.name}: down`;
      const membership = core.membership();
      const members = membership.members.map((member) => `${member.name}:${member.state}`).join(' ');
      return `${node.name}: e${membership.epoch} [${members}] change=${membership.change?.id ?? '-'} incoming=${core.incomingTransfers().join(',') || '-'} hints=${node.hints.length}`;
    });
    return `operations left: ${this.operations.join(',') || 'none'}; ${tables.join(' | ')}`;
  }

  // The operator: one add or remove at a time, retried until the coordinator accepts it.

  private nextOperation(): void {
    const operation = this.operations[0];
    if (operation === undefined) return;
    const command = this.commandFor(operation);
    if (command === undefined) {
      this.operations.shift(); // nothing left to remove (or no name left to add)
      this.cluster.schedule(this.cluster.now + 1, () => this.nextOperation());
      return;
    }
    // A crash can cut the answer off after the change was made: like an operator, look at
    // GET /cluster before trying again.
    const accepted = this.sendAdmin(command) || this.alreadyMade(command);
    if (accepted) {
      this.operations.shift();
      this.changesAccepted += 1;
      // A second command while the change is in flight waits in the queue behind it
      // (docs/cluster.md, "Several changes"), or is refused with 409 when it could never start.
      this.queueBehind(this.lastAdminTarget!);
      this.cluster.schedule(this.cluster.now + this.prng.int(50, 1_500), () => this.nextOperation());
    } else {
      this.cluster.schedule(this.cluster.now + this.prng.int(50, 300), () => this.nextOperation());
    }
  }

  private queueBehind(target: string): void {
    const probe = this.operations[0] === undefined ? undefined : this.commandFor(this.operations[0]);
    const inFlight = this.cluster.node(target).core?.membership().change;
    if (probe === undefined || inFlight === undefined || !this.prng.chance(0.5)) return;
    if (probe.type === 'add' && !this.cluster.node(probe.member.name).everStarted) this.cluster.start(probe.member.name);
    const result = this.cluster.admin(target, `queued-${this.requestCounter++}`, probe);
    if (result === undefined || (!result.ok && result.status !== 409)) return this.cluster.fail(`a command behind ${inFlight.id} got ${JSON.stringify(result)} from ${target}`);
    if (!result.ok) return;
    const node = probe.type === 'add' ? probe.member.name : probe.name;
    if (!(result.membership.queue ?? []).some((entry) => (entry.command.type === 'add' ? entry.command.member.name : entry.command.name) === node)) {
      return this.cluster.fail(`${target} accepted a ${probe.type} of ${node} behind ${inFlight.id} but did not queue it`);
    }
    this.operations.shift();
    this.changesAccepted += 1;
    if (probe.type === 'add') this.nextName += 1;
  }

  private alreadyMade(command: AdminCommand): boolean {
    const view = this.authorityView();
    if (view === undefined || command.type !== 'add') return false;
    const made = view.members.some((member) => member.name === command.member.name);
    if (made) this.nextName += 1;
    return made;
  }

  private commandFor(operation: 'add' | 'remove'): AdminCommand | undefined {
    if (operation === 'add') {
      const name = NAMES[this.nextName];
      if (name === undefined) return undefined;
      const node = this.cluster.nodes.get(name) ?? this.cluster.addNode(name, false);
      return { type: 'add', member: { name, publicKey: node.member.publicKey, address: node.member.address, port: node.member.port, httpPort: node.member.httpPort, zone: node.member.zone } };
    }
    const view = this.authorityView();
    if (view === undefined) return { type: 'remove', name: NAMES[0]! }; // retried once a table is readable
    const joined = view.members.filter((member) => member.state === 'Joined').map((member) => member.name);
    if (joined.length < 2) return undefined;
    return { type: 'remove', name: this.prng.pick(joined) };
  }

  /** The newest table of a live node: what the operator reads from GET /cluster. */
  private authorityView(): Membership | undefined {
    const live = [...this.cluster.nodes.values()].filter((node) => node.alive && node.core!.membership().epoch > 0);
    if (live.length === 0) return undefined;
    return live.reduce((best, node) => (node.core!.membership().epoch > best.core!.membership().epoch ? node : best)).core!.membership();
  }

  /** POST/DELETE on a random live node, which forwards to the coordinator it sees (the shell's job). */
  private sendAdmin(command: AdminCommand): boolean {
    if (command.type === 'add' && !this.cluster.node(command.member.name).everStarted) this.cluster.start(command.member.name);
    const live = [...this.cluster.nodes.values()].filter((node) => node.alive && node.core!.membership().epoch > 0);
    if (live.length === 0) return false;
    const via = this.prng.pick(live);
    const core = via.core!;
    const target = coordinatorOf(core.membership(), (name) => core.available(name));
    if (target === undefined) return false;
    const targetNode = this.cluster.nodes.get(target);
    if (targetNode === undefined || !targetNode.alive || (target !== via.name && !(this.cluster.reachable(via.name, target) && this.cluster.reachable(target, via.name)))) return false;
    this.lastAdminTarget = target;
    const result = this.cluster.admin(target, `op-${this.requestCounter++}`, command);
    if (result?.ok && command.type === 'add') this.nextName += 1;
    return result?.ok === true;
  }

  // The clients.

  private write(attemptsLeft: number): void {
    const live = [...this.cluster.nodes.values()].filter((node) => node.alive && node.core!.membership().epoch > 0);
    if (live.length === 0 || attemptsLeft === 0) return;
    const via = this.prng.pick(live);
    const id = `r${this.prng.int(0, 0xffff).toString(16).padStart(4, '0')}-${this.recordCounter++}`;
    const repo: DataRepo = this.prng.chance(0.5) ? 'ssr' : 'tsr';
    const slot = this.prng.pick(this.scenario.config.slots);
    if (!this.cluster.clientWrite(via.name, { id, repo, slot })) {
      this.cluster.schedule(this.cluster.now + this.prng.int(20, 200), () => this.write(attemptsLeft - 1));
    }
  }

  // The faults.

  private crashSomeone(): void {
    if (this.healed) return;
    const live = [...this.cluster.nodes.values()].filter((node) => node.alive);
    if (live.length === 0) return;
    const victim = this.prng.pick(live);
    if (this.prng.chance(this.scenario.tornCrashRate)) victim.tornCrashAfter = this.prng.int(0, 4);
    else this.cluster.crash(victim.name);
    const downtime = this.prng.int(50, 1_500);
    this.cluster.schedule(this.cluster.now + downtime, () => {
      // A torn crash that found no step long enough becomes a plain one (but not after healing).
      if (victim.alive && !this.healed) this.cluster.crash(victim.name, 'planned torn crash came too late');
      victim.tornCrashAfter = undefined;
      this.cluster.start(victim.name);
    });
  }

  private partition(): void {
    if (this.healed) return;
    const names = [...this.cluster.nodes.values()].filter((node) => node.everStarted).map((node) => node.name);
    if (names.length < 2) return;
    const shuffled = this.prng.shuffle(names);
    const split = this.prng.int(1, shuffled.length - 1);
    const sideA = shuffled.slice(0, split);
    const sideB = shuffled.slice(split);
    const oneWay = this.prng.chance(0.3);
    const cut: string[] = [];
    for (const a of sideA) {
      for (const b of sideB) {
        cut.push(`${a}>${b}`);
        if (!oneWay) cut.push(`${b}>${a}`);
      }
    }
    for (const link of cut) this.cluster.cuts.add(link);
    this.cluster.log(`partition ${sideA.join('')} ${oneWay ? '→' : '|'} ${sideB.join('')}`);
    this.cluster.schedule(this.cluster.now + this.prng.int(100, 1_500), () => {
      for (const link of cut) this.cluster.cuts.delete(link);
      this.cluster.log(`partition ${sideA.join('')} ${oneWay ? '→' : '|'} ${sideB.join('')} heals`);
    });
  }
}
