// Time as the parts that wait or repeat see it: a monotonic clock and timers. The node passes
// realTimers; the simulation passes virtual ones that move only when it says, so a seed replays
// exactly (test/sim).

export interface Timer {
  cancel(): void;
}

export interface Timers {
  /** Milliseconds of a monotonic clock (not the wall clock). */
  now(): number;
  setTimeout(run: () => void, ms: number): Timer;
  setInterval(run: () => void, ms: number): Timer;
}

/** Node's own timers; none of them keeps the process alive. */
export const realTimers: Timers = {
  now: () => performance.now(),
  setTimeout(run, ms) {
    const handle = setTimeout(run, ms);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
  setInterval(run, ms) {
    const handle = setInterval(run, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};
