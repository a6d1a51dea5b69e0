// CPU a Node server process spent per thread class during a run: its main thread, LevelDB's
// compaction thread, V8's helper threads (compilers, concurrent marking), worker threads
// (ours: the ingest workers) and libuv's thread pool (LevelDB reads and synced writes, fs).
// Every thread of a Node process is called "node", so the class of each comes from its stack:
// after the run, gdb prints every thread's frames once (a pause of about a second, outside
// the measured time). THREAD_CPU_DUMP=<file> appends each thread's frames and class to the
// file, to check the classes. Nothing here is used by the product.

import { execFileSync } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { findBinary } from './server-process.js';
import { installDebianPackage } from './debian-package.js';

export const THREAD_CLASSES = ['main', 'compaction', 'v8Helpers', 'workers', 'libuv', 'other'] as const;
export type ThreadClass = (typeof THREAD_CLASSES)[number];
export type CpuByClass = Record<ThreadClass, number>;

/** USER_HZ, the unit of /proc's CPU times: 100 on every Linux this runs on (x86-64, arm64). */
const CLOCK_TICKS_PER_SECOND = 100;
const GDB_TIMEOUT_MS = 60_000;

/** CPU seconds of each thread of `pid` so far, by thread id. */
export type ThreadTimes = Map<number, number>;

export function threadTimes(pid: number): ThreadTimes {
  const times: ThreadTimes = new Map();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return times;
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // After the name, which may itself hold ') '.
      const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      times.set(Number(tid), (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND);
    } catch {
      // The thread ended between the listing and the read: its time is lost to the report.
    }
  }
  return times;
}

/**
 * What a thread is, from the function it was started in: the frame gdb printed just above
 * start_thread. LevelDB's background thread starts in classic-level's (stripped) binary.
 */
function classOf(tid: number, pid: number, frames: string): ThreadClass {
  if (tid === pid) return 'main';
  const lines = frames.split('\n').filter((line) => /^#\d+ /.test(line));
  const start = lines.findIndex((line) => line.includes('start_thread'));
  const entry = start > 0 ? lines[start - 1]! : '';
  if (entry.includes('classic-level')) return 'compaction';
  if (entry.includes('PlatformWorkerThread') || entry.includes('DelayedTaskScheduler')) return 'v8Helpers';
  if (entry.includes('node::worker::Worker')) return 'workers';
  if (entry.includes('threadpool.c')) return 'libuv';
  return 'other';
}

let gdbPath: string | undefined | null = null;

function gdb(): string | undefined {
  if (gdbPath === null) gdbPath = findBinary('gdb') ?? (installDebianPackage('gdb') ? findBinary('gdb') : undefined);
  return gdbPath;
}

/** The class of each live thread of `pid`, or undefined when gdb is missing or failed. */
export function threadClasses(pid: number): Map<number, ThreadClass> | undefined {
  const binary = gdb();
  if (binary === undefined) return undefined;
  let output: string;
  try {
    output = execFileSync(binary, ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 40'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: GDB_TIMEOUT_MS,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    // gdb may not attach (ptrace restricted, the process gone): the report says "–" by thread.
    console.error(`thread-cpu: gdb could not read the threads of ${pid}: ${(error as Error).message.split('\n')[0]}`);
    return undefined;
  }
  const classes = new Map<number, ThreadClass>();
  for (const block of output.split(/\n(?=Thread \d+ \()/)) {
    const lwp = /\(LWP (\d+)\)/.exec(block);
    if (lwp === null) continue;
    const threadClass = classOf(Number(lwp[1]), pid, block);
    classes.set(Number(lwp[1]), threadClass);
    if (process.env.THREAD_CPU_DUMP) appendFileSync(process.env.THREAD_CPU_DUMP, `CLASS ${threadClass}\n${block}\n`);
  }
  return classes;
}

/**
 * CPU seconds by thread class between `before` and now, over every process; threads born
 * during the run count from zero. Undefined when a process's threads could not be classed.
 */
export function cpuByClassSince(before: ReadonlyMap<number, ThreadTimes>): CpuByClass | undefined {
  const total = Object.fromEntries(THREAD_CLASSES.map((name) => [name, 0])) as CpuByClass;
  for (const [pid, earlier] of before) {
    const now = threadTimes(pid);
    const classes = threadClasses(pid);
    if (classes === undefined) return undefined;
    for (const [tid, seconds] of now) total[classes.get(tid) ?? 'other'] += seconds - (earlier.get(tid) ?? 0);
  }
  return total;
}

export function threadTimesOf(pids: ReadonlyArray<number | undefined>): Map<number, ThreadTimes> {
  return new Map(pids.filter((pid): pid is number => pid !== undefined).map((pid) => [pid, threadTimes(pid)]));
}

/** CPU seconds by thread class as µs per item (payload, point), to `decimals` places. */
export function perItemUs(byClass: CpuByClass | undefined, items: number, decimals: number): CpuByClass | undefined {
  if (byClass === undefined) return undefined;
  const scale = 10 ** decimals;
  return Object.fromEntries(THREAD_CLASSES.map((name) => [name, Math.round(((byClass[name] * 1e6) / items) * scale) / scale])) as CpuByClass;
}
