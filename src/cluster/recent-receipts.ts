// The records this node stored lately for each other node (replica writes, WriteRecords), by
// their keys: what a coordinator killed in the middle of a write may have left here and on no
// other owner (docs/cluster.md, "Writes of unknown outcome"). Its client saw a dropped
// connection, and the coordinator noted nothing before it died. Once that sender is seen
// unavailable, write-follow-ups.ts notes these keys, and the owners are made to agree on them
// when all answer again. Memory only, on the write path: a list append per replica write.
//
// Why the receivers: a write in flight when its coordinator dies was sent at most a write
// deadline before, and sits where it landed; the coordinator's own database cannot say which
// writes were in flight (write ids of idempotent batches carry event times, not receipt
// times), and following up every partition it wrote to lately is every partition under load
// (the reverted follow-ups of every partition after an unclean stop cost 11.6-18.9 s of a
// change's time in partition-join-leave-r3 seed 3).

import { assert } from '../lib/assert.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { FollowUpPart } from './write-messages.js';

export interface RecentReceiptsOptions {
  /** Receipts kept before a sender's newest one: a write in flight at its death was sent within a write deadline. */
  windowMs: number;
  /** Receipts older than this are forgotten even when their sender was never seen unavailable. */
  keptMs: number;
  /** Keys kept over all senders; past it the oldest receipts go (logged by the caller). */
  keysMax: number;
  now(): number;
  keyOf(repo: RepositoryName, record: StoredRecord): string;
}

interface Receipt {
  atMs: number;
  parts: FollowUpPart[];
  keys: number;
}

export class RecentReceipts {
  private readonly bySender = new Map<string, Receipt[]>();
  private keys = 0;
  /** Receipts dropped at keysMax since the caller last asked. */
  private droppedSinceAsked = 0;

  constructor(private readonly options: RecentReceiptsOptions) {
    assert(options.windowMs > 0 && options.keptMs >= options.windowMs && options.keysMax > 0, `receipts window ${options.windowMs} ms, kept ${options.keptMs} ms, ${options.keysMax} keys`);
  }

  /** `sender` had this node store `records` (durably). */
  add(sender: string, repo: RepositoryName, replicas: number, records: readonly StoredRecord[]): void {
    if (records.length === 0) return;
    const atMs = this.options.now();
    const byPartition = new Map<string, FollowUpPart & { keys: string[] }>();
    for (const record of records) {
      const id = `${record.stream}\n${record.partition}`;
      let part = byPartition.get(id);
      if (part === undefined) byPartition.set(id, (part = { repo, stream: record.stream, partition: record.partition, replicas, keys: [] }));
      part.keys.push(this.options.keyOf(repo, record));
    }
    let receipts = this.bySender.get(sender);
    if (receipts === undefined) this.bySender.set(sender, (receipts = []));
    receipts.push({ atMs, parts: [...byPartition.values()], keys: records.length });
    this.keys += records.length;
    // Only the window before the sender's newest receipt can hold a write still in flight.
    this.dropWhile(sender, (receipt) => receipt.atMs < atMs - this.options.windowMs);
    while (this.keys > this.options.keysMax) this.dropOldest();
    assert(this.keys >= 0 && this.keys <= Math.max(this.options.keysMax, records.length), () => `${this.keys} receipt keys kept`);
  }

  /** Senders with receipts kept (forgetting those past keptMs). */
  senders(): string[] {
    const now = this.options.now();
    for (const sender of [...this.bySender.keys()]) this.dropWhile(sender, (receipt) => receipt.atMs < now - this.options.keptMs);
    assert(this.keys >= 0, 'receipt keys counted below zero');
    return [...this.bySender.keys()];
  }

  /** The receipts from `sender`, one follow-up part per partition with their keys, and forgotten here. */
  take(sender: string): FollowUpPart[] {
    const receipts = this.bySender.get(sender) ?? [];
    this.bySender.delete(sender);
    const merged = new Map<string, FollowUpPart & { keys: string[] }>();
    for (const receipt of receipts) {
      this.keys -= receipt.keys;
      for (const part of receipt.parts) {
        const id = `${part.repo}\n${part.stream}\n${part.partition}\n${part.replicas}`;
        const known = merged.get(id);
        if (known === undefined) merged.set(id, { ...part, keys: [...part.keys!] });
        else known.keys.push(...part.keys!);
      }
    }
    assert(this.keys >= 0, () => `${this.keys} receipt keys kept`);
    return [...merged.values()];
  }

  /** Receipts dropped at keysMax since the last call. */
  dropped(): number {
    const dropped = this.droppedSinceAsked;
    this.droppedSinceAsked = 0;
    return dropped;
  }

  private dropWhile(sender: string, old: (receipt: Receipt) => boolean): void {
    const receipts = this.bySender.get(sender);
    if (receipts === undefined) return;
    let count = 0;
    while (count < receipts.length && old(receipts[count]!)) this.keys -= receipts[count++]!.keys;
    if (count > 0) receipts.splice(0, count);
    if (receipts.length === 0) this.bySender.delete(sender);
    assert(this.keys >= 0, 'receipt keys counted below zero');
  }

  private dropOldest(): void {
    let oldest: string | undefined;
    for (const [sender, receipts] of this.bySender) if (oldest === undefined || receipts[0]!.atMs < this.bySender.get(oldest)![0]!.atMs) oldest = sender;
    assert(oldest !== undefined, () => `${this.keys} receipt keys kept with no receipt`);
    const receipts = this.bySender.get(oldest)!;
    this.keys -= receipts.shift()!.keys;
    this.droppedSinceAsked += 1;
    if (receipts.length === 0) this.bySender.delete(oldest);
  }
}
