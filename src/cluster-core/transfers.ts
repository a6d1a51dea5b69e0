// The two ends of a data transfer (docs/cluster.md, "Transfers"). Both are plain state owned by
// ClusterCore; they never do I/O, they push effects.
//
// Target: asks its source for chunks from `seqAcked + 1`, stores them strictly in order
// (one store in flight, so `seqAcked` and `cursor` are always one consistent prefix). A
// chunk's records are made durable by one synced write, with the transfer's new
// `seqAcked`/`cursor` (store-chunk's `progress`) always for the last chunk and as often
// as the shell likes before it, and only after it does the target ack the source.
// Progress goes to the coordinator once per heartbeat interval, and at the end: each
// report changes the replicated table, so one per chunk would cost the coordinator a table
// update per MiB for a percentage nobody reads that often. A kill of either end loses at
// most the chunks since the last durable `seqAcked`/`cursor`, from which the target resumes
// (handed back by `resume`) and asks for them again; a source keeps no durable state at all.
//
// Source: reads one chunk at a time (a read continues from the previous chunk's cursor),
// and stays at most `transferWindowChunks` chunks ahead of the target's acks.

import { assert } from '../lib/assert.js';
import { compareText, transferCovers, uncoveredNeeds } from './placement.js';
import type { ChunkData, CoreConfig, CoreEffect, DurableIncoming, Membership, PeerMessage, TransferPlan } from '../protocol/cluster-types.js';

type ChunkMessage = Extract<PeerMessage, { type: 'transfer-chunk' }>;
type RequestMessage = Extract<PeerMessage, { type: 'transfer-request' }>;

/** What a transfer end needs from its core. */
export interface TransferContext {
  readonly config: CoreConfig;
  readonly now: number;
  readonly membership: Membership;
  send(to: string, message: PeerMessage, effects: CoreEffect[]): void;
  /** Hands a progress report to the coordinator (locally when this node is it). */
  reportProgress(report: Extract<PeerMessage, { type: 'transfer-progress' }>, effects: CoreEffect[]): void;
}

interface IncomingTransfer {
  plan: TransferPlan;
  // Durable (persisted with the core's state).
  seqAcked: number;
  cursor: string | undefined;
  records: number;
  bytes: number;
  // This incarnation only.
  /** Chunks received ahead of the one being stored; at most transferWindowChunks. */
  buffer: Map<number, ChunkMessage>;
  storing: ChunkMessage | undefined;
  /** Last time a chunk arrived that moved the transfer on, or a request went out. */
  lastActivityAt: number;
  /**
   * When its source was heard from again after being taken for unavailable, until a
   * heartbeat interval later shows whether chunks still arrive (onSourceBack).
   */
  sourceBackAt: number | undefined;
  /** A chunk received since the last request was dropped: the next request is no repeat. */
  discarded: boolean;
  totalEstimate: number;
  percentReported: number;
  /** `records` as of the last progress report: more since means a report is due. */
  recordsReported: number;
  /** The last chunk is durable: only the coordinator's acknowledgement is missing. */
  done: boolean;
  lastProgressAt: number;
}

/** Incoming transfers, by id: the transfers of the change in flight that this node receives. */
export class TargetTransfers {
  private readonly transfers = new Map<string, IncomingTransfer>();
  /** Durable progress read at start, claimed by pursue() once the membership says the transfer still runs. */
  private readonly resumable = new Map<string, DurableIncoming>();

  constructor(private readonly self: string, persisted: readonly DurableIncoming[]) {
    assert(self.length > 0, 'a transfer target without a name');
    this.resume(persisted);
    assert(this.resumable.size <= persisted.length, 'more resumable transfers than entries');
  }

