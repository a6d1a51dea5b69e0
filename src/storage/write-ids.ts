// Write ids name a stored record across the cluster: the receiving node's name after a
// microsecond clock that never goes backwards within the process. Hex of fixed width, so
// ids of one node sort in the order they were issued.
//
// A batch sent with an idempotency key gets ids that do not depend on the node or the moment:
// the payload's event time, then a hash of the stream, the key and the payload's position; a
// tsr block of such a batch, a hash of the stream and the key (its key adds its partition and
// times). A retry of the batch, on any node, writes the same records under the same keys, so it
// never stores a payload twice.

import { createHash } from 'node:crypto';
import { assert } from '../lib/assert.js';

/** Payloads without an event time take the receipt time of the key's first sight, kept this long. */
const KEY_RECEIPTS_MAX = 10_000;
export const IDEMPOTENCY_WINDOW_MS = 10 * 60_000;

export class WriteIdGenerator {
  private lastMicros = 0;
  /** First receipt time of each recent idempotency key on this node, oldest first. */
  private readonly keyReceipts = new Map<string, number>();

  constructor(
    private readonly nodeName: string,
    private readonly nowMs: () => number = Date.now,
  ) {
    // The name (checked by the config) ends every id: a '/' in it would split the keys that hold ids.
    assert(nodeName.length > 0 && !nodeName.includes('/'), `node name '${nodeName}' in write ids`);
  }

  next(): string {
    const micros = Math.max(Math.floor(this.nowMs() * 1000), this.lastMicros + 1);
    // Ids of one node sort in the order they were issued: 14 hex digits hold microseconds until the year 4253.
    assert(micros > 0 && micros < 16 ** 14, `write id time ${micros} µs outside 14 hex digits`);
    this.lastMicros = micros;
    return `${micros.toString(16).padStart(14, '0')}.${this.nodeName}`;
  }

  /** The id of the payload at `index` of a batch sent with `key`: the same on every attempt. */
  idempotent(stream: string, key: string, index: number, eventTimeMs: number): string {
    assert(Number.isInteger(index) && index >= 0, `payload index ${index}`);
    const micros = Math.max(0, Math.trunc(eventTimeMs)) * 1000;
    const hash = createHash('sha256').update(`${stream}\n${key}\n${index}`).digest('base64url').slice(0, 22);
    return `${micros.toString(16).padStart(14, '0')}.k${hash}`;
  }

  /** The base of the ids of a batch's tsr blocks, with `key` its idempotency key when it has one. */
  blockBase(stream: string, key: string | undefined): string {
    if (key === undefined) return this.next();
    assert(key.length > 0, 'an empty idempotency key');
    return `k${createHash('sha256').update(`${stream}\n${key}`).digest('base64url').slice(0, 22)}`;
  }

  /**
   * The receipt time of a keyed batch: the time this node first saw the key within the
   * window, so a retry through the same node stamps payloads without an event time alike.
   */
  receiptOf(stream: string, key: string): number {
    const now = this.nowMs();
    const entry = `${stream}\n${key}`;
    const seen = this.keyReceipts.get(entry);
    if (seen !== undefined && now - seen < IDEMPOTENCY_WINDOW_MS) return seen;
    this.keyReceipts.delete(entry);
    this.keyReceipts.set(entry, now);
    while (this.keyReceipts.size > KEY_RECEIPTS_MAX) this.keyReceipts.delete(this.keyReceipts.keys().next().value!);
    assert(this.keyReceipts.size <= KEY_RECEIPTS_MAX, `${this.keyReceipts.size} idempotency keys remembered`);
    return now;
  }
}
