// The output channels a node serves (issue 7 item 5: "OUTPUT_CHANNEL as SSE at outputUri on
// every node"). Every node keeps one channel object per output its clients watch. On the
// node hosting the query the runner writes into it; on any other node a poller copies the
// host's messages into it, long-polling the host's log, so the SSE route never needs to
// know where the query runs. When the host changes, the poller's cursor belongs to another
// channel and the new host answers with its whole state: clients see a new `sos`.

import type { Logger } from '../log.js';
import { OutputChannel, type ChannelCursor, type ChannelLimits, type PollReply } from './output-channel.js';

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

export class OutputRegistry {
  private readonly channels = new Map<string, OutputChannel>();
  private readonly pollers = new Set<string>();
  private closed = false;

  constructor(private readonly deps: RegistryDeps) {}

  channel(outputId: string): OutputChannel {
    let channel = this.channels.get(outputId);
    if (channel === undefined) this.channels.set(outputId, (channel = new OutputChannel(outputId, this.deps.limits, this.deps.onRows)));
    return channel;
  }

  /** Subscribes a client; the channel is fed from the host when the host is another node. */
  subscribe(outputId: string, listener: Parameters<OutputChannel['subscribe']>[0]): () => void {
    const channel = this.channel(outputId);
    const unsubscribe = channel.subscribe(listener);
    this.ensurePoller(outputId);
    return unsubscribe;
  }

  /** Answers another node's poll of a channel hosted here, waiting a while for news. */
  async poll(request: OutputPollRequest): Promise<PollReply> {
    const channel = this.channel(request.outputId);
    await channel.waitPast(request.cursor, Math.min(request.waitMs, this.deps.pollWaitMs));
    return channel.poll(request.cursor, POLL_ENTRIES_MAX);
  }

  /** Forgets outputs that no longer exist; their clients are left to time out or reconnect. */
  retain(exists: (outputId: string) => boolean): void {
    for (const id of [...this.channels.keys()]) if (!exists(id) && this.channels.get(id)!.subscriberCount === 0) this.channels.delete(id);
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
    let cursor: ChannelCursor | undefined;
    let polledHost: string | undefined;
    const channel = this.channel(outputId);
    while (!this.closed && channel.subscriberCount > 0 && this.channels.get(outputId) === channel) {
      const host = this.deps.hostOfOutput(outputId);
      if (host === undefined || host === this.deps.localName) {
        cursor = undefined;
        polledHost = undefined;
        await delay(RETRY_DELAY_MS);
        continue;
      }
      if (host !== polledHost) cursor = undefined;
      polledHost = host;
      try {
        const reply = await this.deps.pollRemote(host, { outputId, waitMs: this.deps.pollWaitMs, ...(cursor === undefined ? {} : { cursor }) });
        for (const entry of reply.entries) channel.apply(entry);
        cursor = { epoch: reply.epoch, seq: reply.seq };
      } catch (error) {
        this.deps.log.debug({ outputId, host, err: (error as Error).message }, 'output poll failed');
        await delay(RETRY_DELAY_MS);
      }
    }
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
