// The TypeScript side of proto/peer.proto: one type per message kind. A kind is the name of
// a proto message; an envelope's body is that message's encoding (codec.ts maps both ways).
// The core's messages are carried exactly as src/protocol/cluster-types.ts declares them.

import type { AdminCommand, AdminResult, Membership, NodeState, PeerMessage } from '../protocol/cluster-types.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import type { ScanPage, ScanRequest } from '../execution/historical-reader.js';
import type { BlockPageRequest } from '../execution/historical-blocks.js';
import type { LatestEntry, LatestRequest } from '../execution/latest-values.js';
import type { BlockPage } from '../storage/tsr.js';
import type { PollReply } from '../execution/output-channel.js';
import type { OutputPollRequest } from '../execution/output-registry.js';
import type { RunStatus } from '../execution/session-host.js';
import type { NodeDetails } from '../monitoring/monitoring.js';
import type { NodeHistory } from '../console/history.js';
import type { StoreStats } from '../ops/store-stats.js';
import type { LocalSearchRequest, LocalSearchResult } from '../search/local-search.js';

export type Empty = Record<string, never>;

export type TransferChunk = Extract<PeerMessage, { type: 'transfer-chunk' }>;
export type TransferAck = Extract<PeerMessage, { type: 'transfer-ack' }>;

export interface WriteRecords {
  repo: RepositoryName;
  records: StoredRecord[];
  /** The writer's membership epoch (an owner with a newer table refuses the write). */
  epoch: number;
  /** The stream's replicas: the slot the receiver checks it owns (NOT_OWNER otherwise). */
  replicas: number;
}

/** Hints for one target: stream records, or definitions (src/cluster/hint-keeper.ts). */
export type WireHintEntry =
  | { target: string; repository: RepositoryName; records: StoredRecord[] }
  | { target: string; repository: 'KV'; records: DefinitionRecord[] };

export interface HintStore {
  hints: WireHintEntry[];
}

export interface RepairPartition {
  repo: RepositoryName;
  stream: string;
  partition: number;
}

export interface RepairDigestReply {
  /** Three numbers per segment: keys, xor of hash one, xor of hash two. */
  segments: number[];
}

export interface RepairKeys extends RepairPartition {
  segments: number[];
}

export interface RepairFetch extends RepairPartition {
  keys: string[];
}

export interface RepairSweep {
  runId: string;
  /** undefined: every stream. */
  stream: string | undefined;
}

/** How far a repair run got on one node, or over all of them (summed). */
export interface RepairCounts {
  complete: boolean;
  partitionsTotal: number;
  partitionsDone: number;
  /** Exchanges in which digests differed. */
  partitionsCompared: number;
  recordsSent: number;
  recordsReceived: number;
  /** Exchanges that failed (a peer unreachable): the partition is tried in a later run. */
  failures: number;
}

export interface RepairStatusReply extends RepairCounts {
  /** False when the run never reached the node asked. */
  known: boolean;
}

export interface DefinitionWrite {
  key: string;
  valueJson: string;
  /** The Service-Config-Version the client sent, if any. */
  expectedVersion: string | undefined;
  delete: boolean;
}

export interface DefinitionWriteReply {
  /** undefined: a delete found nothing to delete. */
  version: string | undefined;
}

export interface DefinitionRecord {
  key: string;
  version: number;
  /** '' on a tombstone. */
  valueJson: string;
  deleted: boolean;
}

export interface DefinitionPush {
  records: DefinitionRecord[];
}

export interface Admit {
  /** The cluster's table, including the sender (whose key verifies this message). */
  membership: Membership;
  /** The Pending node's own key: it accepts only an Admit meant for it. */
  targetPublicKey: string;
}

/** The reply to Ping and to Admit. */
export interface NodeStatusReply {
  name: string;
  publicKey: string;
  state: NodeState;
  zone: string;
  httpPort: number;
  /** The node's advertised address and peer port: the identity proof binds them to its key. */
  address: string;
  port: number;
}

/** ExecutionStatusRead: the session whose queries' run statuses its host reports. */
export interface ExecutionStatusRead {
  tenant: string;
  sessionId: string;
  /** The host first makes the session run as stored (session-host.ts, reconcile). */
  settle: boolean;
}

export interface ExecutionStatusReply {
  queries: Array<{ queryId: string; status: RunStatus }>;
}

