// Write ids name a stored record across the cluster: the receiving node's name after a
// microsecond clock that never goes backwards within the process. Hex of fixed width, so
// ids of one node sort in the order they were issued.

export class WriteIdGenerator {
  private lastMicros = 0;

  constructor(
    private readonly nodeName: string,
    private readonly nowMs: () => number = Date.now,
  ) {}

  next(): string {
    const micros = Math.max(Math.floor(this.nowMs() * 1000), this.lastMicros + 1);
    this.lastMicros = micros;
    return `${micros.toString(16).padStart(14, '0')}.${this.nodeName}`;
  }
}
