// The shell around the cluster core (docs/cluster.md, "A pure core"): it feeds
// the core one input at a time and carries out the effects in the order the core gave
// them. A `persist` is awaited before any later effect runs, so nothing that depends on a
// state (an ownership change) leaves the node before that state is durable. A chunk is
// stored in one synced batch, with its transfer's progress when one is due
// (transfer-chunks.ts), and acked only after it. Chunk reads and stores run concurrently
// with other inputs and come back as inputs. Before the first input, the shell reads the
// progress stored with chunks and hands it to the core (`resume`), so a restarted target
// resumes from its last stored entry, and asks for the chunks after it again.

import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import { PeerAuthError } from '../peer/errors.js';
import type { PeerEndpoint, TransferSender } from '../peer/endpoint.js';
import type { TransferAck, TransferChunk } from '../peer/codec.js';
import { ADMIT, CORE_MESSAGE } from './core-messages.js';
import type { Timer, Timers } from '../lib/timers.js';
import type { ClusterCore } from '../cluster-core/core.js';
import { memberNamed } from '../cluster-core/membership.js';
import type { AdminCommand, AdminResult, ChunkData, CoreEffect, CoreInput, DurableIncoming, Membership, PeerMessage, PersistedCoreState, Slot, TransferPlan } from '../protocol/cluster-types.js';
import type { ClusterEventBus } from './events.js';
import { peerMessageProblem } from './peer-input.js';

/** Where transfer chunks are read and stored (cluster/transfer-chunks.ts; the simulation's own). */
export interface ChunkStore {
  /** Every progress entry stored with a chunk: what the core resumes from after a restart. */
  storedProgress(): Promise<DurableIncoming[]>;
  read(transfer: TransferPlan, after: string | undefined): Promise<{ chunk: ChunkData; last: boolean; totalEstimate: number }>;
  /** The chunk's records in one synced write, with `progress` when the chunk is the `last` or one is due. */
  store(transfer: TransferPlan, chunk: ChunkData, progress: DurableIncoming, last: boolean): Promise<void>;
  /** Deletes the progress entries of transfers outside the change in flight. */
  forgetProgress(changeId: string | undefined): Promise<void>;
  /** Drops the chunks read ahead of their reads (the data they came from may be damaged). */
  forgetReadsAhead(): void;
}

export interface ClusterShellDeps {
  core: ClusterCore;
  transport: Pick<PeerEndpoint, 'name' | 'call' | 'notify' | 'openTransferStream'>;
  chunks: ChunkStore;
  events: ClusterEventBus;
  log: Logger;
  saveCoreState(state: PersistedCoreState): Promise<void>;
  /** The membership (or a node's availability) changed: update the node table and router. */
  onMembership(membership: Membership): void;
  /** A member was taken for unavailable (or answers again): what it wrote here lately is followed up. */
  onAvailability(node: string, available: boolean): void;
  /** `node` started again since its last heartbeat (the core's `restarted`). */
  onRestart(node: string): void;
  /** This node no longer owns the slots: they go once handed off (partition-handoff.ts). */
  onDrop(repo: 'ssr' | 'tsr', slots: Slot[]): void;
  timers: Timers;
  /**
   * The core broke an invariant (or a persist failed): the node must stop at once rather
   * than run on with a wrong state. The node exits; the simulation crashes it.
   */
  onFatal(error: unknown): void;
  heartbeatIntervalMs: number;
  peerDeadlineMs: number;
  /** How long an inbound chunk waits for its ack before the durable point is sent instead. */
  ackWaitMs: number;
}

/** A chunk read or store is tried this many times before the core is told it failed. */
const CHUNK_IO_ATTEMPTS_MAX = 3;
const CHUNK_IO_RETRY_MS = 200;
/** A member that refuses this node is admitted again at most once per this many heartbeats. */
const READMIT_INTERVAL_HEARTBEATS = 5;

interface AckWaiter {
  seq: number;
  resolve(ack: TransferAck): void;
}

