// The cluster core's persisted state (its table, change and transfer progress), kept in the
// node's `local` sublevel and synced before the shell carries out any effect that depends on it.

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
