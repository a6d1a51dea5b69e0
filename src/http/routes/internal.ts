// Internal reads of raw repository contents, served only with config `internalReads`:
// tests and operators use them to check what a node really stores, partition by partition.

import Router from '@koa/router';
import { BadRequestError } from '../../lib/errors.js';
import { streamId, streamKey } from '../../streams/stream-id.js';
import type { Repository, RepositoryName } from '../../storage/repository.js';
import { REPOSITORY_NAMES } from '../../storage/repository.js';

const PAYLOADS_MAX = 10_000;

export function internalRoutes(repositories: Record<RepositoryName, Repository>): Router {
  const router = new Router();

  router.get('/_internal/repos/:repo/:tenant/:collection/:name', async (ctx) => {
    const name = ctx.params.repo as RepositoryName;
    if (!REPOSITORY_NAMES.includes(name)) throw new BadRequestError(`unknown repository '${name}'`);
    const repository = repositories[name];
    const key = streamKey(streamId(ctx.params.tenant, ctx.params.collection, ctx.params.name));
    const counts = await repository.countByPartition(key);
    const body: Record<string, unknown> = {
      total: [...counts.values()].reduce((sum, count) => sum + count, 0),
      partitions: Object.fromEntries(counts),
    };
    if (ctx.query.payloads === 'true') {
      const payloads: unknown[] = [];
      for await (const record of repository.scan(key, { limit: PAYLOADS_MAX })) {
        payloads.push({ partition: record.partition, timestamp: record.timestamp, payload: record.payload });
      }
      body.payloads = payloads;
    }
    ctx.body = body;
  });

  // Every record's value of one top-level field, by partition: what the chaos suite's
  // checker compares (ids of a stream with hundreds of thousands of records).
  router.get('/_internal/repos/:repo/:tenant/:collection/:name/ids', async (ctx) => {
    const name = ctx.params.repo as RepositoryName;
    if (!REPOSITORY_NAMES.includes(name)) throw new BadRequestError(`unknown repository '${name}'`);
    const field = typeof ctx.query.field === 'string' ? ctx.query.field : 'id';
    const key = streamKey(streamId(ctx.params.tenant, ctx.params.collection, ctx.params.name));
    const partitions: Record<number, unknown[]> = {};
    for await (const record of repositories[name].scan(key)) {
      (partitions[record.partition] ??= []).push(Object.hasOwn(record.payload, field) ? (record.payload[field] ?? null) : null);
    }
    ctx.body = { partitions };
  });

  return router;
}
