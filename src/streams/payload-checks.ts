// A stream schema compiled into what ingest checks of each payload: the validator and the
// reader of its event time. Used by the stream runtime on the main thread and by the
// ingest workers, which compile a stream's schema from its definition on their own.

import { parseDatetime } from '../lib/iso-time.js';
import { compileValidator } from './payload-validator.js';
import { parseSchema, primaryTimestampField } from './schema.js';
import type { PayloadChecks } from './tsr-batch.js';

/** A stream's schema as stored and the versions of its definitions it was read at: what a worker compiles checks from. */
export interface SchemaSource {
  definition: unknown;
  signature: string;
}

/** `definition` is the stream definition's `schema`, as stored. */
export function compilePayloadChecks(definition: unknown): PayloadChecks {
  const schema = parseSchema(definition);
  return { validate: compileValidator(schema), timestampOf: timestampReader(primaryTimestampField(schema)) };
}

/** Event time of a valid payload in epoch ms, or undefined when it has none. */
function timestampReader(path: string | undefined): PayloadChecks['timestampOf'] {
  if (path === undefined) return () => undefined;
  const parts = path.split('.');
  return (payload) => {
    let value: unknown = payload;
    for (const part of parts) {
      if (typeof value !== 'object' || value === null) return undefined;
      value = (value as Record<string, unknown>)[part];
    }
    return typeof value === 'string' ? parseDatetime(value) : undefined;
  };
}
