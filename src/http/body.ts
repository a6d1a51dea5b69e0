// Request bodies: JSON only, bounded in size and depth. Not JSON: 415; too large: 413; does
// not parse, or nests deeper than the limit: 400 (body-text.ts). A request without a body
// has `undefined` as its body. A route that parses its body elsewhere (ingest, which hands
// tsr batches to worker threads) is given its bytes as `bodyBytes` instead, bounded alike.

import type Koa from 'koa';
import getRawBody from 'raw-body';
import { BadRequestError, PayloadTooLargeError, UnsupportedMediaTypeError } from '../lib/errors.js';
import { stringifyJson } from '../lib/json.js';
import { parseBodyBytes } from '../lib/body-text.js';

declare module 'koa' {
  interface Request {
    body?: unknown;
    /** The body's bytes, undecoded, for the requests `keepsBytes` picks. */
    bodyBytes?: Buffer;
  }
}

// A client still sending when the 413 goes out sees a broken pipe instead of the answer;
// so an oversized body is read and dropped, up to this many times the limit, before the
// answer. Past that the connection is closed.
const DISCARD_FACTOR = 4;
const DISCARD_TIMEOUT_MS = 10_000;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export const DEFAULT_JSON_DEPTH_MAX = 128;

/** `keepsBytes`: the requests whose body is kept as bytes, for their route to decode and parse. */
export function jsonBodyMiddleware(bodyBytesMax: number, jsonDepthMax = DEFAULT_JSON_DEPTH_MAX, keepsBytes: (ctx: Koa.Context) => boolean = () => false): Koa.Middleware {
  return async (ctx, next) => {
    if (METHODS_WITH_BODY.has(ctx.method)) {
      const bytes = await readBody(ctx, bodyBytesMax);
      if (bytes !== undefined && keepsBytes(ctx)) ctx.request.bodyBytes = bytes;
      else ctx.request.body = bytes === undefined ? undefined : parseBodyBytes(bytes, jsonDepthMax);
    }
    await next();
  };
}

/** The body's bytes; undefined without one. */
async function readBody(ctx: Koa.Context, bodyBytesMax: number): Promise<Buffer | undefined> {
  const headers = ctx.req.headers;
  const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
  if (headers['transfer-encoding'] === undefined && (length === undefined || length === 0)) return undefined;
  // A body without a Content-Type is taken as JSON: the interface has no other kind.
  const type = ctx.request.type;
  if (type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
    throw new UnsupportedMediaTypeError(`Content-Type must be application/json, got ${type}`);
  }
  if (length !== undefined && length > bodyBytesMax) {
    await discard(ctx.req, bodyBytesMax * DISCARD_FACTOR);
    throw tooLarge(bodyBytesMax);
  }
  try {
    return await getRawBody(ctx.req, { limit: bodyBytesMax, length });
  } catch (error) {
    if ((error as { type?: string }).type === 'entity.too.large') {
      await discard(ctx.req, bodyBytesMax * DISCARD_FACTOR);
      throw tooLarge(bodyBytesMax);
    }
    throw new BadRequestError(`could not read the request body: ${(error as Error).message}`);
  }
}

/**
 * Writes object and array bodies as JSON ourselves: they may hold longs beyond 2^53 as
 * BigInt, which Koa's JSON.stringify refuses.
 */
export function jsonResponseMiddleware(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const body: unknown = ctx.body;
    if (body === null || typeof body !== 'object' || Buffer.isBuffer(body) || typeof (body as { pipe?: unknown }).pipe === 'function') return;
    const status = ctx.status;
    ctx.type = ctx.response.get('Content-Type') || 'application/json; charset=utf-8';
    ctx.body = stringifyJson(body);
    ctx.status = status;
  };
}

function tooLarge(bodyBytesMax: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the request body is larger than the limit of ${bodyBytesMax} bytes`);
}

function discard(request: Koa.Context['req'], bytesMax: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      request.off('data', onData);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > bytesMax) {
        request.pause();
        finish();
      }
    };
    const timer = setTimeout(finish, DISCARD_TIMEOUT_MS);
    if (request.readableEnded) return finish();
    request.on('data', onData);
    request.once('end', finish);
    request.once('error', finish);
    request.resume();
  });
}
