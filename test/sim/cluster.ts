// The simulated cluster: N ClusterCores, each with durable fake storage, a fake clock and a
// fake network, driven by one event queue. It plays the shell's part exactly as node.ts must:
// effects run in order, `persist` snapshots persistedState() before later effects run,
// read-chunk/store-chunk complete later (or never, if the node crashes first), and a crash
// loses everything that was not persisted. It checks the cluster's invariants (docs/cluster.md,
// "The simulations") as it goes; simulate.ts builds random scenarios on it and script.ts
// scripted ones.

import { ClusterCore } from '../../src/cluster-core/core.js';
import { statePath, structuralKey } from '../../src/cluster-core/membership.js';
import { ownersOf, slotKey, uncoveredNeeds, writeOwners } from '../../src/cluster-core/placement.js';
import type {
  AdminCommand,
  AdminResult,
  CoreConfig,
  CoreEffect,
  CoreInput,
  DurableIncoming,
  Member,
  Membership,
  NodeState,
  PeerMessage,
  PersistedCoreState,
  Slot,
} from '../../src/protocol/cluster-types.js';
import { NODE_STATE_EDGES } from '../../src/protocol/cluster-types.js';
import { EventQueue } from './event-queue.js';
import type { Prng } from './prng.js';
import { FakeStorage, type DataRepo } from './storage.js';

/** A store-chunk stores its `progress` with every this many chunks (and the last): see SimNode.storedProgress. */
const PROGRESS_EVERY_CHUNKS = 3;

export interface NetworkFaults {
  dropRate: number;
  duplicateRate: number;
  delayMs: readonly [number, number];
}

export interface SimConfig {
  core: Omit<CoreConfig, 'name'>;
  tickMs: number;
  chunkRecords: number;
  /** A source's first chunks of each transfer say 0 records in total: it has not counted yet (transfer-chunks.ts). */
  uncountedChunks?: number;
  ioDelayMs: readonly [number, number];
  hintReplayMs: number;
  slots: Slot[];
  kvKeys: string[];
  /** 'random': messages travel through the faulty network; 'manual': they wait for deliver(). */
  network: 'random' | 'manual';
  faults: NetworkFaults;
}

export interface AckedRecord {
  id: string;
  repo: DataRepo;
  slot: Slot;
  /** The writer's membership epoch when the write was acknowledged. */
  epoch: number;
}

export interface PendingMessage {
  from: string;
  to: string;
  message: PeerMessage;
}

export class SimNode {
  core: ClusterCore | undefined;
  incarnation = 0;
  persisted: PersistedCoreState | undefined;
  readonly storage = new FakeStorage();
  /**
   * The `progress` of the store-chunks that stored it, durable with their records (the
   * shell's one synced write): the last chunk's and every PROGRESS_EVERY_CHUNKS-th, as the
   * node's shell stores one only every so many bytes; a restart resumes from an entry behind the records.
   */
  readonly storedProgress = new Map<string, DurableIncoming>();
  /** Durable hinted writes: records to write again to the current write owners. */
  hints: AckedRecord[] = [];
  everStarted = false;
  /** Crash in the middle of the next step with more effects than this (a torn step). */
  tornCrashAfter: number | undefined;
  /** Effects of this incarnation, for scripted tests. */
  effects: Array<{ at: number; effect: CoreEffect }> = [];
  announcing = false;

  constructor(
    readonly name: string,
    readonly member: Member,
    readonly lone: boolean,
  ) {}

  get alive(): boolean {
    return this.core !== undefined;
  }
}


export class SimFailure extends Error {}

