// Stored records as peer messages carry them (proto/peer.proto Record, and the Repo enum
// of the data repositories): a replica write, a hint and a repair fetch carry them, and a
// scan names its repository. Declared here, below every subsystem that sends them (not in
// storage, which may not import the peer layer: the peer layer reads its identity file).

import { isUtf8 } from 'node:buffer';
import { bytes, enumOf, int, refuse, str, type BodyCodec, type ProtoObject } from '../peer/fields.js';
import type { RepositoryName, StoredRecord } from '../storage/repository.js';

/** The proto enum names of the data repositories. */
export const DATA_REPOS: Readonly<Record<RepositoryName, string>> = { ssr: 'REPO_SSR', tsr: 'REPO_TSR' };

export function dataRepoFrom(object: ProtoObject, key: string): RepositoryName {
  return enumOf(object, key, DATA_REPOS);
}

export const storedRecordCodec: BodyCodec<StoredRecord> = {
  toProto: (value) => ({
    stream: value.stream,
    partition: value.partition,
    timestamp: value.timestamp,
    writeId: value.writeId,
    // A record that came from a peer goes on with the bytes it came with.
    value: value.bytes ?? Buffer.from(value.value, 'utf8'),
  }),
  fromProto: (object) => {
    const value = bytes(object, 'value');
    if (!isUtf8(value)) refuse('value', 'UTF-8 text');
    return recordOfBytes(str(object, 'stream'), int(object, 'partition'), int(object, 'timestamp'), str(object, 'writeId'), value);
  },
};

/**
 * A record whose value is UTF-8 bytes read from a peer message: storing it and sending it on
 * use the bytes (a replica write is stored without its text ever being made: a tsr block is
 * a few KiB to 512 KiB of text), and its text is decoded when first read. The bytes are not
 * enumerable: a copy of the record (a spread, JSON for a hint) holds its text only.
 */
function recordOfBytes(stream: string, partition: number, timestamp: number, writeId: string, value: Uint8Array): StoredRecord {
  let text: string | undefined;
  const record = {
    stream,
    partition,
    timestamp,
    writeId,
    get value(): string {
      text ??= Buffer.from(value.buffer, value.byteOffset, value.length).toString('utf8');
      return text;
    },
  };
  return Object.defineProperty(record, 'bytes', { value, enumerable: false });
}
