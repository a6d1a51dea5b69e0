// `npm run cluster -- N` (scripts/cluster.ts): its nodes never outlive it, even when it is
// killed with SIGKILL; a second run reuses its folders, and says at once to start over when
// a node of them was removed; --fresh starts over; it prints transfer progress and any node
// that dies.

import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { until } from '../kit/cluster.js';
import { sleep, temporaryDataDir, cleanup } from '../kit/node-process.js';

const SCRIPT = join(packageRoot(), 'dist', 'scripts', 'cluster.js');
/** The script's ports are taken from here up to the kernel's ephemeral range (Linux's default start where it cannot be read). */
const PORTS_FROM = 20_000;
const DEFAULT_EPHEMERAL_FIRST = 32_768;
const READY_LINE = 'events, transfers and node exits follow';
const READY_TIMEOUT_MS = 90_000;
const started: ChildProcess[] = [];
const nodePids = new Set<number>();

afterAll(async () => {
  // Whatever a failed assertion left: the scripts, then any node they started.
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const pid of nodePids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  await cleanup();
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A base port whose next `count` ports are all free, below the range the kernel hands out
 * for port 0 and outgoing connections: the other tests' nodes (freePort) and clients live
 * there, and one of them taking a port between this check and the script's start left the
 * script's seed answering for another test's node (a first run never ready, once in CI).
 */
async function freeRange(count: number): Promise<number> {
  const ephemeralFirst = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  const below = Number.isInteger(ephemeralFirst) && ephemeralFirst > PORTS_FROM + count ? ephemeralFirst : DEFAULT_EPHEMERAL_FIRST;
  for (;;) {
    const base = PORTS_FROM + Math.floor(Math.random() * (below - PORTS_FROM - count));
    let free = true;
    for (let port = base; port < base + count && free; port += 1) free = await portFree(port);
    if (free) return base;
  }
}

function runScript(args: string[]): { child: ChildProcess; output: () => string; pids: () => Map<string, number> } {
  const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const pids = () => {
    const found = new Map<string, number>();
    for (const match of output.matchAll(/^started (node-\d+) at \S+ \(pid (\d+), /gm)) {
      found.set(match[1]!, Number(match[2]));
      nodePids.add(Number(match[2]));
    }
    return found;
  };
  return { child, output: () => output, pids };
}

/** Waits for the run's ready line; fails at once when the script exits first, and says what it printed either way. */
async function ready(run: ReturnType<typeof runScript>, what: string): Promise<void> {
  const ended = () => run.child.exitCode !== null || run.child.signalCode !== null;
  const printed = () => `; it printed:\n${run.output().slice(-4000)}`;
  await until(`${what} to be ready`, async () => run.output().includes(READY_LINE) || ended(), READY_TIMEOUT_MS).catch((error: Error) => {
    throw new Error(`${error.message}${printed()}`);
  });
  if (!run.output().includes(READY_LINE)) throw new Error(`${what}: the script exited${printed()}`);
}

async function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
}

describe('npm run cluster - lifecycle', () => {
  it('nodes stop with the script, even on SIGKILL; a second run reuses the folders; --fresh starts over', async () => {
    const dataRoot = temporaryDataDir();
    const basePort = await freeRange(4);
    const args = ['2', '--base-port', String(basePort), '--data-root', dataRoot];

    const first = runScript(args);
    await ready(first, 'the first run');
    expect(first.output()).toContain('adding node-2…');
    await until('the KV transfer to be printed', async () => /\[transfer\] KV node-1 → node-2 done 100%/.test(first.output()), 20_000);
    const firstPids = [...first.pids().values()];
    expect(firstPids).toHaveLength(2);
    first.child.kill('SIGKILL');
    await exited(first.child);
    await until('every node of the killed run to stop', async () => firstPids.every((pid) => !alive(pid)), 15_000);

    const second = runScript(args);
    await ready(second, 'the second run');
    expect(second.output()).toContain('node-2 is already a member (Joined): not added again');
    expect(second.output()).toMatch(/^node-1 +Joined +true /m);
    const secondPids = second.pids();
    process.kill(secondPids.get('node-2')!, 'SIGKILL');
    await until('the script to report the dead node', async () => second.output().includes(`[cluster] node-2 (pid ${secondPids.get('node-2')}) died: SIGKILL`), 10_000);
    second.child.kill('SIGTERM');
    await exited(second.child);
    expect(second.child.exitCode).toBe(0);
    expect(alive(secondPids.get('node-1')!)).toBe(false);

    const fresh = runScript([...args, '--fresh']);
    await ready(fresh, 'the fresh run');
    expect(fresh.output()).toContain('--fresh: removed the node folders');
    expect(fresh.output()).toContain('adding node-2…');
    const freshPids = [...fresh.pids().values()];
    fresh.child.kill('SIGINT');
    await exited(fresh.child);
    await sleep(100);
    for (const pid of freshPids) expect(alive(pid)).toBe(false);
  }, 300_000);

  it('a second run after a node was removed says at once to start over, instead of waiting for it to join', async () => {
    const dataRoot = temporaryDataDir();
    const basePort = await freeRange(4);
    const args = ['2', '--base-port', String(basePort), '--data-root', dataRoot];
    const first = runScript(args);
    await ready(first, 'the first run');
    const removed = await fetch(`http://127.0.0.1:${basePort}/cluster/nodes/node-2`, { method: 'DELETE' });
    expect(removed.status).toBe(200);
    const localNode = async () => ((await (await fetch(`http://127.0.0.1:${basePort + 2}/cluster/localNode`)).json()) as { node: { state: string } }).node.state;
    await until('node-2 to be Left', async () => (await localNode()) === 'Left', 60_000);
    first.child.kill('SIGTERM');
    await exited(first.child);

    const startedAt = Date.now();
    const second = runScript(args);
    await exited(second.child);
    expect(second.child.exitCode).toBe(1);
    expect(Date.now() - startedAt).toBeLessThan(30_000);
    expect(second.output()).toContain(`cluster: node-2 was removed from the cluster (Left), and a node never joins again with its old data folder: run again with --fresh, or delete ${join(dataRoot, 'node-2')}`);
    for (const pid of second.pids().values()) await until(`node pid ${pid} to stop`, async () => !alive(pid), 10_000);
  }, 180_000);
});
