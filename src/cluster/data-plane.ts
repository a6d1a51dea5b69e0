// The data plane of a cluster node: how a write reaches every owner of its
// partition, where hints are kept and how they are replayed, how partitions are handed off
// before they are dropped, and anti-entropy repair; with the peer calls these answer. It is
// built from ports (a peer endpoint, storage, timers) by the cluster node's start
// (cluster-node.ts), which the node (src/node.ts) and the shell simulation (test/sim) both call.

import { assert } from '../lib/assert.js';
import { BadRequestError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { DefinitionRecord } from '../storage/definition-store.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { Timers } from '../lib/timers.js';
import { ClusterRepair } from '../repair/cluster-repair.js';
import { remotePartitions, remoteRuns, serveRepair } from '../repair/repair-peer.js';
import { localHolder, peerHolder, type LocalPartitions, type PartitionHolder, type PeerPartitions } from '../repair/partition-sync.js';
import { WriteFollowUps, type FollowUpStorage, type StoredFollowUp } from './write-follow-ups.js';
import { RecentReceipts } from './recent-receipts.js';
import { RepairService, type Damage, type RepairStream } from '../repair/repair-service.js';
import type { ChunkStore } from './cluster-shell.js';
import type { ClusterCore } from '../cluster-core/core.js';
import { writeOwners } from '../cluster-core/placement.js';
import type { Membership } from '../protocol/cluster-types.js';
import { fromWireRecord, readAllDefinitions, serveDefinitionReads } from '../replicated-definitions/definition-peers.js';
import { FOLLOW_UP_PARTS_MAX, FOLLOW_UP_TAKE_KEYS_MAX, FOLLOW_UPS_TAKE, HINT_STORE, WRITE_RECORDS, type FollowUpPart } from './write-messages.js';
import { HintKeeper, type Committer, type HintStorage } from './hint-keeper.js';
import { HintReplayer } from './hint-replayer.js';
import { PartitionHandOff } from './partition-handoff.js';
import { PartitionRouter } from './partition-router.js';
import type { DistributionPolicy } from '../streams/policy.js';
import { ReplicaWriter, storeReplicaWrite, type ReplicaStore } from './replica-writer.js';

export interface DataPlaneLimits {
  writeDeadlineMs: number;
  peerDeadlineMs: number;
  hintReplayIntervalMs: number;
  /** Background repair sweeps; 0: none. */
  repairIntervalMs: number;
  repairPacingMs: number;
}

export interface DataPlanePorts {
  localName: string;
  core: ClusterCore;
  endpoint: PeerEndpoint;
  /** The cluster shell's inputs this plane needs. */
  shell: {
    adopt(from: string, membership: Membership): Promise<void>;
    suspect(node: string): void;
    finalSynced(changeId: string): void;
    /** This node's data awaits a refill (true), or no longer (false). */
    damaged(damaged: boolean): void;
  };
  replica: ReplicaStore;
  partitions: LocalPartitions;
  hints: HintStorage;
  committer: Committer;
  /** Follow-ups of failed writes kept durably, and those the database held at start (write-follow-ups.ts). */
  followUps: { storage: FollowUpStorage; stored: readonly StoredFollowUp[] };
  /** The key under which `partitions.records` finds a record (ssr: its writeId; tsr: its block's key). */
  recordKey(repo: RepositoryName, record: StoredRecord): string;
  dropPartition(repo: RepositoryName, stream: string, partition: number): Promise<void>;
  /** Every definition this node holds, and applying definitions read from a peer. */
  definitions: { records(): DefinitionRecord[]; apply(records: DefinitionRecord[]): Promise<void> };
  persistDamage(damage: Damage | undefined): Promise<void>;
  /** Every persisted stream with its repository and placement. */
  streams(): RepairStream[];
  replicasOf(stream: string): number;
  timers: Timers;
  wallClock(): number;
  log: Logger;
  limits: DataPlaneLimits;
}

export interface DataPlane {
  router: PartitionRouter;
  keeper: HintKeeper;
  replayer: HintReplayer;
  handOff: PartitionHandOff;
  repair: RepairService;
  clusterRepair: ClusterRepair;
  followUps: WriteFollowUps;
  start(damage: Damage | undefined): void;
  stop(): void;
}


/**
 * Records stored for another node are kept (by key) this many write deadlines before its
 * newest write here: a write in flight when the writer died was sent within one
 * (recent-receipts.ts).
 */
const RECEIPTS_WINDOW_DEADLINES = 2;
/** ...and forgotten after this long even if the writer is never seen unavailable. */
const RECEIPTS_KEPT_MS = 30_000;
/** Keys of records kept so: ~2 s of replica writes at 100,000 records a second. */
const RECEIPT_KEYS_MAX = 200_000;

export function startDataPlane(ports: DataPlanePorts): DataPlane {
  const { localName, core, endpoint, limits } = ports;
  assert(limits.peerDeadlineMs > 0 && limits.repairIntervalMs >= 0 && limits.repairPacingMs >= 0, () => `data plane limits ${JSON.stringify(limits)}`);
  const writes = writeParts(ports);
  const { followUps, peerSides } = writes;
  const repair = new RepairService({
    localName, available: (name) => core.available(name), log: ports.log, membership: () => core.membership(), timers: ports.timers,
    local: ownedStores(ports.partitions, localName, () => core.membership(), (stream) => ports.replicasOf(stream)),
    streams: () => ports.streams(),
    peers: peerSides,
    persistDamage: (damage) => ports.persistDamage(damage),
    announceDamage: (damaged) => ports.shell.damaged(damaged),
    followUpAll: (streams) => {
      const parts = streams.flatMap((stream) => Array.from({ length: stream.ringSize }, (_, partition) => ({ repo: stream.repo, stream: stream.key, partition, replicas: stream.replicas })));
      void followUps.noteParts(parts);
    },
    refillDefinitions: () => readAllDefinitions(endpoint, ports.definitions, hintDelegates(core, localName), limits.peerDeadlineMs),
    intervalMs: limits.repairIntervalMs,
    pacingMs: limits.repairPacingMs,
    wallClock: () => ports.wallClock(),
  });
  const handOff = handOffParts(ports, writes, repair);
  writes.handOffRef.current = handOff;
  const replayer = new HintReplayer({
    localName, hints: ports.hints, committer: ports.committer, transport: endpoint, keeper: writes.keeper, replica: writes.replica,
    available: (name) => core.available(name), log: ports.log, timers: ports.timers, membership: () => core.membership(),
    adopt: (from, table) => ports.shell.adopt(from, table),
    replicasOf: (stream) => ports.replicasOf(stream),
    peerDeadlineMs: limits.peerDeadlineMs,
    intervalMs: limits.hintReplayIntervalMs,
  });
  const clusterRepair = new ClusterRepair({
    localName, repair, membership: () => core.membership(),
    streamExists: (key) => ports.streams().some((stream) => stream.key === key),
    ...remoteRuns(endpoint, limits.peerDeadlineMs),
  });
  serveDataPlane(endpoint, { core, localName, replica: writes.replica, keeper: writes.keeper, followUps: writes.followUps, partitions: ports.partitions, repair, definitions: ports.definitions });
  const parts = [replayer, followUps, handOff] as const;
  return {
    router: writes.router, keeper: writes.keeper, replayer, handOff, repair, clusterRepair, followUps,
    start(damage) {
      for (const part of parts) part.start();
      repair.start(damage);
    },
    stop() {
      for (const part of parts) part.stop();
      repair.stop();
    },
  };
}

/**
 * The write path: local stores (each waits for a delete of its partition under way), the
 * replica writer, the hint keeper, write follow-ups and the router over them.
 */
function writeParts(ports: DataPlanePorts) {
  const { localName, core, endpoint, limits, log, timers } = ports;
  // A write waits writeDeadlineMs for an owner, and follow-ups and hints retry every hintReplayIntervalMs: neither may be zero.
  assert(limits.writeDeadlineMs > 0 && limits.hintReplayIntervalMs > 0, `write deadline ${limits.writeDeadlineMs} ms, replay interval ${limits.hintReplayIntervalMs} ms`);
  // Every store waits for a delete of its partitions that is under way (partition-handoff.ts),
  // and every delete for the stores of its partition under way: a write routed while this
  // node still owned the partition must not land after the delete that followed.
  const handOffRef: { current: PartitionHandOff | undefined } = { current: undefined };
  const storing = new StoresInFlight();
  const replica: ReplicaStore = {
    store: async (repository, records) => {
      await handOffRef.current?.settle(repository, records);
      return storing.track(repository, records, ports.replica.store(repository, records));
    },
  };
  const available = (name: string) => core.available(name);
  const membership = () => core.membership();
  const writer = new ReplicaWriter({
    localName, replica, transport: endpoint, available, log,
    writeDeadlineMs: limits.writeDeadlineMs,
    epoch: () => membership().epoch,
    membership,
    adopt: (from, table) => ports.shell.adopt(from, table),
    suspect: (node) => ports.shell.suspect(node),
  });
  const keeper = new HintKeeper({
    localName, hints: ports.hints, committer: ports.committer, transport: endpoint, log,
    writeDeadlineMs: limits.writeDeadlineMs,
    goingAway: (node) => isLeaving(membership(), node),
    delegates: () => hintDelegates(core, localName),
  });
  const ownersOf = (policy: DistributionPolicy, partition: number) => writeOwners(membership(), { partition, replicas: policy.replicas });
  const peerSides = peerPartitions(endpoint, () => membership().epoch, limits.peerDeadlineMs);
  const followUps: WriteFollowUps = new WriteFollowUps({
    localName, membership, available, timers, log,
    holder: (node) => (node === localName ? ownedOnly(localHolder(node, ports.partitions), membership) : peerHolder(node, peerSides)),
    keyOf: (repo, record) => ports.recordKey(repo, record),
    storage: ports.followUps.storage,
    stored: ports.followUps.stored,
    committer: ports.committer,
    handOver: (): Promise<boolean> => handOverFollowUps(ports, followUps),
    receipts: new RecentReceipts({
      windowMs: RECEIPTS_WINDOW_DEADLINES * limits.writeDeadlineMs,
      keptMs: Math.max(RECEIPTS_KEPT_MS, RECEIPTS_WINDOW_DEADLINES * limits.writeDeadlineMs),
      keysMax: RECEIPT_KEYS_MAX,
      now: () => timers.now(),
      keyOf: (repo, record) => ports.recordKey(repo, record),
    }),
    intervalMs: limits.hintReplayIntervalMs,
  });
  const router = new PartitionRouter(ownersOf, writer, keeper, followUps);
  return { handOffRef, storing, replica, keeper, followUps, router, peerSides };
}

/** Partitions this node no longer owns are handed off (or caught up), then dropped. */
function handOffParts(ports: DataPlanePorts, writes: ReturnType<typeof writeParts>, repair: RepairService): PartitionHandOff {
  const { localName, core, limits } = ports;
  const remoteDigests = remotePartitions(ports.endpoint, limits.peerDeadlineMs).digests;
  return new PartitionHandOff({
    localName, log: ports.log, timers: ports.timers, membership: () => core.membership(),
    dropPartition: async (repo, stream, partition) => {
      await writes.storing.settled(repo, stream, partition);
      return ports.dropPartition(repo, stream, partition);
    },
    hintTargets: () => ports.hints.targets(),
    followUpsPending: () => writes.followUps.pending(),
    handOverFollowUps: () => handOverFollowUps(ports, writes.followUps),
    streams: () => ports.streams(),
    handOff: (part, replicas, owners, theirs) => repair.handOff(part, replicas, owners, theirs),
    catchUp: (part, replicas, owners, theirs) => repair.catchUp(part, replicas, owners, theirs),
    digests: async (owner, repo, stream, partitions) => (core.available(owner) ? remoteDigests(owner, repo, stream, partitions) : new Map()),
    localDigest: (part) => ports.partitions.digest(part),
    holds: async (repo, stream, partition) => (await ports.partitions.keys({ repo, stream, partition })).length > 0,
    refilling: () => repair.damaged() !== undefined,
    finalSynced: (changeId) => ports.shell.finalSynced(changeId),
    graceMs: 2 * limits.writeDeadlineMs,
    retryMs: limits.hintReplayIntervalMs,
  });
}

/**
 * Transfers as the data plane needs them: a node refilling damaged data is no transfer
 * source (a chunk read from it could miss what it lost; the target asks again later), and
 * a chunk stored into a partition waits for a delete of it that is under way.
 */
export function guardedChunks(chunks: ChunkStore, plane: () => DataPlane | undefined): ChunkStore {
  return {
    storedProgress: () => chunks.storedProgress(),
    read: (transfer, after) => {
      if (plane()?.repair.damaged() === undefined || transfer.repo === 'KV') return chunks.read(transfer, after);
      // A chunk read ahead before the damage was found is no chunk to send after the refill either.
      chunks.forgetReadsAhead();
      assert(transfer.repo === 'ssr' || transfer.repo === 'tsr', () => `a read of a ${transfer.repo} transfer refused for damage`);
      return Promise.reject(new Error('this node is refilling damaged data: it is no transfer source yet'));
    },
    store: async (transfer, chunk, progress, last) => {
      const handOff = plane()?.handOff;
      if (handOff !== undefined && transfer.repo !== 'KV') await handOff.settle(transfer.repo, handOff.partitionsOf(transfer.slots));
      return chunks.store(transfer, chunk, progress, last);
    },
    forgetProgress: (changeId) => chunks.forgetProgress(changeId),
    forgetReadsAhead: () => chunks.forgetReadsAhead(),
  };
}

/** The peer calls of replica writes, hinted hand-off and anti-entropy repair. */
function serveDataPlane(
  endpoint: PeerEndpoint,
  parts: {
    core: ClusterCore;
    localName: string;
    followUps: WriteFollowUps;
    replica: ReplicaStore;
    keeper: HintKeeper;
    partitions: LocalPartitions;
    repair: RepairService;
    definitions: { records(): DefinitionRecord[] };
  },
): void {
  const { keeper } = parts;
  endpoint.handle(WRITE_RECORDS, async (sender, write) => {
    await storeReplicaWrite(parts.core.membership(), parts.replica, parts.localName, write);
    parts.followUps.received(sender, write.repo, write.replicas, write.records);
    return {};
  });
  endpoint.handle(FOLLOW_UPS_TAKE, async (_sender, take) => {
    if (take.parts.length > FOLLOW_UP_PARTS_MAX) throw new BadRequestError(`FollowUpsTake: at most ${FOLLOW_UP_PARTS_MAX} parts, got ${take.parts.length}`);
    const keys = take.parts.reduce((sum, part) => sum + (part.keys?.length ?? 0), 0);
    if (keys > FOLLOW_UP_TAKE_KEYS_MAX) throw new BadRequestError(`FollowUpsTake: at most ${FOLLOW_UP_TAKE_KEYS_MAX} keys, got ${keys}`);
    for (const part of take.parts) {
      if (part.replicas < 1) throw new BadRequestError(`FollowUpsTake: replicas must be at least 1, got ${part.replicas}`);
    }
    // Durable here before the answer: the sender forgets them once answered.
    await parts.followUps.noteParts(take.parts);
    return {};
  });
  endpoint.handle(HINT_STORE, async (_sender, store) => {
    await keeper.keepHere(store.hints.map((entry) => (entry.repository === 'KV' ? { ...entry, records: entry.records.map(fromWireRecord) } : entry)));
    return {};
  });
  serveDefinitionReads(endpoint, parts.definitions);
  serveRepair(endpoint, { partitions: parts.partitions, repair: parts.repair });
}

/** The other owners' side of a repair exchange, over the peer port. */
function peerPartitions(endpoint: PeerEndpoint, epoch: () => number, deadlineMs: number): PeerPartitions {
  return {
    ...remotePartitions(endpoint, deadlineMs),
    // What an exchange gives another owner is a replica write, fenced by this node's epoch.
    push: async (peer, part, replicas, records) => void (await endpoint.call(peer, WRITE_RECORDS, { repo: part.repo, records: [...records], epoch: epoch(), replicas }, { deadlineMs })),
  };
}

/** Local stores under way, by partition: a delete of a partition waits for them. */
class StoresInFlight {
  private readonly stores = new Map<string, Set<Promise<unknown>>>();

  track(repo: RepositoryName, records: readonly { stream: string; partition: number }[], store: Promise<void>): Promise<void> {
    const keys = new Set(records.map((record) => `${repo}\n${record.stream}\n${record.partition}`));
    const settled = store.catch(() => undefined);
    for (const key of keys) {
      const set = this.stores.get(key) ?? new Set();
      set.add(settled);
      this.stores.set(key, set);
    }
    void settled.then(() => {
      for (const key of keys) {
        // Only this store's own settling removes it, and a set goes only once empty.
        assert(this.stores.get(key)?.has(settled) === true, () => `a store of ${key.replaceAll('\n', '/')} settled twice or untracked`);
        const set = this.stores.get(key);
        set?.delete(settled);
        if (set?.size === 0) this.stores.delete(key);
      }
    });
    return store;
  }

  async settled(repo: RepositoryName, stream: string, partition: number): Promise<void> {
    const set = this.stores.get(`${repo}\n${stream}\n${partition}`);
    if (set !== undefined) await Promise.all([...set]);
  }
}

/**
 * This node's side of a follow-up exchange, which stores only into a partition its table
 * still gives it: an exchange planned before a change completed must not refill what this
 * node has since dropped (a peer's side is fenced the same way by its WriteRecords check).
 */
function ownedOnly(holder: PartitionHolder, membership: () => Membership): PartitionHolder {
  return {
    ...holder,
    store: async (part, replicas, records) => {
      if (!writeOwners(membership(), { partition: part.partition, replicas }).includes(holder.name)) {
        throw new Error(`${holder.name} no longer owns partition ${part.partition} of ${part.stream} (epoch ${membership().epoch})`);
      }
      await holder.store(part, replicas, records);
    },
  };
}

/**
 * This node's partitions as repair sees them, storing only into a partition its table still
 * gives it (as a replica write and a follow-up do): a refill planned before a change
 * completed must not land after it, in a partition this node has given up (the shell
 * simulation found one, seed 1197 of 1001-2000, holding 3 records of a partition it no
 * longer owned once settled).
 */
function ownedStores(local: LocalPartitions, localName: string, membership: () => Membership, replicasOf: (stream: string) => number): LocalPartitions {
  return {
    digest: (part) => local.digest(part),
    keys: (part) => local.keys(part),
    records: (part, keys) => local.records(part, keys),
    store: async (repo, records) => {
      const table = membership();
      for (const where of new Set(records.map((record) => `${record.partition}\n${record.stream}`))) {
        const [partition, stream] = [Number(where.slice(0, where.indexOf('\n'))), where.slice(where.indexOf('\n') + 1)];
        if (!writeOwners(table, { partition, replicas: replicasOf(stream) }).includes(localName)) {
          throw new Error(`${localName} no longer owns partition ${partition} of ${stream} (epoch ${table.epoch})`);
        }
      }
      await local.store(repo, records);
    },
  };
}

/** A leaving node's follow-ups, to the first available member that takes them (FollowUpsTake). */
async function handOverFollowUps(ports: DataPlanePorts, followUps: WriteFollowUps): Promise<boolean> {
  const parts = withinTake(followUps.pendingParts());
  for (const delegate of hintDelegates(ports.core, ports.localName)) {
    // Handed to itself, the follow-ups would be forgotten with no one to run them.
    assert(delegate !== ports.localName, `${delegate} hands its follow-ups to itself`);
    try {
      await ports.endpoint.call(delegate, FOLLOW_UPS_TAKE, { parts }, { deadlineMs: ports.limits.peerDeadlineMs });
      await followUps.forget(parts);
      ports.log.info({ peer: delegate, partitions: parts.length }, 'leaving: follow-ups of failed writes handed to another member');
      return followUps.pending() === 0;
    } catch (error) {
      ports.log.debug({ err: error, peer: delegate }, 'follow-ups not taken by another member');
    }
  }
  return false;
}

/** The first parts that one FollowUpsTake may carry (at least one: a part holds at most FOLLOW_UP_KEYS_MAX keys). */
function withinTake(parts: readonly FollowUpPart[]): FollowUpPart[] {
  const taken: FollowUpPart[] = [];
  let keys = 0;
  for (const part of parts) {
    keys += part.keys?.length ?? 0;
    if (taken.length === FOLLOW_UP_PARTS_MAX || (taken.length > 0 && keys > FOLLOW_UP_TAKE_KEYS_MAX)) break;
    taken.push(part);
  }
  // At least one part goes (the hand-over ends), and never more than one message may carry.
  assert(taken.length >= 1 || parts.length === 0, 'a follow-up hand-over that takes no part');
  assert(taken.length <= FOLLOW_UP_PARTS_MAX, 'a follow-up hand-over past its parts bound');
  return taken;
}

/** Joined, available members other than this node, in name order: where hints may go. */
function hintDelegates(core: ClusterCore, localName: string): string[] {
  return core.membership().members.filter((member) => member.state === 'Joined' && member.name !== localName && core.available(member.name)).map((member) => member.name);
}

function isLeaving(membership: Membership, name: string): boolean {
  const state = membership.members.find((member) => member.name === name)?.state;
  return state === 'Leaving' || state === 'Left';
}
