// A server-sent-events reader for tests of query outputs: collects every `data:` message
// as parsed JSON, and waits, bounded, for what a test expects.

export interface OutputMessage {
  type: 'sos' | 'increment' | 'eos';
  schema?: { config: { key: string[] }; topDef: unknown };
  items?: Array<{ action: 'add' | 'update' | 'remove'; data: Record<string, unknown> }>;
}

export class SseClient {
  readonly messages: OutputMessage[] = [];
  /** Arrival time (performance.now) of each message. */
  readonly arrivals: number[] = [];
  private readonly controller = new AbortController();
  private opened!: () => void;
  readonly open = new Promise<void>((resolve) => (this.opened = resolve));
  status = 0;
  private ended!: (error?: Error) => void;
  /**
   * Resolves the moment the first `eos` arrives (a bench times bounded queries by it, where
   * waitFor's polling would add up to its interval); rejects if the stream closes before.
   */
  readonly eos = new Promise<void>((resolve, reject) => (this.ended = (error) => (error === undefined ? resolve() : reject(error))));
  private bodyEnded!: () => void;
  /** Resolves when the server ends the response (or the connection fails). */
  readonly finished = new Promise<void>((resolve) => (this.bodyEnded = resolve));
  /** The server ended the response. */
  done = false;
  /** The `id:` of the last event that had one (what an EventSource sends back as Last-Event-ID). */
  lastEventId: string | undefined;

  private constructor(readonly url: string) {
    this.eos.catch(() => undefined);
  }

  /** Connects and resolves once the response headers (and the opening comment) arrived. */
  static async connect(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const client = new SseClient(url);
    void client.read(headers);
    await client.open;
    return client;
  }

  /** The rows of every `add` so far, in order. */
  adds(): Record<string, unknown>[] {
    return this.items().filter((item) => item.action === 'add').map((item) => item.data);
  }

  items(): Array<{ action: string; data: Record<string, unknown> }> {
    return this.messages.flatMap((message) => message.items ?? []);
  }

  async waitFor(what: string, done: (client: SseClient) => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done(this)) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.messages).slice(0, 1500)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    this.controller.abort();
  }

  private async read(headers: Record<string, string>): Promise<void> {
    try {
      await this.readBody(headers);
    } finally {
      this.done = true;
      this.bodyEnded();
    }
  }

  private async readBody(headers: Record<string, string>): Promise<void> {
    try {
      const response = await fetch(this.url, { signal: this.controller.signal, headers: { accept: 'text/event-stream', ...headers } });
      this.status = response.status;
      this.opened();
      if (response.body === null || response.status !== 200) return;
      const decoder = new TextDecoder();
      // The text of the event being received, in pieces: a large message (a bounded
      // query's whole result) comes in many chunks, and only each new chunk is searched
      // for the blank line that ends it.
      let pieces: string[] = [];
      let pendingNewline = false;
      for await (const chunk of response.body) {
        const text = decoder.decode(chunk as Uint8Array, { stream: true });
        let from = 0;
        if (pendingNewline && text.startsWith('\n')) {
          // The blank line was split between two chunks: the event ended with the last one.
          this.dispatch(pieces.join('').slice(0, -1));
          pieces = [];
          from = 1;
        }
        for (let end = text.indexOf('\n\n', from); end >= 0; end = text.indexOf('\n\n', from)) {
          pieces.push(text.slice(from, end));
          this.dispatch(pieces.join(''));
          pieces = [];
          from = end + 2;
        }
        if (from < text.length) pieces.push(text.slice(from));
        pendingNewline = from < text.length && text.endsWith('\n');
      }
      this.ended(new Error(`${this.url}: the stream closed before eos`));
    } catch (error) {
      this.opened();
      this.ended(error as Error);
    }
  }

  /** One event's text (without its blank line): each `data:` line is a message. */
  private dispatch(event: string): void {
    for (const line of event.split('\n')) {
      if (line.startsWith('id:')) this.lastEventId = line.slice(3).trim();
      if (!line.startsWith('data:')) continue;
      const message = JSON.parse(line.slice(5).trim()) as OutputMessage;
      this.messages.push(message);
      this.arrivals.push(performance.now());
      if (message.type === 'eos') this.ended();
    }
  }
}