export class SimCluster {
  now = 0;
  readonly nodes = new Map<string, SimNode>();
  readonly failures: string[] = [];
  readonly trace: string[] = [];
  readonly acked: AckedRecord[] = [];
  readonly adminResults = new Map<string, AdminResult>();
  /** Messages waiting for deliver() in manual mode. */
  readonly pending: PendingMessage[] = [];
  /** Directed links that are cut: `${from}>${to}`. */
  readonly cuts = new Set<string>();
  faults: NetworkFaults;
  verbose = false;
  /** A chunk read or store on this node fails (after the shell's retries): the core is told so. */
  ioFails: ((node: string, io: 'read' | 'store') => boolean) | undefined;
  readonly stats = {
    messages: 0,
    steps: 0,
    chunksStored: 0,
    writesAcked: 0,
    writesFailed: 0,
    writesRefusedStale: 0,
    hintsDelivered: 0,
    crashes: 0,
    tornCrashes: 0,
    /** Requests that resume a transfer after its first chunk (restart or stall). */
    resumedRequests: 0,
    alternativeTransfers: 0,
    drops: 0,
  };
  private readonly alternativesSeen = new Set<string>();
  private readonly queue = new EventQueue();
  private readonly history = new Map<number, { key: string; changeId: string | undefined }>();
  /** The newest table any node has adopted. */
  private latest: Membership | undefined;
  private readonly observed = new Map<string, Map<string, NodeState>>();
  private readonly ackedBySlot = new Map<string, AckedRecord[]>();
  private readonly hinted = new Map<string, number>();
  private readonly percentSeen = new Map<string, number>();
  private readonly ioQueue: Array<() => void> = [];

  constructor(
    readonly prng: Prng,
    readonly config: SimConfig,
  ) {
    this.faults = config.faults;
  }

  // -------------------------------------------------------------------------------------
  // Nodes.

  addNode(name: string, lone: boolean): SimNode {
    const member: Member = { name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state: lone ? 'Joined' : 'Pending' };
    const node = new SimNode(name, member, lone);
    if (lone) for (const key of this.config.kvKeys) node.storage.kv.add(key);
    this.nodes.set(name, node);
    return node;
  }

  node(name: string): SimNode {
    const node = this.nodes.get(name);
    if (node === undefined) throw new Error(`sim: no node ${name}`);
    return node;
  }

  /** Starts (or restarts) a node's core from what it last persisted. */
  start(name: string): void {
    const node = this.node(name);
    if (node.alive) return;
    node.incarnation += 1;
    node.everStarted = true;
    node.effects = [];
    node.announcing = true;
    node.core = new ClusterCore({ ...this.config.core, name }, node.persisted, { self: node.member, lone: node.lone, run: node.incarnation });
    this.log(`${name} starts (incarnation ${node.incarnation}${node.persisted === undefined ? ', fresh' : ''})`);
    this.stepNode(node, { type: 'resume', incoming: [...node.storedProgress.values()] });
    this.stepNode(node, { type: 'slots', slots: this.config.slots });
    node.announcing = false;
    if (this.config.network === 'random') {
      const incarnation = node.incarnation;
      const offset = this.prng.int(0, this.config.tickMs - 1);
      this.scheduleTicks(node, incarnation, this.now + offset);
      this.scheduleHintReplay(node, incarnation, this.now + this.config.hintReplayMs + offset);
    }
  }

  crash(name: string, why = 'crash'): void {
    const node = this.node(name);
    if (!node.alive) return;
    node.core = undefined;
    node.tornCrashAfter = undefined;
    this.stats.crashes += 1;
    this.log(`${name} crashes (${why})`);
  }

  private scheduleTicks(node: SimNode, incarnation: number, at: number): void {
    this.queue.push(at, () => {
      if (node.incarnation !== incarnation || !node.alive) return;
      this.stepNode(node, { type: 'tick', now: this.now });
      this.scheduleTicks(node, incarnation, this.now + this.config.tickMs);
    });
  }

  private scheduleHintReplay(node: SimNode, incarnation: number, at: number): void {
    this.queue.push(at, () => {
      if (node.incarnation !== incarnation || !node.alive) return;
      this.replayHints(node);
      this.reportHandOff(node);
      this.scheduleHintReplay(node, incarnation, this.now + this.config.hintReplayMs);
    });
  }

  // -------------------------------------------------------------------------------------
  // Time.

  schedule(at: number, run: () => void): void {
    this.queue.push(Math.max(at, this.now), run);
  }

  /** Runs events up to and including time `until`. */
  runUntil(until: number): void {
    for (;;) {
      const at = this.queue.peekTime();
      if (at === undefined || at > until) break;
      const event = this.queue.pop()!;
      this.now = event.at;
      event.run();
      if (this.failures.length > 0) throw new SimFailure(this.failures[0]);
    }
    this.now = Math.max(this.now, until);
  }

