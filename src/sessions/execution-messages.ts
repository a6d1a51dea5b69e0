// Execution's peer messages (proto/peer.proto, "Reads between nodes"), answered where their
// state lives (execution-peer.ts): an output's log polled from its host, a page of a partition
// or of its tsr blocks, the last values per key, the run statuses of a session's queries, and
// payloads handed to the hosts of live queries. The JSON documents they carry (payloads, log
// entries, a query's errors) are checked here against the shapes their receivers read.

import { z } from 'zod';
import { isPlainObject } from '../lib/json.js';
import { jsonObject } from '../lib/validation.js';
import type { Value } from '../expression/index.js';
import { EMPTY } from '../peer/codec.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { bool, field, int, list, optionalInt, optionalMessage, optionalStr, refuse, str, strings, type BodyCodec, type ProtoObject } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
import type { BlockPage } from '../storage/tsr.js';
import { DATA_REPOS, dataRepoFrom } from '../streams/wire-records.js';
import type { BlockPageRequest } from '../historical/historical-blocks.js';
import type { ScanPage, ScanRequest } from '../historical/historical-reader.js';
import type { LatestEntry, LatestRequest } from '../historical/latest-values.js';
import type { LogEntry, PollReply } from './output-channel.js';
import type { OutputPollRequest } from './output-registry.js';
import type { RunStatus } from './session-host.js';

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

export interface LivePayloads {
  stream: string;
  payloadsJson: string;
}

// ---- Documents

/** A stored payload, as a scan page or live payloads carry it. */
export const payloadSchema = jsonObject('a stored payload');

const outputMessageSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('sos'), schema: jsonObject('a schema') }),
  z.object({ type: z.literal('increment'), items: z.array(z.object({ action: z.enum(['add', 'update', 'remove']), data: jsonObject('a row') })) }),
  z.object({ type: z.literal('eos') }),
]);

/** A message (with the retention after a `sos`), or the end of a query that stopped. */
const logEntriesSchema = z.array(
  z
    .object({ message: outputMessageSchema.optional(), retention: z.enum(['table', 'rows', 'none']).optional(), end: z.literal('stopped').optional() })
    .refine((entry) => (entry.message === undefined) !== (entry.end === undefined), 'expected either a message or an end')
    .transform((entry): LogEntry => {
      if (entry.message === undefined) return { end: 'stopped' };
      return entry.retention === undefined ? { message: entry.message } : { message: entry.message, retention: entry.retention };
    }),
);

const RUN_STATES = ['running', 'completed', 'failed', 'stopped'] as const satisfies ReadonlyArray<RunStatus['state']>;

/** A query's errors: objects with a `type`, shown to clients as the host reported them. */
const runErrorsSchema = z.array(
  z.custom<RunStatus['errors'][number]>((value) => isPlainObject(value) && typeof value.type === 'string', { error: 'expected an error object with a type' }),
);

const latestSlotSchema = z.object({ timestamp: z.number().refine(Number.isSafeInteger, 'expected an integer timestamp'), writeId: z.string(), value: z.custom<Value>((value) => value !== undefined) });
const latestEntriesSchema = z.array(z.object({ key: z.custom<Value>((value) => value !== undefined), slots: z.array(latestSlotSchema.nullable()) }));

// ---- Codecs

const RUN_STATE_NAMES: ReadonlySet<string> = new Set(RUN_STATES);

function runState(object: ProtoObject): RunStatus['state'] {
  const state = str(object, 'state');
  return RUN_STATE_NAMES.has(state) ? (state as RunStatus['state']) : refuse('state', RUN_STATES.join(', '));
}

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

const outputPoll: BodyCodec<OutputPollRequest> = {
  toProto: (value) => ({ outputId: value.outputId, cursor: value.cursor, waitMs: value.waitMs }),
  fromProto: (object) => {
    const cursor = optionalMessage(object, 'cursor');
    return {
      outputId: str(object, 'outputId'),
      waitMs: int(object, 'waitMs'),
      ...(cursor === undefined ? {} : { cursor: { epoch: str(cursor, 'epoch'), seq: int(cursor, 'seq') } }),
    };
  },
};

const outputPollReply: BodyCodec<PollReply> = {
  toProto: (value) => ({ epoch: value.epoch, seq: value.seq, reset: value.reset, entriesJson: writeDocument(value.entries) }),
  fromProto: (object) => ({
    epoch: str(object, 'epoch'),
    seq: int(object, 'seq'),
    reset: bool(object, 'reset'),
    entries: readDocument('entriesJson', str(object, 'entriesJson'), logEntriesSchema),
  }),
};

const executionStatusReply: BodyCodec<ExecutionStatusReply> = {
  toProto: (value) => ({
    queries: value.queries.map(({ queryId, status }) => ({ queryId, runToken: status.runToken, state: status.state, errorsJson: writeDocument(status.errors) })),
  }),
  fromProto: (object) => ({
    queries: list(object, 'queries', (query) => ({
      queryId: str(query, 'queryId'),
      status: { runToken: int(query, 'runToken'), state: runState(query), errors: readDocument('queries.errorsJson', str(query, 'errorsJson'), runErrorsSchema) },
    })),
  }),
};

// ---- The kinds

export const OUTPUT_POLL = definePeerKind({ name: 'OutputPoll', request: outputPoll, reply: { type: 'OutputPollReply', codec: outputPollReply } });
export const SCAN_READ = definePeerKind({ name: 'ScanRead', request: scanRead, reply: { type: 'ScanReply', codec: scanReply } });
export const BLOCK_READ = definePeerKind({ name: 'BlockRead', request: blockRead, reply: { type: 'BlockReply', codec: blockReply } });
export const LATEST_READ = definePeerKind({ name: 'LatestRead', request: latestRead, reply: { type: 'LatestReply', codec: latestReply } });

export const EXECUTION_STATUS_READ = definePeerKind<ExecutionStatusRead, ExecutionStatusReply>({
  name: 'ExecutionStatusRead',
  request: {
    toProto: (value) => ({ ...value }),
    fromProto: (object) => ({ tenant: str(object, 'tenant'), sessionId: str(object, 'sessionId'), settle: bool(object, 'settle') }),
  },
  reply: { type: 'ExecutionStatusReply', codec: executionStatusReply },
});

export const LIVE_PAYLOADS = definePeerKind<LivePayloads, Record<string, never>>({
  name: 'LivePayloads',
  request: {
    toProto: (value) => ({ ...value }),
    fromProto: (object) => ({ stream: str(object, 'stream'), payloadsJson: str(object, 'payloadsJson') }),
  },
  reply: EMPTY,
});
