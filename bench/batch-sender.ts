// The client of the ingest comparisons: a process of its own that posts prepared request
// bodies and reports its timing and its CPU. The bench process holds every payload of a
// run as objects (150–400 MB of heap, for checking answers), and each of its major GCs cost
// ~100 ms of CPU on the machine's two cores, falling on whichever run was being timed: the
// ratio of two runs moved by ±10% with it. The sender holds only the bodies, as bytes off the
// heap, and the bench waits idle while it posts.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { assert } from '../src/lib/assert.js';
import { nextLine, runRoleIfMain, spawnRole, stopChild } from './child-role.js';
import { postBatch, runBatches, type Timing } from './ingest.js';
import { removeFolder, temporaryFolder } from './server-process.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const LENGTH_BYTES = 4;
/** A sender's answer (ready, or its run done) must come within this. */
const ANSWER_TIMEOUT_MS = 600_000;

/** Request bodies written once to a file each sender reads. */
export class BodyFile {
  private constructor(
    readonly path: string,
    private readonly folder: string,
    /** How many bodies it holds. */
    readonly count: number,
  ) {}

  /** Each body after its length (4 bytes, big-endian). */
  static write(bodies: readonly Buffer[]): BodyFile {
    const folder = temporaryFolder('bodies');
    const path = join(folder, 'bodies');
    const parts: Buffer[] = [];
    for (const body of bodies) {
      const length = Buffer.alloc(LENGTH_BYTES);
      length.writeUInt32BE(body.length);
      parts.push(length, body);
    }
    writeFileSync(path, Buffer.concat(parts));
    return new BodyFile(path, folder, bodies.length);
  }

  remove(): void {
    removeFolder(this.folder);
  }
}

function readBodies(path: string): Buffer[] {
  const bytes = readFileSync(path);
  const bodies: Buffer[] = [];
  for (let offset = 0; offset < bytes.length; ) {
    assert(offset + LENGTH_BYTES <= bytes.length, `a body file cut in a length at ${offset}`);
    const length = bytes.readUInt32BE(offset);
    offset += LENGTH_BYTES;
    assert(offset + length <= bytes.length, `a body file cut in a body at ${offset}`);
    bodies.push(bytes.subarray(offset, offset + length));
    offset += length;
  }
  return bodies;
}

export interface SendOptions {
  /** Body i goes to urls[i % urls.length]. */
  urls: readonly string[];
  concurrency: number;
  /** The bodies sent: `count` from `first` (default all). */
  first?: number;
  count?: number;
  contentType?: string;
  /** The status every answer must have. */
  okStatus?: number;
}

/** A sender's run: its timing, and the CPU seconds its process used posting. */
export interface Sent {
  timing: Timing;
  cpuSeconds: number;
}

/** A sender started and ready (its bodies read): run() posts them once. */
export interface ReadySender {
  run(): Promise<Sent>;
}

/**
 * Starts a sender of `file`'s bodies; it posts them only when run() is called, so that what
 * the caller measures around run() is the posting alone.
 */
export async function startSender(file: BodyFile, options: SendOptions): Promise<ReadySender> {
  const first = options.first ?? 0;
  const count = options.count ?? file.count - first;
  assert(options.urls.length > 0 && options.concurrency >= 1 && first >= 0 && count >= 1 && first + count <= file.count, `a sender of ${count} bodies from ${first} of ${file.count}, ${options.concurrency} in flight to ${options.urls.length} urls`);
  const args = ['--file', file.path, '--first', String(first), '--count', String(count), '--concurrency', String(options.concurrency)];
  args.push('--content-type', options.contentType ?? 'application/json', '--ok-status', String(options.okStatus ?? 200));
  for (const url of options.urls) args.push('--url', url);
  const child = spawnRole(THIS_FILE, 'send', args, 'pipe');
  const lines = createInterface({ input: child.stdout! });
  try {
    const ready = await nextLine<{ ready: boolean }>(child, lines, 'the sender', ANSWER_TIMEOUT_MS);
    assert(ready.ready, 'a sender not ready');
  } catch (error) {
    lines.close();
    await stopChild(child);
    throw error;
  }
  return {
    async run(): Promise<Sent> {
      try {
        child.stdin!.write('go\n');
        return await nextLine<Sent>(child, lines, 'the sender', ANSWER_TIMEOUT_MS);
      } finally {
        lines.close();
        await stopChild(child);
      }
    },
  };
}

/** Starts a sender and runs it at once (warm-ups: nothing is measured around it). */
export async function sendBatches(file: BodyFile, options: SendOptions): Promise<Sent> {
  return (await startSender(file, options)).run();
}

// ---------------------------------------------------------------- the sender process

async function serveSend(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      file: { type: 'string' },
      first: { type: 'string' },
      count: { type: 'string' },
      concurrency: { type: 'string' },
      'content-type': { type: 'string' },
      'ok-status': { type: 'string' },
      url: { type: 'string', multiple: true },
    },
  });
  const urls = values.url ?? [];
  const first = Number(values.first);
  const count = Number(values.count);
  const concurrency = Number(values.concurrency);
  const okStatus = Number(values['ok-status']);
  const contentType = values['content-type'] ?? 'application/json';
  const bodies = readBodies(values.file ?? '').slice(first, first + count);
  assert(urls.length > 0 && bodies.length === count && concurrency >= 1, `a sender given ${urls.length} urls, ${bodies.length} of ${count} bodies, ${concurrency} in flight`);
  console.log(JSON.stringify({ ready: true }));
  const input = createInterface({ input: process.stdin });
  await new Promise<void>((resolveGo) => input.once('line', () => resolveGo()));
  input.close();
  const before = process.cpuUsage();
  const timing = await runBatches(count, concurrency, (index) => postBatch(urls[index % urls.length]!, bodies[index]!, contentType, okStatus));
  const used = process.cpuUsage(before);
  const sent: Sent = { timing, cpuSeconds: (used.user + used.system) / 1e6 };
  console.log(JSON.stringify(sent));
}

runRoleIfMain(THIS_FILE, { send: serveSend });
