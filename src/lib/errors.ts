// One error type for everything a client can cause. The HTTP layer maps it to a response;
// anything else that reaches the HTTP layer is a bug and answers 500 without details.

/** An error as a client may see it. */
export interface ErrorShape {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown> | undefined;
}

export interface ErrorOptions {
  cause?: unknown;
  /** Extra fields a client may rely on, merged into the error body. */
  details?: Record<string, unknown>;
}

export class TributaryError extends Error {
  readonly status: number;
  readonly code: string;
  /** Whether `message` may be shown to the client. */
  readonly expose: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(status: number, code: string, message: string, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = status;
    this.code = code;
    this.expose = status < 500;
    this.details = options.details;
  }
}

export class BadRequestError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(400, 'BAD_REQUEST', message, options);
  }
}

export class ForbiddenError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(403, 'FORBIDDEN', message, options);
  }
}

export class NotFoundError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(404, 'NOT_FOUND', message, options);
  }
}

/** A state conflict that is not about versions (e.g. changing ring_size of a stream with data). */
export class StateConflictError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(409, 'STATE_CONFLICT', message, options);
  }
}

export class PayloadTooLargeError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(413, 'PAYLOAD_TOO_LARGE', message, options);
  }
}

export class UnsupportedMediaTypeError extends TributaryError {
  constructor(message: string, options?: ErrorOptions) {
    super(415, 'UNSUPPORTED_MEDIA_TYPE', message, options);
  }
}

/**
 * The version a client sent does not match the stored one. Existing clients find the
 * current version in the body text as `Valo-Config-Version: <version>` followed by
 * whitespace, and retry with it, so the message carries that exact form.
 */
export class VersionConflictError extends TributaryError {
  readonly currentVersion: string | undefined;

  constructor(key: string, sentVersion: string, currentVersion: string | undefined) {
    const current = currentVersion ?? 'none';
    super(
      409,
      'VERSION_CONFLICT',
      `version conflict on ${key}: sent ${sentVersion}, current is ` +
        `Service-Config-Version: ${current} Valo-Config-Version: ${current} ` +
        '(retry with the current version)',
      { details: { currentVersion: currentVersion ?? null } },
    );
    this.currentVersion = currentVersion;
  }
}

/**
 * A start-up failure an operator can fix (a port taken, a data folder in use by another
 * node): the CLI prints its message as one line, without a stack.
 */
export class StartupError extends Error {
  override name = 'StartupError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
