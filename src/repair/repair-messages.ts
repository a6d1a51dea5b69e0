// Anti-entropy's peer messages (proto/peer.proto, "Repair"): the digests, keys and records of
// a partition another owner compares with its own (partition-sync.ts), and the runs started
// on every member and summed (cluster-repair.ts).

import { EMPTY } from '../peer/codec.js';
import { bool, int, list, str, strings, uints, type BodyCodec } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import { DATA_REPOS, dataRepoFrom, storedRecordCodec } from '../streams/wire-records.js';

export interface RepairPartition {
  repo: RepositoryName;
  stream: string;
  partition: number;
}

export interface RepairDigestReply {
  /** Three numbers per segment: keys, xor of hash one, xor of hash two. */
  segments: number[];
}

/** Several partitions of one stream, for their digests at once. */
export interface RepairDigests {
  repo: RepositoryName;
  stream: string;
  partitions: number[];
}

/** Partitions one RepairDigests may name: more is refused. */
export const REPAIR_DIGESTS_PER_CALL_MAX = 32;

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

const repairPartition: BodyCodec<RepairPartition> = {
  toProto: (value) => ({ repo: DATA_REPOS[value.repo], stream: value.stream, partition: value.partition }),
  fromProto: (object) => ({ repo: dataRepoFrom(object, 'repo'), stream: str(object, 'stream'), partition: int(object, 'partition') }),
};

const digestReply: BodyCodec<RepairDigestReply> = { toProto: (value) => ({ segments: value.segments }), fromProto: (object) => ({ segments: uints(object, 'segments') }) };

export const REPAIR_DIGEST = definePeerKind<RepairPartition, RepairDigestReply>({
  name: 'RepairDigest',
  request: repairPartition,
  reply: { type: 'RepairDigestReply', codec: digestReply },
});

export const REPAIR_DIGESTS = definePeerKind<RepairDigests, { digests: RepairDigestReply[] }>({
  name: 'RepairDigests',
  request: {
    toProto: (value) => ({ repo: DATA_REPOS[value.repo], stream: value.stream, partitions: value.partitions }),
    fromProto: (object) => ({ repo: dataRepoFrom(object, 'repo'), stream: str(object, 'stream'), partitions: uints(object, 'partitions') }),
  },
  reply: {
    type: 'RepairDigestsReply',
    codec: {
      toProto: (value) => ({ digests: value.digests.map(digestReply.toProto) }),
      fromProto: (object) => ({ digests: list(object, 'digests', digestReply.fromProto) }),
    },
  },
});

export const REPAIR_KEYS = definePeerKind<RepairKeys, { keys: string[] }>({
  name: 'RepairKeys',
  request: {
    toProto: (value) => ({ ...repairPartition.toProto(value), segments: value.segments }),
    fromProto: (object) => ({ ...repairPartition.fromProto(object), segments: uints(object, 'segments') }),
  },
  reply: {
    type: 'RepairKeysReply',
    codec: { toProto: (value) => ({ keys: value.keys }), fromProto: (object) => ({ keys: strings(object, 'keys') }) },
  },
});

export const REPAIR_FETCH = definePeerKind<RepairFetch, { records: StoredRecord[] }>({
  name: 'RepairFetch',
  request: {
    toProto: (value) => ({ ...repairPartition.toProto(value), keys: value.keys }),
    fromProto: (object) => ({ ...repairPartition.fromProto(object), keys: strings(object, 'keys') }),
  },
  reply: {
    type: 'RepairFetchReply',
    codec: {
      toProto: (value) => ({ records: value.records.map(storedRecordCodec.toProto) }),
      fromProto: (object) => ({ records: list(object, 'records', storedRecordCodec.fromProto) }),
    },
  },
});

export const REPAIR_SWEEP = definePeerKind<RepairSweep, Record<string, never>>({
  name: 'RepairSweep',
  request: {
    toProto: (value) => ({ runId: value.runId, stream: value.stream ?? '' }),
    fromProto: (object) => {
      const stream = str(object, 'stream');
      return { runId: str(object, 'runId'), stream: stream === '' ? undefined : stream };
    },
  },
  reply: EMPTY,
});

export const REPAIR_STATUS = definePeerKind<{ runId: string }, RepairStatusReply>({
  name: 'RepairStatus',
  request: { toProto: (value) => ({ runId: value.runId }), fromProto: (object) => ({ runId: str(object, 'runId') }) },
  reply: {
    type: 'RepairStatusReply',
    codec: {
      toProto: (value) => ({ ...value }),
      fromProto: (object) => ({
        known: bool(object, 'known'),
        complete: bool(object, 'complete'),
        partitionsTotal: int(object, 'partitionsTotal'),
        partitionsDone: int(object, 'partitionsDone'),
        partitionsCompared: int(object, 'partitionsCompared'),
        recordsSent: int(object, 'recordsSent'),
        recordsReceived: int(object, 'recordsReceived'),
        failures: int(object, 'failures'),
      }),
    },
  },
});
