// The damage a node found in its own data (storage/integrity.ts), kept across restarts
// until the refill from the other owners is done (repair-service.ts).

import type { Database } from '../storage/database.js';
import type { Damage } from './repair-service.js';

const DAMAGE_KEY = 'storage-damage';

export async function loadDamage(database: Database): Promise<Damage | undefined> {
  const text = await database.local.get(DAMAGE_KEY);
  return text === undefined ? undefined : (JSON.parse(text) as Damage);
}

export function saveDamage(database: Database, damage: Damage | undefined): Promise<void> {
  const operation =
    damage === undefined
      ? { type: 'del' as const, sublevel: database.local, key: DAMAGE_KEY }
      : { type: 'put' as const, sublevel: database.local, key: DAMAGE_KEY, value: JSON.stringify(damage) };
  // A small mark the floor keeps room for (docs/storage.md).
  return database.batch([operation], { sync: true, belowFloor: true });
}
