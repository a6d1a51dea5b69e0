// The cluster core of one node (docs/cluster.md, "A pure core"): membership, failure detection,
// change planning and both ends of data transfers as one deterministic state machine.
// `step(input)` returns effects; the shell carries them out in order. There is no clock,
// randomness or I/O in here: time arrives in `tick` inputs, ids derive from epochs and names,
// and the same code runs in test/sim and in the real node.
//
// Who decides what (membership.ts explains why this keeps the history linear):
// - add/remove, and planning their transfers: only the admin authority, the lowest-named
//   Joined member (placement.ts);
// - Pending→Joining: any Joined node that receives the joining node's `ready`;
// - completion (Joined/Left): any Joined node that sees every need covered;
// - alternatives for a transfer whose source is gone: the coordinator (coordinatorOf).
// The last three are deterministic or merge as a union, so a dead coordinator never
// strands a change: whoever is next carries on from the replicated table.
//
// The shell's contract (test/sim/cluster.ts plays the shell exactly this way):
// 1. Step inputs one at a time and run each step's effects in the order given, before the
//    effects of any later step. `persist` writes persistedState() as it is when the effect
//    runs and is synced before any later effect runs: a table is durable before it is
//    sent, answered to an admin command, or acted on by a `drop`.
// 2. Answer every read-chunk with exactly one chunk-read and every store-chunk with exactly
//    one chunk-stored (retry I/O errors inside the shell; crash if they persist). The core
//    keeps one read and one store in flight per transfer, so answers cannot overtake. A
//    store-chunk's records are durable (one synced write) before its chunk-stored: that is
//    what makes a chunk's records durable before its ack goes out. Its `progress` entry is
//    in the same write when the chunk is the `last` and whenever else the shell chooses
//    (with the records, or after them for KV: never ahead of them): a restart resumes
//    from the last one stored. `send` is fire-and-forget; a failed connection may be reported as
//    `unreachable`.
// 2a. On every start, step `resume` first, with every `progress` entry stored since the
//    last time this node's transfers ended (stale entries are harmless: a transfer that
//    is no longer wanted is forgotten).
// 3. Feed `tick` with a monotonic clock (performance.now()-like), every 10–100 ms.
// 4. Feed `slots` at start, before any admin command is forwarded, and whenever a persisted
//    stream brings a new (partition, replicas) pair.
// 5. Treat every Membership the core hands out as read-only (the core memoises by identity).
// 6. The write path (not in the core): send a write to every writeOwners() of the local
//    table, tagged with its epoch; an owner whose table has a higher epoch refuses it and
//    answers with its table (feed it to the core as a `membership` receive), and the writer
//    retries. A hint is replayed by writing the record again to the *current* writeOwners
//    with the current epoch, and kept until all of them stored it. The simulation shows
//    acknowledged writes are lost without the epoch check.

import { assert } from '../lib/assert.js';
import {
  adminAuthorityOf,
  assertSlot,
  compareSlots,
  coordinatorOf,
  NODE_NAME_FORBIDDEN,
  normaliseSlots,
  ownersOf,
  planAlternatives,
  planChange,
  uncoveredNeeds,
  writeOwners,
} from './placement.js';
import {
  assertMembership,
  assertSuccessor,
  commandNode,
  queuedCommands,
  queueRefusal,
  withDroppedQueueEntry,
  withMergedQueue,
  withQueuedCommand,
  incarnationOf,
  isReadyToComplete,
  knowsNewerAddresses,
  memberNamed,
  statePath,
  structuralKey,
  tableNews,
  withAddedMember,
  withCompletedChange,
  withJoiningMember,
  withLeavingMember,
  withFinalSynced,
  withAnnouncedAddress,
  withMemberAddresses,
  withMergedTransfers,
  withReaddressedMember,
} from './membership.js';
import { SourceTransfers, TargetTransfers, type TransferContext } from './transfers.js';
import type {
  AdminCommand,
  AnnouncedAddress,
  AdminResult,
  CoreConfig,
  CoreEffect,
  CoreInput,
  Member,
  Membership,
  NodeState,
  PeerMessage,
  PersistedCoreState,
  Slot,
  TransferPlan,
  UnreachablePeer,
} from '../protocol/cluster-types.js';

type ProgressReport = Extract<PeerMessage, { type: 'transfer-progress' }>;
type RequestMessage = Extract<PeerMessage, { type: 'transfer-request' }>;
type AdminRefusal = Omit<Extract<AdminResult, { ok: false }>, 'ok'>;

/** A transfer source unheard for this many failure timeouts is replaced. */
const SOURCE_REPLACE_AFTER_FAILURE_TIMEOUTS = 3;
/** While an owner refills damaged data, a lost leaver's hand-off is waived only after this many. */
const WAIVE_DESPITE_DAMAGE_AFTER_FAILURE_TIMEOUTS = 20;

export interface CoreBootstrap {
  self: Member;
  /** True for a first start without `--join`: the node makes a cluster of one. */
  lone: boolean;
  /**
   * This process's run: a number new at each start (0: none). Its heartbeats carry it, so
   * peers learn of a restart even when it was quicker than their failure timeout.
   */
  run?: number;
}

/** Runs travel as a proto uint32. */
export const RUN_MAX = 0xffff_ffff;

/** Transfer requests kept for a change not adopted yet: one per transfer of a change is far less. */
const EARLY_REQUESTS_MAX = 4_096;

/** The epoch a change started at, from its id (`e<epoch>-join-<node>`, membership.ts). */
function changeEpochOf(transferId: string): number {
  const match = /^e(\d+)-/.exec(transferId);
  return match === null ? 0 : Number(match[1]);
}

/** A tick this much later than the previous one means this process was paused or starved. */
const PAUSE_FRACTION_OF_FAILURE_TIMEOUT = 0.5;

export class ClusterCore {
  private readonly name: string;
  private current: Membership;
  /** False only for a `--join` node that has not yet received a membership with itself in it. */
  private bootstrapped: boolean;
  private readonly createdLone: boolean;
  private readonly restarted: boolean;
  private started = false;
  private slotsInUse: Slot[] = [];
  /** The shell has said which slots are in use: a change planned before that would move nothing. */
  private slotsKnown = false;
  private catchUpDropsDone = false;
  private now = 0;
  private clockStart: number | undefined;
  private nextHeartbeatAt = 0;
  /** Something other nodes have not heard yet (progress): the next heartbeat carries the table. */
  private progressDirty = false;
  /** Transfer requests for a change newer than this node's table, by transfer id (onTransferRequest). */
  private readonly earlyRequests = new Map<string, { from: string; message: RequestMessage }>();
  /** When this node last asked a peer for its table (once per heartbeat interval at most). */
  private lastPullAt = Number.NEGATIVE_INFINITY;
  private readonly lastHeard = new Map<string, number>();
  /** What each peer's last heartbeat said it cannot reach, and when that heartbeat came. */
  private readonly peerViews = new Map<string, { at: number; unreachable: readonly UnreachablePeer[] }>();
  private readonly reportedAvailable = new Map<string, boolean>();
  private readonly peerEpochs = new Map<string, number>();
  /** This node's data awaits a refill (input 'damage'); its tables and heartbeats say so. */
  private damaged = false;
  /** Peers whose last table or heartbeat said their data awaits a refill. */
  private readonly damagedPeers = new Set<string>();
  /** Each peer's run as its last heartbeat said (CoreBootstrap.run). */
  private readonly peerRuns = new Map<string, number>();
  private readonly localProgress: ProgressReport[] = [];
  private readonly target: TargetTransfers;
  private readonly source: SourceTransfers;
  /** This start announced a new address for this node: its table goes to every peer at start. */
  private readdressed = false;
  /** Peers not heard from since the new address was announced: each heartbeat carries the table to them. */
  private readonly addressNotSeenBy = new Set<string>();
  /**
   * This node's table is known current since this start: a peer showed it (a node removed
   * while it was down must learn it is Left before it acknowledges anything), or this node
   * was alone in it, so that no other could have changed it (adopt).
   */
  private confirmedSinceStart = false;
  /** The leaving node's shell said it handed off (change id); repeated until the table shows it. */
  private finalSynced: string | undefined;

