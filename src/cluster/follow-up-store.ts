// The follow-ups of failed writes, kept in the node's `local` sublevel (docs/cluster.md,
// "Writes of unknown outcome"): one entry per note, under `follow-up/` and a sequence in hex,
// written (synced, through the group commit) before the failed write is answered and deleted
// once the owners are whole. A node killed before its follow-ups ran reads them back at its
// next start; without them a record could stay on one owner until the repair sweep.

import { assert } from '../lib/assert.js';
import type { Logger } from '../lib/log.js';
import { parseJson } from '../lib/json.js';
import { prefixEnd, type BatchOperation, type Database, type Sublevel } from '../storage/database.js';
import type { FollowUpStorage, StoredFollowUp } from './write-follow-ups.js';
import type { FollowUpPart } from './write-messages.js';

const FOLLOW_UP_PREFIX = 'follow-up/';
const SEQUENCE_DIGITS = 12;

export class FollowUpStore implements FollowUpStorage {
  private constructor(
    private readonly local: Sublevel,
    private sequence: number,
  ) {}

  /** The store and the notes it holds; an entry that is not a note is deleted (logged). */
  static async open(database: Database, log: Logger): Promise<{ storage: FollowUpStore; stored: StoredFollowUp[] }> {
    const stored: StoredFollowUp[] = [];
    const unreadable: string[] = [];
    let sequence = 0;
    for await (const [key, value] of database.local.iterator({ gte: FOLLOW_UP_PREFIX, lt: prefixEnd(FOLLOW_UP_PREFIX) })) {
      const number = parseInt(key.slice(FOLLOW_UP_PREFIX.length), 16);
      if (Number.isSafeInteger(number)) sequence = Math.max(sequence, number + 1);
      const part = partOf(value);
      if (part === undefined) unreadable.push(key);
      else stored.push({ key, part });
    }
    // The scan stayed within the follow-ups, and new notes number after every one read.
    assert(stored.every(({ key }) => key.startsWith(FOLLOW_UP_PREFIX)) && Number.isSafeInteger(sequence), 'a follow-up note read back from outside its keys');
    const store = new FollowUpStore(database.local, sequence);
    if (unreadable.length > 0) {
      // A note is about writes that failed: one that cannot be read is left to the repair sweep.
      log.warn({ entries: unreadable.length }, 'unreadable follow-ups of failed writes deleted: the repair sweep covers them');
      await database.batch(store.remove(unreadable) as BatchOperation[], { sync: false, belowFloor: true });
    }
    return { storage: store, stored };
  }

  add(part: FollowUpPart): { key: string; operations: BatchOperation[] } {
    assert(part.keys === undefined || part.keys.length > 0, 'a follow-up note of no keys');
    const key = FOLLOW_UP_PREFIX + (this.sequence++).toString(16).padStart(SEQUENCE_DIGITS, '0');
    assert(Number.isSafeInteger(this.sequence), `follow-up sequence ${this.sequence}`);
    const value = JSON.stringify({ repo: part.repo, stream: part.stream, partition: part.partition, replicas: part.replicas, ...(part.keys === undefined ? {} : { keys: part.keys }) });
    return { key, operations: [{ type: 'put', sublevel: this.local, key, value }] };
  }

  remove(keys: readonly string[]): BatchOperation[] {
    assert(keys.every((key) => key.startsWith(FOLLOW_UP_PREFIX)), 'a key outside the follow-ups deleted as one');
    return keys.map((key) => ({ type: 'del', sublevel: this.local, key }));
  }
}

/** A stored note, or undefined when the value is not one. */
function partOf(value: string): FollowUpPart | undefined {
  let parsed: unknown;
  try {
    parsed = parseJson(value);
  } catch {
    return undefined;
  }
  const part = parsed as Partial<FollowUpPart> | null;
  if (part === null || typeof part !== 'object' || (part.repo !== 'ssr' && part.repo !== 'tsr') || typeof part.stream !== 'string') return undefined;
  if (!Number.isInteger(part.partition) || part.partition! < 0 || !Number.isInteger(part.replicas) || part.replicas! < 1) return undefined;
  if (part.keys !== undefined && (!Array.isArray(part.keys) || part.keys.length === 0 || !part.keys.every((key) => typeof key === 'string'))) return undefined;
  return { repo: part.repo, stream: part.stream, partition: part.partition!, replicas: part.replicas!, ...(part.keys === undefined ? {} : { keys: part.keys }) };
}
