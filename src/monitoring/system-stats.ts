// The process figures of the `system` monitoring service: event-loop delay, garbage collection,
// CPU time and open files, next to memory and uptime. Node's own instruments (perf_hooks)
// measure them; start() turns them on, stop() off.

import { readdirSync } from 'node:fs';
import { constants, monitorEventLoopDelay, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
/** Resolution of the event-loop delay sampler. */
const LOOP_RESOLUTION_MS = 10;
/** Open descriptors are counted up to this many (a directory listing per request). */
const OPEN_FILES_COUNTED_MAX = 1_000_000;

export interface SystemFigures {
  uptimeMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  eventLoopDelayMs: { min: number; mean: number; p50: number; p99: number; max: number };
  gc: { count: number; totalMs: number; byKind: Record<string, { count: number; totalMs: number }> };
  cpu: { userMs: number; systemMs: number; percentSinceLastRead: number | null };
  openFiles: number | null;
}

export class SystemStats {
  private loop: IntervalHistogram | undefined;
  private gcObserver: PerformanceObserver | undefined;
  private readonly gcByKind = new Map<string, { count: number; totalMs: number }>();
  private lastCpu: { atMs: number; usage: NodeJS.CpuUsage } | undefined;

  constructor(private readonly startedAtMs: number) {}

  start(): void {
    this.loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
    this.loop.enable();
    this.gcObserver = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        const kind = GC_KINDS[((entry as { detail?: { kind?: number } }).detail)?.kind ?? -1] ?? 'other';
        const tally = this.gcByKind.get(kind) ?? { count: 0, totalMs: 0 };
        tally.count += 1;
        tally.totalMs += entry.duration;
        this.gcByKind.set(kind, tally);
      }
    });
    this.gcObserver.observe({ entryTypes: ['gc'] });
  }

  stop(): void {
    this.loop?.disable();
    this.gcObserver?.disconnect();
  }

  read(nowMs = Date.now()): SystemFigures {
    const memory = process.memoryUsage();
    const usage = process.cpuUsage();
    const last = this.lastCpu;
    const percent = last === undefined || nowMs <= last.atMs ? null : (100 * (usage.user + usage.system - last.usage.user - last.usage.system)) / 1000 / (nowMs - last.atMs);
    this.lastCpu = { atMs: nowMs, usage };
    const byKind = Object.fromEntries([...this.gcByKind].map(([kind, tally]) => [kind, { count: tally.count, totalMs: round(tally.totalMs) }]));
    const gcCount = [...this.gcByKind.values()].reduce((sum, tally) => sum + tally.count, 0);
    const gcMs = [...this.gcByKind.values()].reduce((sum, tally) => sum + tally.totalMs, 0);
    return {
      uptimeMs: nowMs - this.startedAtMs,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      eventLoopDelayMs: loopDelay(this.loop),
      gc: { count: gcCount, totalMs: round(gcMs), byKind },
      cpu: { userMs: round(usage.user / 1000), systemMs: round(usage.system / 1000), percentSinceLastRead: percent === null ? null : round(percent) },
      openFiles: openFiles(),
    };
  }
}

function loopDelay(histogram: IntervalHistogram | undefined): SystemFigures['eventLoopDelayMs'] {
  // The histogram counts in nanoseconds; before its first sample min is a huge sentinel.
  if (histogram === undefined || histogram.count === 0) return { min: 0, mean: 0, p50: 0, p99: 0, max: 0 };
  const ms = (ns: number) => round(ns / 1e6);
  return { min: ms(histogram.min), mean: ms(histogram.mean), p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
}

/** Open file descriptors of this process (Linux's /proc); null where that cannot be read. */
function openFiles(): number | null {
  try {
    return Math.min(readdirSync('/proc/self/fd').length, OPEN_FILES_COUNTED_MAX);
  } catch {
    return null;
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
