// A stream's stored records as the other repository keeps them (docs/storage.md, "Changing
// a stream's repository"). Pure. A payload keeps its identity, its event time and writeId,
// in both repositories: a tsr payload becomes the ssr document of its writeId (its block's
// write id and place); an ssr document becomes a tsr block of that one payload whose
// record id names the document's writeId (tsr-order.ts, MOVED_PAYLOAD_SUFFIX). So a
// record converted twice, by two owners or after a restart, is the same record under the
// same key, and a search index or a reader that met a payload in one repository knows it
// in the other.

import { assert } from '../lib/assert.js';
import { type RepositoryName, type StoredRecord } from './repository.js';
import { blockPayload, decodeBlock, packBlocks } from './tsr-block.js';
import { MOVED_PAYLOAD_SUFFIX, payloadWriteId } from './tsr-order.js';
import { canonicalJson, isPlainObject, parseJson } from '../lib/json.js';
import { BadRequestError } from '../lib/errors.js';

/** The records, stored in `from`, as `to` stores them (the same records when both are one). */
export function convertRecords(records: readonly StoredRecord[], from: RepositoryName, to: RepositoryName): StoredRecord[] {
  if (from === to) return [...records];
  const converted = from === 'tsr' ? records.flatMap(blockToDocuments) : records.map(documentToBlock);
  // A payload keeps its identity: at least as many documents as blocks, one block per document.
  assert(from === 'tsr' ? converted.length >= records.length : converted.length === records.length, `${records.length} ${from} records converted to ${converted.length}`);
  return converted;
}

/** Each payload of a tsr block as an ssr document. */
function blockToDocuments(record: StoredRecord): StoredRecord[] {
  const block = decodeBlock(record.value);
  const documents: StoredRecord[] = [];
  for (let index = 0; index < block.count; index += 1) {
    documents.push({
      stream: record.stream,
      partition: record.partition,
      timestamp: block.timestamps[index]!,
      writeId: payloadWriteId(record.writeId, block.positions[index]!),
      value: canonicalJson(blockPayload(block, index)),
    });
  }
  return documents;
}

/** An ssr document as a tsr block of one payload, whose payload writeId is the document's. */
function documentToBlock(record: StoredRecord): StoredRecord {
  const payload = parseJson(record.value);
  if (!isPlainObject(payload)) throw new BadRequestError(`ssr record ${record.writeId} is not a JSON object`);
  const blocks = packBlocks([{ timestamp: record.timestamp, payload, position: 0 }]);
  // One payload makes one block (a block is split only when it holds two or more).
  assert(blocks.length === 1, `one payload packed into ${blocks.length} blocks`);
  const block = blocks[0];
  return { stream: record.stream, partition: record.partition, timestamp: block!.minTs, writeId: `${record.writeId}${MOVED_PAYLOAD_SUFFIX}`, value: block!.text };
}
