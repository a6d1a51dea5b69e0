// Replays hints once their owner answers again (DESIGN.md, "Writes"). Stream records are
// delivered to the partition's owners of the *current* table, not only to the node they
// were kept for: the table may have changed while it was down. Writes are idempotent
// (records keep their keys), so a hint delivered twice does no harm; a hint is deleted only
// after every owner confirmed it.

import type { Logger } from '../log.js';
import type { PeerTransport } from '../peer/transport.js';
import type { GroupCommitter } from '../storage/group-commit.js';
import type { Hint, HintBuffer } from '../storage/hints.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import { toWireRecord } from './definition-peers.js';

export interface HintReplayerDeps {
  hints: HintBuffer;
  committer: GroupCommitter;
  transport: PeerTransport;
  /** Writes the records to every current owner of their partitions; throws if one is missed. */
  redeliver(repository: RepositoryName, records: StoredRecord[]): Promise<void>;
  available(node: string): boolean;
  /** Whether the node still exists (not Left, not removed): hints for a Left node are dropped. */
  isMember(node: string): boolean;
  peerDeadlineMs: number;
  intervalMs: number;
  log: Logger;
}

const HINTS_PER_ROUND = 32;

export class HintReplayer {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly deps: HintReplayerDeps) {}

  start(): void {
    this.timer = setInterval(() => void this.round(), this.deps.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass over every owner with hints; returns how many hints were delivered. */
  async round(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    let delivered = 0;
    try {
      for (const target of this.deps.hints.targets()) {
        if (!this.deps.isMember(target)) {
          await this.discard(target);
        } else if (this.deps.available(target)) {
          delivered += await this.replay(target);
        }
      }
    } finally {
      this.running = false;
    }
    return delivered;
  }

  private async replay(target: string): Promise<number> {
    let delivered = 0;
    for (;;) {
      const hints = await this.deps.hints.oldest(target, HINTS_PER_ROUND);
      if (hints.length === 0) return delivered;
      try {
        for (const hint of hints) await this.deliver(hint);
      } catch (error) {
        this.deps.log.debug({ err: error, target }, 'hint replay failed; will retry');
        return delivered;
      }
      await this.deps.committer.commit(this.deps.hints.remove(hints));
      delivered += hints.length;
      this.deps.log.info({ target, hints: hints.length }, 'hints replayed');
    }
  }

  private deliver(hint: Hint): Promise<unknown> {
    const options = { deadlineMs: this.deps.peerDeadlineMs };
    if (hint.repository === 'KV') {
      return this.deps.transport.call(hint.target, 'DefinitionPush', { records: hint.records.map(toWireRecord) }, options);
    }
    return this.deps.redeliver(hint.repository, hint.records);
  }

  private async discard(target: string): Promise<void> {
    for (let hints = await this.deps.hints.oldest(target, 1000); hints.length > 0; hints = await this.deps.hints.oldest(target, 1000)) {
      await this.deps.committer.commit(this.deps.hints.remove(hints));
    }
  }
}
