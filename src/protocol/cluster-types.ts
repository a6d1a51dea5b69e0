// The cluster core's vocabulary (docs/cluster.md, "A pure core"). It lives below
// both the cluster and the peer layer, as raftpb does under etcd's raft
// and its transport: the peer layer carries these messages and tables, the cluster core
// (src/cluster-core) acts on them, and neither imports the other for it. The core is a
// deterministic state machine per node: `core.step(input)` returns effects, and the shell
// (gRPC, LevelDB, Koa) carries them out in order. Time enters only through `tick` inputs.
// The same core runs in the seeded simulation (test/sim) and in the real node (node.ts).
//
// Data placement: a stream's payload lives in partition p (streams/partitioner.ts) and is owned by
// the first `replicas` nodes of ring.range(`partition-${p}`) over the Joined nodes. Owners
// depend only on (p, replicas), never on the stream, so the core plans transfers in
// "slots": a slot is one (partition, replicas) pair in use by some persisted stream.

export type NodeState = 'Pending' | 'Joining' | 'Joined' | 'Leaving' | 'Left';

/** The allowed edges of a node's state; anything else is a broken invariant. */
export const NODE_STATE_EDGES: Readonly<Record<NodeState, readonly NodeState[]>> = {
  Pending: ['Joining'],
  Joining: ['Joined'],
  Joined: ['Leaving'],
  Leaving: ['Left'],
  Left: [],
};

export interface Member {
  name: string;
  /** Base64 of the ed25519 public key. */
  publicKey: string;
  address: string;
  /** Peer (gRPC) port. */
  port: number;
  httpPort: number;
  zone: string;
  state: NodeState;
  /**
   * Rises each time the node itself announces another address or port (a restart on other
   * ports). Tables merge a member's address by the higher incarnation, so the announcement
   * spreads without a new epoch. Absent: 0.
   */
  incarnation?: number;
}

/** A (partition, replicas) pair in use by at least one persisted stream. */
export interface Slot {
  partition: number;
  replicas: number;
}

export type TransferRepo = 'KV' | 'ssr' | 'tsr';

export interface TransferPlan {
  /** Unique across the cluster: `${changeId}/${repo}/${from}>${to}`. */
  id: string;
  repo: TransferRepo;
  from: string;
  to: string;
  /** The slots whose data moves (empty for KV: everything moves). */
  slots: Slot[];
  complete: boolean;
  /** Reported by the target; 0..100, only ever rises. */
  percentComplete: number;
  bytes: number;
  records: number;
}

export interface MembershipChange {
  id: string;
  kind: 'join' | 'leave';
  node: string;
  /** The slots in use when the change was planned. */
  slots: Slot[];
  transfers: TransferPlan[];
  /**
   * The node in motion has made its final sync once every transfer completed:
   * a joining node pulled from the current owners what the transfers may have
   * missed (a write that landed behind a transfer's read, a source that lacked a hinted
   * record); a leaving node holds no hints and pushed its data to the next owners once
   * more. The change completes only then. Merges as an or, like a transfer's `complete`.
   */
  finalSynced?: boolean;
}

/**
 * The replicated node table. `epoch` rises by one on every change; a node applies a table
 * only if its epoch is higher than the one it has (ties: see core).
 */
export interface Membership {
  epoch: number;
  members: Member[];
  change: MembershipChange | undefined;
  /**
   * Membership commands accepted while a change was in flight, in the order they start
   * (docs/cluster.md, "Several changes"). Only the admin authority adds to it; each entry
   * leaves it when it starts (its node is then in the table as Pending, or Leaving), or
   * when it can no longer start (`queueDropped`). Absent: empty.
   */
  queue?: QueuedCommand[];
  /** Ids of queued commands refused when their turn came: a merge never brings them back. */
  queueDropped?: string[];
}

/** A command waiting in the queue: `q<epoch>.<n>`, the epoch at which it was accepted and its place in it. */
export interface QueuedCommand {
  id: string;
  command: AdminCommand;
}

/** Opaque to the core: what a source read for one chunk, carried to the target unchanged. */
export interface ChunkData {
  /** The encoded records (the shell's format). */
  bytes: Uint8Array;
  records: number;
  /** Where the next read continues (the last key read); opaque to the core. */
  cursor: string;
}