  constructor(
    private readonly config: CoreConfig,
    initial: PersistedCoreState | undefined,
    private readonly bootstrap: CoreBootstrap,
  ) {
    assertConfig(config);
    this.name = config.name;
    assert(bootstrap.self.name === config.name, `bootstrap member ${bootstrap.self.name} is not ${config.name}`);
    assert(bootstrap.run === undefined || (Number.isInteger(bootstrap.run) && bootstrap.run >= 0 && bootstrap.run <= RUN_MAX), `run ${bootstrap.run} is no uint32`);
    this.restarted = initial !== undefined;
    if (initial !== undefined && initial.membership.epoch > 0) {
      this.current = initial.membership;
      this.bootstrapped = true;
      assertMembership(this.current);
      const persistedSelf = memberNamed(this.current, this.name);
      assert(persistedSelf !== undefined, `persisted membership lacks ${this.name}`);
      this.announceAddressIfMoved(persistedSelf, bootstrap.self);
    } else if (bootstrap.lone) {
      this.current = { epoch: 1, members: [{ ...bootstrap.self, state: 'Joined' }], change: undefined };
      this.bootstrapped = true;
    } else {
      this.current = { epoch: 0, members: [{ ...bootstrap.self, state: 'Pending' }], change: undefined };
      this.bootstrapped = false;
    }
    this.createdLone = this.bootstrapped && (initial === undefined || initial.membership.epoch === 0);
    this.target = new TargetTransfers(this.name, this.bootstrapped ? (initial?.incoming ?? []) : []);
    this.source = new SourceTransfers(this.name);
    // A node's own entry is in its table from the start and never leaves it (members never vanish).
    assert(memberNamed(this.current, this.name) !== undefined, `${this.name} is not in its own table`);
    assert(this.bootstrapped === this.current.epoch > 0, `bootstrapped ${this.bootstrapped} at epoch ${this.current.epoch}`);
  }

  /** A restart on another address or port: the node's own entry takes it, at a higher incarnation. */
  private announceAddressIfMoved(persisted: Member, self: Member): void {
    assert(persisted.name === self.name, `${self.name} restarted as ${persisted.name}`);
    if (persisted.address === self.address && persisted.port === self.port && persisted.httpPort === self.httpPort) return;
    this.current = withReaddressedMember(this.current, this.name, { address: self.address, port: self.port, httpPort: self.httpPort });
    this.readdressed = true;
    assert(incarnationOf(this.selfMember()) > incarnationOf(persisted), `${this.name} moved without a higher incarnation`);
    for (const member of this.current.members) if (member.name !== this.name && member.state !== 'Left') this.addressNotSeenBy.add(member.name);
  }

  step(input: CoreInput): CoreEffect[] {
    const effects: CoreEffect[] = [];
    const epochBefore = this.current.epoch;
    if (input.type === 'resume') {
      assert(!this.started, 'resume after the first step');
      // A node that has no table yet can have no transfer to resume (its table is durable before any request).
      if (this.bootstrapped) this.target.resume(input.incoming);
    }
    if (input.type === 'tick') this.advanceClock(input.now);
    if (!this.started) this.start(effects);
    switch (input.type) {
      case 'tick':
        this.onTick(effects);
        break;
      case 'admin':
        this.onAdmin(input.requestId, input.command, effects);
        break;
      case 'receive':
        this.onReceive(input.from, input.message, effects);
        break;
      case 'chunk-read':
        if (this.bootstrapped) this.source.onChunkRead(input, this.context(), effects);
        break;
      case 'chunk-stored':
        if (this.bootstrapped) this.target.onChunkStored(input.transferId, input.seq, this.context(), effects);
        break;
      case 'chunk-read-failed':
        if (this.bootstrapped) this.source.onReadFailed(input.transferId, input.seq);
        break;
      case 'transfer-stream-closed':
        this.source.onStreamClosed(input.node);
        break;
      case 'chunk-store-failed':
        if (this.bootstrapped) this.target.onStoreFailed(input.transferId, input.seq, this.context());
        break;
      case 'final-sync-done':
        this.onFinalSyncDone(input.changeId, effects);
        break;
      case 'unreachable':
        this.onUnreachable(input.node, effects);
        break;
      case 'slots':
        this.onSlots(input.slots, effects);
        break;
      case 'damage':
        this.damaged = input.damaged;
        break;
      case 'resume':
        break;
    }
    this.afterStep(effects);
    // Epochs only rise, and the core never addresses itself.
    assert(this.current.epoch >= epochBefore, `epoch went back from ${epochBefore} to ${this.current.epoch} on ${input.type}`);
    assert(effects.every((effect) => effect.type !== 'send' || effect.to !== this.name), `${input.type} sent to self`);
    return effects;
  }

  persistedState(): PersistedCoreState {
    assert(this.bootstrapped === this.current.epoch > 0, `persisting epoch ${this.current.epoch} (bootstrapped ${this.bootstrapped})`);
    const state = { membership: this.current, incoming: this.target.durableState() };
    assert(this.bootstrapped || state.incoming.length === 0, 'transfer progress before this node has a table');
    return state;
  }

  membership(): Membership {
    assert(this.bootstrapped === this.current.epoch > 0, `table of epoch ${this.current.epoch} (bootstrapped ${this.bootstrapped})`);
    assert(memberNamed(this.current, this.name) !== undefined, `${this.name} left its own table`);
    return this.current;
  }

  /** True for self, and for a peer heard from within failureTimeoutMs (everyone, before the first tick). */
  available(name: string): boolean {
    assert(name.length > 0, 'availability of an empty name');
    if (name === this.name) return true;
    if (this.clockStart === undefined) return true;
    assert(this.now >= this.clockStart, `clock at ${this.now} before its start ${this.clockStart}`);
    return this.now - this.heardAt(name) < this.config.failureTimeoutMs;
  }

  /**
   * Whether this node may act for clients: it is a cluster of one, or a peer has shown it
   * since this start that its table is not behind (a heartbeat or table at its epoch or
   * later). A node removed while it was down learns it is Left before this turns true.
   */
  confirmed(): boolean {
    if (!this.bootstrapped) return false;
    assert(this.current.epoch > 0, `bootstrapped at epoch ${this.current.epoch}`);
    assert(this.started || !this.confirmedSinceStart, 'confirmed before the first step');
    if (this.confirmedSinceStart) return true;
    return this.current.members.every((member) => member.name === this.name || member.state === 'Left');
  }

  /** Ids of the transfers this node is receiving (for status pages and tests). */
  incomingTransfers(): string[] {
    const ids = this.target.activeIds();
    assert(this.bootstrapped || ids.length === 0, 'receiving transfers without a table');
    assert(ids.every((id) => this.current.change !== undefined && id.startsWith(`${this.current.change.id}/`)), `receiving transfers outside the change in flight: ${ids.join(',')}`);
    return ids;
  }

