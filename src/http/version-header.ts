// Service-Config-Version (docs/platform-decisions.md, "Versions"): older clients send and read
// the same header as Valo-Config-Version, so requests may carry either and responses carry
// both.

import type Koa from 'koa';
import { BadRequestError } from '../lib/errors.js';

export function expectedVersion(ctx: Koa.Context): string | undefined {
  const value = ctx.get('Service-Config-Version') || ctx.get('Valo-Config-Version');
  if (value === '') return undefined;
  if (value.length > 64) throw new BadRequestError('Service-Config-Version is longer than 64 characters');
  return value;
}

export function setVersionHeaders(ctx: Koa.Context, version: string | undefined): void {
  if (version === undefined) return;
  ctx.set('Service-Config-Version', version);
  ctx.set('Valo-Config-Version', version);
}
