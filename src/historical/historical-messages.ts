// Historical reads' peer messages (proto/peer.proto, "Reads between nodes"), answered by the
// owners of the partitions read (historical-peer.ts): a page of a partition's payloads, a page of
// a tsr partition's blocks, and the last values per key of a tsr partition. The JSON documents
// they carry are checked here against the shapes their readers take.

import { z } from 'zod';
import { jsonObject } from '../lib/validation.js';
import type { Value } from '../expression/index.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { bool, field, int, list, optionalInt, optionalMessage, optionalStr, refuse, str, strings, type BodyCodec } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { BlockPage } from '../storage/tsr.js';
import { DATA_REPOS, dataRepoFrom } from '../streams/wire-records.js';
import type { BlockPageRequest } from './historical-blocks.js';
import type { ScanPage, ScanRequest } from './historical-reader.js';
import type { LatestEntry, LatestRequest } from './latest-values.js';

// ---- Documents

/** A stored payload, as a scan page or live payloads carry it. */
export const payloadSchema = jsonObject('a stored payload');

const latestSlotSchema = z.object({ timestamp: z.number().refine(Number.isSafeInteger, 'expected an integer timestamp'), writeId: z.string(), value: z.custom<Value>((value) => value !== undefined) });
const latestEntriesSchema = z.array(z.object({ key: z.custom<Value>((value) => value !== undefined), slots: z.array(latestSlotSchema.nullable()) }));

// ---- Codecs

const scanRead: BodyCodec<ScanRequest> = {
  toProto: (value) => ({ ...value, repo: DATA_REPOS[value.repo] }),
  fromProto: (object) => {
    const after = optionalMessage(object, 'after');
    const fromMs = optionalInt(object, 'fromMs');
    const toMs = optionalInt(object, 'toMs');
    return {
      repo: dataRepoFrom(object, 'repo'),
      stream: str(object, 'stream'),
      partition: int(object, 'partition'),
      limit: int(object, 'limit'),
      ...(fromMs === undefined ? {} : { fromMs }),
      ...(toMs === undefined ? {} : { toMs }),
      ...(after === undefined ? {} : { after: { timestamp: int(after, 'timestamp'), writeId: str(after, 'writeId') } }),
    };
  },
};

const scanReply: BodyCodec<ScanPage> = {
  toProto: (value) => ({
    records: value.records.map((record) => ({ timestamp: record.timestamp, writeId: record.writeId, payloadJson: writeDocument(record.payload) })),
    done: value.done,
    repo: value.repo === undefined ? 'REPO_UNSPECIFIED' : DATA_REPOS[value.repo],
  }),
  fromProto: (object) => ({
    records: list(object, 'records', (record) => ({
      timestamp: int(record, 'timestamp'),
      writeId: str(record, 'writeId'),
      payload: readDocument('records.payloadJson', str(record, 'payloadJson'), payloadSchema),
    })),
    done: bool(object, 'done'),
    ...(field(object, 'repo') === 'REPO_UNSPECIFIED' ? {} : { repo: dataRepoFrom(object, 'repo') }),
  }),
};

const blockRead: BodyCodec<BlockPageRequest> = {
  toProto: (value) => ({ ...value }),
  fromProto: (object) => {
    const fromMs = optionalInt(object, 'fromMs');
    const toMs = optionalInt(object, 'toMs');
    const after = optionalStr(object, 'after');
    const charsMax = int(object, 'charsMax');
    if (charsMax < 1) refuse('charsMax', 'a positive number');
    return {
      stream: str(object, 'stream'),
      partition: int(object, 'partition'),
      charsMax,
      ...(fromMs === undefined ? {} : { fromMs }),
      ...(toMs === undefined ? {} : { toMs }),
      ...(after === undefined ? {} : { after }),
    };
  },
};

const blockReply: BodyCodec<BlockPage> = {
  toProto: (value) => ({ blocks: value.blocks.map((block) => ({ ...block })), after: value.after, done: value.done }),
  fromProto: (object) => {
    const blocks = list(object, 'blocks', (block) => ({ writeId: str(block, 'writeId'), value: str(block, 'value') }));
    const done = bool(object, 'done');
    // A page that is neither empty-and-done nor holding a block would stop a read half-way.
    if (blocks.length === 0 && !done) refuse('blocks', 'at least one block in a page that is not the last');
    if (blocks.some((block) => block.writeId === '')) refuse('blocks.writeId', 'a non-empty string');
    return { blocks, after: str(object, 'after'), done };
  },
};

const latestRead: BodyCodec<LatestRequest> = {
  toProto: (value) => ({ ...value, fields: [...value.fields] }),
  fromProto: (object) => ({ stream: str(object, 'stream'), partition: int(object, 'partition'), key: str(object, 'key'), fields: strings(object, 'fields') }),
};

const latestReply: BodyCodec<{ entries: LatestEntry[] }> = {
  toProto: (value) => ({ entriesJson: writeDocument(value.entries) }),
  fromProto: (object) => ({ entries: readDocument('entriesJson', str(object, 'entriesJson'), latestEntriesSchema) as LatestEntry[] }),
};

// ---- The kinds

export const SCAN_READ = definePeerKind({ name: 'ScanRead', request: scanRead, reply: { type: 'ScanReply', codec: scanReply } });
export const BLOCK_READ = definePeerKind({ name: 'BlockRead', request: blockRead, reply: { type: 'BlockReply', codec: blockReply } });
export const LATEST_READ = definePeerKind({ name: 'LatestRead', request: latestRead, reply: { type: 'LatestReply', codec: latestReply } });