  // -------------------------------------------------------------------------------------
  // Lifecycle and clock.

  /** `now` should come from a monotonic clock; a step back (a wall clock set back) is held, not trusted. */
  private advanceClock(now: number): void {
    assert(Number.isFinite(now), `tick at ${now}`);
    if (this.clockStart === undefined) {
      this.now = now;
      this.clockStart = now;
      this.nextHeartbeatAt = now;
      return;
    }
    const gap = now - this.now;
    this.now = Math.max(this.now, now);
    if (gap > PAUSE_FRACTION_OF_FAILURE_TIMEOUT * this.config.failureTimeoutMs) this.forgiveSilenceOf(gap);
    // The core's clock never goes back, whatever the shell feeds it.
    assert(this.now >= now && this.now >= this.clockStart, `clock at ${this.now} after a tick at ${now}`);
  }

  /**
   * This process did not run for `gap` ms (SIGSTOP, a long GC, a starved machine): peers
   * were silent to it, not necessarily silent. Their clocks move on by the gap, so a node
   * resuming from a pause does not take everyone for dead and answer 500 from that stale
   * view; heartbeats go out at once.
   */
  private forgiveSilenceOf(gap: number): void {
    assert(gap > 0, `forgiving a gap of ${gap} ms`);
    for (const [name, heardAt] of this.lastHeard) {
      this.lastHeard.set(name, Math.min(this.now, heardAt + gap));
    }
    this.nextHeartbeatAt = this.now;
    assert([...this.lastHeard.values()].every((heardAt) => heardAt <= this.now), 'a peer heard from in the future');
  }

  /** The first step announces what the node starts from and resumes its transfers. */
  private start(effects: CoreEffect[]): void {
    assert(!this.started, 'started twice');
    assert(effects.length === 0, 'effects before the start');
    this.started = true;
    if (!this.bootstrapped) return;
    if (this.createdLone || this.readdressed) effects.push({ type: 'persist' });
    effects.push({ type: 'membership-changed', membership: this.current });
    for (const member of this.current.members) effects.push({ type: 'node-state', node: member.name, state: member.state });
    this.target.pursue(this.context(), effects);
    this.sendReadyIfPending(effects);
    // Peers reach this node at its new address only once they have the entry that says so.
    if (this.readdressed) this.broadcast(effects);
  }

  private afterStep(effects: CoreEffect[]): void {
    assert(this.started, 'a step before the start');
    while (this.localProgress.length > 0) this.onProgress(this.name, this.localProgress.shift()!, effects);
    assert(this.localProgress.length === 0, 'local progress left over after a step');
    if (this.bootstrapped && this.selfState() === 'Joined' && isReadyToComplete(this.current)) {
      // Any Joined node completes a change it sees done (the same table, wherever it is
      // made), but only the coordinator sends it to everyone: the others learn the new
      // epoch from heartbeats and ask for it, instead of every member sending it to every
      // member when the last news reaches them all at once.
      const coordinator = coordinatorOf(this.current, (name) => this.available(name));
      this.adopt(withCompletedChange(this.current), effects, coordinator === this.name);
    }
    assert(!this.bootstrapped || this.current.members.some((member) => member.state === 'Joined'), 'no Joined member');
  }

  private onTick(effects: CoreEffect[]): void {
    if (!this.bootstrapped) return;
    assert(this.clockStart !== undefined, 'a tick before the clock started');
    this.updateAvailability(effects);
    if (this.now >= this.nextHeartbeatAt) {
      this.nextHeartbeatAt = this.now + this.config.heartbeatIntervalMs;
      // A Left node serves nothing, but keeps heartbeating so that peers answer a stale
      // epoch with the current table: GET /cluster answers the same on every node.
      this.sendHeartbeats(effects);
      this.sendReadyIfPending(effects);
    }
    assert(this.nextHeartbeatAt > this.now, `next heartbeat at ${this.nextHeartbeatAt}, now ${this.now}`);
    if (this.selfState() === 'Left') return;
    // On a tick, never in the step that completed the change before it: the drops that
    // completion ordered run first, so no slot this node gains again is dropped after.
    this.startQueuedCommand(effects);
    this.target.onTick(this.context(), effects);
    if (coordinatorOf(this.current, (name) => this.available(name)) === this.name) this.replaceLostSources(effects);
  }

  private onSlots(slots: readonly Slot[], effects: CoreEffect[]): void {
    this.slotsInUse = normaliseSlots(slots);
    this.slotsKnown = true;
    assert(this.slotsInUse.length <= slots.length, 'normalising slots added some');
    // A crash between persisting a table and carrying out its drops leaves data behind:
    // after a restart, drop what this node's table says it does not own (idempotent).
    if (!this.restarted || !this.bootstrapped || this.catchUpDropsDone) return;
    this.catchUpDropsDone = true;
    const notOwned = this.slotsInUse.filter((slot) => !writeOwners(this.current, slot).includes(this.name));
    assert(this.current.epoch > 0, 'dropping data without a table');
    pushDrops(notOwned, effects);
  }

  // -------------------------------------------------------------------------------------
  // Failure detection and gossip.

  private heardAt(name: string): number {
    assert(name !== this.name, 'when this node heard from itself');
    const heardAt = this.lastHeard.get(name) ?? this.clockStart ?? this.now;
    assert(heardAt <= this.now, `${name} heard at ${heardAt}, after now ${this.now}`);
    return heardAt;
  }

  private heard(from: string, effects: CoreEffect[]): void {
    assert(from !== this.name, 'heard from itself');
    this.lastHeard.set(from, this.now);
    // It reached this node, so it has this node's address.
    this.addressNotSeenBy.delete(from);
    if (this.reportedAvailable.get(from) === false) {
      this.reportedAvailable.set(from, true);
      effects.push({ type: 'availability', node: from, available: true });
      // Back from a partition or a pause: transfers from it that hear nothing more within a
      // heartbeat interval are asked for again then, not at their next stall
      // (docs/cluster.md, "Transfers").
      if (this.bootstrapped && this.started && this.selfState() !== 'Left') this.target.onSourceBack(from, this.context());
    }
    assert(this.available(from), `${from} just heard but unavailable`);
  }

  /**
   * A send failed or a write timed out: the node is taken for unavailable now, as if last
   * heard a failure timeout ago, not for long gone: replacing its transfers or waiving its
   * hand-off waits for real silence (SOURCE_REPLACE_AFTER_FAILURE_TIMEOUTS), never follows
   * one lost message.
   */
  private onUnreachable(node: string, effects: CoreEffect[]): void {
    if (node === this.name) return;
    assert(node.length > 0, 'an unreachable node without a name');
    this.lastHeard.set(node, Math.min(this.heardAt(node), this.now - this.config.failureTimeoutMs));
    assert(this.clockStart === undefined || !this.available(node), `${node} unreachable but available`);
    this.updateAvailability(effects);
  }

  private updateAvailability(effects: CoreEffect[]): void {
    const reportsBefore = effects.length;
    for (const member of this.current.members) {
      if (member.name === this.name || member.state === 'Left') continue;
      const available = this.available(member.name);
      if ((this.reportedAvailable.get(member.name) ?? true) === available) continue;
      this.reportedAvailable.set(member.name, available);
      effects.push({ type: 'availability', node: member.name, available });
    }
    assert(effects.length - reportsBefore < this.current.members.length, 'availability reported for this node itself');
  }

