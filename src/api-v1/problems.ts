// RFC 7807 problem documents for everything under /api/v1 (docs/brain-management-interface.md,
// "Errors"). Services throw TributaryErrors as everywhere else; this renderer, chosen by
// path prefix in the one error middleware, writes them as `application/problem+json`. Each
// problem has a stable code; its `type` is PROBLEM_TYPE_BASE + code and its `title` is fixed
// per code (RFC 7807 §3.1: the title does not change from occurrence to occurrence).

import { STATUS_CODES } from 'node:http';
import type Koa from 'koa';
import { TributaryError, type ErrorOptions, type ErrorShape } from '../lib/errors.js';

export const API_PREFIX = '/api/v1';
export const PROBLEM_TYPE_BASE = 'https://tributary.dev/problems/';
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Every problem this interface answers, with its status and title. */
export const PROBLEMS = {
  'invalid-request': { status: 400, title: 'Invalid request' },
  unauthenticated: { status: 401, title: 'Authentication required' },
  'admin-unauthenticated': { status: 401, title: 'Administrator authentication required' },
  'licence-brain-allowance-exceeded': { status: 402, title: 'Brain allowance of the licence exceeded' },
  'licence-feature-unavailable': { status: 402, title: 'Feature not included in the licence tier' },
  'api-disabled': { status: 403, title: 'Brain management API disabled' },
  'api-access-not-granted': { status: 403, title: 'API access not granted to this account' },
  'admin-disabled': { status: 403, title: 'Administration disabled on this node' },
  'not-found': { status: 404, title: 'Not found' },
  'method-not-allowed': { status: 405, title: 'Method not allowed' },
  conflict: { status: 409, title: 'Conflict' },
  'payload-too-large': { status: 413, title: 'Request body too large' },
  'unsupported-media-type': { status: 415, title: 'Unsupported media type' },
  'unknown-brain-template': { status: 422, title: 'Unknown brain template' },
  unavailable: { status: 503, title: 'Service unavailable' },
  'internal-error': { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** A problem of this interface: status and title come from its code. */
export class ProblemError extends TributaryError {
  constructor(code: ProblemCode, detail: string, options?: ErrorOptions) {
    super(PROBLEMS[code].status, code, detail, options);
  }
}

/** The shape of the document, as the OpenAPI document describes it. */
export interface ProblemDocument {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  [extension: string]: unknown;
}

// Codes of errors raised outside this interface (body parsing, routing, the definitions
// store, the peer layer) and the problem each one is.
const FOREIGN_CODES: Record<string, ProblemCode> = {
  BAD_REQUEST: 'invalid-request',
  NOT_FOUND: 'not-found',
  PAYLOAD_TOO_LARGE: 'payload-too-large',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported-media-type',
  VERSION_CONFLICT: 'conflict',
  STATE_CONFLICT: 'conflict',
  PEER_UNAVAILABLE: 'unavailable',
  PEER_BUSY: 'unavailable',
  INTERNAL: 'internal-error',
};

// Statuses whose meaning does not depend on who raised them. Anything else unnamed (501,
// say) is `about:blank` with the status phrase as title (RFC 7807 §4.2).
const BY_STATUS: Record<number, ProblemCode> = {
  400: 'invalid-request',
  404: 'not-found',
  405: 'method-not-allowed',
  409: 'conflict',
  413: 'payload-too-large',
  415: 'unsupported-media-type',
  500: 'internal-error',
  503: 'unavailable',
};

/** Details that steer the response instead of appearing in the document. */
export const WWW_AUTHENTICATE_DETAIL = 'wwwAuthenticate';

export function toProblem(error: ErrorShape, instance: string): ProblemDocument {
  const code = problemCode(error);
  const known = code === undefined ? undefined : PROBLEMS[code];
  const problem: ProblemDocument = {
    type: code === undefined ? 'about:blank' : PROBLEM_TYPE_BASE + code,
    title: known?.title ?? STATUS_CODES[error.status] ?? 'Error',
    status: error.status,
    detail: error.message,
    instance,
  };
  // Extension members (RFC 7807 §3.2) never replace the standard ones.
  for (const [name, value] of Object.entries(error.details ?? {})) {
    if (name !== WWW_AUTHENTICATE_DETAIL && !(name in problem)) problem[name] = value;
  }
  return problem;
}

function problemCode(error: ErrorShape): ProblemCode | undefined {
  if (error.code in PROBLEMS && PROBLEMS[error.code as ProblemCode].status === error.status) return error.code as ProblemCode;
  const foreign = FOREIGN_CODES[error.code];
  if (foreign !== undefined && PROBLEMS[foreign].status === error.status) return foreign;
  return BY_STATUS[error.status];
}

/** http/errors.ts's renderer for this interface's paths: RFC 7807 problem documents. */
export const problemRenderer = {
  pathPrefix: API_PREFIX,
  render(ctx: Koa.Context, error: ErrorShape): void {
    const problem = toProblem(error.status === 405 ? methodNotAllowed(ctx, error) : error, ctx.path);
    if (error.status === 401) {
      const challenge = error.details?.[WWW_AUTHENTICATE_DETAIL];
      ctx.set('WWW-Authenticate', typeof challenge === 'string' ? challenge : 'Bearer realm="tributary"');
    }
    ctx.status = error.status;
    ctx.body = JSON.stringify(problem);
    // After the body: a string body would otherwise set text/plain.
    ctx.type = PROBLEM_CONTENT_TYPE;
    ctx.set('Cache-Control', 'no-store');
  },
};

/** The router's 405 says only "Method Not Allowed"; the detail names what is allowed. */
function methodNotAllowed(ctx: Koa.Context, error: ErrorShape): ErrorShape {
  const allow = ctx.response.get('Allow');
  return allow === '' ? error : { ...error, message: `${ctx.method} is not allowed on ${ctx.path}; allowed: ${allow}` };
}
