// The data plane's write messages (proto/peer.proto, "Writes"): a replica write to an owner of
// a partition (WriteRecords, replica-writer.ts; also a repair push and a replayed hint, so a
// Left node may still send one: the hints it could not deliver before it left), and hints
// handed to another member to keep (HintStore, hint-keeper.ts).

import { definitionRecordCodec, type WireDefinitionRecord } from '../replicated-definitions/definition-messages.js';
import { EMPTY } from '../peer/codec.js';
import { int, list, str, strings, enumOf, type ProtoObject } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';
import { DATA_REPOS, dataRepoFrom, storedRecordCodec } from '../streams/wire-records.js';
import { TRANSFER_REPOS } from './core-messages.js';

export interface WriteRecords {
  repo: RepositoryName;
  records: StoredRecord[];
  /** The writer's membership epoch (an owner with a newer table refuses the write). */
  epoch: number;
  /** The stream's replicas: the slot the receiver checks it owns (NOT_OWNER otherwise). */
  replicas: number;
}

/** Hints for one target: stream records, or definitions (hint-keeper.ts). */
export type WireHintEntry =
  | { target: string; repository: RepositoryName; records: StoredRecord[] }
  | { target: string; repository: 'KV'; records: WireDefinitionRecord[] };

export interface HintStore {
  hints: WireHintEntry[];
}

export const WRITE_RECORDS = definePeerKind<WriteRecords, Record<string, never>>({
  name: 'WriteRecords',
  request: {
    toProto: (value) => ({ repo: DATA_REPOS[value.repo], records: value.records.map(storedRecordCodec.toProto), epoch: value.epoch, replicas: value.replicas }),
    fromProto: (object) => ({
      repo: dataRepoFrom(object, 'repo'),
      records: list(object, 'records', storedRecordCodec.fromProto),
      epoch: int(object, 'epoch'),
      replicas: int(object, 'replicas'),
    }),
  },
  reply: { type: 'WriteReply', codec: EMPTY.codec },
  gate: 'members-and-left',
});

function hintEntryToProto(entry: WireHintEntry): ProtoObject {
  if (entry.repository === 'KV') return { target: entry.target, repo: TRANSFER_REPOS.KV, records: [], definitions: entry.records.map(definitionRecordCodec.toProto) };
  return { target: entry.target, repo: DATA_REPOS[entry.repository], records: entry.records.map(storedRecordCodec.toProto), definitions: [] };
}

function hintEntryFromProto(object: ProtoObject): WireHintEntry {
  const target = str(object, 'target');
  const repository = enumOf(object, 'repo', TRANSFER_REPOS);
  if (repository === 'KV') return { target, repository, records: list(object, 'definitions', definitionRecordCodec.fromProto) };
  return { target, repository, records: list(object, 'records', storedRecordCodec.fromProto) };
}

export const HINT_STORE = definePeerKind<HintStore, Record<string, never>>({
  name: 'HintStore',
  request: {
    toProto: (value) => ({ hints: value.hints.map(hintEntryToProto) }),
    fromProto: (object) => ({ hints: list(object, 'hints', hintEntryFromProto) }),
  },
  reply: EMPTY,
});

/** One partition to be made whole after writes of unknown outcome (write-follow-ups.ts). */
export interface FollowUpPart {
  repo: RepositoryName;
  stream: string;
  partition: number;
  replicas: number;
  /** The keys of the records to compare (never empty); undefined: the whole partition. */
  keys?: string[];
}

/** Parts one FollowUpsTake may carry: as many as a node keeps (write-follow-ups.ts). */
export const FOLLOW_UP_PARTS_MAX = 4_096;
/** Keys one FollowUpsTake may carry over all its parts: a few MiB, well within a peer message. */
export const FOLLOW_UP_TAKE_KEYS_MAX = 100_000;

export const FOLLOW_UPS_TAKE = definePeerKind<{ parts: FollowUpPart[] }, Record<string, never>>({
  name: 'FollowUpsTake',
  request: {
    toProto: (value) => ({ parts: value.parts.map((part) => ({ repo: DATA_REPOS[part.repo], stream: part.stream, partition: part.partition, replicas: part.replicas, keys: part.keys ?? [] })) }),
    fromProto: (object) => ({
      parts: list(object, 'parts', (part) => {
        // No keys (a sender before keys were carried, too): the whole partition.
        const keys = strings(part, 'keys');
        return { repo: dataRepoFrom(part, 'repo'), stream: str(part, 'stream'), partition: int(part, 'partition'), replicas: int(part, 'replicas'), ...(keys.length > 0 ? { keys } : {}) };
      }),
    }),
  },
  reply: EMPTY,
  // A node that has left hands over what it noted while leaving (write-follow-ups.ts).
  gate: 'members-and-left',
});