  /**
   * A heartbeat to every other member: its epoch and how much its table knows (tableNews).
   * The table itself, as large as the cluster, goes to few: to the coordinator when this
   * node learnt something since the last heartbeat (a transfer's progress), to a peer that
   * has not seen this node's new address yet, and to one behind that cannot ask
   * (cannotAsk). Every other peer asks for it when a heartbeat shows it knows less
   * (onHeartbeat). Each node's traffic grows with the number of members, not with its
   * square (docs/cluster.md, "What a node sends").
   */
  private sendHeartbeats(effects: CoreEffect[]): void {
    assert(this.bootstrapped, 'heartbeats before this node has a table');
    const epoch = this.current.epoch;
    const coordinator = this.progressDirty ? coordinatorOf(this.current, (name) => this.available(name)) : undefined;
    const heartbeat: PeerMessage = { type: 'heartbeat', epoch, at: this.ownAddress(), ...this.damageMark(), ...this.newsMark(), ...this.unreachableMark(), ...this.runMark() };
    for (const member of this.current.members) {
      if (member.name === this.name || member.state === 'Left') continue;
      if (member.name === coordinator || this.addressNotSeenBy.has(member.name) || this.cannotAsk(member.name)) this.sendMembership(member.name, effects);
      else this.send(member.name, heartbeat, effects);
    }
    this.progressDirty = false;
    assert(coordinator !== this.name || !effects.some((effect) => effect.type === 'send' && effect.to === this.name), 'a table to self');
    this.repeatFinalSynced(effects);
  }

  /**
   * A peer behind our epoch that is silent: it may have no table to heartbeat with (a
   * Pending node that missed the table naming it, a restart that lost its table), so it
   * cannot ask for ours. A peer that heartbeats asks by itself (onHeartbeat).
   */
  private cannotAsk(name: string): boolean {
    const behind = (this.peerEpochs.get(name) ?? 0) < this.current.epoch;
    return behind && !this.available(name);
  }

  /** The members this node has not heard from for a failure timeout: nothing when it hears everyone. */
  private unreachableMark(): { unreachable?: UnreachablePeer[] } {
    const unreachable: UnreachablePeer[] = [];
    for (const member of this.current.members) {
      if (member.name === this.name || member.state === 'Left' || this.available(member.name)) continue;
      unreachable.push({ node: member.name, forMs: this.now - this.heardAt(member.name) });
    }
    assert(unreachable.every((peer) => peer.forMs >= this.config.failureTimeoutMs), 'an available member reported unreachable');
    return unreachable.length > 0 ? { unreachable } : {};
  }

  /**
   * For how long `observer` has not heard from `node` (ms), as this node knows it: its own
   * failure detector, or the observer's last heartbeat while that is recent; undefined when
   * the observer hears it (or nothing recent is known).
   */
  unreachableFor(observer: string, node: string): number | undefined {
    if (observer === node || this.clockStart === undefined) return undefined;
    if (observer === this.name) return this.available(node) ? undefined : this.now - this.heardAt(node);
    const view = this.peerViews.get(observer);
    if (view === undefined || this.now - view.at >= this.config.failureTimeoutMs) return undefined;
    const forMs = view.unreachable.find((peer) => peer.node === node)?.forMs;
    return forMs === undefined ? undefined : forMs + (this.now - view.at);
  }

  /** What heartbeats carry of this table's change and queue: nothing when there is none. */
  private newsMark(): { news?: number; newsDigest?: number } {
    const news = tableNews(this.current);
    return news.count > 0 ? { news: news.count, newsDigest: news.digest } : {};
  }

  /**
   * A peer's heartbeat. A peer at a newer epoch, or at ours with a table that knows more
   * or knows other things (tableNews), is asked for its table (this node sends its own; the peer answers with the newer or
   * richer one), once per heartbeat interval: a node behind gets one table, not one from
   * every member. A peer behind us asks the same way when it hears our heartbeat.
   */
  private onHeartbeat(from: string, message: Extract<PeerMessage, { type: 'heartbeat' }>, effects: CoreEffect[]): void {
    this.notePeerEpoch(from, message.epoch);
    this.notePeerRun(from, message.run, effects);
    this.peerViews.set(from, { at: this.now, unreachable: message.unreachable ?? [] });
    if (message.at !== undefined) this.takeAnnouncedAddress(from, message.at, effects);
    if (message.epoch >= this.current.epoch) this.confirmedSinceStart = true;
    // A Left node needs no change's news, only newer epochs (peers send those: onReceive).
    if (this.selfState() === 'Left') return;
    const mine = tableNews(this.current);
    const theirs = { count: message.news ?? 0, digest: message.newsDigest ?? 0 };
    const sameEpoch = message.epoch === this.current.epoch;
    const knowsMore = message.epoch > this.current.epoch || (sameEpoch && (theirs.count > mine.count || (theirs.count === mine.count && mine.count > 0 && theirs.digest !== mine.digest)));
    if (!knowsMore || this.now - this.lastPullAt < this.config.heartbeatIntervalMs) return;
    this.lastPullAt = this.now;
    this.sendMembership(from, effects);
  }

  private notePeerRun(from: string, run: number | undefined, effects: CoreEffect[]): void {
    if (run === undefined || run === 0) return;
    const known = this.peerRuns.get(from);
    this.peerRuns.set(from, run);
    if (known !== undefined && known !== run) effects.push({ type: 'restarted', node: from });
  }

  private sendReadyIfPending(effects: CoreEffect[]): void {
    const change = this.current.change;
    if (!this.bootstrapped || this.selfState() !== 'Pending' || change?.kind !== 'join' || change.node !== this.name) return;
    const coordinator = coordinatorOf(this.current, (name) => this.available(name));
    // The coordinator is Joined, so a Pending node is never its own.
    assert(coordinator !== this.name, `${this.name} is Pending and its own coordinator`);
    if (coordinator !== undefined) this.send(coordinator, { type: 'ready', changeId: change.id }, effects);
  }

  // -------------------------------------------------------------------------------------
  // Messages.

