// Routes of the Streams table (spec, "Streams"): parse, call one service, shape the answer.

import Router from '@koa/router';
import type { IngestService } from '../../streams/ingest.js';
import { payloadSchema, payloadsOf } from '../../streams/ingest-checks.js';
import type { PartView, StreamDefinitions } from '../../streams/stream-definitions.js';
import { streamId, streamKey } from '../../streams/stream-id.js';
import type { StreamRuntime } from '../../streams/stream-runtime.js';
import type { Definition } from '../../storage/definition-store.js';
import { validate } from '../../lib/validation.js';
import { BadRequestError, NotFoundError } from '../../lib/errors.js';
import type { MoveStatus } from '../../streams/move-status.js';
import { expectedVersion, setVersionHeaders } from '../version-header.js';
import type Koa from 'koa';

export interface StreamRoutesDeps {
  definitions: StreamDefinitions;
  runtime: StreamRuntime;
  ingest: IngestService;
  /** How far the move of a stream's payloads to another repository has got (docs/storage.md). */
  moveStatus(streamKey: string): MoveStatus | undefined;
}

const STREAM = '/streams/:tenant/:collection/:name';
const INGEST_PATH = /^\/streams\/[^/]+\/[^/]+\/[^/]+\/?$/;

/** An ingest (POST of a stream): its body is kept as text for ingest to parse (jsonBodyMiddleware's keepsText). */
export function isIngestRequest(ctx: Koa.Context): boolean {
  return ctx.method === 'POST' && INGEST_PATH.test(ctx.path);
}

export function streamRoutes(deps: StreamRoutesDeps): Router {
  const router = new Router();
  definitionRoutes(router, deps.definitions);
  ingestRoutes(router, deps);
  repositoryRoutes(router, deps);
  return router;
}

const idOf = (ctx: Koa.Context) => streamId(ctx.params.tenant, ctx.params.collection, ctx.params.name);

/** The lists of collections and streams, and a stream's definition, taxonomy, tags and policy. */
function definitionRoutes(router: Router, definitions: StreamDefinitions): void {
  router.get('/streams/:tenant', (ctx) => {
    ctx.body = { instances: definitions.collections(ctx.params.tenant!) };
  });
  router.get('/streams/:tenant/:collection', (ctx) => {
    // `streams` is the spec's key; Valo 2017 answered `instances`, which its SDK's screens
    // read (docs/valo-compatibility.md): both, the same list.
    const streams = definitions.streams(ctx.params.tenant!, ctx.params.collection!);
    ctx.body = { streams, instances: streams };
  });

  router.get(STREAM, (ctx) => respond(ctx, definitions.getStream(idOf(ctx))));
  router.put(STREAM, async (ctx) => {
    respond(ctx, await definitions.putStream(idOf(ctx), ctx.request.body, expectedVersion(ctx)));
  });

  router.get(`${STREAM}/taxonomy`, (ctx) => respondPart(ctx, 'taxonomy', definitions.getTaxonomy(idOf(ctx))));
  router.put(`${STREAM}/taxonomy`, async (ctx) => {
    const definition = await definitions.putTaxonomy(idOf(ctx), ctx.request.body, expectedVersion(ctx));
    respondPart(ctx, 'taxonomy', definition);
  });

  router.get(`${STREAM}/tags`, (ctx) => respondPart(ctx, 'tags', definitions.getTags(idOf(ctx))));
  router.put(`${STREAM}/tags`, async (ctx) => {
    respondPart(ctx, 'tags', await definitions.putTags(idOf(ctx), ctx.request.body, expectedVersion(ctx)));
  });

  router.get(`${STREAM}/policy`, (ctx) => respond(ctx, definitions.getPolicy(idOf(ctx))));
  router.put(`${STREAM}/policy`, async (ctx) => {
    respond(ctx, await definitions.putPolicy(idOf(ctx), ctx.request.body, expectedVersion(ctx)));
  });
}

/** Payloads posted to a stream (ingest), and a payload run through the stream's tags. */
function ingestRoutes(router: Router, { runtime, ingest }: StreamRoutesDeps): void {
  router.post(STREAM, async (ctx) => {
    const failures = await ingestBody(ctx);
    if (failures.size === 0) {
      ctx.status = 200;
      ctx.body = '';
      return;
    }
    ctx.status = 500;
    ctx.body = Object.fromEntries([...failures].map(([index, msg]) => [String(index), { msg }]));
  });
  router.post(`${STREAM}/tags`, async (ctx) => {
    // The body itself, not the checked copy: a field named __proto__ stays a field.
    const payload = ctx.request.body as Record<string, unknown>;
    validate(payloadSchema, payload);
    const stream = await runtime.resolve(idOf(ctx));
    await stream.tags?.apply(payload);
    ctx.body = payload;
  });

  /** The body as bytes when the body middleware kept them (isIngestRequest), else as parsed. */
  function ingestBody(ctx: Koa.Context) {
    const bytes = ctx.request.bodyBytes;
    if (bytes !== undefined) return ingest.ingestBytes(idOf(ctx), bytes, idempotencyKey(ctx));
    return ingest.ingest(idOf(ctx), payloadsOf(ctx.request.body), idempotencyKey(ctx));
  }
}

/** A stream's repository, and the move of its payloads the last change started. */
function repositoryRoutes(router: Router, { definitions, moveStatus }: StreamRoutesDeps): void {
  router.get(`${STREAM}/repository`, (ctx) => respond(ctx, definitions.getRepository(idOf(ctx))));
  // The move the last change of repository started: each member's progress (docs/storage.md).
  router.get(`${STREAM}/repository/move`, (ctx) => {
    const id = idOf(ctx);
    definitions.getRepository(id);
    const status = moveStatus(streamKey(id));
    if (status === undefined) throw new NotFoundError(`the repository of /streams/${streamKey(id)} has not changed while it held payloads`);
    const { stream: _stream, ...move } = status;
    ctx.body = { move };
  });
  router.put(`${STREAM}/repository`, async (ctx) => {
    respond(ctx, await definitions.putRepository(idOf(ctx), ctx.request.body, expectedVersion(ctx)));
  });
}

const IDEMPOTENCY_KEY_LENGTH_MAX = 128;

/**
 * The Idempotency-Key header of a POST of payloads: a client that retries a batch whose outcome
 * it does not know sends the same key, and no payload is stored twice. Printable ASCII, at most
 * 128 characters.
 */
function idempotencyKey(ctx: Koa.Context): string | undefined {
  const key = ctx.get('idempotency-key');
  if (key === '') return undefined;
  if (key.length > IDEMPOTENCY_KEY_LENGTH_MAX || !/^[\x21-\x7e]+$/.test(key)) {
    throw new BadRequestError(`Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_LENGTH_MAX} printable ASCII characters without spaces`);
  }
  return key;
}

function respond(ctx: Koa.Context, definition: Definition<unknown> | PartView<unknown>): void {
  setVersionHeaders(ctx, definition.version);
  ctx.body = definition.value;
}

/** Taxonomy and tags are wrapped in their name, as the spec's bodies are. */
function respondPart(ctx: Koa.Context, name: string, definition: Definition<unknown> | PartView<unknown>): void {
  setVersionHeaders(ctx, definition.version);
  ctx.body = { [name]: definition.value };
}
