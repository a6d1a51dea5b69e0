import { expect } from 'vitest';
import { ScriptError } from '../../src/scripting/sandbox.js';

/** Awaits a promise that must reject with a ScriptError, and returns that error. */
export async function scriptFailure(promise: Promise<unknown>): Promise<ScriptError> {
  const error: unknown = await promise.then(
    () => undefined,
    (rejection: unknown) => rejection,
  );
  expect(error).toBeInstanceOf(ScriptError);
  return error as ScriptError;
}