  private onReceive(from: string, message: PeerMessage, effects: CoreEffect[]): void {
    assert(from.length > 0 && from !== this.name, `a ${message.type} from '${from}'`);
    if (!this.bootstrapped) {
      if (message.type === 'membership') this.onFirstMembership(from, message.membership, effects);
      return;
    }
    // The shell only delivers authenticated peers; a sender missing from our table can
    // still push a newer table that adds it (a joining node), and nothing else.
    const sender = memberNamed(this.current, from);
    if (sender === undefined) {
      if (message.type === 'membership' && memberNamed(message.membership, from) !== undefined) this.onMembership(from, message.membership, effects);
      return;
    }
    // A Left node serves nothing and is heard from no more; if it speaks, it does not know
    // it has left (it was removed while it was down): it is told, and nothing else happens.
    if (sender.state === 'Left' && this.selfState() !== 'Left') {
      // It may speak from a new address (it moved while it was down): take that first, or
      // the table that tells it would go to where it no longer listens.
      if (message.type === 'membership') {
        const readdressed = withMemberAddresses(this.current, message.membership);
        if (readdressed !== this.current) this.adopt(readdressed, effects, false);
      }
      // Once it holds our epoch it knows it is Left: its heartbeats are answered with one of
      // ours (it still hands hints over and needs to know who is up), not with the whole
      // table, which every member would otherwise send it every heartbeat while it runs.
      const itsEpoch = message.type === 'membership' ? message.membership.epoch : message.type === 'heartbeat' ? message.epoch : -1;
      if (itsEpoch < this.current.epoch) this.sendMembership(from, effects);
      else if (message.type === 'heartbeat') this.send(from, { type: 'heartbeat', epoch: this.current.epoch, at: this.ownAddress(), ...this.damageMark(), ...this.newsMark(), ...this.runMark() }, effects);
      return;
    }
    this.heard(from, effects);
    assert(sender.state !== 'Left' || this.selfState() === 'Left', `${from} is Left and still heard`);
    if (message.type === 'membership' || message.type === 'heartbeat') {
      if (message.damaged === true) this.damagedPeers.add(from);
      else if (this.damagedPeers.delete(from) && this.bootstrapped && this.started && this.selfState() !== 'Left') {
        // Its refill is done: the chunk reads it refused meanwhile are asked for again a
        // heartbeat interval from now if none arrives, not at the stall timer.
        this.target.onSourceBack(from, this.context());
      }
    }
    const context = (): TransferContext => this.context();
    switch (message.type) {
      case 'membership':
        return this.onMembership(from, message.membership, effects);
      case 'heartbeat':
        return this.onHeartbeat(from, message, effects);
      case 'final-synced':
        return this.onFinalSynced(from, message.changeId, effects);
      case 'ready':
        return this.onReady(from, message.changeId, effects);
      case 'transfer-request':
        return this.onTransferRequest(from, message, effects);
      case 'transfer-chunk':
        return this.target.onChunk(from, message, context(), effects);
      case 'transfer-ack':
        return this.source.onAck(from, message.transferId, message.seq, context(), effects);
      case 'transfer-progress':
        return this.onProgress(from, message, effects);
    }
  }

  /**
   * A transfer request for a change this node has not heard of yet (the target's table
   * reached it first): kept, this node's table goes to the requester (which answers with
   * the newer one), and the request is served once that table is adopted, rather than
   * after the target's stall timer (transferStallMs) asks again.
   */
  private onTransferRequest(from: string, message: RequestMessage, effects: CoreEffect[]): void {
    const changeId = this.current.change?.id;
    if (changeId === undefined || !message.transfer.id.startsWith(`${changeId}/`)) {
      this.sendMembership(from, effects); // one of us is behind
      if (changeEpochOf(message.transfer.id) > this.current.epoch && this.earlyRequests.size < EARLY_REQUESTS_MAX) this.earlyRequests.set(message.transfer.id, { from, message });
      return;
    }
    this.source.onRequest(from, message, this.context(), effects);
  }

  /** Requests kept by onTransferRequest whose change this node now has: served; obsolete ones forgotten. */
  private serveEarlyRequests(effects: CoreEffect[]): void {
    for (const [transferId, early] of this.earlyRequests) {
      if (changeEpochOf(transferId) > this.current.epoch) continue;
      this.earlyRequests.delete(transferId);
      if (this.started && transferId.startsWith(`${this.current.change?.id}/`)) this.source.onRequest(early.from, early.message, this.context(), effects);
    }
    assert(this.earlyRequests.size <= EARLY_REQUESTS_MAX, `${this.earlyRequests.size} early transfer requests kept`);
  }

  private ownAddress(): AnnouncedAddress {
    const self = this.selfMember();
    assert(self.port > 0 && self.httpPort > 0, `${this.name} announces ports ${self.port}/${self.httpPort}`);
    return { address: self.address, port: self.port, httpPort: self.httpPort, incarnation: self.incarnation ?? 0 };
  }

  private takeAnnouncedAddress(from: string, at: AnnouncedAddress, effects: CoreEffect[]): void {
    const epoch = this.current.epoch;
    const next = withAnnouncedAddress(this.current, from, at);
    // An address travels without a new epoch (withMemberAddresses).
    assert(next.epoch === epoch, `an address of ${from} changed the epoch`);
    if (next !== this.current) this.adopt(next, effects, false);
    assert(this.current.epoch === epoch, `an address of ${from} moved the epoch to ${this.current.epoch}`);
  }

  private notePeerEpoch(from: string, epoch: number): void {
    assert(Number.isSafeInteger(epoch) && epoch >= 0, `${from} is at epoch ${epoch}`);
    this.peerEpochs.set(from, Math.max(epoch, this.peerEpochs.get(from) ?? -1));
    // What a peer has shown only rises.
    assert(this.peerEpochs.get(from)! >= epoch, `${from}'s epoch went back`);
  }

  /** A `--join` node accepts the first table that names it with its own key (docs/cluster.md, "Trust"). */
  private onFirstMembership(from: string, membership: Membership, effects: CoreEffect[]): void {
    const me = memberNamed(membership, this.name);
    if (me === undefined || me.publicKey !== this.bootstrap.self.publicKey || membership.epoch < 1) return;
    assert(!this.bootstrapped, 'a first table after the first');
    this.heard(from, effects);
    this.notePeerEpoch(from, membership.epoch);
    this.adopt(membership, effects, false);
    assert(this.bootstrapped && this.current.epoch === membership.epoch, `the first table (epoch ${membership.epoch}) was not adopted`);
  }

  /**
   * A higher epoch is adopted (keeping what we know of the same change's transfers); an
   * equal one merges; a lower one is answered with ours. Two tables of one epoch with
   * different members or change cannot exist (membership.ts), so that is an invariant
   * failure, not a tie to break.
   */
  private onMembership(from: string, incoming: Membership, effects: CoreEffect[]): void {
    assert(this.bootstrapped, `a table from ${from} before this node has one`);
    this.notePeerEpoch(from, incoming.epoch);
    const mine = this.current;
    if (incoming.epoch < mine.epoch) {
      // Addresses do not follow epochs: a node that moved announces its new one in its own
      // (maybe older) table, and this is how peers that cannot reach it yet learn where it is.
      const readdressed = withMemberAddresses(mine, incoming);
      if (readdressed !== mine) this.adopt(readdressed, effects, false);
      return this.sendMembership(from, effects);
    }
    this.confirmedSinceStart = true;
    if (incoming.epoch > mine.epoch) {
      const sameChange = mine.change !== undefined && incoming.change?.id === mine.change.id;
      // Commands this node queued that the newer table has not heard of wait there too.
      const kept = sameChange ? mergeChangeNews(incoming, mine) : withMergedQueue(incoming, mine);
      // What this node knows of addresses (its own above all) survives a newer table.
      this.adopt(withMemberAddresses(kept, mine), effects, false);
      assert(this.current.epoch === incoming.epoch, `adopted epoch ${this.current.epoch} for ${incoming.epoch}`);
      if (knowsNewerAddresses(mine, incoming)) this.sendMembership(from, effects);
      return;
    }
    assert(structuralKey(incoming) === structuralKey(mine), `two different tables at epoch ${mine.epoch} (from ${from})`);
    const merged = withMemberAddresses(mergeChangeNews(mine, incoming), incoming);
    if (merged !== mine) {
      this.adopt(merged, effects, false);
      this.progressDirty = true;
    }
    // A Left node answers nobody with news: its peers take nothing from it (onReceive),
    // and would answer with their table again, and again.
    if (this.selfState() === 'Left') return;
    if (mergeChangeNews(incoming, mine) !== incoming || knowsNewerAddresses(mine, incoming)) this.sendMembership(from, effects);
  }

