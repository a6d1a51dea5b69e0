// Virtual time for the simulation of the real shell. The code under test is asynchronous
// (promises); here nothing happens but through this agenda: timers, message deliveries and
// storage I/O are events at virtual times, and after each event the world waits until every
// promise continuation it caused has run (one turn of Node's event loop: setImmediate runs only
// once the microtask queue is empty, and nothing else in the process uses timers or I/O). So a
// seed gives one order of events, always the same.
//
// Every node incarnation gets its own Timers: when the node crashes they stop, and a
// paused node's events wait until it resumes (SIGSTOP).

import type { Timer, Timers } from '../../src/lib/timers.js';
import { EventQueue } from './event-queue.js';

/** A process incarnation as the world sees it: events for a dead one are dropped. */
export interface Incarnation {
  readonly alive: boolean;
  /** Until when (virtual ms) the process is stopped; its events wait until then. */
  readonly pausedUntil: number;
}

export class VirtualWorld {
  now = 0;
  private readonly agenda = new EventQueue();
  private runningEvents = false;
  /** Called after each event has settled (a replay's tracing). */
  afterEvent: (() => void) | undefined;

  /** Runs `run` at virtual time `at` (not before now), unless `owner` died meanwhile. */
  schedule(at: number, run: () => void, owner?: Incarnation): void {
    this.agenda.push(Math.max(at, this.now), () => {
      if (owner === undefined) return run();
      if (!owner.alive) return;
      // A stopped process does nothing until it is continued.
      if (owner.pausedUntil > this.now) return this.schedule(owner.pausedUntil, run, owner);
      run();
    });
  }

  /** Timers of one incarnation: they fire only while it lives, and wait while it is paused. */
  timersOf(owner: Incarnation): Timers {
    return {
      now: () => this.now,
      setTimeout: (run, ms) => {
        let cancelled = false;
        this.schedule(this.now + Math.max(0, ms), () => !cancelled && run(), owner);
        return { cancel: () => void (cancelled = true) };
      },
      setInterval: (run, ms): Timer => {
        let cancelled = false;
        const every = Math.max(1, ms);
        const fire = (): void => {
          if (cancelled) return;
          run();
          this.schedule(this.now + every, fire, owner);
        };
        this.schedule(this.now + every, fire, owner);
        return { cancel: () => void (cancelled = true) };
      },
    };
  }

  /** Runs events up to and including virtual time `until`, letting each settle. */
  async runUntil(until: number, stop: () => boolean = () => false): Promise<void> {
    if (this.runningEvents) throw new Error('sim: runUntil re-entered');
    this.runningEvents = true;
    try {
      for (;;) {
        const at = this.agenda.peekTime();
        if (at === undefined || at > until || stop()) break;
        const event = this.agenda.pop()!;
        this.now = event.at;
        event.run();
        await settle();
        this.afterEvent?.();
      }
      if (!stop()) this.now = Math.max(this.now, until);
    } finally {
      this.runningEvents = false;
    }
  }

  get pending(): number {
    return this.agenda.size;
  }
}

/** Lets every promise continuation run: a full turn of the event loop. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