/** MonitoringRead: the service and filter are checked by the monitoring module that answers. */
export interface MonitoringRead {
  service: string;
  tenant: string;
  uri: string | undefined;
}

export interface LivePayloads {
  stream: string;
  payloadsJson: string;
}

export interface ErrorReply {
  status: number;
  code: string;
  message: string;
  details: Record<string, unknown> | undefined;
}

/** Every kind an envelope can carry, with its body type. */
export interface PeerBodies {
  CoreMessage: PeerMessage;
  Empty: Empty;
  WriteRecords: WriteRecords;
  WriteReply: Empty;
  DefinitionWrite: DefinitionWrite;
  DefinitionWriteReply: DefinitionWriteReply;
  DefinitionPush: DefinitionPush;
  AdminCommand: AdminCommand;
  AdminReply: AdminResult;
  Admit: Admit;
  AdmitReply: NodeStatusReply;
  Ping: Empty;
  PingReply: NodeStatusReply;
  SearchRead: LocalSearchRequest;
  SearchReply: LocalSearchResult;
  OutputPoll: OutputPollRequest;
  OutputPollReply: PollReply;
  ScanRead: ScanRequest;
  ScanReply: ScanPage;
  BlockRead: BlockPageRequest;
  BlockReply: BlockPage;
  LatestRead: LatestRequest;
  LatestReply: { entries: LatestEntry[] };
  ExecutionStatusRead: ExecutionStatusRead;
  ExecutionStatusReply: ExecutionStatusReply;
  StoreStatsRead: Empty;
  StoreStatsReply: StoreStats;
  MonitoringRead: MonitoringRead;
  MonitoringReply: NodeDetails;
  ConsoleHistoryRead: Empty;
  ConsoleHistoryReply: NodeHistory;
  HoldsDataRead: { stream: string };
  HoldsDataReply: { holds: boolean };
  LivePayloads: LivePayloads;
  HintStore: HintStore;
  DefinitionRead: { after: string; limit: number };
  RepairDigest: RepairPartition;
  RepairDigestReply: RepairDigestReply;
  RepairKeys: RepairKeys;
  RepairKeysReply: { keys: string[] };
  RepairFetch: RepairFetch;
  RepairFetchReply: { records: StoredRecord[] };
  RepairSweep: RepairSweep;
  RepairStatus: { runId: string };
  RepairStatusReply: RepairStatusReply;
  ErrorReply: ErrorReply;
  TransferChunk: TransferChunk;
  TransferAck: TransferAck;
}

export type PeerKind = keyof PeerBodies;

/** Request kinds of the Call RPC and the kind of their successful reply. */
export const REPLY_KIND = {
  CoreMessage: 'Empty',
  WriteRecords: 'WriteReply',
  DefinitionWrite: 'DefinitionWriteReply',
  DefinitionPush: 'Empty',
  AdminCommand: 'AdminReply',
  Admit: 'AdmitReply',
  Ping: 'PingReply',
  SearchRead: 'SearchReply',
  OutputPoll: 'OutputPollReply',
  ScanRead: 'ScanReply',
  BlockRead: 'BlockReply',
  LatestRead: 'LatestReply',
  ExecutionStatusRead: 'ExecutionStatusReply',
  StoreStatsRead: 'StoreStatsReply',
  MonitoringRead: 'MonitoringReply',
  ConsoleHistoryRead: 'ConsoleHistoryReply',
  HoldsDataRead: 'HoldsDataReply',
  LivePayloads: 'Empty',
  HintStore: 'Empty',
  DefinitionRead: 'DefinitionPush',
  RepairDigest: 'RepairDigestReply',
  RepairKeys: 'RepairKeysReply',
  RepairFetch: 'RepairFetchReply',
  RepairSweep: 'Empty',
  RepairStatus: 'RepairStatusReply',
} as const satisfies Partial<Record<PeerKind, PeerKind>>;

export type CallKind = keyof typeof REPLY_KIND;
export type RequestOf<K extends CallKind> = PeerBodies[K];
export type ReplyOf<K extends CallKind> = PeerBodies[(typeof REPLY_KIND)[K]];

export function isCallKind(kind: string): kind is CallKind {
  return Object.hasOwn(REPLY_KIND, kind);
}