  // -------------------------------------------------------------------------------------
  // Stepping a core and carrying out its effects, as the shell does.

  stepNode(node: SimNode, input: CoreInput): void {
    const core = node.core;
    if (core === undefined) return;
    this.stats.steps += 1;
    let effects: CoreEffect[];
    try {
      effects = core.step(input);
    } catch (error) {
      this.fail(`${node.name} threw on ${input.type}${input.type === 'receive' ? ` ${input.message.type} from ${input.from}` : ''}: ${(error as Error).message}`);
      return;
    }
    if (this.verbose) this.log(`${node.name} ← ${describeInput(input)}${effects.length > 0 ? `  ⇒ ${effects.map(describeEffect).join('; ')}` : ''}`);
    this.runEffects(node, effects);
  }

  private runEffects(node: SimNode, effects: CoreEffect[]): void {
    const incarnation = node.incarnation;
    for (let index = 0; index < effects.length; index += 1) {
      if (node.incarnation !== incarnation || !node.alive) return;
      if (node.tornCrashAfter !== undefined && index >= node.tornCrashAfter) {
        this.stats.tornCrashes += 1;
        this.crash(node.name, `torn step after ${index} of ${effects.length} effects`);
        return;
      }
      const effect = effects[index]!;
      node.effects.push({ at: this.now, effect });
      this.runEffect(node, effect);
    }
  }

  private runEffect(node: SimNode, effect: CoreEffect): void {
    switch (effect.type) {
      case 'persist':
        node.persisted = node.core!.persistedState();
        return;
      case 'send':
        return this.send(node.name, effect.to, effect.message);
      case 'read-chunk':
        return this.io(node, () => {
          if (this.ioFails?.(node.name, 'read') === true) return this.stepNode(node, { type: 'chunk-read-failed', transferId: effect.transfer.id, seq: effect.seq });
          const read = node.storage.readChunk(effect.transfer, effect.cursor, this.config.chunkRecords);
          const counted = effect.seq > (this.config.uncountedChunks ?? 0);
          this.stepNode(node, { type: 'chunk-read', transferId: effect.transfer.id, seq: effect.seq, ...read, totalEstimate: counted ? read.totalEstimate : 0 });
        });
      case 'store-chunk':
        return this.io(node, () => {
          if (this.ioFails?.(node.name, 'store') === true) return this.stepNode(node, { type: 'chunk-store-failed', transferId: effect.transfer.id, seq: effect.seq });
          node.storage.storeChunk(effect.transfer, effect.chunk);
          if (effect.last || effect.seq % PROGRESS_EVERY_CHUNKS === 0) node.storedProgress.set(effect.progress.transferId, effect.progress);
          this.stats.chunksStored += 1;
          this.stepNode(node, { type: 'chunk-stored', transferId: effect.transfer.id, seq: effect.seq });
        });
      case 'drop':
        this.stats.drops += 1;
        this.checkDrop(node, effect.repo, effect.slots);
        node.storage.drop(effect.repo, effect.slots);
        return;
      case 'node-state':
        return this.checkNodeState(node, effect.node, effect.state);
      case 'membership-changed':
        return this.checkMembership(node, effect.membership);
      case 'admin-result':
        this.adminResults.set(effect.requestId, effect.result);
        this.log(`${node.name} admin ${effect.requestId} → ${effect.result.ok ? 'ok' : `${effect.result.status} ${effect.result.message}`}`);
        return;
      case 'availability':
        if (this.verbose) this.log(`${node.name} sees ${effect.node} ${effect.available ? 'available' : 'unavailable'}`);
        return;
      case 'queued-refused':
        this.log(`${node.name} drops queued ${effect.id}: ${effect.message}`);
        return;
    }
  }

  /** Storage I/O completes later; a crash before then loses it (the durable part is the store itself). */
  private io(node: SimNode, complete: () => void): void {
    const incarnation = node.incarnation;
    const run = (): void => {
      if (node.incarnation === incarnation && node.alive) complete();
    };
    if (this.config.network === 'manual') this.ioQueue.push(run);
    else this.schedule(this.now + this.prng.int(this.config.ioDelayMs[0], this.config.ioDelayMs[1]), run);
  }

