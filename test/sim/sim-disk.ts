// A node's storage in the shell simulation: what survives its crashes, and the storage ports
// the real shell and data plane use (chunks, the core's state, the replica, hints and their
// commits, partitions for repair), each taking virtual time and each able to fail. Synced
// writes (everything acknowledged) survive a crash; unsynced ones (dropped partitions,
// forgotten transfer progress) may be lost with it, as LevelDB loses writes without sync on a
// power cut. A write that fails leaves nothing behind.

import type { ChunkStore } from '../../src/cluster/cluster-shell.js';
import { tableIdentity } from '../../src/cluster/core-state-store.js';
import type { ChunkData, DurableIncoming, Membership, PersistedCoreState, TransferPlan } from '../../src/protocol/cluster-types.js';
import type { Committer, HintStorage } from '../../src/cluster/hint-keeper.js';
import type { FollowUpStorage, StoredFollowUp } from '../../src/cluster/write-follow-ups.js';
import type { FollowUpPart } from '../../src/cluster/write-messages.js';
import type { ReplicaStore } from '../../src/cluster/replica-writer.js';
import { digestKeys } from '../../src/repair/key-digest.js';
import type { LocalPartitions, RepairPartitionRef } from '../../src/repair/partition-sync.js';
import type { Damage } from '../../src/repair/repair-service.js';
import type { Hint, HintPayload } from '../../src/storage/hints.js';
import type { RepositoryName, StoredRecord } from '../../src/storage/repository.js';
import type { Prng } from './prng.js';
import type { Incarnation, VirtualWorld } from './virtual-world.js';

/** A chunk stores its transfer's progress entry with every this many (and with the last): resumes start behind the records. */
const PROGRESS_EVERY_CHUNKS = 3;

export interface DiskFaults {
  /** Chance that one storage operation fails (an I/O error). */
  ioFailRate: number;
  ioDelayMs: readonly [number, number];
  /** Chance that unsynced writes are lost at a crash. */
  unsyncedLossRate: number;
}

export class SimIoError extends Error {
  override name = 'SimIoError';
}

/** One durable storage operation, applied when its commit lands. */
type Operation = () => void;

/** What a node's disk holds across its incarnations. */
export class SimDiskState {
  coreState: PersistedCoreState | undefined;
  /** The table's copy beside the database (core-state-store.ts, the `cluster-table` file). */
  tableCopy: Membership | undefined;
  /** A table was once durable here (core-state-store.ts, the `cluster-member` marker). */
  member = false;
  /** The table as the database held it before its last save (damage may roll it back there). */
  olderCoreState: PersistedCoreState | undefined;
  readonly progress = new Map<string, DurableIncoming>();
  /** Records the simulation destroyed here and not stored here again since. */
  readonly destroyedHere = new Set<string>();
  /** Records by repository, then "stream|partition", then key (the writeId). */
  readonly records: Record<RepositoryName, Map<string, Map<string, StoredRecord>>> = { ssr: new Map(), tsr: new Map() };
  readonly kv = new Set<string>();
  readonly hints = new Map<string, { target: string; payload: HintPayload }>();
  /** Follow-ups of failed writes by key (write-follow-ups.ts), as a node's `local` sublevel holds them. */
  readonly followUps = new Map<string, FollowUpPart>();
  damage: Damage | undefined;
  hintSequence = 0;
  followUpSequence = 0;
  /** Storage operations that failed (simulated I/O errors), for the run's statistics. */
  ioErrors = 0;
  /** Records and chunk bytes of ssr and tsr that transfers stored here (the scale simulation's moved data). */
  transferredRecords = 0;
  transferredBytes = 0;
  /** Undo steps of writes not synced yet, newest last. */
  unsynced: Operation[] = [];

  partitionOf(repo: RepositoryName, stream: string, partition: number): Map<string, StoredRecord> {
    const key = `${stream}|${partition}`;
    let found = this.records[repo].get(key);
    if (found === undefined) this.records[repo].set(key, (found = new Map()));
    return found;
  }

  /** A record lands in its partition (a write, a transfer chunk, a repair). */
  keep(repo: RepositoryName, record: StoredRecord): void {
    this.partitionOf(repo, record.stream, record.partition).set(record.writeId, record);
    this.destroyedHere.delete(record.writeId);
  }

  recordCount(): number {
    let count = 0;
    for (const repo of ['ssr', 'tsr'] as const) for (const records of this.records[repo].values()) count += records.size;
    return count;
  }