  /**
   * Adds durable progress to resume from (before the first pursue()): of two entries for
   * one transfer, the one further on wins. Both are durable facts, and the store that
   * wrote the further one also wrote every record before its cursor.
   */
  resume(entries: readonly DurableIncoming[]): void {
    assert(this.transfers.size === 0, 'resume after transfers started');
    for (const entry of entries) {
      assert(Number.isInteger(entry.seqAcked) && entry.seqAcked >= 0, `transfer ${entry.transferId} resumes at seq ${entry.seqAcked}`);
      const known = this.resumable.get(entry.transferId);
      if (known === undefined || entry.seqAcked > known.seqAcked) this.resumable.set(entry.transferId, entry);
    }
    assert([...this.resumable.values()].every((entry) => (entry.records ?? 0) >= 0 && (entry.bytes ?? 0) >= 0), 'a resumable transfer with negative counts');
  }

  durableState(): DurableIncoming[] {
    // A transfer is either resumable (not yet claimed) or running, never both.
    assert([...this.transfers.keys()].every((id) => !this.resumable.has(id)), 'a transfer both resumable and running');
    const entries: DurableIncoming[] = [...this.resumable.values()];
    for (const [transferId, transfer] of this.transfers) {
      entries.push({ transferId, seqAcked: transfer.seqAcked, cursor: transfer.cursor, records: transfer.records, bytes: transfer.bytes });
    }
    entries.sort((a, b) => compareText(a.transferId, b.transferId));
    assert(entries.every((entry) => Number.isInteger(entry.seqAcked) && entry.seqAcked >= 0), 'a durable entry with a bad seq');
    return entries;
  }

  /** Ids of transfers still being received (for tests and the shell's status page). */
  activeIds(): string[] {
    const ids = [...this.transfers.keys()].sort(compareText);
    assert([...this.transfers.values()].every((transfer) => transfer.plan.to === this.self), `${this.self} receives a transfer to another node`);
    return ids;
  }

  /**
   * Starts every transfer of the membership that this node must receive and forgets the
   * rest: one no longer in the change, marked complete, or whose data another complete
   * transfer already brought (an alternative won).
   */
  pursue(context: TransferContext, effects: CoreEffect[]): void {
    const wanted = wantedTransfers(context.membership, this.self);
    assert([...wanted.values()].every((plan) => plan.to === this.self && plan.from !== this.self), `${this.self} wants a transfer not to it`);
    for (const id of [...this.transfers.keys()]) if (!wanted.has(id)) this.transfers.delete(id);
    for (const id of [...this.resumable.keys()]) if (!wanted.has(id)) this.resumable.delete(id);
    for (const plan of wanted.values()) {
      const known = this.transfers.get(plan.id);
      if (known !== undefined) {
        known.plan = plan;
        continue;
      }
      const resumed = this.resumable.get(plan.id);
      this.resumable.delete(plan.id);
      const transfer: IncomingTransfer = {
        plan,
        seqAcked: resumed?.seqAcked ?? 0,
        cursor: resumed?.cursor,
        records: resumed?.records ?? 0,
        bytes: resumed?.bytes ?? 0,
        buffer: new Map(),
        storing: undefined,
        lastActivityAt: context.now,
        sourceBackAt: undefined,
        discarded: false,
        totalEstimate: 0,
        percentReported: plan.percentComplete,
        recordsReported: resumed?.records ?? 0,
        done: false,
        lastProgressAt: context.now,
      };
      this.transfers.set(plan.id, transfer);
      this.request(transfer, context, effects);
    }
    assert(this.transfers.size === wanted.size, `${this.transfers.size} transfers running, ${wanted.size} wanted`);
  }