  // -------------------------------------------------------------------------------------
  // Network.

  reachable(from: string, to: string): boolean {
    return !this.cuts.has(`${from}>${to}`);
  }

  send(from: string, to: string, message: PeerMessage): void {
    this.stats.messages += 1;
    if (message.type === 'transfer-request' && message.seq > 1) this.stats.resumedRequests += 1;
    // A message goes where the sender believes the recipient listens: a node that moved is
    // out of reach until the sender learns its new port.
    if (!this.addressed(from, to)) return;
    if (this.config.network === 'manual') {
      this.pending.push({ from, to, message });
      return;
    }
    if (!this.reachable(from, to) || this.prng.chance(this.faults.dropRate)) return this.chunkLost(from, to, message);
    const copies = this.prng.chance(this.faults.duplicateRate) ? 2 : 1;
    for (let copy = 0; copy < copies; copy += 1) {
      const delay = this.prng.int(this.faults.delayMs[0], this.faults.delayMs[1]);
      this.schedule(this.now + delay, () => this.deliver(from, to, message));
    }
  }

  private addressed(from: string, to: string): boolean {
    const recipient = this.nodes.get(to);
    const known = this.nodes.get(from)?.core?.membership().members.find((member) => member.name === to);
    return recipient === undefined || known === undefined || known.port === recipient.member.port;
  }

  deliver(from: string, to: string, message: PeerMessage): void {
    const node = this.nodes.get(to);
    if (node === undefined || !node.alive || !this.reachable(from, to)) return this.chunkLost(from, to, message);
    this.stepNode(node, { type: 'receive', from, message });
  }

  /**
   * Chunks travel on a stream (TCP, in order): one is lost only when its stream breaks, and
   * the sender's shell learns it (cluster-shell.ts, transfer-stream-closed).
   */
  chunkLost(from: string, to: string, message: PeerMessage): void {
    const sender = this.nodes.get(from);
    if (message.type !== 'transfer-chunk' || sender === undefined || !sender.alive) return;
    const closed = (): void => void (sender.alive && this.stepNode(sender, { type: 'transfer-stream-closed', node: to }));
    if (this.config.network === 'manual') this.ioQueue.push(closed);
    else this.schedule(this.now, closed);
  }

  /** Manual mode: delivers waiting messages that match, in the order they were sent. */
  deliverPending(match: (message: PendingMessage) => boolean): number {
    let delivered = 0;
    for (let index = 0; index < this.pending.length; ) {
      const waiting = this.pending[index]!;
      if (!match(waiting)) {
        index += 1;
        continue;
      }
      this.pending.splice(index, 1);
      this.deliver(waiting.from, waiting.to, waiting.message);
      delivered += 1;
    }
    return delivered;
  }

  /** Manual mode: completes storage I/O that is waiting; returns how many ran. */
  flushIo(): number {
    let ran = 0;
    while (this.ioQueue.length > 0) {
      this.ioQueue.shift()!();
      ran += 1;
    }
    return ran;
  }

  // -------------------------------------------------------------------------------------
  // Admin commands and client writes (the shell's and the clients' parts).

  admin(target: string, requestId: string, command: AdminCommand): AdminResult | undefined {
    const node = this.node(target);
    this.log(`admin ${requestId} ${command.type === 'add' ? `add ${command.member.name}` : `remove ${command.name}`} → ${target}`);
    this.stepNode(node, { type: 'admin', requestId, command });
    return this.adminResults.get(requestId);
  }

  /**
   * A client write of `record` to `via`, as the shell's write path must do it: to every
   * write owner of the writer's table, tagged with its epoch. An owner with a higher epoch
   * refuses (and sends the writer its table); an unreachable owner gets a durable hint on
   * the writer. Acknowledged when nobody refused, at least one owner stored it, and every
   * other owner stored it or is hinted.
   */
  clientWrite(via: string, record: Omit<AckedRecord, 'epoch'>): boolean {
    const writer = this.node(via);
    const outcome = this.writeToOwners(writer, record);
    if (outcome === 'refused' || outcome.stored === 0) {
      this.stats.writesFailed += 1;
      return false;
    }
    const acked: AckedRecord = { ...record, epoch: writer.core!.membership().epoch };
    if (this.verbose) this.log(`write ${record.repo} ${record.id} slot ${slotKey(record.slot)} via ${via} e${acked.epoch}: stored ${outcome.stored}, hinted ${outcome.unreachable}`);
    if (outcome.unreachable > 0) this.addHint(writer, acked);
    this.acked.push(acked);
    const key = `${record.repo}:${slotKey(record.slot)}`;
    this.ackedBySlot.set(key, [...(this.ackedBySlot.get(key) ?? []), acked]);
    this.stats.writesAcked += 1;
    return true;
  }

