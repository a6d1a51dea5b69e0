// The replay guard of incoming envelopes. A message is accepted only while its timestamp is
// within ±windowMs of the receiver's clock, so a nonce need be remembered only until its
// message's timestamp leaves the window; after that the timestamp check refuses a replay.
// The memory is bounded: when it is full of nonces that have not expired, new messages are
// refused (PEER_BUSY) rather than an unexpired nonce forgotten, which would let it replay.

export type ReplayVerdict = 'fresh' | 'stale' | 'replayed' | 'full';

export class ReplayGuard {
  /** nonce (base64) → receiver time after which it can be forgotten. Insertion-ordered. */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly entriesMax: number,
  ) {
    if (!(windowMs > 0) || !(entriesMax > 0)) throw new Error('ReplayGuard needs a positive window and capacity');
  }

  /** Checks the timestamp and the nonce, and remembers the nonce when it is fresh. */
  admit(nonce: Uint8Array, sentAtMs: number, nowMs: number): ReplayVerdict {
    if (Math.abs(nowMs - sentAtMs) > this.windowMs) return 'stale';
    const key = Buffer.from(nonce).toString('base64');
    this.forgetExpired(nowMs, false);
    if (this.seen.has(key)) return 'replayed';
    if (this.seen.size >= this.entriesMax) {
      this.forgetExpired(nowMs, true);
      if (this.seen.size >= this.entriesMax) return 'full';
    }
    this.seen.set(key, sentAtMs + this.windowMs);
    return 'fresh';
  }

  get size(): number {
    return this.seen.size;
  }

  /**
   * Entries arrive roughly in expiry order, so forgetting from the front until the first
   * live one is cheap; senders' clocks differ, so when full, one full sweep finds the rest.
   */
  private forgetExpired(nowMs: number, sweepAll: boolean): void {
    for (const [key, expiresAtMs] of this.seen) {
      if (expiresAtMs < nowMs) this.seen.delete(key);
      else if (!sweepAll) return;
    }
  }
}
