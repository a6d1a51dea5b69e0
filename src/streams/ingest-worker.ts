// An ingest worker thread (ingest-pool.ts): packs the tsr batches the pool sends it, with
// checks it compiles from each stream's schema once per version of its definitions.

import { parentPort } from 'node:worker_threads';
import { assert } from '../lib/assert.js';
import { TributaryError } from '../lib/errors.js';
import { compilePayloadChecks, type SchemaSource } from './payload-checks.js';
import type { PackReply, PackTask } from './ingest-pool.js';
import { packTsrBatchBytes, type PayloadChecks } from './tsr-batch.js';
import { wireOf } from './packed-wire.js';

// Streams whose checks a worker keeps; the least recently compiled go first.
const STREAMS_KEPT_MAX = 256;
const checksByStream = new Map<string, PayloadChecks>();

function checksOf(stream: string, schema: SchemaSource): PayloadChecks {
  const key = `${stream}\n${schema.signature}`;
  let checks = checksByStream.get(key);
  if (checks === undefined) {
    checks = compilePayloadChecks(schema.definition);
    checksByStream.set(key, checks);
    if (checksByStream.size > STREAMS_KEPT_MAX) checksByStream.delete(checksByStream.keys().next().value!);
  }
  assert(checksByStream.size <= STREAMS_KEPT_MAX, `${checksByStream.size} streams' checks kept`);
  return checks;
}

parentPort!.on('message', (task: PackTask) => {
  let reply: PackReply;
  try {
    // wireOf checks that each record has its member list (block-records.ts).
    reply = { id: task.id, wire: wireOf(packTsrBatchBytes(task.batch, checksOf(task.batch.stream, task.schema))) };
  } catch (error) {
    reply = { id: task.id, error: describe(error) };
  }
  parentPort!.postMessage(reply);
});

function describe(error: unknown): Extract<PackReply, { error: unknown }>['error'] {
  if (error instanceof TributaryError) return { status: error.status, code: error.code, message: error.message, ...(error.details === undefined ? {} : { details: error.details }) };
  return { status: 500, code: 'INTERNAL', message: error instanceof Error ? error.message : String(error) };
}