  private writeToOwners(writer: SimNode, record: Omit<AckedRecord, 'epoch'>): 'refused' | { stored: number; unreachable: number } {
    const membership = writer.core?.membership();
    if (membership === undefined || membership.epoch === 0) return 'refused';
    let stored = 0;
    let unreachable = 0;
    for (const owner of writeOwners(membership, record.slot)) {
      const target = this.nodes.get(owner);
      const reachable = owner === writer.name || (this.reachable(writer.name, owner) && this.reachable(owner, writer.name) && !this.prng.chance(this.faults.dropRate));
      if (target === undefined || !target.alive || !reachable) {
        unreachable += 1;
        continue;
      }
      const ownerMembership = target.core!.membership();
      if (ownerMembership.epoch > membership.epoch) {
        this.stats.writesRefusedStale += 1;
        this.send(owner, writer.name, { type: 'membership', membership: ownerMembership });
        return 'refused';
      }
      target.storage.store(record.repo, slotKey(record.slot), record.id);
      if (this.verbose) this.log(`  ${record.id} stored on ${owner} (e${ownerMembership.epoch})`);
      stored += 1;
    }
    return { stored, unreachable };
  }

  private addHint(node: SimNode, record: AckedRecord): void {
    node.hints.push(record);
    this.hinted.set(record.id, (this.hinted.get(record.id) ?? 0) + 1);
  }

  /** Hinted hand-off: write each hinted record again to the current write owners; keep it until all stored it. */
  replayHints(node: SimNode): void {
    if (node.hints.length === 0 || !node.alive) return;
    const kept: AckedRecord[] = [];
    for (const record of node.hints) {
      const outcome = this.writeToOwners(node, record);
      if (outcome !== 'refused' && outcome.unreachable === 0) {
        this.hinted.set(record.id, (this.hinted.get(record.id) ?? 1) - 1);
        this.stats.hintsDelivered += 1;
      }
      else kept.push(record);
    }
    node.hints = kept;
  }

  /**
   * The shell's part of a leave: once this leaving node holds no hints and every transfer
   * of its change is complete, it says it handed off.
   */
  reportHandOff(node: SimNode): void {
    const membership = node.core?.membership();
    const change = membership?.change;
    if (membership === undefined || change === undefined || change.node !== node.name || change.finalSynced === true) return;
    if ((change.kind === 'leave' && node.hints.length > 0) || uncoveredNeeds(membership).length > 0) return;
    if (membership.members.find((member) => member.name === node.name)?.state === 'Pending') return;
    this.stepNode(node, { type: 'final-sync-done', changeId: change.id });
  }

  // -------------------------------------------------------------------------------------
  // Invariants checked as the run goes.

  private checkMembership(node: SimNode, membership: Membership): void {
    const epoch = membership.epoch;
    if (this.latest === undefined || epoch > this.latest.epoch) this.latest = membership;
    const key = structuralKey(membership);
    const known = this.history.get(epoch);
    if (known === undefined) {
      const changeId = membership.change?.id;
      const before = this.history.get(epoch - 1);
      if (before?.changeId !== undefined && changeId !== undefined && changeId !== before.changeId) {
        this.fail(`change ${changeId} started at epoch ${epoch} while ${before.changeId} was in flight`);
      }
      this.history.set(epoch, { key, changeId });
      if (this.verbose || membership.change === undefined || before === undefined) this.log(`epoch ${epoch}: ${describeMembership(membership)}`);
    } else if (known.key !== key) {
      this.fail(`two different tables at epoch ${epoch}: ${known.key} vs ${key} (at ${node.name})`);
    }
    for (const transfer of membership.change?.transfers ?? []) {
      if (transfer.id.includes('~') && !this.alternativesSeen.has(transfer.id)) {
        this.alternativesSeen.add(transfer.id);
        this.stats.alternativeTransfers += 1;
      }
      const seenKey = `${node.name}#${node.incarnation}:${transfer.id}`;
      const seen = this.percentSeen.get(seenKey) ?? 0;
      if (transfer.percentComplete < seen) this.fail(`${node.name} saw ${transfer.id} fall from ${seen}% to ${transfer.percentComplete}%`);
      this.percentSeen.set(seenKey, transfer.percentComplete);
      if (transfer.percentComplete === 100 && !transfer.complete) this.fail(`${transfer.id} at 100% but not complete`);
    }
  }

