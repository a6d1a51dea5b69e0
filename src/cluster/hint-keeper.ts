// Where hints are kept (docs/cluster.md, "Hints"). A record that some owners
// did not store gets a durable hint for each of them, replayed once they answer
// (hint-replayer.ts). The hint is kept on this node, the one that received the write,
// unless that would leave the record on one node only (this node stored it and no other
// owner did) or this node is leaving: then it goes to another member over the peer port
// (HintStore), so that no single node ever holds the only copy of an acknowledged record,
// and a leaving node holds nothing when it goes. A node that cannot write (its disk is full
// or a write failed: docs/storage.md) keeps its hints on other members the same way.

import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { Hint, HintPayload } from '../storage/hints.js';
import type { RepositoryName } from '../storage/repository.js';
import { toWireRecord } from '../replicated-definitions/definition-peers.js';
import type { HintKeeping, HintWant } from './partition-router.js';
import { HINT_STORE } from './write-messages.js';

/**
 * Durable hints, per target node (storage/hints.ts; the simulation's own). add and remove
 * return storage operations that take effect once a Committer commits them.
 */
export interface HintStorage {
  add(target: string, payload: HintPayload): readonly unknown[];
  /** Operations add() made that will not be committed (another add() threw). */
  abandon?(operations: readonly unknown[]): void;
  remove(hints: readonly Hint[]): readonly unknown[];
  targets(): string[];
  oldest(target: string, limit: number): Promise<Hint[]>;
}

/** Makes storage operations durable together (storage/group-commit.ts). */
export interface Committer {
  commit(operations: readonly unknown[]): Promise<void>;
}

export interface HintKeeperDeps {
  localName: string;
  /** Whether the node is leaving (or has left): hints must not stay there, and its copies go with it. */
  goingAway(node: string): boolean;
  hints: HintStorage;
  committer: Committer;
  transport: Pick<PeerEndpoint, 'call'>;
  /** Members that may keep hints for this node, best first: Joined, available, not this node. */
  delegates(): string[];
  writeDeadlineMs: number;
  log: Logger;
}

/** Hints for one target, as the HintStore message carries them. */
export type HintEntry = HintPayload & { target: string };

/** Other members tried, at most, before a record that needs a second holder fails. */
const DELEGATES_TRIED_MAX = 3;

export class HintKeeper implements HintKeeping {
  constructor(private readonly deps: HintKeeperDeps) {}

  async keep(repository: RepositoryName, wanted: readonly HintWant[]): Promise<Map<number, string>> {
    const failures = new Map<number, string>();
    let here = !this.deps.goingAway(this.deps.localName);
    let notHere = '';
    if (here) {
      try {
        await this.keepHere(wanted.flatMap((want) => want.missing.map((target) => ({ target, repository, records: [want.record] }))));
      } catch (error) {
        // This node cannot keep them (its disk is full, a write failed): other members do.
        here = false;
        notHere = ` (${this.deps.localName} could not keep it: ${(error as Error).message})`;
        this.deps.log.debug({ err: error }, 'hints could not be kept here: they go to other members');
      }
    }
    const needDelegate: HintWant[] = [];
    for (const want of wanted) {
      assert(want.storedOn.length > 0 && want.missing.length > 0, () => `record ${want.position}: a hint is wanted for a record stored on ${want.storedOn.length} owners and missed by ${want.missing.length}`);
      // A copy on a node that is leaving goes away with it: it counts for nothing.
      const holders = new Set(want.storedOn.filter((node) => !this.deps.goingAway(node)));
      if (here) holders.add(this.deps.localName);
      // Every missing owner needs its hint somewhere that stays, and enough nodes must hold the record.
      if (!here || holders.size < want.copies) needDelegate.push({ ...want, copies: holders.size < want.copies ? want.copies : 0 });
    }
    const { open, keptOn } = await this.keepElsewhere(repository, needDelegate);
    for (const want of open) {
      failures.set(want.position, `stored on ${want.storedOn.join(', ')} only: no other node could keep a hint for ${want.missing.join(', ')}${notHere}`);
    }
    for (const want of wanted) if (!failures.has(want.position)) assertAcknowledged(want, here ? this.deps.localName : undefined, keptOn.get(want.position));
    return failures;
  }