  onChunk(from: string, message: ChunkMessage, context: TransferContext, effects: CoreEffect[]): void {
    assert(Number.isInteger(message.seq) && message.seq >= 1, `chunk seq ${message.seq}`);
    const transfer = this.transfers.get(message.transferId);
    if (transfer === undefined || transfer.done || from !== transfer.plan.from) return;
    if (message.seq <= transfer.seqAcked) {
      // A duplicate of a durable chunk: its ack may have been lost, so repeat it.
      context.send(from, { type: 'transfer-ack', transferId: message.transferId, seq: transfer.seqAcked }, effects);
      return;
    }
    if (message.seq > transfer.seqAcked + context.config.transferWindowChunks) {
      transfer.discarded = true; // beyond the window: the source resends on re-request
      return;
    }
    // The newest copy of a seq wins: after a re-request it is the one from the current send.
    transfer.buffer.set(message.seq, message);
    transfer.lastActivityAt = context.now;
    this.storeNext(transfer, effects);
    // One store in flight, and only of the chunk right after the last durable one.
    const storing = transfer.storing as ChunkMessage | undefined; // storeNext may have set it
    assert(storing === undefined || storing.seq === transfer.seqAcked + 1, `transfer ${transfer.plan.id} stores ${storing?.seq} after ${transfer.seqAcked}`);
  }

  onChunkStored(transferId: string, seq: number, context: TransferContext, effects: CoreEffect[]): void {
    const transfer = this.transfers.get(transferId);
    const chunk = transfer?.storing;
    if (transfer === undefined || chunk === undefined || chunk.seq !== seq) return; // from before a restart of this core
    assert(seq === transfer.seqAcked + 1, `transfer ${transferId} stored seq ${seq} after ${transfer.seqAcked}`);
    assert(!transfer.done, `transfer ${transferId} stored a chunk after its last`);
    transfer.storing = undefined;
    transfer.seqAcked = seq;
    transfer.cursor = chunk.chunk.cursor;
    transfer.records += chunk.chunk.records;
    transfer.bytes += chunk.chunk.bytes.length;
    transfer.totalEstimate = chunk.totalEstimate;
    transfer.lastActivityAt = context.now;
    if (chunk.last) {
      transfer.done = true;
      transfer.buffer.clear();
    }
    // Order: the chunk's records are durable (chunk-stored comes after the store that
    // wrote them) before the source may forget the chunk.
    context.send(transfer.plan.from, { type: 'transfer-ack', transferId, seq }, effects);
    if (transfer.done || this.progressDue(transfer, context)) this.sendProgress(transfer, context, effects);
    this.storeNext(transfer, effects);
    // One store in flight, and only ever of the next chunk.
    const storing = transfer.storing as ChunkMessage | undefined; // storeNext may have set it
    assert(storing === undefined || storing.seq === seq + 1, `transfer ${transferId} stores ${storing?.seq} after ${seq}`);
  }

  /**
   * The shell could not store the chunk (an I/O error that outlasted its retries). Nothing
   * of it is durable: the buffered chunks are dropped and the stall timer asks the source
   * again from the last durable chunk, so a failing disk slows the transfer instead of
   * stopping it for good.
   */
  onStoreFailed(transferId: string, seq: number, context: TransferContext): void {
    const transfer = this.transfers.get(transferId);
    if (transfer === undefined || transfer.storing?.seq !== seq) return;
    assert(seq === transfer.seqAcked + 1, `transfer ${transferId} failed to store ${seq} after ${transfer.seqAcked}`);
    transfer.storing = undefined;
    transfer.discarded = true;
    transfer.buffer.clear();
    transfer.lastActivityAt = context.now;
    assert(!transfer.done, `transfer ${transferId} failed a store after its last chunk`);
  }

  /**
   * Re-requests stalled transfers, reports progress not yet reported, and repeats
   * completion reports until the membership shows them.
   */
  onTick(context: TransferContext, effects: CoreEffect[]): void {
    assert(Number.isFinite(context.now), `transfers ticked at ${context.now}`);
    for (const transfer of this.transfers.values()) {
      assert(transfer.lastActivityAt <= context.now && transfer.lastProgressAt <= context.now, `transfer ${transfer.plan.id} active in the future`);
      const reportDue = context.now - transfer.lastProgressAt >= context.config.heartbeatIntervalMs;
      if (transfer.done) {
        if (reportDue) this.sendProgress(transfer, context, effects);
        continue;
      }
      if (this.progressDue(transfer, context)) this.sendProgress(transfer, context, effects);
      if (transfer.storing === undefined && (this.stalled(transfer, context) || this.silentSinceSourceBack(transfer, context))) {
        // Nothing came and nothing was dropped: a repeat, which the source may let its chunks answer.
        this.request(transfer, context, effects, !transfer.discarded && transfer.buffer.size === 0);
      }
    }
  }

