// Server-sent events: the connection opens with a comment line (so browsers fire onopen),
// each message is one JSON object on a `data:` line, and a comment every `keepAliveMs`
// keeps idle connections open through proxies. A client that stops reading is dropped
// once `clientBufferBytesMax` is waiting for it: the node never buffers without end.

import { PassThrough } from 'node:stream';
import type Koa from 'koa';

export interface SseOptions {
  keepAliveMs: number;
  clientBufferBytesMax: number;
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
  let resolveClosed: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const close = () => {
    if (!open) return;
    open = false;
    clearInterval(keepAlive);
    stream.end();
    resolveClosed();
  };
  // What waits for the client: in the stream on both sides (writes queue on its writable
  // side once the pipe to the response stops reading) and in the response and its socket.
  // Reading only the readable side, as before issue 15, saw at most a high-water mark while
  // the writable side grew without bound.
  const backlogBytes = () => stream.writableLength + stream.readableLength + ctx.res.writableLength;
  const write = (text: string): boolean => {
    if (!open) return false;
    if (backlogBytes() > options.clientBufferBytesMax) {
      close();
      ctx.res.destroy();
      return false;
    }
    stream.write(text);
    return true;
  };
  const keepAlive = setInterval(() => write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  ctx.req.on('close', close);
  stream.on('error', close);
  write(': connected\n\n');
  return { send: (message) => write(`data: ${JSON.stringify(message)}\n\n`), closed, close };
}
