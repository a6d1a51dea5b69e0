// What the brain interface's services share: the keys they keep in the definitions store,
// the clock and randomness they are given (boundaries passed in), and a
// compare-and-set loop for read-modify-write of one key.

import { randomBytes, randomUUID } from 'node:crypto';
import { TributaryError } from '../lib/errors.js';
import type { Definition, Definitions } from '../storage/definition-store.js';
import { ProblemError } from './problems.js';

/** Keys in the definitions store, so every node of a cluster answers the same. */
export const KEYS = {
  accountPrefix: 'api/accounts/',
  brainPrefix: 'api/brains/',
  neuronTypesPrefix: 'api/neuron-types/',
  settings: 'api/settings',
  licencePool: 'api/licence-pool',
  licence: 'api/licence',
} as const;

export interface Environment {
  /** Wall-clock time, for createdAt/updatedAt and reservation ages. */
  now(): Date;
  randomBytes(size: number): Buffer;
  randomUUID(): string;
}

export const systemEnvironment: Environment = {
  now: () => new Date(),
  randomBytes: (size) => randomBytes(size),
  randomUUID: () => randomUUID(),
};

/** How often a compare-and-set is tried before the caller gets 503. */
export const CAS_ATTEMPTS_MAX = 60;
const CAS_BACKOFF_MS_MAX = 100;

export function isVersionConflict(error: unknown): boolean {
  return error instanceof TributaryError && error.code === 'VERSION_CONFLICT';
}

/**
 * Reads `key`, computes its next value and writes it only if nobody wrote it in between
 * (the definitions store's expectedVersion, checked by the key's coordinator in a cluster).
 * On a conflict it reads again: the winner's write reaches this node before long (the
 * coordinator pushes before it answers), so a short random back-off settles it.
 * `change` returns no value to write nothing. A key that does not exist yet is written
 * unconditionally: the store has no create-if-absent (see LicencePool.initialise).
 */
export async function compareAndSet<T, R>(
  store: Definitions,
  key: string,
  change: (current: Definition<T> | undefined) => { value: T; result: R } | { value?: undefined; result: R },
): Promise<R> {
  for (let attempt = 0; attempt < CAS_ATTEMPTS_MAX; attempt += 1) {
    const current = store.get<T>(key);
    const next = change(current);
    if (next.value === undefined) return next.result;
    try {
      await store.put<T>(key, next.value, current?.version);
      return next.result;
    } catch (error) {
      if (!isVersionConflict(error)) throw error;
      await sleep(Math.floor(Math.random() * Math.min(CAS_BACKOFF_MS_MAX, 5 * (attempt + 1))) + 1);
    }
  }
  throw new ProblemError('unavailable', `too many concurrent writes to ${key}; retry the request`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