  private stalled(transfer: IncomingTransfer, context: TransferContext): boolean {
    return context.now - transfer.lastActivityAt >= context.config.transferStallMs;
  }

  /**
   * Its source came back a heartbeat interval ago and no chunk has arrived since: the
   * connection the chunks were in broke while the source was away (a partition, a pause
   * past the ping timeout), and they are lost. Ends the wait either way.
   */
  private silentSinceSourceBack(transfer: IncomingTransfer, context: TransferContext): boolean {
    const backAt = transfer.sourceBackAt;
    if (backAt === undefined || context.now - backAt < context.config.heartbeatIntervalMs) return false;
    transfer.sourceBackAt = undefined;
    return transfer.lastActivityAt < backAt;
  }

  /**
   * The source was unavailable and is heard again (a partition healed, a pause ended): each
   * transfer from it that waits for chunks is asked for again if none arrives within a
   * heartbeat interval (onTick), not after the stall timer's transferStallMs. Not at once:
   * a source taken for unavailable by mistake (a busy machine, a call that timed out) still
   * has its chunks on the way, and a request would have it send them all again.
   */
  onSourceBack(source: string, context: TransferContext): void {
    assert(source !== this.self, `${this.self} is its own source`);
    for (const transfer of this.transfers.values()) {
      if (transfer.plan.from !== source || transfer.done) continue;
      transfer.sourceBackAt = context.now;
    }
  }

  /** Records stored since the last report, and a heartbeat interval gone by since it. */
  private progressDue(transfer: IncomingTransfer, context: TransferContext): boolean {
    assert(transfer.records >= transfer.recordsReported, `transfer ${transfer.plan.id} reported more records than it holds`);
    return transfer.records > transfer.recordsReported && context.now - transfer.lastProgressAt >= context.config.heartbeatIntervalMs;
  }

  private request(transfer: IncomingTransfer, context: TransferContext, effects: CoreEffect[], repeat = false): void {
    assert(!transfer.done, `re-requesting finished transfer ${transfer.plan.id}`);
    assert(transfer.storing === undefined, `requesting ${transfer.plan.id} while a store is in flight`);
    assert(!repeat || (transfer.buffer.size === 0 && !transfer.discarded), `transfer ${transfer.plan.id} repeats a request after dropping chunks`);
    transfer.buffer.clear();
    transfer.lastActivityAt = context.now;
    transfer.sourceBackAt = undefined;
    transfer.discarded = false;
    const message: RequestMessage = { type: 'transfer-request', transfer: transfer.plan, seq: transfer.seqAcked + 1, cursor: transfer.cursor, ...(repeat ? { repeat: true as const } : {}) };
    context.send(transfer.plan.from, message, effects);
  }