  /** A synced write lands: everything written before it is durable too (one write-ahead log). */
  sync(): void {
    this.unsynced = [];
  }

  /** The crash: unsynced writes may be undone, newest first. */
  crash(lose: boolean): void {
    if (lose) for (const undo of this.unsynced.reverse()) undo();
    this.unsynced = [];
  }
}

/** The storage ports of one incarnation over its disk. */
export class SimDisk {
  constructor(
    readonly state: SimDiskState,
    private readonly world: VirtualWorld,
    private readonly owner: Incarnation,
    private readonly prng: Prng,
    private readonly faults: () => DiskFaults,
    /** Told before a partition is dropped (the simulation checks the hand-off). */
    private readonly onDrop: (repo: RepositoryName, stream: string, partition: number, held: readonly string[]) => void,
  ) {}

  /** One storage operation: done after an I/O delay, or failed; nothing when the node died first. */
  private io<T>(work: () => T, synced: boolean): Promise<T> {
    const faults = this.faults();
    const fail = this.prng.chance(faults.ioFailRate);
    return new Promise<T>((resolve, reject) => {
      this.world.schedule(this.world.now + this.prng.int(faults.ioDelayMs[0], faults.ioDelayMs[1]), () => {
        if (fail) {
          this.state.ioErrors += 1;
          return reject(new SimIoError('simulated I/O error'));
        }
        const result = work();
        if (synced) this.state.sync();
        resolve(result);
      }, this.owner);
    });
  }

  /**
   * As core-state-store.ts: the database first, then (one more write a crash can cut off)
   * the `cluster-member` marker and, when its epoch or members changed, the table's copy.
   */
  async saveCoreState(state: PersistedCoreState): Promise<void> {
    const copy = structuredClone(state);
    await this.io(() => {
      this.state.olderCoreState = this.state.coreState;
      this.state.coreState = copy;
    }, true);
    const copied = this.state.tableCopy;
    if (this.state.member && copied !== undefined && tableIdentity(copied) === tableIdentity(copy.membership)) return;
    await this.io(() => {
      this.state.member = true;
      this.state.tableCopy = structuredClone(copy.membership);
    }, true);
  }

  // ---- ChunkStore

  readonly chunks: ChunkStore & { dropPartition(repo: RepositoryName, stream: string, partition: number): Promise<void> } = {
    storedProgress: async () => [...this.state.progress.values()].map((entry) => ({ ...entry })),
    read: (transfer, after) => this.io(() => this.readChunk(transfer, after === '' ? undefined : after), false),
    store: (transfer, chunk, progress, last) => this.io(() => this.storeChunk(transfer, chunk, progress, last), true),
    forgetReadsAhead: () => undefined, // it reads no chunk ahead
    forgetProgress: async (changeId) => {
      const keep = changeId === undefined ? undefined : `${changeId}/`;
      for (const [id, entry] of [...this.state.progress]) {
        if (keep !== undefined && id.startsWith(keep)) continue;
        this.state.progress.delete(id);
        this.state.unsynced.push(() => this.state.progress.set(id, entry));
      }
    },
    dropPartition: (repo, stream, partition) =>
      this.io(() => {
        const held = this.state.partitionOf(repo, stream, partition);
        this.onDrop(repo, stream, partition, [...held.keys()]);
        const removed = new Map(held);
        held.clear();
        this.state.unsynced.push(() => removed.forEach((record, key) => held.set(key, record)));
      }, false),
  };

  /** The records of the transfer's slots (every stream of their replicas) after `after`, in key order. */
  private readChunk(transfer: TransferPlan, after: string | undefined): { chunk: ChunkData; last: boolean; totalEstimate: number } {
    const keys: string[] = [];
    if (transfer.repo === 'KV') {
      keys.push(...[...this.state.kv].sort());
    } else {
      const slots = new Set(transfer.slots.map((slot) => slot.partition));
      for (const [where, records] of this.state.records[transfer.repo]) {
        const [stream, partition] = splitWhere(where);
        if (!slots.has(partition) || !transfer.slots.some((slot) => slot.partition === partition && replicasOfStream(stream) === slot.replicas)) continue;
        for (const key of records.keys()) keys.push(`${where}|${key}`);
      }
      keys.sort();
    }
    const open = after === undefined ? keys : keys.filter((key) => key > after);
    const taken = open.slice(0, CHUNK_RECORDS);
    const payload = transfer.repo === 'KV' ? taken : taken.map((key) => this.recordAt(transfer.repo as RepositoryName, key));
    return {
      chunk: { bytes: new TextEncoder().encode(JSON.stringify(payload)), records: taken.length, cursor: taken.at(-1) ?? after ?? '' },
      last: open.length <= CHUNK_RECORDS,
      totalEstimate: keys.length,
    };
  }

