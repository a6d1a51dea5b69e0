// `npm run cluster -- N`: starts N local nodes on their own ports and data folders, joins
// them through POST /cluster/nodes on the first, prints each node's URL, the cluster
// events of GET /output/cluster, the progress of every transfer and any node that dies,
// and stops them all when it ends, whatever ends it: Ctrl-C, SIGTERM, an error, or even
// SIGKILL (each node watches the pipe on its stdin and stops when it closes).
//
// A second run reuses the folders: nodes that are already members start as they were and
// are not added again. `--fresh` deletes the nodes' folders first.
//
//   npm run cluster -- 3 [--base-port 18080] [--data-root data/cluster] [--fresh]

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join as joinPath, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EventSource } from 'eventsource';
import { NODE_FLAGS_GIVEN } from '../src/cli/node-flags.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const MAIN = joinPath(ROOT, 'dist', 'src', 'main.js');
const READY_TIMEOUT_MS = 30_000;
const JOIN_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 6_000;
const PROGRESS_INTERVAL_MS = 1_000;
const NODES_MAX = 16;

interface LocalNode {
  name: string;
  httpPort: number;
  peerPort: number;
  child: ChildProcess;
  dataDir: string;
  url: string;
}

const nodes: LocalNode[] = [];
let stopping = false;

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      'base-port': { type: 'string', default: '18080' },
      'data-root': { type: 'string', default: 'data/cluster' },
      fresh: { type: 'boolean', default: false },
    },
  });
  const count = Number(positionals[0] ?? '3');
  const basePort = Number(values['base-port']);
  const dataRoot = values['data-root']!;
  if (!Number.isInteger(count) || count < 1 || count > NODES_MAX) throw new Error(`the node count must be an integer from 1 to ${NODES_MAX}`);
  if (!Number.isInteger(basePort) || basePort < 1024 || basePort + 2 * count > 65535) throw new Error('bad --base-port');
  if (values.fresh) {
    // Only the folders this script makes: node-1 … node-16 below the data root.
    for (let index = 1; index <= NODES_MAX; index += 1) rmSync(joinPath(dataRoot, `node-${index}`), { recursive: true, force: true });
    console.log(`--fresh: removed the node folders below ${dataRoot}`);
  }

  for (let index = 0; index < count; index += 1) await startNode(index, basePort, dataRoot);
  const seed = nodes[0]!;
  follow(seed.url);
  followTransfers(seed.url);
  for (const node of nodes.slice(1)) await join(seed, node);
  console.log('\ncluster ready:');
  console.log(await (await fetch(`${seed.url}/_cat/nodes?v&h=name,state,available,address,http,peer,owns`)).text());
  console.log('events, transfers and node exits follow; Ctrl-C stops every node.\n');
}

async function startNode(index: number, basePort: number, dataRoot: string): Promise<LocalNode> {
  const name = `node-${index + 1}`;
  const httpPort = basePort + 2 * index;
  const peerPort = httpPort + 1;
  const dataDir = joinPath(dataRoot, name);
  mkdirSync(dataDir, { recursive: true });
  const args = [...NODE_FLAGS_GIVEN, MAIN, 'start', '--name', name, '--http-port', String(httpPort), '--peer-port', String(peerPort), '--data-dir', dataDir, '--log-level', 'warn'];
  if (index > 0) args.push('--join');
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    stdio: ['pipe', 'inherit', 'inherit'],
    env: { ...process.env, TRIBUTARY_STOP_WITH_STDIN: '1' },
  });
  const node = { name, httpPort, peerPort, child, dataDir, url: `http://127.0.0.1:${httpPort}` };
  // Known before it is ready: whatever happens next, stopAll() stops it.
  nodes.push(node);
  child.on('exit', (code, signal) => {
    if (!stopping) console.log(`[cluster] ${name} (pid ${child.pid}) died: ${signal ?? `exit code ${code}`}`);
  });
  await waitReady(node);
  const state = (await localNode(node)).state;
  console.log(`started ${name} at ${node.url} (pid ${child.pid}, ${state})`);
  return node;
}