export class ClusterShell {
  private readonly queue: CoreInput[] = [];
  private draining = false;
  private timer: Timer | undefined;
  private requestCounter = 0;
  private readonly adminWaiters = new Map<string, (result: AdminResult) => void>();
  /** Inbound chunks waiting for the core's ack, by `${sender}/${transferId}`. */
  private readonly ackWaiters = new Map<string, AckWaiter[]>();
  /** Outbound transfer streams, by target node. */
  private readonly streams = new Map<string, TransferSender>();
  private stopped = false;
  /** The progress stored with chunks, read once; the core steps nothing before it. */
  private readonly resumed: Promise<void>;
  /** The change whose transfers' progress entries are kept (null: none seen yet). */
  private progressChangeId: string | undefined | null = null;
  /** When each member refusing this node may next be admitted again (readmit). */
  private readonly readmitAfter = new Map<string, number>();

  constructor(private readonly deps: ClusterShellDeps) {
    // drain() awaits this before its first step, so `resume` is the core's first input.
    this.resumed = deps.chunks.storedProgress().then((incoming) => void this.queue.unshift({ type: 'resume', incoming }));
  }

  start(): void {
    assert(this.timer === undefined, 'the cluster shell started twice');
    const tick = () => this.submit({ type: 'tick', now: Math.floor(this.deps.timers.now()) });
    tick();
    // Ticks drive heartbeats, failure detection and stalled-transfer retries.
    this.timer = this.deps.timers.setInterval(tick, Math.max(10, this.deps.heartbeatIntervalMs / 4));
  }

  stop(): void {
    this.stopped = true;
    // Admin commands the core will never answer now: their callers hear so at once.
    for (const waiter of this.adminWaiters.values()) waiter({ ok: false, status: 409, message: 'this node is stopping' });
    this.adminWaiters.clear();
    this.timer?.cancel();
    for (const stream of this.streams.values()) stream.cancel();
    this.streams.clear();
  }

  /** Nothing waits to be stepped and no step's effects are being carried out. */
  idle(): boolean {
    return this.queue.length === 0 && !this.draining;
  }

  submit(input: CoreInput): void {
    if (this.stopped) return;
    // Inputs wait only while a drain runs (it ends once the queue is empty); before the first
    // drain, the resume input may wait alone.
    assert(this.draining || this.queue.length === 0 || (this.queue.length === 1 && this.queue[0]!.type === 'resume'), () => `${this.queue.length} core inputs wait with no drain running`);
    this.queue.push(input);
    if (!this.draining) void this.drain();
  }

  /** Runs an admin command on this node's core; the caller forwards when it is not the coordinator. */
  admin(command: AdminCommand): Promise<AdminResult> {
    if (this.stopped) return Promise.resolve({ ok: false, status: 409, message: 'this node is stopping' });
    const requestId = `admin-${++this.requestCounter}`;
    assert(!this.adminWaiters.has(requestId), `admin request ${requestId} issued twice`);
    return new Promise((resolve) => {
      this.adminWaiters.set(requestId, resolve);
      this.submit({ type: 'admin', requestId, command });
    });
  }

  /** Feeds a table a peer answered with; resolves once this node acts on it (or on a newer one). */
  async adopt(from: string, membership: Membership): Promise<void> {
    this.submit({ type: 'receive', from, message: { type: 'membership', membership } });
    const deadline = this.deps.timers.now() + this.deps.peerDeadlineMs;
    while (this.deps.core.membership().epoch < membership.epoch && this.deps.timers.now() < deadline && !this.stopped) {
      await new Promise<void>((resolve) => this.deps.timers.setTimeout(resolve, 5));
    }
  }

  /** An inbound chunk: resolves with the ack once the core has made it durable (or re-acks). */
  receiveChunk(sender: string, chunk: TransferChunk): Promise<TransferAck> {
    const key = `${sender}/${chunk.transferId}`;
    return new Promise((resolve) => {
      const waiters = this.ackWaiters.get(key) ?? [];
      const waiter: AckWaiter = { seq: chunk.seq, resolve };
      waiters.push(waiter);
      this.ackWaiters.set(key, waiters);
      // The inbound stream answers chunks in order: one the core never acks (it refused
      // it) must not block the stream. Past the wait, answer with what is durable.
      this.deps.timers.setTimeout(() => {
        const still = this.ackWaiters.get(key);
        if (still === undefined || !still.includes(waiter)) return;
        this.keepWaiters(key, still.filter((other) => other !== waiter));
        resolve({ type: 'transfer-ack', transferId: chunk.transferId, seq: this.durableSeq(chunk.transferId) });
      }, this.deps.ackWaitMs);
      this.submit({ type: 'receive', from: sender, message: chunk });
      // A chunk the core does not store (a duplicate, or one out of order) gets no ack of
      // its own: answer it with what is durable, after the core has seen it.
      this.submit({ type: 'tick', now: Math.floor(this.deps.timers.now()) });
    });
  }

