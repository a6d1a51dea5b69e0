// The definitions store: every definition (streams and their parts, tenants, vendors, …)
// is one key with a version (docs/storage.md, "One database per node"). Reads come from memory:
// definitions are few and small, and every node holds all of them. Writes to one key are
// serialised, check the version a client sent, assign the next version, and are synced to
// disk before they are acknowledged. A deleted key keeps a tombstone so that its version
// keeps rising: the cluster converges on the highest version, and a delete must win over
// the write it follows.

import { assert } from '../lib/assert.js';
import { VersionConflictError } from '../lib/errors.js';
import type { Database } from './database.js';
import { parseJson, stringifyJson } from '../lib/json.js';

export interface Definition<T = unknown> {
  key: string;
  /** Opaque to clients; sent as Service-Config-Version. */
  version: string;
  value: T;
}

interface StoredRecord {
  version: number;
  /** undefined: deleted (a tombstone). */
  value: unknown;
}

/** How a key changed: from which version to which, and whether this node made the change (as its coordinator) or applied another's. */
export interface DefinitionChange {
  fromVersion: number | undefined;
  toVersion: number;
  coordinated: boolean;
}

export type DefinitionListener = (key: string, definition: Definition | undefined, change?: DefinitionChange) => void;

/** A stored key as peers exchange it: its version, and its value or a tombstone. */
export interface DefinitionRecord {
  key: string;
  version: number;
  /** undefined with `deleted`. */
  value: unknown;
  deleted: boolean;
}

/** What services read and write definitions through, on a lone node or in a cluster. */
export interface Definitions {
  get<T>(key: string): Definition<T> | undefined;
  list<T>(prefix: string): Array<Definition<T>>;
  put<T>(key: string, value: T, expectedVersion?: string): Promise<Definition<T>>;
  /** Returns the tombstone's version, or undefined when there was nothing to delete. */
  delete(key: string, expectedVersion?: string): Promise<string | undefined>;
  onChange(listener: DefinitionListener): () => void;
}

export class DefinitionStore implements Definitions {
  private readonly byKey = new Map<string, StoredRecord>();
  private readonly writeQueues = new Map<string, Promise<unknown>>();
  private readonly listeners = new Set<DefinitionListener>();

  private constructor(private readonly database: Database) {}

  static async open(database: Database): Promise<DefinitionStore> {
    const store = new DefinitionStore(database);
    for await (const [key, text] of database.kv.iterator()) {
      store.byKey.set(key, parseRecord(key, text));
    }
    return store;
  }

  get<T>(key: string): Definition<T> | undefined {
    const record = this.byKey.get(key);
    if (record === undefined || record.value === undefined) return undefined;
    return { key, version: String(record.version), value: record.value as T };
  }

