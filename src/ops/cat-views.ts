// The rows of GET /_cat/nodes, /_cat/transfers and /_cat/streams, and the columns they
// have (pure: the node's state in, rows out). `tributary status` prints the same rows.

import { ownersOf } from '../cluster-core/placement.js';
import type { Membership, Slot } from '../protocol/cluster-types.js';
import type { Cell, CatColumn } from './cat-table.js';
import type { StoreStats } from './store-stats.js';
import type { TransferView } from './transfer-watch.js';

export const NODE_COLUMNS: CatColumn[] = [
  { name: 'name', kind: 'text', description: 'node name' },
  { name: 'state', kind: 'text', description: 'Pending, Joining, Joined, Leaving or Left' },
  { name: 'available', kind: 'text', description: "true when the answering node's failure detector hears from it" },
  { name: 'coordinator', kind: 'text', description: '* on the membership coordinator' },
  { name: 'address', kind: 'text', description: 'advertised address' },
  { name: 'http', kind: 'number', description: 'HTTP port' },
  { name: 'peer', kind: 'number', description: 'peer (gRPC) port' },
  { name: 'zone', kind: 'text', description: 'zone' },
  { name: 'owns', kind: 'percent', description: 'share of the partitions in use that the node owns a replica of (effective ownership)' },
  { name: 'records', kind: 'number', description: 'stored records (ssr + tsr, every replica it holds); - when it did not answer' },
  { name: 'bytes', kind: 'bytes', description: 'size of its database files on disk; - when it did not answer' },
  { name: 'disk_free', kind: 'bytes', description: "bytes it may still write on its data folder's filesystem; - when it did not answer" },
  { name: 'disk_total', kind: 'bytes', description: "size of its data folder's filesystem; - when it did not answer" },
  { name: 'writable', kind: 'text', description: 'false while it refuses writes: its disk is below storage.diskFreeMinBytes, or a write failed and it waits for room (docs/storage.md)' },
];

export const TRANSFER_COLUMNS: CatColumn[] = [
  { name: 'id', kind: 'text', description: 'transfer id: change/repo/from>to' },
  { name: 'repo', kind: 'text', description: 'KV (definitions), ssr or tsr' },
  { name: 'from', kind: 'text', description: 'source node' },
  { name: 'to', kind: 'text', description: 'target node' },
  { name: 'state', kind: 'text', description: 'running, stalled or done' },
  { name: 'percent', kind: 'percent', description: 'percent complete (by records)' },
  { name: 'records', kind: 'number', description: 'records moved so far' },
  { name: 'bytes', kind: 'bytes', description: 'bytes moved so far' },
  { name: 'rate', kind: 'rate', description: 'bytes per second over the last 10 s (whole transfer once done)' },
  { name: 'eta', kind: 'duration', description: 'time left at that rate' },
  { name: 'elapsed', kind: 'duration', description: 'time since this node first saw it (until done)' },
  { name: 'reason', kind: 'text', description: 'why a stalled transfer makes no progress' },
];

export const STREAM_COLUMNS: CatColumn[] = [
  { name: 'stream', kind: 'text', description: 'tenant/collection/name' },
  { name: 'repo', kind: 'text', description: 'ssr or tsr' },
  { name: 'replicas', kind: 'number', description: 'replicas per partition' },
  { name: 'ring_size', kind: 'number', description: 'partitions' },
  { name: 'partitions', kind: 'number', description: 'partitions holding data' },
  { name: 'records', kind: 'number', description: 'payloads stored (per partition, the most any node holds, summed)' },
];

export interface StreamPlacement {
  key: string;
  repo: 'ssr' | 'tsr';
  replicas: number;
  ringSize: number;
}

/** Percent of `slots` each data-owning node holds a replica of (nodetool's "Owns (effective)"). */
export function ownership(membership: Membership, slots: readonly Slot[]): Map<string, number> {
  const held = new Map<string, number>();
  for (const slot of slots) for (const owner of ownersOf(membership, slot)) held.set(owner, (held.get(owner) ?? 0) + 1);
  const shares = new Map<string, number>();
  for (const member of membership.members) shares.set(member.name, slots.length === 0 ? 0 : (100 * (held.get(member.name) ?? 0)) / slots.length);
  return shares;
}

export function nodeRows(
  membership: Membership,
  available: (name: string) => boolean,
  coordinator: string | undefined,
  owns: ReadonlyMap<string, number>,
  stats: ReadonlyMap<string, StoreStats | undefined>,
): Array<Record<string, Cell>> {
  return [...membership.members]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((member) => {
      const stored = stats.get(member.name);
      return {
        name: member.name,
        state: member.state,
        available: member.state !== 'Left' && available(member.name),
        coordinator: member.name === coordinator ? '*' : '',
        address: member.address,
        http: member.httpPort,
        peer: member.port,
        zone: member.zone,
        owns: Math.round((owns.get(member.name) ?? 0) * 10) / 10,
        records: stored?.records ?? null,
        bytes: stored?.bytes ?? null,
        disk_free: stored?.disk?.freeBytes ?? null,
        disk_total: stored?.disk?.totalBytes ?? null,
        writable: stored?.disk?.writable ?? null,
      };
    });
}

export function transferRows(views: readonly TransferView[], nowMs: number): Array<Record<string, Cell>> {
  return views.map((view) => ({
    id: view.id,
    repo: view.repo,
    from: view.from,
    to: view.to,
    state: view.complete ? 'done' : view.stalled !== null ? 'stalled' : 'running',
    percent: view.percentComplete,
    records: view.records,
    bytes: view.bytes,
    rate: view.rateBytesPerSecond === null ? null : Math.round(view.rateBytesPerSecond),
    eta: view.etaSeconds === null ? null : Math.round(view.etaSeconds),
    elapsed: Math.round(((view.endedAtMs ?? nowMs) - view.startedAtMs) / 1000),
    reason: view.stalled,
  }));
}

/** Per stream: the partitions some node holds data of, and per partition the most any node holds. */
export function streamRows(streams: readonly StreamPlacement[], stats: ReadonlyMap<string, StoreStats | undefined>): Array<Record<string, Cell>> {
  return [...streams]
    .sort((a, b) => a.key.localeCompare(b.key))
    .map((stream) => {
      const most = new Map<string, number>();
      let answered = false;
      for (const stored of stats.values()) {
        if (stored === undefined) continue;
        answered = true;
        for (const [partition, count] of Object.entries(stored.partitions[stream.key] ?? {})) most.set(partition, Math.max(most.get(partition) ?? 0, count));
      }
      return {
        stream: stream.key,
        repo: stream.repo,
        replicas: stream.replicas,
        ring_size: stream.ringSize,
        partitions: answered ? [...most.values()].filter((count) => count > 0).length : null,
        records: answered ? [...most.values()].reduce((sum, count) => sum + count, 0) : null,
      };
    });
}