  private async drain(): Promise<void> {
    // One drain at a time: the core steps one input at a time, its effects in order.
    assert(!this.draining, 'the core queue drained twice at once');
    this.draining = true;
    try {
      await this.resumed;
      while (this.queue.length > 0 && !this.stopped) {
        const input = this.queue.shift()!;
        if (this.refused(input)) continue;
        const effects = this.deps.core.step(input);
        for (const effect of effects) await this.execute(effect);
        if (input.type === 'receive' && input.message.type === 'transfer-chunk') this.settleUnackedChunk(input.from, input.message);
      }
    } catch (error) {
      // A broken core invariant: crash loudly, never run on with a wrong state.
      this.deps.log.fatal({ err: error }, 'cluster core failed');
      this.stopped = true;
      this.deps.onFatal(error);
    } finally {
      this.draining = false;
    }
  }

  /**
   * A peer's message that breaks the protocol (a malformed table, one that contradicts
   * ours) is refused and logged here, checked against the table the core holds when it
   * would step it, so no peer can trip one of the core's assertions (peer-input.ts).
   */
  private refused(input: CoreInput): boolean {
    if (input.type !== 'receive') return false;
    const problem = peerMessageProblem(input.message, this.deps.core.membership());
    if (problem === undefined) return false;
    this.deps.log.warn({ peer: input.from, type: input.message.type, reason: problem }, 'peer message refused');
    return true;
  }

  private async execute(effect: CoreEffect): Promise<void> {
    switch (effect.type) {
      case 'persist':
        return this.deps.saveCoreState(this.deps.core.persistedState());
      case 'send':
        return this.send(effect.to, effect.message);
      case 'read-chunk': {
        const { transfer, seq, cursor } = effect;
        return void this.withRetries('read', transfer.id, () => this.deps.chunks.read(transfer, cursor)).then(
          (read) => this.submit({ type: 'chunk-read', transferId: transfer.id, seq, ...read }),
          () => this.submit({ type: 'chunk-read-failed', transferId: transfer.id, seq }),
        );
      }
      case 'store-chunk': {
        const { transfer, seq, chunk, progress, last } = effect;
        return void this.withRetries('store', transfer.id, () => this.deps.chunks.store(transfer, chunk, progress, last)).then(
          () => this.submit({ type: 'chunk-stored', transferId: transfer.id, seq }),
          () => this.submit({ type: 'chunk-store-failed', transferId: transfer.id, seq }),
        );
      }
      case 'drop':
        return this.deps.onDrop(effect.repo, effect.slots);
      case 'node-state':
        this.deps.log.info({ peer: effect.node, state: effect.state }, 'node state');
        return this.deps.events.publish({ type: 'NODE_STATE_UPDATED', node: effect.node, state: effect.state });
      case 'availability':
        this.deps.log.info({ peer: effect.node, available: effect.available }, 'availability');
        this.deps.onAvailability(effect.node, effect.available);
        return this.deps.onMembership(this.deps.core.membership());
      case 'restarted':
        this.deps.log.info({ peer: effect.node }, 'peer restarted');
        return this.deps.onRestart(effect.node);
      case 'membership-changed':
        this.forgetEndedProgress(effect.membership);
        return this.deps.onMembership(effect.membership);
      case 'admin-result': {
        const waiter = this.adminWaiters.get(effect.requestId);
        this.adminWaiters.delete(effect.requestId);
        return waiter?.(effect.result);
      }
      case 'queued-refused':
        this.deps.log.warn({ queued: effect.id, command: effect.command.type, peer: effect.command.type === 'add' ? effect.command.member.name : effect.command.name, reason: effect.message }, 'a queued membership change could not start and left the queue');
        return;
      default:
        assert(false, `the core made an effect the shell does not know: ${(effect as CoreEffect).type}`);
    }
  }

