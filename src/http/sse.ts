// Server-sent events: the connection opens with a comment line (so browsers fire onopen),
// each message is one JSON object on a `data:` line, and a comment every `keepAliveMs`
// keeps idle connections open through proxies. A client that stops reading is dropped
// once more than `clientBufferBytesMax` is still waiting for it after the turn of the event
// loop that wrote it: the node never buffers without end (at most the bound and one turn's
// messages), and a client that reads gets a message larger than the bound (the windows a
// historical query emits at its end) whole.

import { PassThrough } from 'node:stream';
import type Koa from 'koa';
import { stringifyJson } from '../lib/json.js';
import type { SseClientView } from '../monitoring/monitoring.js';

export interface SseOptions {
  keepAliveMs: number;
  clientBufferBytesMax: number;
  /** Told when a connection opens and closes (metrics). */
  clients?: { opened(): void; closed(): void };
  /** Open channels, for the `actors` monitoring service. */
  tracker?: SseTracker;
}

/** The SSE clients open on this node. */
export class SseTracker {
  private readonly open = new Set<() => SseClientView>();

  add(view: () => SseClientView): () => void {
    this.open.add(view);
    return () => this.open.delete(view);
  }

  clients(): SseClientView[] {
    return [...this.open].map((view) => view());
  }
}

export interface SseChannel {
  send(message: unknown): boolean;
  /** Sends a message given as its JSON text, with an event id when given (a client that reconnects sends it back as Last-Event-ID). */
  sendJson(json: string, eventId?: string): boolean;
  /** Resolves when the client goes away or is dropped. */
  closed: Promise<void>;
  close(): void;
}

export function openSse(ctx: Koa.Context, options: SseOptions): SseChannel {
  const stream = new PassThrough();
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.set('Content-Type', 'text/event-stream; charset=utf-8');
  ctx.set('Cache-Control', 'no-cache, no-transform');
  ctx.set('Connection', 'keep-alive');
  ctx.set('X-Accel-Buffering', 'no');
  ctx.status = 200;
  ctx.body = stream;

  let open = true;
  let messages = 0;
  const openedAt = new Date().toISOString();
  const untrack = options.tracker?.add(() => ({ path: ctx.path, openedAt, messages, bufferedBytes: stream.readableLength })) ?? (() => false);
  let resolveClosed: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const close = () => {
    if (!open) return;
    open = false;
    options.clients?.closed();
    untrack();
    clearInterval(keepAlive);
    if (turnEnd !== undefined) clearImmediate(turnEnd);
    stream.end();
    resolveClosed();
  };
  // What waits for the client: in the stream on both sides (writes queue on its writable
  // side once the pipe to the response stops reading) and in the response and its socket.
  // Reading only the readable side, as an earlier version did, saw at most a high-water mark while
  // the writable side grew without bound.
  const backlogBytes = () => stream.writableLength + stream.readableLength + ctx.res.writableLength;
  // Bytes written in this turn of the event loop: the client cannot have read them yet, so
  // they do not count against it until the turn is over.
  let turnBytes = 0;
  let turnEnd: NodeJS.Immediate | undefined;
  const write = (text: string): boolean => {
    if (!open) return false;
    if (backlogBytes() - turnBytes > options.clientBufferBytesMax) {
      close();
      ctx.res.destroy();
      return false;
    }
    stream.write(text);
    turnBytes += Buffer.byteLength(text);
    turnEnd ??= setImmediate(() => {
      turnBytes = 0;
      turnEnd = undefined;
    });
    return true;
  };
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  ctx.req.on('close', close);
  stream.on('error', close);
  options.clients?.opened();
  write(': connected\n\n');
  const sendJson = (json: string, eventId?: string): boolean => {
    messages += 1;
    return write(eventId === undefined ? `data: ${json}\n\n` : `id: ${eventId}\ndata: ${json}\n\n`);
  };
  const send = (message: unknown): boolean => sendJson(stringifyJson(message));
  return { send, sendJson, closed, close };
}
