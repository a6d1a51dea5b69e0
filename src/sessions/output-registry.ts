// The output channels a node serves ("OUTPUT_CHANNEL as SSE at outputUri on
// every node"). Every node keeps one channel object per output its clients watch. On the
// node hosting the query the runner writes into it; on any other node a poller copies the
// host's messages into it, long-polling the host's log, so the SSE route never needs to
// know where the query runs. When the host changes, the poller's cursor belongs to another
// channel and the new host answers with its whole state: clients see a new `sos`.

import type { Logger } from '../lib/log.js';
import { OutputChannel, type ChannelCursor, type ChannelLimits, type EndListener, type OutputListener, type PollReply } from './output-channel.js';

export interface OutputPollRequest {
  readonly outputId: string;
  readonly cursor?: ChannelCursor;
  readonly waitMs: number;
}

export interface RegistryDeps {
  readonly localName: string;
  /** The node hosting the output's query; undefined while no node can. */
  hostOfOutput(outputId: string): string | undefined;
  pollRemote(node: string, request: OutputPollRequest): Promise<PollReply>;
  readonly limits: ChannelLimits;
  readonly pollWaitMs: number;
  readonly log: Logger;
  /** Told how many rows a query hosted here emitted (metrics). */
  readonly onRows?: (count: number) => void;
}

/** Entries a poll answers with at most; the poller comes back at once for more. */
const POLL_ENTRIES_MAX = 1_000;
const RETRY_DELAY_MS = 500;

/** Where a copy of another node's channel has read the host's log up to. */
interface HostCursor {
  readonly host: string;
  readonly cursor: ChannelCursor;
}

export class OutputRegistry {
  private readonly channels = new Map<string, OutputChannel>();
  private readonly pollers = new Set<string>();
  /** Kept when a poller stops, so the next one (or a refresh) carries on from there. */
  private readonly hostCursors = new Map<string, HostCursor>();
  /** The poll of each output's host under way: polls of one output run one after another, so none applies an entry twice. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** When each copy last heard from its host (a poll answered). */
  private readonly heardAtMs = new Map<string, number>();
  private closed = false;

  constructor(private readonly deps: RegistryDeps) {}

  channel(outputId: string): OutputChannel {
    let channel = this.channels.get(outputId);
    if (channel === undefined) this.channels.set(outputId, (channel = new OutputChannel(outputId, this.deps.limits, this.deps.onRows)));
    return channel;
  }

  /**
   * Subscribes a client; the channel is fed from the host when the host is another node.
   * A copy nobody followed lately is brought up to date first, so that a client is not
   * ended by an end the host has since moved past.
   */
  async subscribe(outputId: string, listener: OutputListener, onEnd?: EndListener): Promise<() => void> {
    const current = await this.refresh(outputId);
    const unsubscribe = this.channel(outputId).subscribe(listener, onEnd, current);
    this.ensurePoller(outputId);
    return unsubscribe;
  }

  /** Whether a client whose last event was `eventId` saw the end of this output, which has not started again. */
  async endedAt(outputId: string, eventId: string): Promise<boolean> {
    return (await this.refresh(outputId)) && this.channel(outputId).isEndedAt(eventId);
  }

  /** Answers another node's poll of a channel hosted here, waiting a while for news. */
  async poll(request: OutputPollRequest): Promise<PollReply> {
    const channel = this.channel(request.outputId);
    await channel.waitPast(request.cursor, Math.min(request.waitMs, this.deps.pollWaitMs));
    return channel.poll(request.cursor, POLL_ENTRIES_MAX);
  }

  /**
   * Ends and forgets the channels of outputs that no longer exist (their session, or their
   * query, went): every node does so when a session changes, whichever node hosts it, so
   * their clients' responses end even where the host cannot tell them.
   */
  retain(exists: (outputId: string) => boolean): void {
    for (const [id, channel] of [...this.channels]) {
      if (exists(id)) continue;
      channel.discard();
      this.channels.delete(id);
      this.hostCursors.delete(id);
      this.heardAtMs.delete(id);
    }
  }

  close(): void {
    this.closed = true;
  }

  private ensurePoller(outputId: string): void {
    if (this.pollers.has(outputId)) return;
    this.pollers.add(outputId);
    void this.runPoller(outputId).finally(() => this.pollers.delete(outputId));
  }

  private async runPoller(outputId: string): Promise<void> {
    const channel = this.channel(outputId);
    while (!this.closed && channel.subscriberCount > 0 && this.channels.get(outputId) === channel) {
      const host = this.deps.hostOfOutput(outputId);
      if (host === undefined || host === this.deps.localName) {
        this.hostCursors.delete(outputId);
        await delay(RETRY_DELAY_MS);
        continue;
      }
      try {
        await this.pollHost(outputId, host, this.deps.pollWaitMs);
      } catch (error) {
        this.deps.log.debug({ outputId, host, err: (error as Error).message }, 'output poll failed');
        await delay(RETRY_DELAY_MS);
      }
    }
  }

  /**
   * Whether this node's channel of the output is current: it hosts the output, a poller
   * follows the host, or one poll of the host just brought the copy up to date.
   */
  private async refresh(outputId: string): Promise<boolean> {
    const host = this.deps.hostOfOutput(outputId);
    if (host === undefined) return false;
    if (host === this.deps.localName) return true;
    // A poller that heard from the host within a long poll or two keeps the copy current.
    if (this.pollers.has(outputId) && Date.now() - (this.heardAtMs.get(outputId) ?? -Infinity) <= 2 * this.deps.pollWaitMs + RETRY_DELAY_MS) return true;
    try {
      await this.pollHost(outputId, host, 0);
      return true;
    } catch (error) {
      this.deps.log.debug({ outputId, host, err: (error as Error).message }, 'output refresh failed');
      return false;
    }
  }

  /** One poll of the host's log from where this copy is, its entries applied; after any poll of the output under way. */
  private pollHost(outputId: string, host: string, waitMs: number): Promise<void> {
    const next = (this.inFlight.get(outputId) ?? Promise.resolve()).catch(() => undefined).then(() => this.pollOnce(outputId, host, waitMs));
    this.inFlight.set(outputId, next);
    void next.then(
      () => this.inFlight.get(outputId) === next && this.inFlight.delete(outputId),
      () => this.inFlight.get(outputId) === next && this.inFlight.delete(outputId),
    );
    return next;
  }

  private async pollOnce(outputId: string, host: string, waitMs: number): Promise<void> {
    const saved = this.hostCursors.get(outputId);
    const cursor = saved?.host === host ? saved.cursor : undefined;
    const reply = await this.deps.pollRemote(host, { outputId, waitMs, ...(cursor === undefined ? {} : { cursor }) });
    const channel = this.channel(outputId);
    for (const entry of reply.entries) channel.apply(entry);
    this.hostCursors.set(outputId, { host, cursor: { epoch: reply.epoch, seq: reply.seq } });
    this.heardAtMs.set(outputId, Date.now());
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