  private checkNodeState(observerNode: SimNode, subject: string, state: NodeState): void {
    let seen = this.observed.get(observerNode.name);
    if (seen === undefined) this.observed.set(observerNode.name, (seen = new Map()));
    const before = seen.get(subject);
    seen.set(subject, state);
    if (before === undefined) return;
    if (observerNode.announcing) {
      // A restart announces the persisted states: equal, or ahead along the edges.
      if (before !== state) {
        try {
          statePath(before, state);
        } catch {
          this.fail(`${observerNode.name} restarted and saw ${subject} go back from ${before} to ${state}`);
        }
      }
      return;
    }
    if (!NODE_STATE_EDGES[before].includes(state)) this.fail(`${observerNode.name} saw ${subject} move ${before} → ${state}, not an edge`);
    if (this.verbose || state === 'Joined' || state === 'Left') this.log(`${observerNode.name} sees ${subject} ${state}`);
  }

  /**
   * A node drops a slot only once the new owners have confirmed its data durable: every
   * acknowledged record it holds must be on each current owner under the newest table in
   * the cluster (the dropping node's own may be older), unless a hint still carries it.
   */
  private checkDrop(node: SimNode, repo: DataRepo, slots: readonly Slot[]): void {
    const membership = this.latest ?? node.core!.membership();
    const own = node.core!.membership();
    for (const slot of slots) {
      const key = slotKey(slot);
      // Its own table must say it is done with the slot: a change moving it away is complete.
      if (writeOwners(own, slot).includes(node.name)) this.fail(`${node.name} dropped ${repo} ${key}, which its table e${own.epoch} still has it write`);
      const held = node.storage.data[repo].get(key);
      if (held === undefined) continue;
      const owners = ownersOf(membership, slot).filter((owner) => owner !== node.name);
      for (const record of this.ackedBySlot.get(`${repo}:${key}`) ?? []) {
        if (!held.has(record.id) || (this.hinted.get(record.id) ?? 0) > 0) continue;
        const missing = owners.filter((owner) => !this.node(owner).storage.has(repo, key, record.id));
        if (missing.length > 0) {
          const holders = [...this.nodes.values()].filter((other) => other.storage.has(repo, key, record.id)).map((other) => other.name);
          this.fail(`${node.name} dropped ${repo} ${key} while ${missing.join(',')} lacked acknowledged record ${record.id} (held by ${holders.join(',')})`);
        }
      }
    }
  }

  // -------------------------------------------------------------------------------------
  // End state.

  /** Healed and settled: everyone up, one table, no change, transfers and hints done. */
  isQuiescent(): boolean {
    const started = [...this.nodes.values()].filter((node) => node.everStarted);
    if (started.some((node) => !node.alive)) return false;
    const first = started[0]?.core?.membership();
    if (first === undefined || first.change !== undefined || (first.queue ?? []).length > 0) return false;
    const key = structuralKey(first);
    return started.every(
      (node) => structuralKey(node.core!.membership()) === key && node.core!.incomingTransfers().length === 0 && node.hints.length === 0,
    );
  }

