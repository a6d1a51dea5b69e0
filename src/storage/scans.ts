// Key walking shared by the repositories: both key their records "<stream>/<partition>/…".

import { assert } from '../lib/assert.js';
import type { BatchOperation, Sublevel } from './database.js';
import { prefixEnd } from './database.js';
import { encodePartition, PARTITION_DIGITS } from './repository.js';

export function streamPrefix(stream: string): string {
  return `${stream}/`;
}

/** The partitions of `stream` that hold data (or just `only`), each with its key prefix. */
export async function partitionRanges(
  sublevel: Sublevel,
  stream: string,
  only: number | undefined,
): Promise<Array<[number, string]>> {
  if (only !== undefined) return [[only, `${streamPrefix(stream)}${encodePartition(only)}/`]];
  const ranges: Array<[number, string]> = [];
  const base = streamPrefix(stream);
  let from = base;
  // Seek from partition to partition instead of reading every key: one seek per partition.
  for (;;) {
    const keys = await sublevel.keys({ gte: from, lt: prefixEnd(base), limit: 1 }).all();
    const key = keys[0];
    if (key === undefined) return ranges;
    const hex = key.slice(base.length, base.length + PARTITION_DIGITS);
    const partition = parseInt(hex, 16);
    // Keys are written with the partition in PARTITION_DIGITS hex digits (repository.ts).
    assert(Number.isInteger(partition) && partition >= 0, `key ${key} holds no partition`);
    ranges.push([partition, `${base}${hex}/`]);
    from = `${base}${hex}/\u007f`;
  }
}

export async function countKeysByPartition(sublevel: Sublevel, stream: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  for (const [partition, prefix] of await partitionRanges(sublevel, stream, undefined)) {
    let count = 0;
    const iterator = sublevel.keys({ gte: prefix, lt: prefixEnd(prefix) });
    try {
      for (;;) {
        const batch = await iterator.nextv(1000);
        if (batch.length === 0) break;
        count += batch.length;
      }
    } finally {
      await iterator.close();
    }
    assert(!counts.has(partition), `partition ${partition} of ${stream} counted twice`);
    counts.set(partition, count);
  }
  return counts;
}

export async function holdsAnyKey(sublevel: Sublevel, stream: string): Promise<boolean> {
  const prefix = streamPrefix(stream);
  const keys = await sublevel.keys({ gte: prefix, lt: prefixEnd(prefix), limit: 1 }).all();
  assert(keys.length <= 1, `${keys.length} keys read for a limit of 1`);
  return keys.length > 0;
}

/** Keys of one partition without its prefix, in key order, read in batches. */
export async function partitionKeySuffixes(sublevel: Sublevel, stream: string, partition: number): Promise<string[]> {
  const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
  const suffixes: string[] = [];
  const iterator = sublevel.keys({ gte: prefix, lt: prefixEnd(prefix) });
  try {
    for (let keys = await iterator.nextv(1000); keys.length > 0; keys = await iterator.nextv(1000)) {
      for (const key of keys) {
        assert(key.startsWith(prefix), () => `key ${key} read outside ${prefix}`);
        suffixes.push(key.slice(prefix.length));
      }
    }
  } finally {
    await iterator.close();
  }
  return suffixes;
}

/** Up to `limit` [key suffix, value] of one partition after the suffix `after`, in key order. */
export async function entriesAfter(sublevel: Sublevel, stream: string, partition: number, after: string | undefined, limit: number): Promise<Array<[string, string]>> {
  const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
  const entries = await sublevel.iterator({ ...(after === undefined ? { gte: prefix } : { gt: prefix + after }), lt: prefixEnd(prefix), limit }).all();
  assert(entries.length <= limit, `${entries.length} entries read for a limit of ${limit}`);
  return entries.map(([key, value]) => [key.slice(prefix.length), value]);
}

/** Operations that delete these key suffixes of one partition. */
export function deleteOperations(sublevel: Sublevel, stream: string, partition: number, suffixes: readonly string[]): BatchOperation[] {
  const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
  // A suffix is a key within the partition: an empty one would name the partition's prefix itself.
  assert(suffixes.every((suffix) => suffix.length > 0), `an empty key deleted in ${prefix}`);
  return suffixes.map((suffix) => ({ type: 'del', sublevel, key: prefix + suffix }));
}

/** The values under prefix + suffix for each suffix (undefined where nothing is stored). */
export async function valuesAt(sublevel: Sublevel, stream: string, partition: number, suffixes: readonly string[]): Promise<Array<string | undefined>> {
  const prefix = `${streamPrefix(stream)}${encodePartition(partition)}/`;
  assert(suffixes.every((suffix) => suffix.length > 0), `an empty key read in ${prefix}`);
  return sublevel.getMany(suffixes.map((suffix) => prefix + suffix));
}
