// The cluster core's persisted state (its table, change and transfer progress), kept in the
// node's `local` sublevel and synced before the shell carries out any effect that depends on it.

import type { Logger } from '../log.js';
import type { Database } from '../storage/database.js';
import type { PersistedCoreState } from '../protocol/cluster-types.js';

const CORE_STATE_KEY = 'cluster-core';

export async function loadCoreState(database: Database): Promise<PersistedCoreState | undefined> {
  const text = await database.local.get(CORE_STATE_KEY);
  return text === undefined ? undefined : (JSON.parse(text) as PersistedCoreState);
}

export function saveCoreState(database: Database, state: PersistedCoreState): Promise<void> {
  return database.batch([{ type: 'put', sublevel: database.local, key: CORE_STATE_KEY, value: JSON.stringify(state) }], { sync: true });
}

/**
 * A node started without --join whose data folder was in use but holds no table has lost it
 * (damaged storage, issue 12). Starting a cluster of its own would split the cluster in two,
 * so it starts as --join does and waits for a member to admit it again, which members do
 * when it refuses them as strangers (cluster-shell.ts, readmit).
 */
export async function joinIfTableLost<T extends { join: boolean }>(config: T, database: Database, log: Logger): Promise<T> {
  if (config.join || Math.max(database.storedSequence, database.ledgerSequence) === 0) return config;
  if ((await loadCoreState(database)) !== undefined) return config;
  log.error('this data folder was in use but holds no cluster table (damaged storage?): this node starts no cluster of its own and waits for a member to admit it again');
  return { ...config, join: true };
}
