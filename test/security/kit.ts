// The attack suite's measuring tools: how long the node takes to answer
// a cheap request while an attack runs (its event loop's stalls, seen from outside), its
// resident memory and open file descriptors (from /proc), and a line per figure on stdout
// (`SECURITY <class>: …`) that docs/security.md's table is made from.

import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { NodeProcess } from '../kit/node-process.js';

/** Resident memory of the node's process, in MiB. */
export function rssMiB(node: NodeProcess): number {
  const status = readFileSync(`/proc/${node.child!.pid}/status`, 'utf8');
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kib / 1024;
}

/** Open file descriptors of the node's process. */
export function openFds(node: NodeProcess): number {
  return readdirSync(`/proc/${node.child!.pid}/fd`).length;
}

export function alive(node: NodeProcess): boolean {
  return node.child !== undefined && node.child.exitCode === null && node.child.signalCode === null;
}

export interface Stalls {
  /** Probes answered while the attack ran. */
  probes: number;
  /** The slowest answer, in ms: the longest the node kept others waiting. */
  worstMs: number;
}

/**
 * Runs `attack` while a probe asks GET /cluster/localNode every 25 ms, one at a time, and
 * reports the slowest answer: a node whose event loop is held answers no probe meanwhile.
 */
export async function underProbe<T>(node: NodeProcess, attack: () => Promise<T>): Promise<{ result: T; stalls: Stalls }> {
  let running = true;
  let worstMs = 0;
  let probes = 0;
  const probing = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${node.url}/cluster/localNode`, { signal: AbortSignal.timeout(60_000) }).catch(() => undefined);
      await response?.arrayBuffer();
      worstMs = Math.max(worstMs, performance.now() - started);
      probes += 1;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  try {
    const result = await attack();
    return { result, stalls: { probes, worstMs: Math.round(worstMs) } };
  } finally {
    running = false;
    await probing;
  }
}

/** The JSON of a 200 answer; anything else fails the setup, naming what was being done. */
export async function ok(response: Promise<{ status: number; text: string; json: any }>, what: string): Promise<any> {
  const done = await response;
  if (done.status !== 200) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 300)}`);
  return done.json;
}

/** Prints one figure of the suite, for docs/security.md's table. */
export function figure(attackClass: string, fields: Record<string, unknown>): void {
  console.log(`SECURITY ${attackClass}: ${JSON.stringify(fields)}`);
}

/**
 * The slowest answer a probe may see during an attack. The goal is ~100 ms of event-loop
 * blocking; the probe also waits for the HTTP round trip and, on this shared 2-core
 * machine, for other processes, so the assertion allows more. Before these limits the same
 * attacks held a node for 5.9 to 33 seconds.
 */
export const PROBE_WORST_MS = 750;

/** Every route family, with the path parameters filled in (some right, some wrong). */
export const ROUTES: Array<[string, string]> = [
  ['GET', '/cluster'], ['GET', '/cluster/nodes'], ['GET', '/cluster/nodes/node-1'], ['POST', '/cluster/nodes'], ['DELETE', '/cluster/nodes/x'],
  ['PUT', '/cluster/tenants/{name}'], ['GET', '/cluster/transfers'], ['GET', '/cluster/join-token'],
  ['GET', '/streams/demo'], ['PUT', '/streams/demo/fuzz/{name}'], ['POST', '/streams/demo/fuzz/s'], ['PUT', '/streams/demo/fuzz/s/policy'],
  ['PUT', '/streams/demo/fuzz/s/taxonomy'], ['PUT', '/streams/demo/fuzz/s/tags'], ['PUT', '/streams/demo/fuzz/s/repository'],
  ['POST', '/ssr/demo/_search'], ['POST', '/ssr/demo/_facet'], ['POST', '/ssr/demo/_timeRangeHistogram'], ['POST', '/ssr/demo/_discover'],
  ['PUT', '/contributors/demo/{name}'], ['PUT', '/contributors/demo/t/instances/{name}'], ['PUT', '/domain/demo/c/{name}'],
  ['POST', '/execution/demo/sessions'], ['PUT', '/execution/demo/sessions/{name}'], ['PUT', '/daemon/demo/c/{name}'],
  ['GET', '/monitoring/demo/{name}'], ['PUT', '/admin/demo/vendors/{name}'], ['GET', '/output/demo/{name}'],
  ['POST', '/api/v1/brains'], ['PATCH', '/api/v1/admin/accounts/{name}'],
];