  private storeNext(transfer: IncomingTransfer, effects: CoreEffect[]): void {
    if (transfer.storing !== undefined || transfer.done) return;
    const next = transfer.buffer.get(transfer.seqAcked + 1);
    if (next === undefined) return;
    transfer.buffer.delete(next.seq);
    // A chunk read after another cursor than the one we hold would leave a gap or overlap
    // at its start: drop it, the stall timer re-requests from our cursor.
    if (next.fromCursor !== transfer.cursor) {
      transfer.discarded = true;
      return;
    }
    // Stored strictly in order: the chunk right after the last durable one.
    assert(next.seq === transfer.seqAcked + 1, `transfer ${transfer.plan.id} stores ${next.seq} after ${transfer.seqAcked}`);
    assert(next.chunk.records >= 0, `transfer ${transfer.plan.id} chunk ${next.seq} with ${next.chunk.records} records`);
    transfer.storing = next;
    const progress: DurableIncoming = {
      transferId: transfer.plan.id,
      seqAcked: next.seq,
      cursor: next.chunk.cursor,
      records: transfer.records + next.chunk.records,
      bytes: transfer.bytes + next.chunk.bytes.length,
    };
    effects.push({ type: 'store-chunk', transfer: transfer.plan, seq: next.seq, chunk: next.chunk, progress, last: next.last });
  }

  private sendProgress(transfer: IncomingTransfer, context: TransferContext, effects: CoreEffect[]): void {
    // An estimate of 0 is a source that has not counted yet (transfer-chunks.ts, totalSoFar()): the percentage waits for it.
    const estimate = Math.max(transfer.totalEstimate, transfer.records);
    const measured = transfer.done ? 100 : transfer.totalEstimate > 0 ? Math.min(99, Math.floor((100 * transfer.records) / estimate)) : 0;
    // percentComplete only rises, also when the estimate grows or after a restart.
    transfer.percentReported = Math.max(transfer.percentReported, transfer.plan.percentComplete, measured);
    if (!transfer.done) transfer.percentReported = Math.min(transfer.percentReported, 99);
    // Percent complete is 0..100 and only 100 once the last chunk is durable.
    assert(transfer.percentReported >= 0 && transfer.percentReported <= 100, `transfer ${transfer.plan.id} at ${transfer.percentReported}%`);
    assert(transfer.done === (transfer.percentReported === 100), `transfer ${transfer.plan.id} at ${transfer.percentReported}%, done ${transfer.done}`);
    transfer.lastProgressAt = context.now;
    transfer.recordsReported = transfer.records;
    context.reportProgress(
      {
        type: 'transfer-progress',
        transferId: transfer.plan.id,
        percentComplete: transfer.percentReported,
        bytes: transfer.bytes,
        records: transfer.records,
        complete: transfer.done,
      },
      effects,
    );
  }
}

/** Transfers to `self` that are incomplete and still needed (no complete transfer covers all they bring). */
function wantedTransfers(membership: Membership, self: string): Map<string, TransferPlan> {
  const wanted = new Map<string, TransferPlan>();
  const change = membership.change;
  // Nothing moves before the joining node is ready (Joining).
  if (change === undefined || membership.members.find((member) => member.name === change.node)?.state === 'Pending') return wanted;
  const open = uncoveredNeeds(membership).filter((need) => need.to === self);
  for (const transfer of change.transfers) {
    if (transfer.to !== self || transfer.complete) continue;
    if (open.some((need) => transferCovers(transfer, need))) wanted.set(transfer.id, transfer);
  }
  assert(wanted.size <= change.transfers.length, 'more transfers wanted than planned');
  return wanted;
}

interface OutgoingTransfer {
  plan: TransferPlan;
  acked: number;
  /** Chunks of this send on their way (sent, not acked): seq, the cursor read after, when sent. */
  sent: Array<{ seq: number; cursor: string | undefined; atMs: number }>;
  /** The stream to the target closed since a chunk of `sent` went out: they may be lost. */
  streamClosed: boolean;
  /** The one read the shell is carrying out; its chunk-read answers it (one per transfer). */
  reading: { seq: number; cursor: string | undefined } | undefined;
  /** The read to issue next, once the window and the read in flight allow. */
  nextRead: { seq: number; cursor: string | undefined } | undefined;
}

/** Outgoing transfers, by id. Nothing here is durable: the target holds the cursor. */
export class SourceTransfers {
  private readonly transfers = new Map<string, OutgoingTransfer>();

  constructor(private readonly self: string) {
    assert(self.length > 0, 'a transfer source without a name');
  }

