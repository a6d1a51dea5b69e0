// A tsr ingest made from the request's text: the body parsed and checked, each
// payload checked against the stream's schema, the accepted ones packed into block
// records (block-records.ts). Pure: the ingest workers run it off the node's main thread
// (ingest-pool.ts), with the same checks and messages as ingest on the main thread.

import { bodyTextOf, parseBodyText } from '../lib/body-text.js';
import { blockRecords, type PackedRecords, type WrittenPayload } from './block-records.js';
import { checkBatchSize, checkPayload, payloadsOf } from './ingest-checks.js';
import type { DistributionPolicy } from './policy.js';
import type { PayloadValidator } from './payload-validator.js';

/** One POST's body and what packing it needs to know of the node (the write's id and receipt time). */
export interface TsrBatch {
  readonly text: string;
  readonly jsonDepthMax: number;
  readonly batchPayloadsMax: number;
  readonly stream: string;
  readonly policy: DistributionPolicy;
  /** The event time of payloads without one. */
  readonly receivedAt: number;
  /** The write's id, which its blocks' ids extend. */
  readonly base: string;
}

/** A batch as the ingest pool hands it to a worker: the body's bytes, decoded there. */
export type TsrBatchBytes = Omit<TsrBatch, 'text'> & { readonly bytes: Uint8Array };

/** The stream's checks, compiled from its definitions. */
export interface PayloadChecks {
  validate: PayloadValidator;
  timestampOf: (payload: Record<string, unknown>) => number | undefined;
}

/**
 * The records to write; `accepted` are the indexes in the request of the payloads that
 * passed (`members` count places in it), `failures` the others with their reasons.
 */
export interface PackedBatch extends PackedRecords {
  readonly accepted: number[];
  readonly failures: Array<[number, string]>;
}

/** Throws a 400 for a body that is not JSON, not a payload or an array, or too many payloads. */
export function packTsrBatch(batch: TsrBatch, checks: PayloadChecks): PackedBatch {
  const payloads = payloadsOf(parseBodyText(batch.text, batch.jsonDepthMax));
  checkBatchSize(payloads.length, batch.batchPayloadsMax);
  const accepted: number[] = [];
  const failures: Array<[number, string]> = [];
  const written: WrittenPayload[] = [];
  for (let index = 0; index < payloads.length; index += 1) {
    const outcome = checkPayload(checks.validate, payloads[index]);
    if (typeof outcome === 'string') {
      failures.push([index, outcome]);
      continue;
    }
    written.push({ payload: outcome, position: index, timestamp: checks.timestampOf(outcome) ?? batch.receivedAt });
    accepted.push(index);
  }
  return { ...blockRecords(batch.stream, batch.policy, written, batch.base), accepted, failures };
}

/** packTsrBatch of the body's bytes, decoded first (bodyTextOf). */
export function packTsrBatchBytes({ bytes, ...batch }: TsrBatchBytes, checks: PayloadChecks): PackedBatch {
  return packTsrBatch({ ...batch, text: bodyTextOf(bytes) }, checks);
}
