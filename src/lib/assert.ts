// Assertions: an assertion states an invariant of the code itself, never a check of outside
// input. Outside input is validated where it enters and refused with a 4xx (TributaryError);
// when an assertion fails, the code is wrong, so it throws an InvariantError, which no client
// can cause and the HTTP layer answers as 500.

export class InvariantError extends Error {
  readonly code = 'INVARIANT';

  constructor(message: string) {
    super(`invariant broken: ${message}`);
    this.name = 'InvariantError';
  }
}

/**
 * Throws an InvariantError when `condition` is false. Keep `condition` cheap: it runs in
 * production. In a loop over records or payloads, give the message as a function, so that it
 * is made only when the assertion fails.
 */
export function assert(condition: unknown, message: string | (() => string)): asserts condition {
  if (!condition) throw new InvariantError(typeof message === 'string' ? message : message());
}