  /** Forgets transfers that are no longer part of the change in flight. */
  retain(membership: Membership): void {
    const live = new Set((membership.change?.transfers ?? []).filter((transfer) => !transfer.complete).map((transfer) => transfer.id));
    for (const id of [...this.transfers.keys()]) if (!live.has(id)) this.transfers.delete(id);
    assert(this.transfers.size <= live.size, `${this.transfers.size} transfers sent, ${live.size} live`);
  }

  /**
   * A (re-)request starts a new send from the target's last durable chunk, unless it is a
   * repeat (nothing came, nothing was dropped) of a chunk this send already has on its way:
   * sent within transferStallMs on a stream that has not closed since. A busy target took
   * us for unavailable and heard us again, or its stall timer ran while we were slow: the
   * chunks arrive in order on the same stream, and sending them again would only double
   * the bytes (the scale bench saw up to 1.4 times the minimum at 22-32 nodes).
   */
  onRequest(from: string, message: RequestMessage, context: TransferContext, effects: CoreEffect[]): void {
    const plan = message.transfer;
    if (plan.from !== this.self || plan.to !== from || !isRunning(context.membership, plan)) return;
    assert(Number.isInteger(message.seq) && message.seq >= 1, `transfer ${plan.id} requested from seq ${message.seq}`);
    const wanted = { seq: message.seq, cursor: message.cursor };
    const known = this.transfers.get(plan.id);
    if (message.repeat === true && known !== undefined && this.onItsWay(known, wanted, context)) {
      // Still, the request says what is durable there: an ack lost on the way is made up.
      return this.onAck(from, plan.id, message.seq - 1, context, effects);
    }
    const inFlight = known?.reading;
    // The read in flight already is the one asked for (a duplicate or repeated request).
    const answered = inFlight !== undefined && inFlight.seq === wanted.seq && inFlight.cursor === wanted.cursor;
    const transfer: OutgoingTransfer = { plan, acked: message.seq - 1, sent: [], streamClosed: false, reading: inFlight, nextRead: answered ? undefined : wanted };
    this.transfers.set(plan.id, transfer);
    this.readNext(transfer, context, effects);
    assert(transfer.reading !== undefined || transfer.nextRead !== undefined || answered, `transfer ${plan.id} requested but not read`);
  }

  /** The chunk `wanted` starts at went out lately in this send, on a stream still open. */
  private onItsWay(transfer: OutgoingTransfer, wanted: { seq: number; cursor: string | undefined }, context: TransferContext): boolean {
    if (transfer.streamClosed) return false;
    const sent = transfer.sent.find((chunk) => chunk.seq === wanted.seq);
    return sent !== undefined && sent.cursor === wanted.cursor && context.now - sent.atMs < context.config.transferStallMs;
  }

  /** The stream carrying chunks to `node` closed: what it carried unacked may be lost, so the next request is honoured. */
  onStreamClosed(node: string): void {
    for (const transfer of this.transfers.values()) if (transfer.plan.to === node && transfer.sent.length > 0) transfer.streamClosed = true;
  }