  /** The leaving node handed off: merged like progress, and spread at once (it may complete the change). */
  private onFinalSynced(from: string, changeId: string, effects: CoreEffect[]): void {
    const change = this.current.change;
    if (change === undefined || change.id !== changeId || change.node !== from) return;
    // The hand-off belongs to the data phase: a table still showing the node Pending is
    // behind its own (as for progress, onProgress), and either side catches up.
    if (memberNamed(this.current, from)?.state === 'Pending') return this.sendMembership(from, effects);
    const next = withFinalSynced(this.current, changeId);
    if (next === this.current) return;
    assert(next.change?.finalSynced === true && next.epoch === this.current.epoch, `final sync of ${changeId} not recorded`);
    this.adopt(next, effects, true);
  }

  /** This node is in motion and its shell made the final sync: the coordinator is told. */
  private onFinalSyncDone(changeId: string, effects: CoreEffect[]): void {
    const change = this.current.change;
    if (!this.bootstrapped || change?.id !== changeId || change.node !== this.name) return;
    assert(this.selfState() === (change.kind === 'join' ? 'Joining' : 'Leaving'), `${this.name} final-synced while ${this.selfState()}`);
    this.finalSynced = changeId;
    const coordinator = coordinatorOf(this.current, (name) => this.available(name));
    if (coordinator === this.name) this.onFinalSynced(this.name, changeId, effects);
    else this.repeatFinalSynced(effects);
  }

  /** Until the table shows the hand-off, every heartbeat repeats it (messages get lost). */
  private repeatFinalSynced(effects: CoreEffect[]): void {
    const change = this.current.change;
    if (this.finalSynced === undefined || change?.id !== this.finalSynced || change.finalSynced === true) return;
    assert(change.node === this.name, `${this.name} repeats the final sync of ${change.node}`);
    const coordinator = coordinatorOf(this.current, (name) => this.available(name));
    if (coordinator === this.name) this.onFinalSynced(this.name, change.id, effects);
    else if (coordinator !== undefined) this.send(coordinator, { type: 'final-synced', changeId: change.id }, effects);
  }

  /** The Pending node has the table and its repositories open: it turns Joining and its transfers start. */
  private onReady(from: string, changeId: string, effects: CoreEffect[]): void {
    const change = this.current.change;
    if (this.selfState() !== 'Joined' || change === undefined || change.id !== changeId || change.node !== from) return;
    if (memberNamed(this.current, from)?.state !== 'Pending') return this.sendMembership(from, effects); // it missed the Joining table
    assert(change.kind === 'join', `ready for the ${change.kind} of ${from}`);
    const epoch = this.current.epoch;
    this.adopt(withJoiningMember(this.current), effects, true);
    assert(this.current.epoch === epoch + 1 && memberNamed(this.current, from)?.state === 'Joining', `${from} did not turn Joining`);
  }

  /** A target's progress: merged into the table (percent only rises); completion is spread at once. */
  private onProgress(from: string, report: ProgressReport, effects: CoreEffect[]): void {
    const change = this.current.change;
    // Progress belongs to the data phase: a table still showing the node Pending is behind.
    const running = change !== undefined && memberNamed(this.current, change.node)?.state !== 'Pending';
    const known = running ? change.transfers.find((transfer) => transfer.id === report.transferId) : undefined;
    if (known === undefined) {
      if (from !== this.name) this.sendMembership(from, effects); // a table behind ours, or ahead: either side catches up
      return;
    }
    if (known.to !== from) return;
    assert(known.id === report.transferId, `progress of ${report.transferId} taken for ${known.id}`);
    const next = withMergedTransfers(this.current, [reported(known, report)]);
    if (next === this.current) {
      if (known.complete && from !== this.name) this.sendMembership(from, effects); // it waits to see completion
      return;
    }
    // A transfer complete is persisted and acted on (adopt), and spreads like progress: the
    // peers ask for the table when heartbeats show it knows more (onHeartbeat), rather than
    // every member receiving it at once; the change it completes is broadcast by whoever
    // completes it (afterStep). Its target and the node in motion get it now: the joining or
    // leaving node final-syncs once its last transfer is complete (partition-handoff.ts),
    // and waited up to a heartbeat interval to hear of it.
    this.progressDirty = true;
    if (report.complete && !known.complete) {
      this.adopt(next, effects, false);
      for (const name of new Set([known.to, change?.node])) if (name !== undefined && name !== this.name) this.sendMembership(name, effects);
      return;
    }
    // Progress alone moves no member, owner or completion: there is nothing for adopt() to
    // check, persist or act on, and the next heartbeat carries the table (progressDirty).
    this.current = next;
  }

  private routeProgress(report: ProgressReport, effects: CoreEffect[]): void {
    assert(report.percentComplete >= 0 && report.percentComplete <= 100, `transfer ${report.transferId} reports ${report.percentComplete}%`);
    assert(!report.complete || report.percentComplete === 100, `transfer ${report.transferId} complete at ${report.percentComplete}%`);
    const coordinator = coordinatorOf(this.current, (name) => this.available(name));
    // Handled at the end of the step, so no table changes under a transfer being updated.
    if (coordinator === this.name) {
      this.localProgress.push(report);
      return;
    }
    if (coordinator !== undefined) this.send(coordinator, report, effects);
    this.noteOwnProgress(report);
  }

  /**
   * A target's own table shows the progress it reports (completion stays the coordinator's
   * to decide and persist): progress is no news (tableNews), so the coordinator's table
   * reaches the target only with completion, and the target's status views and stall watch
   * saw its transfers stand still at 0% until then (its log said "stalled").
   */
  private noteOwnProgress(report: ProgressReport): void {
    // A completion waits for the coordinator's table (sent at once, onProgress): noted here
    // it would show as 99%, a step of its own in the logs of a transfer that is done.
    if (report.complete) return;
    const known = this.current.change?.transfers.find((transfer) => transfer.id === report.transferId);
    if (known === undefined || known.complete || known.to !== this.name) return;
    // Progress alone moves no member, owner or completion (as in onProgress): nothing to adopt.
    this.current = withMergedTransfers(this.current, [reported(known, report)]);
  }

  /** Coordinator duty: a transfer whose source is long gone gets another source. */
  private replaceLostSources(effects: CoreEffect[]): void {
    const change = this.current.change;
    if (change === undefined || change.transfers.length === 0 || memberNamed(this.current, change.node)?.state === 'Pending') return;
    const limitMs = SOURCE_REPLACE_AFTER_FAILURE_TIMEOUTS * this.config.failureTimeoutMs;
    assert(limitMs > this.config.failureTimeoutMs, `sources replaced after ${limitMs} ms, within a failure timeout`);
    const epoch = this.current.epoch;
    const longUnavailable = (name: string): boolean => name !== this.name && this.now - this.heardAt(name) > limitMs;
    const added = planAlternatives(this.current, (name) => this.available(name), longUnavailable);
    if (added.length > 0) this.adopt(withMergedTransfers(this.current, added), effects, true);
    this.waiveHandOffOfLostLeaver(longUnavailable, effects);
    // Alternatives and the waiver merge into the same epoch: only completion makes a new one.
    assert(this.current.epoch === epoch || isReadyToComplete(this.current) || this.current.change === undefined, `replacing sources moved epoch ${epoch}`);
  }

