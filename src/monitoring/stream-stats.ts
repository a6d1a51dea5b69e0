// Ingest counters per stream on this node, for the `streams` monitoring service:
// payloads accepted and refused, bytes accepted, the last write and the rate over
// the last minute. Pure bookkeeping with the clock passed in; at most `streamsMax` streams
// are tracked (the least recently written goes first).

export interface StreamCounters {
  accepted: number;
  refused: number;
  /** Bytes of the accepted payloads as JSON text. */
  bytes: number;
  /** Epoch ms of the last batch, undefined before any. */
  lastWriteMs: number | undefined;
  /** Accepted payloads per second, averaged over the last RATE_WINDOW_SECONDS. */
  ratePerSecond: number;
}

export const RATE_WINDOW_SECONDS = 60;

interface Entry {
  accepted: number;
  refused: number;
  bytes: number;
  lastWriteMs: number | undefined;
  /** Accepted payloads per second, a ring indexed by the second modulo its length. */
  perSecond: Float64Array;
  /** The epoch second each slot of perSecond counts. */
  seconds: Float64Array;
}

export class StreamStats {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly streamsMax: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** One batch's outcome for the stream "tenant/collection/name". */
  record(stream: string, outcome: { accepted: number; refused: number; bytes: number }): void {
    const now = this.nowMs();
    let entry = this.entries.get(stream);
    if (entry === undefined) {
      entry = { accepted: 0, refused: 0, bytes: 0, lastWriteMs: undefined, perSecond: new Float64Array(RATE_WINDOW_SECONDS), seconds: new Float64Array(RATE_WINDOW_SECONDS).fill(-1) };
      if (this.entries.size >= this.streamsMax) this.entries.delete(this.entries.keys().next().value!);
    } else {
      this.entries.delete(stream);
    }
    // Map order is insertion order: re-inserting keeps the most recently written last.
    this.entries.set(stream, entry);
    entry.accepted += outcome.accepted;
    entry.refused += outcome.refused;
    entry.bytes += outcome.bytes;
    entry.lastWriteMs = now;
    const second = Math.floor(now / 1000);
    const slot = second % RATE_WINDOW_SECONDS;
    if (entry.seconds[slot] !== second) {
      entry.seconds[slot] = second;
      entry.perSecond[slot] = 0;
    }
    entry.perSecond[slot]! += outcome.accepted;
  }

  get(stream: string): StreamCounters {
    const entry = this.entries.get(stream);
    if (entry === undefined) return { accepted: 0, refused: 0, bytes: 0, lastWriteMs: undefined, ratePerSecond: 0 };
    const second = Math.floor(this.nowMs() / 1000);
    let recent = 0;
    for (let slot = 0; slot < RATE_WINDOW_SECONDS; slot++) {
      const at = entry.seconds[slot]!;
      if (at > second - RATE_WINDOW_SECONDS && at <= second) recent += entry.perSecond[slot]!;
    }
    return { accepted: entry.accepted, refused: entry.refused, bytes: entry.bytes, lastWriteMs: entry.lastWriteMs, ratePerSecond: recent / RATE_WINDOW_SECONDS };
  }
}
