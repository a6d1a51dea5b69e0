// Execution's peer messages (proto/peer.proto, "Reads between nodes"), answered where their
// state lives (execution-peer.ts): an output's log polled from its host, the run statuses of a
// session's queries, and payloads handed to the hosts of live queries. The JSON documents they
// carry (log entries, a query's errors) are checked here against the shapes their receivers
// read. Historical reads of stored data have their own (historical/historical-messages.ts).

import { z } from 'zod';
import { isPlainObject } from '../lib/json.js';
import { jsonObject } from '../lib/validation.js';
import { EMPTY } from '../peer/codec.js';
import { readDocument, writeDocument } from '../peer/documents.js';
import { bool, int, list, optionalMessage, refuse, str, type BodyCodec, type ProtoObject } from '../peer/fields.js';
import { definePeerKind } from '../peer/kinds.js';
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

// ---- Codecs

const RUN_STATE_NAMES: ReadonlySet<string> = new Set(RUN_STATES);

function runState(object: ProtoObject): RunStatus['state'] {
  const state = str(object, 'state');
  return RUN_STATE_NAMES.has(state) ? (state as RunStatus['state']) : refuse('state', RUN_STATES.join(', '));
}

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