  /** Hints durable on this node, merged per target into one group commit. */
  async keepHere(entries: readonly HintEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const operations: unknown[] = [];
    try {
      for (const { target, ...payload } of mergeByTarget(entries)) operations.push(...this.deps.hints.add(target, payload));
    } catch (error) {
      this.deps.hints.abandon?.(operations);
      throw error;
    }
    // An empty commit resolves at once: hints asked for and never written would count as kept.
    assert(operations.length > 0, () => `${entries.length} hint entries made no operation to commit`);
    await this.deps.committer.commit(operations);
  }

  /**
   * Hints on another member (HintStore). A record that needs another holder (`copies` > 0)
   * goes to a delegate that does not store it yet; one that only needs its hints kept (this
   * node is leaving) may go to any. Returns the wants no delegate could take, and the
   * delegate that took each other one, by position.
   */
  async keepElsewhere(repository: RepositoryName, wants: readonly HintWant[]): Promise<{ open: HintWant[]; keptOn: Map<number, string> }> {
    let open = [...wants];
    const keptOn = new Map<number, string>();
    const candidates = this.deps.delegates().slice(0, DELEGATES_TRIED_MAX);
    for (const delegate of candidates) {
      if (open.length === 0) break;
      assert(delegate !== this.deps.localName, `${delegate} offered as a delegate of its own hints`);
      const taken = open.filter((want) => (want.copies === 0 || !want.storedOn.includes(delegate)) && !want.missing.every((target) => target === delegate));
      if (taken.length === 0) continue;
      // A delegate that is itself a missing owner keeps a hint for itself too: its replayer
      // stores such hints (hint-replayer.ts), and nothing is left out.
      const entries = taken.flatMap((want) => want.missing.map((target) => ({ target, repository, records: [want.record] })));
      try {
        await this.sendTo(delegate, entries);
        open = open.filter((want) => !taken.includes(want));
        for (const want of taken) keptOn.set(want.position, delegate);
      } catch (error) {
        this.deps.log.debug({ err: error, peer: delegate }, 'a hint could not be kept on another node');
      }
    }
    assert(open.length + keptOn.size === wants.length, `${wants.length} hint wants, ${open.length} open and ${keptOn.size} kept`);
    return { open, keptOn };
  }

  /** Sends hints to `delegate`, which keeps them durably before it answers. */
  async sendTo(delegate: string, entries: readonly HintEntry[]): Promise<void> {
    const hints = mergeByTarget(entries).map((entry) => (entry.repository === 'KV' ? { ...entry, records: entry.records.map(toWireRecord) } : entry));
    await this.deps.transport.call(delegate, HINT_STORE, { hints }, { deadlineMs: this.deps.writeDeadlineMs });
  }

  delegates(): string[] {
    return this.deps.delegates();
  }
}

/**
 * The acknowledgement rule (docs/cluster.md, "When a write counts") for a record some owners
 * missed: every missing owner's hint is durable, here or on `delegate`, and the record is
 * durable on at least `copies` distinct nodes, stored or hinted.
 */
function assertAcknowledged(want: HintWant, here: string | undefined, delegate: string | undefined): void {
  assert(here !== undefined || delegate !== undefined, () => `record ${want.position} acknowledged with no hint kept for ${want.missing.join(', ')}`);
  const holders = new Set([...want.storedOn, ...(here === undefined ? [] : [here]), ...(delegate === undefined ? [] : [delegate])]);
  assert(holders.size >= want.copies, () => `record ${want.position} acknowledged on ${holders.size} of ${want.copies} copies wanted`);
}

/** One entry per (target, repository), records in order: one hint each. */
function mergeByTarget(entries: readonly HintEntry[]): HintEntry[] {
  const merged = new Map<string, HintEntry>();
  let records = 0;
  for (const entry of entries) {
    records += entry.records.length;
    const key = `${entry.target}\n${entry.repository}`;
    const known = merged.get(key);
    if (known === undefined) merged.set(key, { ...entry, records: [...entry.records] } as HintEntry);
    else (known.records as unknown[]).push(...entry.records);
  }
  const out = [...merged.values()];
  // Merged, not lost nor doubled: every record of the entries is in exactly one hint.
  assert(out.reduce((sum, entry) => sum + entry.records.length, 0) === records, () => `${records} hinted records merged into ${out.reduce((sum, entry) => sum + entry.records.length, 0)}`);
  return out;
}
