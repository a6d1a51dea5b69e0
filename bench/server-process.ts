// A throw-away server process for the peer benchmarks: a binary started on free
// loopback ports with a folder of its own, its output sent to a log file there, waited for
// until a probe answers, and stopped by its pid (never by name) with the folder removed.
// Nothing here is used by the product.

import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { delimiter, join } from 'node:path';
import { sleep } from '../test/kit/node-process.js';

const STOP_GRACE_MS = 10_000;
const PROBE_INTERVAL_MS = 100;

/** Every server not yet stopped: killed when the bench process exits, whatever the cause. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const each of running) each.kill('SIGKILL');
  });
}

/** The path of `name` on PATH (or in /usr/sbin and /usr/bin, where Debian puts daemons), else undefined. */
export function findBinary(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/usr/local/bin'];
  return dirs.filter((dir) => dir !== '').map((dir) => join(dir, name)).find((path) => existsSync(path));
}

/** The first line a binary prints for `args` (its version), or undefined when it fails. */
export function versionOf(binary: string, args: readonly string[]): string | undefined {
  try {
    return execFileSync(binary, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 }).trim().split('\n')[0];
  } catch {
    return undefined;
  }
}

export function temporaryFolder(prefix: string): string {
  return mkdtempSync(join(os.tmpdir(), `tributary-bench-${prefix}-`));
}

export class ServerProcess {
  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly logPath: string,
  ) {}

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Spawns `binary args` with its output appended to `logPath`, then waits until `ready`
   * answers true (bounded by `readyTimeoutMs`); on failure it is stopped and the log's tail
   * is in the error.
   */
  static async start(
    name: string,
    binary: string,
    args: readonly string[],
    logPath: string,
    ready: () => Promise<boolean>,
    readyTimeoutMs = 30_000,
  ): Promise<ServerProcess> {
    const log = openSync(logPath, 'a');
    let child: ChildProcess;
    try {
      child = spawn(binary, args, { stdio: ['ignore', log, log] });
    } finally {
      closeSync(log);
    }
    track(child);
    const server = new ServerProcess(name, child, logPath);
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (server.exited()) throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${server.logTail()}`);
      if (await ready().catch(() => false)) return server;
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(`${name} not ready after ${readyTimeoutMs} ms:\n${server.logTail()}`);
      }
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  logTail(chars = 3000): string {
    return existsSync(this.logPath) ? readFileSync(this.logPath, 'utf8').slice(-chars) : '';
  }

  /** SIGTERM, then SIGKILL if it has not exited within STOP_GRACE_MS. */
  async stop(): Promise<void> {
    if (this.exited()) return;
    const exited = new Promise<void>((resolveExit) => this.child.once('exit', () => resolveExit()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  /** For an emergency exit (SIGINT of the bench): no waiting. */
  killNow(): void {
    if (!this.exited()) this.child.kill('SIGKILL');
  }
}

/** Linux's clock ticks per second for /proc/<pid>/stat (USER_HZ, 100 on every common build). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * User + system CPU seconds the processes have used so far, all their threads included
 * (undefined off Linux or when one is gone). On a 2-core machine the servers run out of CPU
 * first, so what a run costs in CPU says as much as its rate.
 */
export function cpuSecondsOf(pids: ReadonlyArray<number | undefined>): number | undefined {
  let total = 0;
  for (const pid of pids) {
    if (pid === undefined) return undefined;
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return undefined;
    }
  }
  return total;
}

/**
 * Waits until the processes together use at most `shareMax` of one core over a second (a
 * server compacting what it was just given), for at most `timeoutMs`; the seconds waited.
 */
export async function waitQuiet(pids: ReadonlyArray<number | undefined>, shareMax = 0.05, timeoutMs = 60_000): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < timeoutMs) {
    const before = cpuSecondsOf(pids);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const after = cpuSecondsOf(pids);
    if (before === undefined || after === undefined || after - before <= shareMax) break;
  }
  return Math.round(performance.now() - started) / 1000;
}

/** Bytes under a folder (what a server holds on disk), or 0 when it is gone. */
export function folderBytes(path: string): number {
  try {
    return Number(execFileSync('du', ['-sb', path], { encoding: 'utf8' }).split('\t')[0]);
  } catch {
    return 0;
  }
}

export function removeFolder(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
