// Server-sent events: the connection opens with a comment line (so browsers fire onopen),
// each message is one JSON object on a `data:` line, and a comment every `keepAliveMs`
// keeps idle connections open through proxies. A client that stops reading is dropped
// once `clientBufferBytesMax` is waiting for it: the node never buffers without end.

import { PassThrough } from 'node:stream';
import type Koa from 'koa';
import { stringifyJson } from '../json.js';

export interface SseOptions {
  keepAliveMs: number;
  clientBufferBytesMax: number;
  /** Told when a connection opens and closes (metrics). */
  clients?: { opened(): void; closed(): void };
  /** Open channels, for the `actors` monitoring service (issue 13). */
  tracker?: SseTracker;
}

/** One open SSE client as monitoring shows it. */
export interface SseClientView {
  path: string;
  openedAt: string;
  messages: number;
  /** Bytes written but not yet taken by the client: its queue. */
  bufferedBytes: number;
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
    stream.end();
    resolveClosed();
  };
  const write = (text: string): boolean => {
    if (!open) return false;
    if (stream.readableLength > options.clientBufferBytesMax) {
      close();
      return false;
    }
    stream.write(text);
    return true;
  };
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  ctx.req.on('close', close);
  stream.on('error', close);
  options.clients?.opened();
  write(': connected\n\n');
  const send = (message: unknown): boolean => {
    messages += 1;
    return write(`data: ${stringifyJson(message)}\n\n`);
  };
  return { send, closed, close };
}
