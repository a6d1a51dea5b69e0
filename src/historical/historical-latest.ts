// Reads the last values per key of a tsr stream for a query planned with `latest`
// (block-row-plan.ts): each partition's answer from one of its owners (latest-values.ts;
// the answers this node keeps for its own partitions are taken as they are, without a
// read or a wait: a promise per partition cost more than the merge), the newest per key
// and field kept, and one row per key made of those values, which the query's grouping
// then takes as it would take every payload: each `last` of a key is the one value its
// row holds.

import type { BlockRowPlan } from './block-row-plan.js';
import { fromAnOwner, type HistoricalSource, type OwnerChoice } from './historical-reader.js';
import { type LatestEntry, type LatestRequest, mergeLatest } from './latest-values.js';
import { setField } from '../lib/json.js';

export interface HistoricalLatestDeps extends OwnerChoice {
  /** This node's kept answer of a partition, when it keeps one and serves reads (no read, no wait). */
  latestKept(request: LatestRequest): LatestEntry[] | undefined;
  latestLocal(request: LatestRequest): Promise<LatestEntry[]>;
  latestRemote(node: string, request: LatestRequest): Promise<LatestEntry[]>;
}

/** Partitions asked at once. */
const CONCURRENCY = 16;

/** Yields one row per key: its key value and the last value of each field (absent when it has none). */
export async function* readLatestRows(deps: HistoricalLatestDeps, source: HistoricalSource, latest: NonNullable<BlockRowPlan['latest']>): AsyncGenerator<Record<string, unknown>[]> {
  const requestOf = (partition: number): LatestRequest => ({ stream: source.stream, partition, key: latest.key, fields: latest.fields });
  const answers: LatestEntry[][] = [];
  const unanswered: number[] = [];
  for (let partition = 0; partition < source.ringSize; partition += 1) {
    const kept = deps.ownersOf(partition, source.replicas).includes(deps.localName) ? deps.latestKept(requestOf(partition)) : undefined;
    if (kept === undefined) unanswered.push(partition);
    else answers.push(kept);
  }
  for (let start = 0; start < unanswered.length; start += CONCURRENCY) {
    const partitions = unanswered.slice(start, start + CONCURRENCY);
    answers.push(
      ...(await Promise.all(
        partitions.map((partition) => {
          const request = requestOf(partition);
          return fromAnOwner(deps, partition, source, () => deps.latestLocal(request), (owner) => deps.latestRemote(owner, request));
        }),
      )),
    );
  }
  const rows = mergeLatest(answers, latest.fields.length).map((entry) => {
    const row: Record<string, unknown> = {};
    if (entry.key !== null) setField(row, latest.key, entry.key);
    entry.slots.forEach((slot, index) => {
      if (slot !== null) setField(row, latest.fields[index]!, slot.value);
    });
    return row;
  });
  if (rows.length > 0) yield rows;
}