  /**
   * The final checks on a quiescent cluster: no change in flight or queued, each slot's owners
   * distinct and Joined, every acknowledged record on them, no node holding what it does not own.
   */
  checkFinalState(): void {
    const started = [...this.nodes.values()].filter((node) => node.everStarted);
    const membership = started[0]!.core!.membership();
    const joined = membership.members.filter((member) => member.state === 'Joined').map((member) => member.name);
    if (membership.change !== undefined) this.fail(`change ${membership.change.id} still in flight`);
    if ((membership.queue ?? []).length > 0) this.fail(`changes still queued: ${membership.queue!.map((entry) => entry.id).join(',')}`);
    for (const slot of this.config.slots) {
      const owners = ownersOf(membership, slot);
      const wanted = Math.min(slot.replicas, joined.length);
      if (owners.length !== wanted || new Set(owners).size !== wanted || !owners.every((owner) => joined.includes(owner))) {
        this.fail(`slot ${slotKey(slot)} has owners ${owners.join(',')}, wanted ${wanted} distinct Joined`);
      }
    }
    for (const record of this.acked) {
      for (const owner of ownersOf(membership, record.slot)) {
        if (!this.node(owner).storage.has(record.repo, slotKey(record.slot), record.id)) {
          this.fail(`acknowledged ${record.repo} record ${record.id} (slot ${slotKey(record.slot)}, epoch ${record.epoch}) is not on owner ${owner}`);
        }
      }
    }
    for (const node of started) {
      const state = membership.members.find((member) => member.name === node.name)?.state;
      for (const repo of ['ssr', 'tsr'] as const) {
        for (const [key, records] of node.storage.data[repo]) {
          const slot = this.config.slots.find((candidate) => slotKey(candidate) === key)!;
          if (records.size > 0 && !ownersOf(membership, slot).includes(node.name)) this.fail(`${node.name} (${state}) still holds ${repo} ${key}, which it does not own`);
        }
      }
      if (state === 'Joined' && this.config.kvKeys.some((key) => !node.storage.kv.has(key))) this.fail(`${node.name} is Joined without every KV key`);
    }
  }

  fail(message: string): void {
    this.failures.push(`t=${this.now}ms: ${message}`);
    this.log(`FAILURE ${message}`);
  }

  log(line: string): void {
    this.trace.push(`${String(this.now).padStart(6)}ms ${line}`);
    if (this.trace.length > 4_000 && !this.verbose) this.trace.splice(0, 1_000);
  }
}

export function describeMembership(membership: Membership): string {
  const members = membership.members.map((member) => `${member.name}:${member.state}`).join(' ');
  const change = membership.change;
  const transfers = change?.transfers.map((transfer) => `${transfer.id.slice(change.id.length + 1)}${transfer.complete ? '✓' : `@${transfer.percentComplete}%`}`).join(' ');
  return `[${members}]${change === undefined ? '' : ` change ${change.id} {${transfers}}`}`;
}

function describeInput(input: CoreInput): string {
  switch (input.type) {
    case 'receive':
      return `${input.message.type} from ${input.from}${describeMessage(input.message)}`;
    case 'chunk-read':
    case 'chunk-stored':
      return `${input.type} ${input.transferId} #${input.seq}`;
    case 'admin':
      return `admin ${input.command.type}`;
    case 'tick':
      return `tick`;
    default:
      return input.type;
  }
}

function describeMessage(message: PeerMessage): string {
  switch (message.type) {
    case 'membership':
      return ` e${message.membership.epoch}`;
    case 'transfer-request':
      return ` ${message.transfer.id} #${message.seq}`;
    case 'transfer-chunk':
      return ` ${message.transferId} #${message.seq}${message.last ? ' last' : ''}`;
    case 'transfer-ack':
      return ` ${message.transferId} #${message.seq}`;
    case 'transfer-progress':
      return ` ${message.transferId} ${message.percentComplete}%${message.complete ? ' complete' : ''}`;
    default:
      return '';
  }
}

function describeEffect(effect: CoreEffect): string {
  switch (effect.type) {
    case 'send':
      return `send ${effect.message.type}→${effect.to}${describeMessage(effect.message)}`;
    case 'read-chunk':
    case 'store-chunk':
      return `${effect.type} ${effect.transfer.id} #${effect.seq}`;
    case 'drop':
      return `drop ${effect.repo} ${effect.slots.map(slotKey).join(',')}`;
    case 'node-state':
      return `${effect.node} ${effect.state}`;
    case 'membership-changed':
      return `table e${effect.membership.epoch}`;
    default:
      return effect.type;
  }
}