/** Messages between cores. The shell signs and carries them; the core never sees a forgery. */
export type PeerMessage =
  /** `damaged`: the sender's data awaits a refill (see 'damage' below). */
  | { type: 'membership'; membership: Membership; damaged?: boolean }
  /**
   * `at`: where the sender listens and its incarnation. A receiver that knows an older
   * incarnation takes the address, so a node that moved is found even by a peer that
   * missed its table (and could not be told: it would answer at the old address).
   */
  /**
   * `news` and `newsDigest`: how much the sender's table says of the change in flight and
   * the queue, and a hash of what (tableNews): a peer at the same epoch that knows less,
   * or other things, asks for the table.
   */
  | {
      type: 'heartbeat';
      epoch: number;
      at?: AnnouncedAddress;
      damaged?: boolean;
      news?: number;
      newsDigest?: number;
      /** Members the sender has not heard from for a failure timeout, and for how long (ms): why a transfer waits. */
      unreachable?: UnreachablePeer[];
      /** The sender's run, new at each start of its process (CoreBootstrap.run). */
      run?: number;
    }
  /** Pending node → coordinator: its repositories are open, it can receive data. */
  | { type: 'ready'; changeId: string }
  /**
   * Target → source: send chunks of the transfer starting at `seq`, reading after `cursor`.
   * `repeat`: asked again only because nothing came (the stall timer, or the source heard
   * from again), with no chunk discarded: the source may let the chunks it sent on an
   * intact stream arrive instead of sending them twice (docs/cluster.md, "Transfers").
   */
  | { type: 'transfer-request'; transfer: TransferPlan; seq: number; cursor: string | undefined; repeat?: true }
  /**
   * `fromCursor` is the cursor the source read this chunk after (the `cursor` of its
   * read-chunk). The target stores a chunk only if it continues exactly where the last
   * stored chunk ended: after a re-request, chunks of an older send can still arrive, and
   * with writes in between their boundaries differ, so seq alone could leave a gap.
   */
  | { type: 'transfer-chunk'; transferId: string; seq: number; chunk: ChunkData; last: boolean; totalEstimate: number; fromCursor: string | undefined }
  /** Target → source: chunks up to and including `seq` are durable on the target. */
  | { type: 'transfer-ack'; transferId: string; seq: number }
  /** Target → coordinator: progress, and completion when `complete`. */
  | { type: 'transfer-progress'; transferId: string; percentComplete: number; bytes: number; records: number; complete: boolean }
  /** The node in motion → coordinator: its final sync is done (MembershipChange.finalSynced). */
  | { type: 'final-synced'; changeId: string };

/** A node's own address as it announces it (Member's address fields and incarnation). */
export interface AnnouncedAddress {
  address: string;
  port: number;
  httpPort: number;
  incarnation: number;
}

export type AdminCommand =
  | { type: 'add'; member: Omit<Member, 'state'> }
  | { type: 'remove'; name: string };

export type AdminResult = { ok: true; membership: Membership } | { ok: false; status: 400 | 404 | 409; message: string };

/** A member a node has not heard from for `forMs` (at least its failure timeout). */
export interface UnreachablePeer {
  node: string;
  forMs: number;
}

