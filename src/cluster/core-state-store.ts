// The cluster core's persisted state (its table, change and transfer progress), kept in the
// node's `local` sublevel and synced before the shell carries out any effect that depends on it.

import { closeSync, existsSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from '../log.js';
import type { Database } from '../storage/database.js';
import type { PersistedCoreState } from '../protocol/cluster-types.js';

const CORE_STATE_KEY = 'cluster-core';
const MEMBER_MARKER_FILE = 'cluster-member';

export async function loadCoreState(database: Database): Promise<PersistedCoreState | undefined> {
  const text = await database.local.get(CORE_STATE_KEY);
  return text === undefined ? undefined : (JSON.parse(text) as PersistedCoreState);
}

export async function saveCoreState(database: Database, state: PersistedCoreState): Promise<void> {
  await database.batch([{ type: 'put', sublevel: database.local, key: CORE_STATE_KEY, value: JSON.stringify(state) }], { sync: true });
  markMember(database);
}

/**
 * A file beside the database, written once the first table is durable: this folder's node
 * has been in a cluster. It lives outside the database so that damage to the database
 * cannot take it with the table.
 */
function markerOf(database: Database): string {
  return join(dirname(database.location), MEMBER_MARKER_FILE);
}

/** Databases whose folder is known to carry the marker (the check runs once per open). */
const marked = new WeakSet<Database>();

function markMember(database: Database): void {
  if (marked.has(database)) return;
  const path = markerOf(database);
  if (!existsSync(path)) {
    syncedWrite(path, `${new Date().toISOString()}\n`);
    // The new name must survive a power cut too.
    syncedWrite(dirname(path));
  }
  marked.add(database);
}

/** Writes `text` to the file (or, with none, opens the folder) and fsyncs it. */
function syncedWrite(path: string, text?: string): void {
  const fd = openSync(path, text === undefined ? 'r' : 'w');
  try {
    if (text !== undefined) writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** This folder's node has been in a cluster: its first table was durable once. */
export function wasMember(database: Database): boolean {
  return existsSync(markerOf(database));
}

/**
 * A node started without --join whose data folder had a table (the marker says so) but holds
 * none has lost it (damaged storage, issue 12). Starting a cluster of its own would split the
 * cluster in two, so it starts as --join does and waits for a member to admit it again, which
 * members do when it refuses them as strangers (cluster-shell.ts, readmit).
 */
export function joinIfTableLost<T extends { join: boolean }>(config: T, folder: { wasMember: boolean; hasTable: boolean }, log: Logger): T {
  if (config.join || !tableLost(folder)) return config;
  log.error('this data folder had a cluster table and holds none now (damaged storage?): this node starts no cluster of its own and waits for a member to admit it again');
  return { ...config, join: true };
}

/** The rule itself (the simulation applies it too): it was a member and holds no table. */
export function tableLost(folder: { wasMember: boolean; hasTable: boolean }): boolean {
  return folder.wasMember && !folder.hasTable;
}
