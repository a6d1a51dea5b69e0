// Whether this node serves clients, as one list of the reasons it may not
// (docs/operating.md, "Health and readiness"). The serving gate refuses data requests with
// the first reason that holds, and GET /ready answers 503 with every one that holds: both
// read the same list, so an orchestrator routing on /ready never sends traffic to a node
// that would refuse it. A reason is logged once when it starts to hold and once when it
// ends, whether or not anyone asked in between (the ops timer looks every heartbeat).
//
// A new reason (a disk that cannot be written, say) is one more entry of the list the
// composition root gives (node.ts, opsParts): a name and a check.

import type { Logger } from '../log.js';

export interface RefusalReason {
  /** A stable name for logs: `cluster`, `storage`, `stopping`, … */
  name: string;
  /**
   * Why the node refuses client requests now, in a sentence a client may read, or undefined
   * when this reason does not hold. Called for every data request: keep it cheap.
   */
  check(): string | undefined;
}

export interface Refusal {
  name: string;
  message: string;
}

export class Readiness {
  /** The reasons that held at the last look, by name, with their message then. */
  private readonly holding = new Map<string, string>();

  constructor(
    private readonly reasons: readonly RefusalReason[],
    private readonly log: Logger,
  ) {
    const names = reasons.map((reason) => reason.name);
    if (new Set(names).size !== names.length) throw new Error(`refusal reasons must have distinct names: ${names.join(', ')}`);
  }

  /** Every reason that holds now, in list order; logs each one that started or ended since the last look. */
  current(): Refusal[] {
    const now = this.reasons.flatMap((reason) => {
      const message = reason.check();
      return message === undefined ? [] : [{ name: reason.name, message }];
    });
    this.logChanges(now);
    return now;
  }

  /** What the serving gate answers: the first reason that holds, or undefined when the node serves. */
  refusal(): string | undefined {
    return this.current()[0]?.message;
  }

  private logChanges(now: readonly Refusal[]): void {
    for (const { name, message } of now) {
      const before = this.holding.get(name);
      if (before === message) continue;
      this.holding.set(name, message);
      this.log.warn({ reason: name }, `not serving clients: ${message}`);
    }
    for (const [name, message] of [...this.holding]) {
      if (now.some((refusal) => refusal.name === name)) continue;
      this.holding.delete(name);
      const after = this.holding.size === 0 ? 'serving clients again' : 'still not serving clients for another reason';
      this.log.info({ reason: name }, `${after}; cleared: ${message}`);
    }
  }
}