export type CoreInput =
  | { type: 'tick'; now: number }
  /** An admin command that reached this node's core (the shell forwards it to the coordinator). */
  | { type: 'admin'; requestId: string; command: AdminCommand }
  | { type: 'receive'; from: string; message: PeerMessage }
  /** Source side: the shell read the chunk asked for by a read-chunk effect; `totalEstimate` 0 while not counted yet. */
  | { type: 'chunk-read'; transferId: string; seq: number; chunk: ChunkData; last: boolean; totalEstimate: number }
  /** Target side: the chunk of a store-chunk effect is durable, with its `progress`. */
  | { type: 'chunk-stored'; transferId: string; seq: number }
  /**
   * The first input after a (re)start, before any other: the progress entries the shell
   * stored with chunks (store-chunk's `progress`). The core resumes each transfer from
   * the further of this and its persisted state.
   */
  | { type: 'resume'; incoming: DurableIncoming[] }
  /** Source side: the shell could not read the chunk (after its own retries); the target asks again. */
  | { type: 'chunk-read-failed'; transferId: string; seq: number }
  /** Source side: the stream that carried chunks to `node` closed; the chunks on it unacked may be lost. */
  | { type: 'transfer-stream-closed'; node: string }
  /** Target side: the shell could not store the chunk (after its own retries); it is asked for again. */
  | { type: 'chunk-store-failed'; transferId: string; seq: number }
  /**
   * The shell of the node in motion: its final sync is done (a joining node pulled from the
   * current owners; a leaving node keeps no hints and pushed to the next owners). The core
   * tells the coordinator until the table shows it.
   */
  | { type: 'final-sync-done'; changeId: string }
  /** The shell could not reach a peer for a send (gRPC error): feeds the failure detector. */
  | { type: 'unreachable'; node: string }
  /** Streams changed: the slots in use now. */
  | { type: 'slots'; slots: Slot[] }
  /**
   * This node's data was found damaged (true) or is refilled (false). Its tables and
   * heartbeats say so, and no coordinator waives a leaver's hand-off while an owner is
   * damaged: the leaver may hold the only intact copy.
   */
  | { type: 'damage'; damaged: boolean };

export type CoreEffect =
  | { type: 'send'; to: string; message: PeerMessage }
  /** Make the core's durable state (persistedState()) durable before any later effect runs. */
  | { type: 'persist' }
  | { type: 'read-chunk'; transfer: TransferPlan; seq: number; cursor: string | undefined }
  /**
   * Store the chunk's records in one synced write, then answer chunk-stored. `progress` is
   * the transfer's entry to resume from once this chunk is stored: the shell stores it in
   * the same write, always with the `last` chunk and otherwise as often as it likes (an
   * entry is never ahead of the records; one behind them costs a restart chunks fetched
   * again). Records and that entry are durable together, with one fsync and no persist in
   * between.
   */
  | { type: 'store-chunk'; transfer: TransferPlan; seq: number; chunk: ChunkData; progress: DurableIncoming; last: boolean }
  /** Delete this node's data of these slots: it no longer owns them and the new owners have it. */
  | { type: 'drop'; repo: 'ssr' | 'tsr'; slots: Slot[] }
  | { type: 'node-state'; node: string; state: NodeState }
  | { type: 'availability'; node: string; available: boolean }
  /**
   * A peer's heartbeat carries another run than its last: it started again since, maybe
   * within a failure timeout, unseen as unavailable. What it was writing has no answer.
   */
  | { type: 'restarted'; node: string }
  | { type: 'admin-result'; requestId: string; result: AdminResult }
  /** A queued command could not start when its turn came and left the queue (the shell logs it). */
  | { type: 'queued-refused'; id: string; command: AdminCommand; message: string }
  /** The membership this node acts on changed (the shell rebuilds its router and node table). */
  | { type: 'membership-changed'; membership: Membership };

/** What survives a crash: the core is rebuilt from it with `restart`. */
export interface PersistedCoreState {
  membership: Membership;
  /**
   * Target side: per incoming transfer, the last durable chunk and where to resume, as of
   * the last persist. Chunks stored since may carry newer entries of their own (`resume`).
   */
  incoming: DurableIncoming[];
}

/** Where an incoming transfer resumes: its last durable chunk and the cursor after it. */
export interface DurableIncoming {
  transferId: string;
  seqAcked: number;
  cursor: string | undefined;
  /** Records and bytes durable so far: keep percentComplete rising across a restart. */
  records?: number;
  bytes?: number;
}

export interface CoreConfig {
  name: string;
  heartbeatIntervalMs: number;
  /** A peer not heard from for this long is unavailable. */
  failureTimeoutMs: number;
  /** A transfer with no progress for this long is requested again from its last ack. */
  transferStallMs: number;
  /** Chunks a source sends ahead of the target's acks. */
  transferWindowChunks: number;
}

/** One row of GET /cluster/transfers (spec, "Data transfer action"). */
export interface TransferAction {
  type: 'repo_data_transfer';
  repo: string;
  from: string;
  to: string;
  complete: boolean;
  percentComplete: number;
  /** Repair runs (src/repair) add their own counts beside these. */
  info: { id: string; bytes: number; payloads: number; partitions: number } & Record<string, unknown>;
}
