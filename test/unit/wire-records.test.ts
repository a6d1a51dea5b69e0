// Stored records as peer messages carry them: a receiver keeps a value's bytes as they came
// (stored and sent on without its text being made), and refuses bytes that are not UTF-8.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WRITE_RECORDS } from '../../src/cluster/write-messages.js';
import { decodeBody, decodeProto, encodeBody, encodeProto } from '../../src/peer/codec.js';
import { BadPeerMessageError } from '../../src/peer/errors.js';
import { Database } from '../../src/storage/database.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { packBlocks } from '../../src/storage/tsr-block.js';
import type { StoredRecord } from '../../src/storage/repository.js';

const folder = mkdtempSync(join(tmpdir(), 'tributary-wire-records-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const START_MS = Date.UTC(2024, 0, 1);
const [block] = packBlocks(Array.from({ length: 3 }, (_, i) => ({ timestamp: START_MS + i, payload: { host: `hôte-${i} 😀`, n: i }, position: i })));
const sent: StoredRecord = { stream: 't/c/s', partition: 3, timestamp: START_MS, writeId: 'w1.0', value: block!.text };
const message = (records: StoredRecord[]) => encodeBody(WRITE_RECORDS.request, { repo: 'tsr', records, epoch: 4, replicas: 1 });

describe('stored records on the wire', () => {
  it('are read as the bytes that came: sent on as they are, their text decoded when read, copied as text only', () => {
    const body = message([sent]);
    const [record] = decodeBody(WRITE_RECORDS.request, body).records;
    expect(Buffer.from(record!.bytes!).toString('utf8')).toBe(sent.value);
    expect(record!.value).toBe(sent.value);
    expect(record).toEqual(sent);
    // A copy (a spread, a hint's JSON) holds the text and not the bytes.
    expect(Object.keys({ ...record })).toEqual(['stream', 'partition', 'timestamp', 'writeId', 'value']);
    expect(JSON.parse(JSON.stringify(record))).toEqual(sent);
    // Sent on (a hint replayed, a repair push): the same bytes.
    expect(Buffer.from(message([record!])).equals(Buffer.from(body))).toBe(true);
  });

  it('refuses a value that is not UTF-8', () => {
    const proto = decodeProto('WriteRecords', message([sent]));
    const records = proto.records as Array<Record<string, unknown>>;
    const broken = encodeProto('WriteRecords', { ...proto, records: [{ ...records[0], value: Buffer.from([0x74, 0x73, 0xff, 0xfe]) }] });
    expect(() => decodeBody(WRITE_RECORDS.request, broken)).toThrow(BadPeerMessageError);
    expect(() => decodeBody(WRITE_RECORDS.request, broken)).toThrow(/value: expected UTF-8 text/);
  });

  it('are stored as their bytes, under the key their text would have, and read back as that text', async () => {
    const database = await Database.open(join(folder, 'one'));
    try {
      const repository = new TimeSeriesRepository(database);
      const [record] = decodeBody(WRITE_RECORDS.request, message([sent])).records;
      const fromBytes = repository.writeOperations([record!]);
      const fromText = repository.writeOperations([sent]);
      expect(fromBytes.map((operation) => operation.type === 'put' && operation.key)).toEqual(fromText.map((operation) => operation.type === 'put' && operation.key));
      expect(fromBytes[0]!.type === 'put' && fromBytes[0]!.value instanceof Uint8Array).toBe(true);
      await database.batch(fromBytes, { sync: true });
      const [back] = await repository.recordsAt(sent.stream, sent.partition, await repository.partitionKeys(sent.stream, sent.partition));
      expect(back).toEqual(sent);
    } finally {
      await database.close();
    }
  });
});