  /**
   * A chunk read or store, tried again after an I/O error: each failure
   * is logged with what is retried, and the last one is handed to the core, which asks
   * for the chunk again instead of waiting for it forever.
   */
  private async withRetries<T>(what: 'read' | 'store', transferId: string, operation: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      assert(attempt <= CHUNK_IO_ATTEMPTS_MAX, `transfer chunk ${what} tried ${attempt} times`);
      try {
        return await operation();
      } catch (error) {
        const last = attempt >= CHUNK_IO_ATTEMPTS_MAX || this.stopped;
        this.deps.log.warn({ err: error, transfer: transferId, attempt, attemptsMax: CHUNK_IO_ATTEMPTS_MAX }, last ? `transfer chunk ${what} failed; the chunk will be asked for again` : `transfer chunk ${what} failed; retrying`);
        if (last) throw error;
        await new Promise<void>((resolve) => this.deps.timers.setTimeout(resolve, CHUNK_IO_RETRY_MS * attempt));
      }
    }
  }

  /** Once per change: the progress entries of earlier changes' transfers are of no use. */
  private forgetEndedProgress(membership: Membership): void {
    // Effects run in order after the step that made them, and the core steps nothing meanwhile.
    assert(membership.epoch <= this.deps.core.membership().epoch, () => `a table of epoch ${membership.epoch} carried out after the core's ${this.deps.core.membership().epoch}`);
    const changeId = membership.change?.id;
    if (changeId === this.progressChangeId) return;
    this.progressChangeId = changeId;
    this.deps.chunks.forgetProgress(changeId).catch((error: unknown) => this.deps.log.error({ err: error }, 'forgetting transfer progress failed'));
  }

  private send(to: string, message: PeerMessage): void {
    assert(to !== this.deps.transport.name, `the core sends ${message.type} to its own node`);
    if (message.type === 'transfer-ack' && this.resolveAck(to, message)) return;
    if (message.type === 'transfer-chunk') return this.sendChunk(to, message);
    // A Pending node knows no one yet: it accepts the cluster only through Admit.
    const viaAdmit = message.type === 'membership' && this.isPending(to);
    const failed = (error: unknown): void => {
      this.deps.log.debug({ err: error, to, type: message.type }, 'peer send failed');
      if (!viaAdmit && error instanceof PeerAuthError) this.readmit(to);
      this.submit({ type: 'unreachable', node: to });
    };
    // Heartbeats go one way on the peer's notice stream (peer/notice-streams.ts): a quarter
    // of a call's CPU, and a busy peer's slow answer is not taken for a failure. A stream
    // that breaks or is refused fails as a call would.
    if (message.type === 'heartbeat') {
      this.deps.transport.notify(to, CORE_MESSAGE, message, failed);
      return;
    }
    const pending = viaAdmit
      ? this.admit(to, message.membership)
      : this.deps.transport.call(to, CORE_MESSAGE, message, { deadlineMs: this.deps.peerDeadlineMs });
    pending.catch(failed);
  }

  private admit(to: string, membership: Membership): Promise<unknown> {
    return this.deps.transport.call(to, ADMIT, { membership, targetPublicKey: this.publicKeyOf(to) }, { deadlineMs: this.deps.peerDeadlineMs });
  }

  /**
   * A member that refuses us as a stranger has lost its table (its storage was damaged and the
   * table with it): like a Pending node it takes a table only through Admit, so it is admitted
   * again with ours, at most once per READMIT_INTERVAL_HEARTBEATS (the shell simulation's
   * join-leave-r3 seed 17 found this case). A member that still has a table takes the Admit as
   * a table, or refuses it: no harm either way.
   */
  private readmit(to: string): void {
    const now = this.deps.timers.now();
    if (this.stopped || now < (this.readmitAfter.get(to) ?? 0)) return;
    const membership = this.deps.core.membership();
    // A node that has left admits no one. A Left target is admitted too: members take a
    // Left node's messages, so it refuses us only when it lost its table, and the table that
    // tells it it has left is how it drops what it still holds.
    if (memberNamed(membership, this.deps.transport.name)?.state === 'Left') return;
    // Only a peer refuses us as a stranger: this node never sends to itself (send).
    assert(to !== this.deps.transport.name, `${to} admitted again by itself`);
    this.readmitAfter.set(to, now + READMIT_INTERVAL_HEARTBEATS * this.deps.heartbeatIntervalMs);
    this.deps.log.warn({ peer: to, epoch: membership.epoch }, 'a member refused this node as a stranger (its table is lost?): admitting it again with this table');
    this.admit(to, membership).catch((error: unknown) => this.deps.log.debug({ err: error, to }, 'admitting a member again failed'));
  }

  private sendChunk(to: string, chunk: TransferChunk): void {
    // A transfer moves data between two nodes: its source never sends a chunk to itself.
    assert(to !== this.deps.transport.name, `transfer ${chunk.transferId} sends a chunk to its own source`);
    let stream = this.streams.get(to);
    if (stream === undefined) {
      stream = this.deps.transport.openTransferStream(
        to,
        {
          onAck: (ack) => this.submit({ type: 'receive', from: to, message: ack }),
          onClose: (error) => {
            if (this.streams.get(to) === stream) this.streams.delete(to);
            if (error !== undefined) this.deps.log.debug({ err: error, to }, 'transfer stream closed');
            // Chunks on it not acked yet may be lost: the target's next request is honoured.
            this.submit({ type: 'transfer-stream-closed', node: to });
          },
        },
        // A transfer stream lives as long as the transfer; the core retries stalls itself.
        { deadlineMs: 24 * 60 * 60 * 1000 },
      );
      this.streams.set(to, stream);
    }
    // A refused send (stream closing) is a lost chunk: the target re-requests after a stall.
    stream.send(chunk);
  }

  private resolveAck(to: string, ack: TransferAck): boolean {
    // The core acks a durable point: 0 before the first chunk, else the last chunk stored.
    assert(Number.isInteger(ack.seq) && ack.seq >= 0, `transfer ${ack.transferId} acked at seq ${ack.seq}`);
    const key = `${to}/${ack.transferId}`;
    const waiters = this.ackWaiters.get(key);
    if (waiters === undefined || waiters.length === 0) return false;
    const settled = waiters.filter((waiter) => waiter.seq <= ack.seq);
    if (settled.length === 0) return false;
    for (const waiter of settled) waiter.resolve(ack);
    this.keepWaiters(key, waiters.filter((waiter) => waiter.seq > ack.seq));
    return true;
  }

  /** After the core saw a chunk and its effects ran: a chunk it did not store gets the current ack. */
  private settleUnackedChunk(sender: string, chunk: TransferChunk): void {
    const key = `${sender}/${chunk.transferId}`;
    const waiters = this.ackWaiters.get(key) ?? [];
    const acked = this.durableSeq(chunk.transferId);
    assert(Number.isInteger(acked) && acked >= -1, `transfer ${chunk.transferId} durable at seq ${acked}`);
    // A chunk at or before the durable point was a duplicate; one far ahead was out of order.
    const stale = waiters.filter((waiter) => waiter.seq === chunk.seq && (waiter.seq <= acked || waiter.seq > acked + 1));
    for (const waiter of stale) waiter.resolve({ type: 'transfer-ack', transferId: chunk.transferId, seq: acked });
    this.keepWaiters(key, waiters.filter((waiter) => !stale.includes(waiter)));
  }

  private durableSeq(transferId: string): number {
    return this.deps.core.persistedState().incoming.find((entry) => entry.transferId === transferId)?.seqAcked ?? -1;
  }

  private keepWaiters(key: string, waiters: AckWaiter[]): void {
    if (waiters.length === 0) this.ackWaiters.delete(key);
    else this.ackWaiters.set(key, waiters);
  }

  private isPending(name: string): boolean {
    return this.deps.core.membership().members.find((member) => member.name === name)?.state === 'Pending';
  }

  private publicKeyOf(name: string): string {
    return this.deps.core.membership().members.find((member) => member.name === name)?.publicKey ?? '';
  }
}
