// The peer messages of definition replication (proto/peer.proto, "Definitions"):
// - DefinitionWrite: a node forwards a client's write to the key's coordinator;
// - DefinitionPush: the coordinator pushes records to the other replicas (a hint replayed
//   later is a push too, so a Left node may still send one: its undelivered hints);
// - DefinitionRead: a node refilling lost data reads every definition back, a page at a time.
// A definition's value travels as JSON text, parsed within the peer bounds where it is used.

import { EMPTY } from '../peer/codec.js';
import { bool, int, list, optionalStr, str, type BodyCodec } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';

/** A definition as it travels. */
export interface WireDefinitionRecord {
  key: string;
  version: number;
  /** '' on a tombstone. */
  valueJson: string;
  deleted: boolean;
}

export interface WireDefinitionWrite {
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

export interface DefinitionPush {
  records: WireDefinitionRecord[];
}

export const definitionRecordCodec: BodyCodec<WireDefinitionRecord> = {
  toProto: (value) => ({ ...value }),
  fromProto: (object) => ({
    key: str(object, 'key'),
    version: int(object, 'version'),
    valueJson: str(object, 'valueJson'),
    deleted: bool(object, 'deleted'),
  }),
};

const definitionPushCodec: BodyCodec<DefinitionPush> = {
  toProto: (value) => ({ records: value.records.map(definitionRecordCodec.toProto) }),
  fromProto: (object) => ({ records: list(object, 'records', definitionRecordCodec.fromProto) }),
};

export const DEFINITION_WRITE = definePeerKind<WireDefinitionWrite, DefinitionWriteReply>({
  name: 'DefinitionWrite',
  request: {
    toProto: (value) => ({ ...value }),
    fromProto: (object) => ({
      key: str(object, 'key'),
      valueJson: str(object, 'valueJson'),
      expectedVersion: optionalStr(object, 'expectedVersion'),
      delete: bool(object, 'delete'),
    }),
  },
  reply: {
    type: 'DefinitionWriteReply',
    codec: {
      toProto: (value) => ({ version: value.version }),
      fromProto: (object) => ({ version: optionalStr(object, 'version') }),
    },
  },
});

export const DEFINITION_PUSH = definePeerKind({ name: 'DefinitionPush', request: definitionPushCodec, reply: EMPTY, gate: 'members-and-left' });

export const DEFINITION_READ = definePeerKind<{ after: string; limit: number }, DefinitionPush>({
  name: 'DefinitionRead',
  request: {
    toProto: (value) => ({ after: value.after, limit: value.limit }),
    fromProto: (object) => ({ after: str(object, 'after'), limit: int(object, 'limit') }),
  },
  reply: { type: 'DefinitionPush', codec: definitionPushCodec },
});
