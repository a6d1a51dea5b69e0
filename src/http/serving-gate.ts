// Requests a node cannot judge yet are answered 503 with Retry-After, never with an
// answer from a view that may be wrong: a Pending or Joining node has not
// received the cluster's definitions (it would say "tenant does not exist"), a node that
// just restarted has not yet shown its table is current (it may have been removed while it
// was down), and a Left node serves nothing. Cluster administration, monitoring, the brain
// interface and internal reads stay open: they are how an operator sees why. The reasons
// are one list (ops/readiness.ts) that GET /ready answers with too.

import type Koa from 'koa';
import { TributaryError } from '../lib/errors.js';

/** Paths answered whatever the node's state. */
const ALWAYS_OPEN = [/^\/$/, /^\/cluster(\/|$)/, /^\/output\/cluster$/, /^\/monitoring(\/|$)/, /^\/api\/v1(\/|$)/, /^\/_internal(\/|$)/, /^\/(health|ready|metrics|docs|console)(\/|$)/, /^\/_cat(\/|$)/];

export const RETRY_AFTER_SECONDS = 1;

/** `notServing()` says why this node cannot serve data requests now, or undefined when it can. */
export function servingGate(notServing: () => string | undefined): Koa.Middleware {
  return async (ctx, next) => {
    const why = ALWAYS_OPEN.some((open) => open.test(ctx.path)) ? undefined : notServing();
    if (why === undefined) return next();
    ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
    throw new TributaryError(503, 'NODE_NOT_SERVING', why);
  };
}