async function waitReady(node: LocalNode): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (node.child.exitCode !== null || node.child.signalCode !== null) throw new Error(`${node.name} exited before it answered`);
    try {
      if ((await fetch(`${node.url}/health`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`${node.name} did not answer within ${READY_TIMEOUT_MS} ms`);
}

async function localNode(node: LocalNode): Promise<{ publicKey: string; state: string }> {
  return ((await (await fetch(`${node.url}/cluster/localNode`)).json()) as { node: { publicKey: string; state: string } }).node;
}

/** Adds `node` through the seed, as an operator would; a node already a member (a second run) is only waited for. */
async function join(seed: LocalNode, node: LocalNode): Promise<void> {
  const local = await localNode(node);
  if (local.state === 'Pending') {
    const response = await fetch(`${seed.url}/cluster/nodes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ nodes: [{ name: node.name, publicKey: local.publicKey, address: '127.0.0.1', port: node.peerPort }] }),
    });
    if (!response.ok) throw new Error(`adding ${node.name} failed: ${response.status} ${await response.text()}`);
    console.log(`adding ${node.name}…`);
  } else {
    console.log(`${node.name} is already a member (${local.state}): not added again`);
  }
  const deadline = Date.now() + JOIN_TIMEOUT_MS;
  for (;;) {
    const state = (await localNode(node)).state;
    if (state === 'Joined') return;
    // A node removed earlier comes back believing it is a member, and learns from a peer that it has left:
    // it never joins again with that folder, so waiting would only end in the timeout.
    if (state === 'Left') throw new Error(`${node.name} was removed from the cluster (Left), and a node never joins again with its old data folder: run again with --fresh, or delete ${node.dataDir}`);
    if (Date.now() > deadline) throw new Error(`${node.name} is still ${state} after ${JOIN_TIMEOUT_MS / 1000} s`);
    await sleep(250);
  }
}

function follow(url: string): void {
  const events = new EventSource(`${url}/output/cluster`);
  events.onmessage = (event) => {
    const message = JSON.parse(event.data) as { type: string; node?: string; state?: unknown; tenant?: { name: string } };
    if (message.type === 'NODE_STATE_UPDATED') console.log(`[event] ${message.node} → ${String(message.state)}`);
    else if (message.type === 'TENANT_ADDED') console.log(`[event] tenant ${message.tenant?.name} added`);
    else if (message.type !== 'CLUSTER_STATE') console.log(`[event] ${message.type}`);
  };
}

/** Prints a line whenever a transfer's state or whole percentage changes. */
function followTransfers(url: string): void {
  const shown = new Map<string, string>();
  const timer = setInterval(async () => {
    try {
      const rows = (await (await fetch(`${url}/_cat/transfers?format=json`)).json()) as Array<Record<string, string | number | null>>;
      for (const row of rows) {
        const line = `${row.repo} ${row.from} → ${row.to} ${row.state} ${Math.floor(Number(row.percent))}%${row.reason ? ` (${row.reason})` : ''}`;
        if (shown.get(String(row.id)) === line) continue;
        shown.set(String(row.id), line);
        const rate = row.rate === null ? '' : `, ${(Number(row.rate) / 1048576).toFixed(1)} MiB/s`;
        const eta = row.eta === null || row.state !== 'running' ? '' : `, ETA ${row.eta} s`;
        console.log(`[transfer] ${line}${rate}${eta}`);
      }
    } catch {
      // The seed is restarting or gone; its exit is reported on its own.
    }
  }, PROGRESS_INTERVAL_MS);
  timer.unref();
}

/** Stops every node (SIGTERM, then SIGKILL after a grace period) and exits. */
function stopAll(exitCode: number): void {
  if (stopping) return;
  stopping = true;
  const alive = nodes.filter((node) => node.child.exitCode === null && node.child.signalCode === null);
  for (const node of alive) node.child.kill('SIGTERM');
  const exited = alive.map((node) => new Promise<void>((resolveExit) => node.child.once('exit', () => resolveExit())));
  const force = setTimeout(() => {
    for (const node of alive) node.child.kill('SIGKILL');
  }, STOP_GRACE_MS);
  void Promise.all(exited).then(() => {
    clearTimeout(force);
    process.exit(exitCode);
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    console.log(`\n${signal}: stopping every node…`);
    stopAll(0);
  });
}
// Last resort on any exit path not seen above: the nodes get SIGTERM, synchronously.
process.on('exit', () => {
  for (const node of nodes) if (node.child.exitCode === null && node.child.signalCode === null) node.child.kill('SIGTERM');
});

main().catch((error: unknown) => {
  console.error(`cluster: ${(error as Error).message}`);
  stopAll(1);
});