  private recordAt(repo: RepositoryName, cursorKey: string): StoredRecord {
    const [stream, partition, key] = cursorKey.split('|') as [string, string, string];
    return this.state.partitionOf(repo, stream, Number(partition)).get(key)!;
  }

  /** A chunk's records; its progress entry only with the last chunk and every PROGRESS_EVERY_CHUNKS-th, as the node stores one only every so many bytes. */
  private storeChunk(transfer: TransferPlan, chunk: ChunkData, progress: DurableIncoming, last: boolean): void {
    const payload = JSON.parse(new TextDecoder().decode(chunk.bytes)) as unknown[];
    if (transfer.repo === 'KV') for (const key of payload as string[]) this.state.kv.add(key);
    else {
      for (const record of payload as StoredRecord[]) this.state.keep(transfer.repo, record);
      this.state.transferredRecords += payload.length;
      this.state.transferredBytes += chunk.bytes.length;
    }
    if (transfer.repo === 'KV' || last || progress.seqAcked % PROGRESS_EVERY_CHUNKS === 0) this.state.progress.set(progress.transferId, { ...progress });
  }

  // ---- ReplicaStore and the partitions repair compares

  readonly replica: ReplicaStore = {
    store: (repository, records) =>
      this.io(() => {
        for (const record of records) this.state.keep(repository, { ...record });
      }, true),
  };

  readonly partitions: LocalPartitions = {
    digest: async (part) => digestKeys(this.keysOf(part)),
    keys: async (part) => this.keysOf(part),
    records: async (part, keys) => {
      const held = this.state.partitionOf(part.repo, part.stream, part.partition);
      return keys.flatMap((key) => (held.has(key) ? [{ ...held.get(key)! }] : []));
    },
    store: (repo, records) => this.replica.store(repo, records),
  };

  private keysOf(part: RepairPartitionRef): string[] {
    return [...this.state.partitionOf(part.repo, part.stream, part.partition).keys()].sort();
  }

  // ---- Hints and their commits

  readonly hints: HintStorage = {
    add: (target, payload) => {
      const key = `${target}/${String(this.state.hintSequence++).padStart(12, '0')}`;
      const copy = structuredClone(payload);
      return [() => this.state.hints.set(key, { target, payload: copy })];
    },
    remove: (hints) => hints.map((hint) => () => void this.state.hints.delete(hint.key)),
    targets: () => [...new Set([...this.state.hints.values()].map((hint) => hint.target))].sort(),
    oldest: async (target, limit) =>
      [...this.state.hints]
        .filter(([, hint]) => hint.target === target)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .slice(0, limit)
        .map(([key, hint]): Hint => ({ key, target, bytes: 0, ...structuredClone(hint.payload) })),
  };

  // ---- Follow-ups of failed writes, committed with the committer

  readonly followUps: FollowUpStorage = {
    add: (part) => {
      const key = `follow-up/${String(this.state.followUpSequence++).padStart(12, '0')}`;
      const copy = structuredClone(part);
      return { key, operations: [() => void this.state.followUps.set(key, copy)] };
    },
    remove: (keys) => keys.map((key) => () => void this.state.followUps.delete(key)),
  };

  /** The follow-ups the disk holds, as FollowUpStore.open reads them at start. */
  storedFollowUps(): StoredFollowUp[] {
    return [...this.state.followUps].map(([key, part]) => ({ key, part: structuredClone(part) }));
  }

  readonly committer: Committer = {
    commit: (operations) => this.io(() => (operations as Operation[]).forEach((apply) => apply()), true),
  };

  hintedRecords(): number {
    let count = 0;
    for (const hint of this.state.hints.values()) count += hint.payload.records.length;
    return count;
  }
}

/** Records per chunk: small, so transfers take many chunks and can be cut in the middle. */
const CHUNK_RECORDS = 4;

function splitWhere(where: string): [string, number] {
  const bar = where.lastIndexOf('|');
  return [where.slice(0, bar), Number(where.slice(bar + 1))];
}

/** Simulated streams are named for their replicas: "sim/<repo>/r<replicas>". */
export function replicasOfStream(stream: string): number {
  return Number(stream.slice(stream.lastIndexOf('/r') + 2));
}