  /**
   * A leaving node that is long gone cannot hand off: once every transfer is complete the
   * coordinator waives it (as Cassandra's removenode does for a dead node), or the change
   * would never end. Nothing acknowledged is lost by it: a write is acknowledged only when
   * two nodes hold it (stored or hinted), so the lost node never held the only copy, unless
   * the other copy was damaged since, which is why it waits longer while an owner refills.
   */
  private waiveHandOffOfLostLeaver(longUnavailable: (name: string) => boolean, effects: CoreEffect[]): void {
    const change = this.current.change;
    if (change?.kind !== 'leave' || change.finalSynced === true || !longUnavailable(change.node)) return;
    if (uncoveredNeeds(this.current).length > 0) return;
    // Unless an owner's data awaits a refill: then the leaver may hold the only intact copy,
    // and the change waits for it to come back. For a while only: a leaver gone for good
    // would hold the change forever, and the refill too (it cannot reach that owner); after
    // that long, what only the leaver held is lost to a double fault, as with removenode.
    const damagedOwner = this.damaged || [...this.damagedPeers].some((name) => name !== change.node && memberNamed(this.current, name)?.state !== 'Left');
    const waitedForDamageMs = WAIVE_DESPITE_DAMAGE_AFTER_FAILURE_TIMEOUTS * this.config.failureTimeoutMs;
    if (damagedOwner && this.now - this.heardAt(change.node) <= waitedForDamageMs) return;
    assert(change.node !== this.name, `${this.name} waives its own hand-off`);
    this.adopt(withFinalSynced(this.current, change.id), effects, true);
    assert(this.current.change?.finalSynced === true, `the hand-off of ${change.node} was not waived`);
  }

  // -------------------------------------------------------------------------------------
  // Admin commands (forwarded by the shell to the coordinator).

  private onAdmin(requestId: string, command: AdminCommand, effects: CoreEffect[]): void {
    const epoch = this.current.epoch;
    const decision = this.decideAdmin(command);
    if ('status' in decision) {
      effects.push({ type: 'admin-result', requestId, result: { ok: false, ...decision } });
      return;
    }
    // A command starts exactly one change, one epoch on, or waits in the queue at this epoch.
    const queued = decision.epoch === epoch && queuedCommands(decision).length === queuedCommands(this.current).length + 1;
    assert((decision.epoch === epoch + 1 && decision.change !== undefined) || queued, `admin ${command.type} led from epoch ${epoch} to ${decision.epoch}`);
    this.adopt(decision, effects, true);
    assert(this.current === decision, `admin ${command.type}: the table adopted is not the one decided`);
    effects.push({ type: 'admin-result', requestId, result: { ok: true, membership: this.current } });
  }

  /** The table the command leads to, or why it is refused. */
  private decideAdmin(command: AdminCommand): Membership | AdminRefusal {
    const refuse = (status: AdminRefusal['status'], message: string): AdminRefusal => ({ status, message });
    assert(this.started, 'an admin command before the start');
    if (!this.bootstrapped || adminAuthorityOf(this.current) !== this.name) return refuse(409, 'not the coordinator');
    if (command.type === 'add' && (command.member.name.length === 0 || NODE_NAME_FORBIDDEN.test(command.member.name))) return refuse(400, `node name '${command.member.name}' is not allowed`);
    if (this.current.change !== undefined || queuedCommands(this.current).length > 0) {
      // Behind the change in flight (and what waits already): started when its turn comes.
      const refusal = queueRefusal(this.current, command);
      return refusal ?? withQueuedCommand(this.current, command);
    }
    return this.decideNow(command);
  }

  /** The table that starts `command` now (no change in flight), or why it cannot start. */
  private decideNow(command: AdminCommand): Membership | AdminRefusal {
    const refuse = (status: AdminRefusal['status'], message: string): AdminRefusal => ({ status, message });
    assert(this.current.change === undefined, 'starting a command while a change is in flight');
    if (!this.slotsKnown) return refuse(409, 'the slots in use are not known yet');
    if (command.type === 'add') {
      const name = command.member.name;
      if (memberNamed(this.current, name) !== undefined) return refuse(409, `node '${name}' exists`);
      return withAddedMember(this.current, command.member, this.slotsInUse, (draft) => this.plan(draft));
    }
    const member = memberNamed(this.current, command.name);
    if (member === undefined) return refuse(404, `node '${command.name}' is not in the cluster`);
    if (member.state !== 'Joined') return refuse(409, `node '${command.name}' is ${member.state}`);
    if (this.current.members.filter((other) => other.state === 'Joined').length === 1) return refuse(409, 'the cluster needs one Joined node');
    assert(command.name !== this.name || this.current.members.some((other) => other.name !== this.name && other.state === 'Joined'), 'removing the last Joined node');
    return withLeavingMember(this.current, command.name, this.slotsInUse, (draft) => this.plan(draft));
  }

  /**
   * The admin authority starts the head of the queue once no change is in flight (on a
   * tick: see onTick). A head
   * that cannot start (it was queued against a table that a merge of two queues changed
   * since) leaves the queue, said in a `queued-refused` effect; one that must wait (the
   * slots in use not known yet) stays.
   */
  private startQueuedCommand(effects: CoreEffect[]): void {
    if (!this.bootstrapped || this.current.change !== undefined || adminAuthorityOf(this.current) !== this.name) return;
    const head = queuedCommands(this.current)[0];
    if (head === undefined || !this.slotsKnown) return;
    const epoch = this.current.epoch;
    const decision = this.decideNow(head.command);
    if ('status' in decision) {
      this.adopt(withDroppedQueueEntry(this.current, head.id), effects, true);
      effects.push({ type: 'queued-refused', id: head.id, command: head.command, message: decision.message });
      return;
    }
    this.adopt(decision, effects, true);
    // The head started: one epoch on, and out of the queue (its node is in motion now).
    const started = this.membership(); // read again: adopt() replaced the table
    assert(started.epoch === epoch + 1 && started.change?.node === commandNode(head.command), `queued ${head.id} did not start`);
    assert(queuedCommands(this.current).every((entry) => entry.id !== head.id), `queued ${head.id} started and still queued`);
  }

  /** The authority plans with its own view of who is up, and sends KV itself (it is Joined and up). */
  private plan(draft: Membership): TransferPlan[] {
    const change = draft.change;
    assert(change !== undefined, 'planning without a change');
    const intact = (name: string): boolean => (name === this.name ? !this.damaged : !this.damagedPeers.has(name));
    const plans = planChange({ membership: draft, available: (name) => this.available(name), intact, kvSource: this.name });
    assert(plans.every((plan) => plan.id.startsWith(`${change.id}/`) && !plan.complete), `change ${change.id}: a plan outside it or already complete`);
    return plans;
  }

  // -------------------------------------------------------------------------------------
  // Adopting a table.

  /**
   * Makes `next` this node's table. Effects, in order: persist (when it changed what a
   * restart must know), membership-changed, node-state per observed move, drops of slots
   * this node no longer owns (only after the table that says so is durable), the table to
   * every peer (when this node made it), then transfer requests and `ready`.
   */
  private adopt(next: Membership, effects: CoreEffect[], broadcast: boolean): void {
    const previous = this.current;
    const wasBootstrapped = this.bootstrapped;
    // A node serving alone stays confirmed as it adds a member: it made the new table. (It
    // stopped serving until the new member's first heartbeat, ~0.4 s of 503s to clients.)
    if (wasBootstrapped && this.started && this.confirmed()) this.confirmedSinceStart = true;
    assertMembership(next);
    if (wasBootstrapped) assertSuccessor(previous, next);
    this.current = next;
    this.bootstrapped = true;
    const newEpoch = !wasBootstrapped || previous.epoch !== next.epoch;
    if (newEpoch || completionCount(previous) !== completionCount(next) || incarnations(previous) !== incarnations(next) || queueKey(previous) !== queueKey(next)) effects.push({ type: 'persist' });
    effects.push({ type: 'membership-changed', membership: next });
    if (newEpoch) {
      pushNodeStates(wasBootstrapped ? previous : undefined, next, effects);
      // A first table that shows this node past Pending: it was a member and lost its table
      // with damaged storage (cluster-shell.ts, readmit), and what it held moved on meanwhile.
      if (wasBootstrapped || memberNamed(next, this.name)?.state !== 'Pending') pushDrops(this.lostSlots(wasBootstrapped ? previous : undefined, next), effects);
    }
    this.source.retain(next);
    this.serveEarlyRequests(effects);
    if (broadcast) this.broadcast(effects);
    this.target.pursue(this.context(), effects);
    if (newEpoch) this.sendReadyIfPending(effects);
    assert(this.current === next, `epoch ${next.epoch} replaced while it was adopted`);
    assert(memberNamed(next, this.name) !== undefined, `adopted epoch ${next.epoch} without ${this.name}`);
  }

