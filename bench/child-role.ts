// A bench's helper process: the bench's own file started again with a role (a sink, a
// source, a bare node), answering one line of JSON on stdout, stopped by its pid. Nothing
// here is used by the product.

import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { NODE_FLAGS_GIVEN } from '../src/cli/node-flags.js';

/** A role's answer, with its start, must come within this (a role may override it). */
export const CHILD_ANSWER_TIMEOUT_MS = 120_000;

/**
 * Starts `file` (a compiled bench) in `role`; its stdout is for answers, its stderr the
 * bench's, its stdin the bench's to write with `stdin` (else none). With the V8 flags our
 * nodes get (node-flags.ts: a 64 MiB young generation…), so that no floor or pipeline a node
 * is measured against is slower for want of one of them.
 */
export function spawnRole(file: string, role: string, args: string[] = [], stdin: 'pipe' | 'ignore' = 'ignore'): ChildProcess {
  return spawn(process.execPath, [...NODE_FLAGS_GIVEN, file, role, ...args], { stdio: [stdin, 'pipe', 'inherit'] });
}

/** The child's first line of output, as JSON. */
export async function firstLine<T>(child: ChildProcess, what: string, timeoutMs = CHILD_ANSWER_TIMEOUT_MS): Promise<T> {
  const lines = createInterface({ input: child.stdout! });
  try {
    return await nextLine<T>(child, lines, what, timeoutMs);
  } finally {
    lines.close();
  }
}

/** The next line of `lines` (the child's stdout), as JSON; rejects when the child exits first or none comes in time. */
export function nextLine<T>(child: ChildProcess, lines: Interface, what: string, timeoutMs = CHILD_ANSWER_TIMEOUT_MS): Promise<T> {
  return new Promise((resolveLine, reject) => {
    const timer = setTimeout(() => finish(new Error(`${what}: no answer after ${timeoutMs} ms`)), timeoutMs);
    const onLine = (line: string) => {
      try {
        finish(undefined, JSON.parse(line) as T);
      } catch (error) {
        finish(new Error(`${what}: unexpected output '${line.slice(0, 200)}'`, { cause: error }));
      }
    };
    const onExit = (code: number | null, signal: string | null) => finish(new Error(`${what} exited (${code ?? signal}) before answering`));
    const finish = (error: Error | undefined, value?: T) => {
      clearTimeout(timer);
      lines.off('line', onLine);
      child.off('exit', onExit);
      if (error === undefined) resolveLine(value as T);
      else reject(error);
    };
    lines.once('line', onLine);
    child.once('exit', onExit);
  });
}

/** SIGTERM to the child's pid; resolves when it has exited. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  return exited;
}

/**
 * When `file` is the process's entry point, runs the role named by its first argument with
 * the rest; an unknown role or a failure exits 1 with the error on stderr.
 */
export function runRoleIfMain(file: string, roles: Record<string, (argv: string[]) => Promise<void>>): void {
  if (process.argv[1] === undefined || resolve(process.argv[1]) !== file) return;
  const [role, ...rest] = process.argv.slice(2);
  const run = roles[role ?? ''];
  (run === undefined ? Promise.reject(new Error(`unknown role '${role}'`)) : run(rest)).catch((error: unknown) => {
    console.error((error as Error).stack ?? String(error));
    process.exit(1);
  });
}
