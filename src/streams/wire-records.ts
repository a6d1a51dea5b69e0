// Stored records as peer messages carry them (proto/peer.proto StoredRecord, and the Repo enum
// of the data repositories): a replica write, a hint and a repair fetch carry them, and a
// scan names its repository. Declared here, below every subsystem that sends them (not in
// storage, which may not import the peer layer: the peer layer reads its identity file).

import { enumOf, int, str, type BodyCodec, type ProtoObject } from '../peer/fields.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';

/** The proto enum names of the data repositories. */
export const DATA_REPOS: Readonly<Record<RepositoryName, string>> = { ssr: 'REPO_SSR', tsr: 'REPO_TSR' };

export function dataRepoFrom(object: ProtoObject, key: string): RepositoryName {
  return enumOf(object, key, DATA_REPOS);
}

export const storedRecordCodec: BodyCodec<StoredRecord> = {
  toProto: (value) => ({ ...value }),
  fromProto: (object) => ({
    stream: str(object, 'stream'),
    partition: int(object, 'partition'),
    timestamp: int(object, 'timestamp'),
    writeId: str(object, 'writeId'),
    value: str(object, 'value'),
  }),
};