  /**
   * Slots this node wrote under `previous` and does not under `next`: their moves are
   * complete. With no `previous` (a lost table), every slot it does not write under `next`.
   */
  private lostSlots(previous: Membership | undefined, next: Membership): Slot[] {
    assert(previous === undefined || next.epoch > previous.epoch, `slots lost from epoch ${previous?.epoch} to ${next.epoch}`);
    const universe = normaliseSlots([...this.slotsInUse, ...(previous?.change?.slots ?? []), ...(next.change?.slots ?? [])]);
    const wrote = (slot: Slot) => previous === undefined || writeOwners(previous, slot).includes(this.name);
    const lost = universe.filter((slot) => wrote(slot) && !writeOwners(next, slot).includes(this.name));
    // What is dropped is what the new table says this node does not own.
    assert(lost.every((slot) => !ownersOf(next, slot).includes(this.name)), `epoch ${next.epoch}: ${this.name} drops a slot it owns`);
    return lost;
  }

  /** To every other member, Left ones included (they keep answering GET /cluster). */
  private broadcast(effects: CoreEffect[]): void {
    assert(this.bootstrapped, 'broadcasting without a table');
    for (const member of this.current.members) this.sendMembership(member.name, effects);
  }

  private sendMembership(to: string, effects: CoreEffect[]): void {
    assert(memberNamed(this.current, this.name) !== undefined, `sending a table without ${this.name}`);
    if (to !== this.name && this.bootstrapped) this.send(to, { type: 'membership', membership: this.current, ...this.damageMark() }, effects);
  }

  /** What heartbeats carry of this process's run: nothing when it has none (CoreBootstrap.run). */
  private runMark(): { run?: number } {
    const run = this.bootstrap.run ?? 0;
    return run === 0 ? {} : { run };
  }

  /** What tables and heartbeats carry of this node's damage: nothing unless it awaits a refill. */
  private damageMark(): { damaged?: true } {
    return this.damaged ? { damaged: true } : {};
  }

  private send(to: string, message: PeerMessage, effects: CoreEffect[]): void {
    assert(to !== this.name, `sending ${message.type} to self`);
    assert(to.length > 0, `sending ${message.type} to nobody`);
    effects.push({ type: 'send', to, message });
  }

  private selfState(): NodeState {
    return this.selfMember().state;
  }

  private selfMember(): Member {
    const self = memberNamed(this.current, this.name);
    assert(self !== undefined, `${this.name} is not in its own table`);
    return self;
  }

  private context(): TransferContext {
    assert(this.started, 'transfers before the start');
    assert(this.bootstrapped, 'transfers without a table');
    return {
      config: this.config,
      now: this.now,
      membership: this.current,
      send: (to, message, effects) => this.send(to, message, effects),
      reportProgress: (report, effects) => this.routeProgress(report, effects),
    };
  }
}

/** The transfer as a progress report of its target says it is: 100% only with completion. */
function reported(known: TransferPlan, report: ProgressReport): TransferPlan {
  const update = {
    ...known,
    complete: report.complete,
    percentComplete: report.complete ? 100 : Math.min(99, report.percentComplete),
    bytes: report.bytes,
    records: report.records,
  };
  assert(update.percentComplete >= 0 && update.percentComplete <= 100, `transfer ${known.id} at ${update.percentComplete}%`);
  return update;
}

function completionCount(membership: Membership): string {
  const transfers = membership.change?.transfers ?? [];
  assert(transfers.every((transfer) => !transfer.complete || transfer.percentComplete === 100), `epoch ${membership.epoch}: a transfer complete below 100%`);
  assert(transfers.every((transfer) => transfer.percentComplete >= 0 && transfer.percentComplete <= 100), `epoch ${membership.epoch}: a transfer outside 0..100%`);
  return `${transfers.length}/${transfers.filter((transfer) => transfer.complete).length}/${membership.change?.finalSynced === true}`;
}

/** The queue's entries and refusals: a command accepted into the queue is durable before it is answered. */
function queueKey(membership: Membership): string {
  const key = `${queuedCommands(membership).map((entry) => entry.id).join(',')}/${(membership.queueDropped ?? []).join(',')}`;
  assert(key.length > 0, 'an empty queue key');
  return key;
}

/** The members' address incarnations: a new address is persisted like a new epoch. */
function incarnations(membership: Membership): string {
  assert(membership.members.length > 0, `epoch ${membership.epoch} has no members`);
  return membership.members.map((member) => member.incarnation ?? 0).join(',');
}

/** `base` with what `news` adds to the same change: transfers and their progress, the hand-off. */
function mergeChangeNews(base: Membership, news: Membership): Membership {
  const merged = withMergedQueue(withMergedTransfers(base, news.change?.transfers ?? []), news);
  const result = news.change?.finalSynced === true && news.change.id === base.change?.id ? withFinalSynced(merged, news.change.id) : merged;
  // News merges into the base's epoch and change; it never starts another.
  assert(result.epoch === base.epoch && result.change?.id === base.change?.id, `merging news changed epoch ${base.epoch}`);
  return result;
}

/** One node-state per state a member moved through (a table may skip epochs; the events do not). */
function pushNodeStates(previous: Membership | undefined, next: Membership, effects: CoreEffect[]): void {
  assert(previous === undefined || previous.epoch < next.epoch, `node states from epoch ${previous?.epoch} to ${next.epoch}`);
  for (const member of next.members) {
    const before = previous === undefined ? undefined : memberNamed(previous, member.name)?.state;
    const states = before === undefined ? [member.state] : statePath(before, member.state);
    for (const state of states) effects.push({ type: 'node-state', node: member.name, state });
  }
}

function pushDrops(slots: Slot[], effects: CoreEffect[]): void {
  if (slots.length === 0) return;
  for (const slot of slots) assertSlot(slot);
  assert(slots.every((slot, index) => index === 0 || compareSlots(slots[index - 1]!, slot) < 0), 'dropping slots not sorted and distinct');
  effects.push({ type: 'drop', repo: 'ssr', slots }, { type: 'drop', repo: 'tsr', slots: [...slots] });
}

function assertConfig(config: CoreConfig): void {
  for (const key of ['heartbeatIntervalMs', 'failureTimeoutMs', 'transferStallMs', 'transferWindowChunks'] as const) {
    assert(Number.isFinite(config[key]) && config[key] > 0, `config ${key} must be positive, got ${config[key]}`);
  }
  assert(Number.isInteger(config.transferWindowChunks), 'config transferWindowChunks must be an integer');
  assert(config.failureTimeoutMs > config.heartbeatIntervalMs, 'config failureTimeoutMs must exceed heartbeatIntervalMs');
}