  onChunkRead(
    read: { transferId: string; seq: number; chunk: ChunkData; last: boolean; totalEstimate: number },
    context: TransferContext,
    effects: CoreEffect[],
  ): void {
    const transfer = this.transfers.get(read.transferId);
    if (transfer === undefined || transfer.reading === undefined || transfer.reading.seq !== read.seq) return;
    const answered = transfer.reading;
    const effectsBefore = effects.length;
    assert(read.chunk.records >= 0 && read.totalEstimate >= 0, `transfer ${read.transferId} read ${read.chunk.records} records of ${read.totalEstimate}`);
    transfer.reading = undefined;
    // While a read is in flight, nextRead is set only by a request that asked for another
    // start: the read belongs to an older send and its chunk is not what the target wants.
    const overtaken = transfer.nextRead !== undefined;
    if (!overtaken) transfer.nextRead = read.last ? undefined : { seq: read.seq + 1, cursor: read.chunk.cursor };
    // The next read first: the shell starts it, and LevelDB reads it while this chunk is
    // signed and sent (a join moved 7% faster than sending first).
    this.readNext(transfer, context, effects);
    if (!overtaken) {
      const chunk: ChunkMessage = {
        type: 'transfer-chunk',
        transferId: read.transferId,
        seq: read.seq,
        chunk: read.chunk,
        last: read.last,
        totalEstimate: read.totalEstimate,
        fromCursor: answered.cursor,
      };
      // A chunk the target already acked (read again after a stale request) is on its way for nothing.
      if (read.seq > transfer.acked) transfer.sent.push({ seq: read.seq, cursor: answered.cursor, atMs: context.now });
      // At most a window of chunks is on its way: a chunk is read only within the window.
      assert(transfer.sent.length <= context.config.transferWindowChunks, () => `transfer ${read.transferId} has ${transfer.sent.length} chunks on their way`);
      context.send(transfer.plan.to, chunk, effects);
    }
    assert(readsIn(effects, effectsBefore) <= 1, `transfer ${read.transferId} issued two reads at once`);
  }

  /**
   * The shell could not read the chunk (after its own retries): the read is forgotten, so
   * the target's next request (its stall timer) starts a new one instead of waiting on
   * this one forever.
   */
  onReadFailed(transferId: string, seq: number): void {
    const transfer = this.transfers.get(transferId);
    if (transfer?.reading?.seq !== seq) return;
    assert(seq >= 1, `transfer ${transferId} failed to read seq ${seq}`);
    transfer.reading = undefined;
    transfer.nextRead = undefined;
    assert(transfer.plan.from === this.self, `transfer ${transferId} read on ${this.self}, not its source`);
  }

  onAck(from: string, transferId: string, seq: number, context: TransferContext, effects: CoreEffect[]): void {
    const transfer = this.transfers.get(transferId);
    if (transfer === undefined || from !== transfer.plan.to) return;
    const acked = transfer.acked;
    const effectsBefore = effects.length;
    transfer.acked = Math.max(transfer.acked, seq);
    // Acks only rise.
    assert(transfer.acked >= acked, `transfer ${transferId} ack went back from ${acked}`);
    transfer.sent = transfer.sent.filter((chunk) => chunk.seq > transfer.acked);
    this.readNext(transfer, context, effects);
    // One read in flight per transfer (the shell's contract, core.ts).
    assert(readsIn(effects, effectsBefore) <= 1, `transfer ${transferId} issued two reads at once`);
  }

  private readNext(transfer: OutgoingTransfer, context: TransferContext, effects: CoreEffect[]): void {
    const next = transfer.nextRead;
    if (transfer.reading !== undefined || next === undefined) return;
    if (next.seq > transfer.acked + context.config.transferWindowChunks) return;
    assert(next.seq >= 1, `transfer ${transfer.plan.id} reads seq ${next.seq}`);
    assert(transfer.plan.from === this.self, `${this.self} reads for transfer ${transfer.plan.id} from ${transfer.plan.from}`);
    transfer.reading = next;
    transfer.nextRead = undefined;
    effects.push({ type: 'read-chunk', transfer: transfer.plan, seq: next.seq, cursor: next.cursor });
  }
}

function readsIn(effects: readonly CoreEffect[], from: number): number {
  assert(from >= 0 && from <= effects.length, `effects from ${from} of ${effects.length}`);
  return effects.slice(from).filter((effect) => effect.type === 'read-chunk').length;
}

/** The source serves a transfer only while its own membership has that change in flight. */
function isRunning(membership: Membership, plan: TransferPlan): boolean {
  assert(plan.id.length > 0, 'a transfer without an id');
  const change = membership.change;
  return change !== undefined && plan.id.startsWith(`${change.id}/`);
}
