// Whether this node serves clients, as one list of the reasons it may not
// (docs/operating.md, "Health and readiness"). The serving gate refuses data requests with
// the first reason that holds, and GET /ready answers 503 with every one that holds: both
// read the same list, so an orchestrator routing on /ready never sends traffic to a node
// that would refuse it. A reason is logged once when it starts to hold and once when it
// ends, whether or not anyone asked in between (the ops timer looks every heartbeat).
//
// A new reason is one more entry of the list the composition root gives (node.ts,
// opsParts): a name and a check. A reason that only stops writes (a full disk) is listed by
// /ready but does not close the serving gate: the node goes on serving reads.

import type { Logger } from '../lib/log.js';

export interface RefusalReason {
  /** A stable name for logs: `cluster`, `storage`, `stopping`, … */
  name: string;
  /**
   * Why the node refuses client requests now, in a sentence a client may read, or undefined
   * when this reason does not hold. Called for every data request: keep it cheap.
   */
  check(): string | undefined;
  /**
   * The node still serves reads while this holds, and refuses writes on its own (a full
   * disk: 507 from storage): /ready lists it, the serving gate lets requests through.
   */
  writesOnly?: true;
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
      return message === undefined ? [] : [{ name: reason.name, message, writesOnly: reason.writesOnly === true }];
    });
    this.logChanges(now);
    return now.map(({ name, message }) => ({ name, message }));
  }

  /** What the serving gate answers: the first reason that refuses every request, or undefined when the node serves. */
  refusal(): string | undefined {
    const refusing = new Set(this.reasons.filter((reason) => reason.writesOnly !== true).map((reason) => reason.name));
    return this.current().find((refusal) => refusing.has(refusal.name))?.message;
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