  /** Live definitions whose key starts with `prefix`, in key order. */
  list<T>(prefix: string): Array<Definition<T>> {
    const out: Array<Definition<T>> = [];
    for (const [key, record] of this.byKey) {
      if (key.startsWith(prefix) && record.value !== undefined) {
        out.push({ key, version: String(record.version), value: record.value as T });
      }
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  /**
   * Stores `value` under `key`. With `expectedVersion`, refuses (409) unless it equals the
   * stored version; a key that does not exist has no version, so any sent version conflicts.
   */
  put<T>(key: string, value: T, expectedVersion?: string): Promise<Definition<T>> {
    return this.serialised(key, async () => {
      this.checkVersion(key, expectedVersion);
      const from = this.byKey.get(key)?.version;
      const version = (from ?? 0) + 1;
      await this.persist(key, { version, value });
      // Writes of one key run one at a time (serialised): nothing changed it meanwhile.
      assert(this.byKey.get(key)?.version === version, () => `definition ${key} at version ${this.byKey.get(key)?.version} after writing ${version}`);
      const definition = { key, version: String(version), value };
      this.notify(key, definition, { fromVersion: from, toVersion: version, coordinated: true });
      return definition;
    });
  }

  /** Deletes `key`; returns the tombstone's version, or undefined when there was nothing. */
  delete(key: string, expectedVersion?: string): Promise<string | undefined> {
    return this.serialised(key, async () => {
      this.checkVersion(key, expectedVersion);
      const current = this.byKey.get(key);
      if (current === undefined || current.value === undefined) return undefined;
      const version = current.version + 1;
      await this.persist(key, { version, value: undefined });
      assert(this.byKey.get(key)?.version === version, () => `definition ${key} at version ${this.byKey.get(key)?.version} after deleting at ${version}`);
      this.notify(key, undefined, { fromVersion: current.version, toVersion: version, coordinated: true });
      return String(version);
    });
  }

  /** Every key with its version, tombstones included: what a joining node receives. */
  records(): DefinitionRecord[] {
    return [...this.byKey].map(([key, record]) => toRecord(key, record));
  }

  record(key: string): DefinitionRecord | undefined {
    const record = this.byKey.get(key);
    return record === undefined ? undefined : toRecord(key, record);
  }

  /**
   * Applies a record written elsewhere if its version is higher than ours (every
   * node applies the highest version it sees, so all converge). Returns whether it applied.
   */
  applyRemote(incoming: DefinitionRecord): Promise<boolean> {
    return this.serialised(incoming.key, async () => {
      const current = this.byKey.get(incoming.key);
      if (current !== undefined && current.version >= incoming.version) return false;
      const value = incoming.deleted ? undefined : incoming.value;
      await this.persist(incoming.key, { version: incoming.version, value });
      assert(this.byKey.get(incoming.key)?.version === incoming.version, () => `definition ${incoming.key} at version ${this.byKey.get(incoming.key)?.version} after applying ${incoming.version}`);
      const change = { fromVersion: current?.version, toVersion: incoming.version, coordinated: false };
      this.notify(incoming.key, value === undefined ? undefined : { key: incoming.key, version: String(incoming.version), value }, change);
      return true;
    });
  }

  /** Listeners run after a change is durable. */
  onChange(listener: DefinitionListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private checkVersion(key: string, expectedVersion: string | undefined): void {
    if (expectedVersion === undefined) return;
    const current = this.get(key)?.version;
    if (current !== expectedVersion) throw new VersionConflictError(key, expectedVersion, current);
  }

  private async persist(key: string, record: StoredRecord): Promise<void> {
    const text = stringifyJson(record.value === undefined ? { version: record.version, deleted: true } : record);
    // Definitions are small and bounded (limits.tenantDefinitionBytesMax), and every node
    // needs them: the floor keeps room for them (docs/storage.md).
    await this.database.batch([{ type: 'put', sublevel: this.database.kv, key, value: text }], { sync: true, belowFloor: true });
    this.byKey.set(key, record);
  }

  private notify(key: string, definition: Definition | undefined, change: DefinitionChange): void {
    for (const listener of this.listeners) listener(key, definition, change);
  }

  /** Runs `task` after every earlier write to the same key has settled. */
  private serialised<R>(key: string, task: () => Promise<R>): Promise<R> {
    const previous = this.writeQueues.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.catch(() => undefined);
    this.writeQueues.set(key, settled);
    void settled.then(() => {
      if (this.writeQueues.get(key) === settled) this.writeQueues.delete(key);
    });
    return next;
  }
}

function toRecord(key: string, record: StoredRecord): DefinitionRecord {
  return { key, version: record.version, value: record.value, deleted: record.value === undefined };
}

function parseRecord(key: string, text: string): StoredRecord {
  const parsed = parseJson(text) as { version?: unknown; value?: unknown; deleted?: unknown };
  if (typeof parsed.version !== 'number' || !Number.isSafeInteger(parsed.version) || parsed.version < 1) {
    throw new Error(`definitions store: key ${key} has no valid version`);
  }
  return { version: parsed.version, value: parsed.deleted === true ? undefined : parsed.value };
}

/** Keys are '/'-joined parts; names never contain '/' (names.ts), so prefixes are exact. */
export function definitionKey(...parts: string[]): string {
  return parts.join('/');
}
