// `npm run cluster -- N`: starts N local nodes on their own ports and data folders, joins
// them through POST /cluster/nodes on the first, prints each node's URL and the live event
// stream of GET /output/cluster, and stops them all on Ctrl-C.
//
//   npm run cluster -- 3 [--base-port 18080] [--data-root data/cluster]

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join as joinPath, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EventSource } from 'eventsource';

const ROOT = resolve(import.meta.dirname, '..', '..');
const MAIN = joinPath(ROOT, 'dist', 'src', 'main.js');
const READY_TIMEOUT_MS = 30_000;

interface LocalNode {
  name: string;
  httpPort: number;
  peerPort: number;
  child: ChildProcess;
  url: string;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { 'base-port': { type: 'string', default: '18080' }, 'data-root': { type: 'string', default: 'data/cluster' } },
  });
  const count = Number(positionals[0] ?? '3');
  const basePort = Number(values['base-port']);
  if (!Number.isInteger(count) || count < 1 || count > 16) throw new Error('the node count must be an integer from 1 to 16');
  if (!Number.isInteger(basePort) || basePort < 1024 || basePort + 2 * count > 65535) throw new Error('bad --base-port');

  const nodes: LocalNode[] = [];
  const stopAll = () => nodes.forEach((node) => node.child.kill('SIGTERM'));
  process.on('SIGINT', () => {
    console.log('\nstopping every node…');
    stopAll();
    setTimeout(() => process.exit(0), 5_000).unref();
  });
  for (let index = 0; index < count; index += 1) {
    nodes.push(await startNode(index, basePort, values['data-root']!));
  }
  const seed = nodes[0]!;
  follow(seed.url);
  for (const node of nodes.slice(1)) await join(seed, node);
  console.log('\ncluster ready:');
  for (const node of nodes) console.log(`  ${node.name}  ${node.url}  (peer port ${node.peerPort})`);
  console.log('events follow; Ctrl-C stops every node.\n');
}

async function startNode(index: number, basePort: number, dataRoot: string): Promise<LocalNode> {
  const name = `node-${index + 1}`;
  const httpPort = basePort + 2 * index;
  const peerPort = httpPort + 1;
  const dataDir = joinPath(dataRoot, name);
  mkdirSync(dataDir, { recursive: true });
  const args = ['--no-node-snapshot', MAIN, 'start', '--name', name, '--http-port', String(httpPort), '--peer-port', String(peerPort), '--data-dir', dataDir, '--log-level', 'warn'];
  if (index > 0) args.push('--join');
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] });
  const node = { name, httpPort, peerPort, child, url: `http://127.0.0.1:${httpPort}` };
  await waitReady(node);
  console.log(`started ${name} at ${node.url}${index > 0 ? ' (Pending, waiting to be added)' : ''}`);
  return node;
}

async function waitReady(node: LocalNode): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (node.child.exitCode !== null) throw new Error(`${node.name} exited with code ${node.child.exitCode}`);
    try {
      if ((await fetch(`${node.url}/cluster/localNode`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 100));
  }
  throw new Error(`${node.name} did not answer within ${READY_TIMEOUT_MS} ms`);
}

/** Adds `node` through the seed, as an operator would: its public key from its own localNode. */
async function join(seed: LocalNode, node: LocalNode): Promise<void> {
  const local = ((await (await fetch(`${node.url}/cluster/localNode`)).json()) as { node: { publicKey: string } }).node;
  const response = await fetch(`${seed.url}/cluster/nodes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ nodes: [{ name: node.name, publicKey: local.publicKey, address: '127.0.0.1', port: node.peerPort }] }),
  });
  if (!response.ok) throw new Error(`adding ${node.name} failed: ${response.status} ${await response.text()}`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const state = ((await (await fetch(`${node.url}/cluster/localNode`)).json()) as { node: { state: string } }).node.state;
    if (state === 'Joined') return;
    if (Date.now() > deadline) throw new Error(`${node.name} is still ${state} after 120 s`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 250));
  }
}

function follow(url: string): void {
  const events = new EventSource(`${url}/output/cluster`);
  events.onmessage = (event) => {
    const message = JSON.parse(event.data) as { type: string; node?: string; state?: unknown; tenant?: { name: string } };
    if (message.type === 'NODE_STATE_UPDATED') console.log(`[event] ${message.node} → ${String(message.state)}`);
    else if (message.type === 'TENANT_ADDED') console.log(`[event] tenant ${message.tenant?.name} added`);
    else console.log(`[event] ${message.type}`);
  };
}

main().catch((error: unknown) => {
  console.error(`cluster: ${(error as Error).message}`);
  process.exit(1);
});
