// The shell around the cluster core (STYLE.md, "a pure core, I/O handed out"): it feeds
// the core one input at a time and carries out the effects in the order the core gave
// them. A `persist` is awaited before any later effect runs, so nothing that depends on a
// state (an ownership change) leaves the node before that state is durable. A chunk is
// stored with its transfer's progress in one synced batch, and acked only after it.
// Chunk reads and stores run concurrently with other inputs and come back as inputs.
// Before the first input, the shell reads the progress stored with chunks and hands it
// to the core (`resume`), so a restarted target resumes from its last durable chunk.

import type { Logger } from '../log.js';
import type { PeerTransport } from '../peer/transport.js';
import type { TransferStream } from '../peer/transfer-stream.js';
import type { TransferAck, TransferChunk } from '../peer/messages.js';
import type { TransferChunks } from '../storage/transfer-chunks.js';
import type { ClusterCore } from './core/core.js';
import { writeOwners } from './core/placement.js';
import type { AdminCommand, AdminResult, CoreEffect, CoreInput, Membership, PeerMessage, PersistedCoreState, Slot } from './core/types.js';
import type { ClusterEventBus } from './events.js';
import { peerMessageProblem } from './peer-input.js';

export interface ClusterShellDeps {
  core: ClusterCore;
  transport: PeerTransport;
  chunks: TransferChunks;
  events: ClusterEventBus;
  log: Logger;
  saveCoreState(state: PersistedCoreState): Promise<void>;
  /** The membership (or a node's availability) changed: update the node table and router. */
  onMembership(membership: Membership): void;
  /** Monotonic milliseconds. */
  clock(): number;
  heartbeatIntervalMs: number;
  peerDeadlineMs: number;
  /** How long an inbound chunk waits for its ack before the durable point is sent instead. */
  ackWaitMs: number;
}

interface AckWaiter {
  seq: number;
  resolve(ack: TransferAck): void;
}

export class ClusterShell {
  private readonly queue: CoreInput[] = [];
  private draining = false;
  private timer: NodeJS.Timeout | undefined;
  private requestCounter = 0;
  private readonly adminWaiters = new Map<string, (result: AdminResult) => void>();
  /** Inbound chunks waiting for the core's ack, by `${sender}/${transferId}`. */
  private readonly ackWaiters = new Map<string, AckWaiter[]>();
  /** Outbound transfer streams, by target node. */
  private readonly streams = new Map<string, TransferStream>();
  private stopped = false;
  /** The progress stored with chunks, read once; the core steps nothing before it. */
  private readonly resumed: Promise<void>;
  /** The change whose transfers' progress entries are kept (null: none seen yet). */
  private progressChangeId: string | undefined | null = null;

  constructor(private readonly deps: ClusterShellDeps) {
    // drain() awaits this before its first step, so `resume` is the core's first input.
    this.resumed = deps.chunks.storedProgress().then((incoming) => void this.queue.unshift({ type: 'resume', incoming }));
  }

  start(): void {
    this.submit({ type: 'tick', now: this.deps.clock() });
    // Ticks drive heartbeats, failure detection and stalled-transfer retries.
    this.timer = setInterval(() => this.submit({ type: 'tick', now: this.deps.clock() }), Math.max(10, this.deps.heartbeatIntervalMs / 4));
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
    for (const stream of this.streams.values()) stream.cancel();
    this.streams.clear();
  }

  submit(input: CoreInput): void {
    if (this.stopped) return;
    this.queue.push(input);
    if (!this.draining) void this.drain();
  }

  /** Runs an admin command on this node's core; the caller forwards when it is not the coordinator. */
  admin(command: AdminCommand): Promise<AdminResult> {
    const requestId = `admin-${++this.requestCounter}`;
    return new Promise((resolve) => {
      this.adminWaiters.set(requestId, resolve);
      this.submit({ type: 'admin', requestId, command });
    });
  }

  /** Feeds a table a peer answered with; resolves once this node acts on it (or on a newer one). */
  async adopt(from: string, membership: Membership): Promise<void> {
    this.submit({ type: 'receive', from, message: { type: 'membership', membership } });
    const deadline = Date.now() + this.deps.peerDeadlineMs;
    while (this.deps.core.membership().epoch < membership.epoch && Date.now() < deadline && !this.stopped) {
      await new Promise((resolve) => setTimeout(resolve, 5));
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
      setTimeout(() => {
        const still = this.ackWaiters.get(key);
        if (still === undefined || !still.includes(waiter)) return;
        this.keepWaiters(key, still.filter((other) => other !== waiter));
        resolve({ type: 'transfer-ack', transferId: chunk.transferId, seq: this.durableSeq(chunk.transferId) });
      }, this.deps.ackWaitMs).unref();
      this.submit({ type: 'receive', from: sender, message: chunk });
      // A chunk the core does not store (a duplicate, or one out of order) gets no ack of
      // its own: answer it with what is durable, after the core has seen it.
      this.submit({ type: 'tick', now: this.deps.clock() });
    });
  }

  private async drain(): Promise<void> {
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
      // A broken core invariant: crash loudly (STYLE.md), never run on with a wrong state.
      this.deps.log.fatal({ err: error }, 'cluster core failed');
      process.exit(70);
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
      case 'read-chunk':
        return void this.deps.chunks.read(effect.transfer, effect.cursor).then(
          (read) => this.submit({ type: 'chunk-read', transferId: effect.transfer.id, seq: effect.seq, ...read }),
          (error: unknown) => this.deps.log.error({ err: error, transfer: effect.transfer.id }, 'transfer read failed'),
        );
      case 'store-chunk':
        return void this.deps.chunks.store(effect.transfer, effect.chunk, effect.progress).then(
          () => this.submit({ type: 'chunk-stored', transferId: effect.transfer.id, seq: effect.seq }),
          (error: unknown) => this.deps.log.error({ err: error, transfer: effect.transfer.id }, 'transfer store failed'),
        );
      case 'drop':
        return this.drop(effect.repo, effect.slots);
      case 'node-state':
        this.deps.log.info({ peer: effect.node, state: effect.state }, 'node state');
        return this.deps.events.publish({ type: 'NODE_STATE_UPDATED', node: effect.node, state: effect.state });
      case 'availability':
        this.deps.log.info({ peer: effect.node, available: effect.available }, 'availability');
        return this.deps.onMembership(this.deps.core.membership());
      case 'membership-changed':
        this.forgetEndedProgress(effect.membership);
        return this.deps.onMembership(effect.membership);
      case 'admin-result': {
        const waiter = this.adminWaiters.get(effect.requestId);
        this.adminWaiters.delete(effect.requestId);
        return waiter?.(effect.result);
      }
    }
  }

  /**
   * Deletes the slots now, and once more after a peer deadline: a write accepted under the
   * old membership may still be in flight when the ownership changes.
   */
  private drop(repo: 'ssr' | 'tsr', slots: Slot[]): void {
    const run = (dropping: Slot[]) =>
      this.deps.chunks.drop(repo, dropping).catch((error: unknown) => this.deps.log.error({ err: error, repo }, 'dropping partitions failed'));
    void run(slots);
    setTimeout(() => {
      // Only what is still not ours: a later change may have given a slot back, with data.
      const membership = this.deps.core.membership();
      const self = this.deps.transport.name;
      void run(slots.filter((slot) => !writeOwners(membership, slot).includes(self)));
    }, 2 * this.deps.peerDeadlineMs).unref();
  }

  /** Once per change: the progress entries of earlier changes' transfers are of no use. */
  private forgetEndedProgress(membership: Membership): void {
    const changeId = membership.change?.id;
    if (changeId === this.progressChangeId) return;
    this.progressChangeId = changeId;
    this.deps.chunks.forgetProgress(changeId).catch((error: unknown) => this.deps.log.error({ err: error }, 'forgetting transfer progress failed'));
  }

  private send(to: string, message: PeerMessage): void {
    if (message.type === 'transfer-ack' && this.resolveAck(to, message)) return;
    if (message.type === 'transfer-chunk') return this.sendChunk(to, message);
    const deadline = { deadlineMs: this.deps.peerDeadlineMs };
    const pending = this.isPending(to) && message.type === 'membership'
      ? // A Pending node knows no one yet: it accepts the cluster only through Admit.
        this.deps.transport.call(to, 'Admit', { membership: message.membership, targetPublicKey: this.publicKeyOf(to) }, deadline)
      : this.deps.transport.call(to, 'CoreMessage', message, deadline);
    pending.catch((error: unknown) => {
      this.deps.log.debug({ err: error, to, type: message.type }, 'peer send failed');
      this.submit({ type: 'unreachable', node: to });
    });
  }

  private sendChunk(to: string, chunk: TransferChunk): void {
    let stream = this.streams.get(to);
    if (stream === undefined) {
      stream = this.deps.transport.openTransferStream(
        to,
        {
          onAck: (ack) => this.submit({ type: 'receive', from: to, message: ack }),
          onClose: (error) => {
            if (this.streams.get(to) === stream) this.streams.delete(to);
            if (error !== undefined) this.deps.log.debug({ err: error, to }, 'transfer stream closed');
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
