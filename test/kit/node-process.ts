// Test kit: real node processes on loopback, on ports they pick themselves.
// Every process a test starts is stopped by cleanup(), even on failure.

import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';
import { packageRoot } from '../../src/lib/package-root.js';

/** The package root, from test/kit under vitest or dist/test/kit when compiled (the bench). */
const ROOT = packageRoot();
const MAIN = join(ROOT, 'dist', 'src', 'main.js');
const READY_TIMEOUT_MS = 20_000;

export interface StartOptions {
  name?: string;
  join?: boolean;
  dataDir?: string;
  /** Further CLI arguments after `start`. */
  args?: string[];
  env?: Record<string, string>;
  /** Node flags before the script (e.g. --cpu-prof). */
  execArgv?: string[];
  /** Give Node the flags `npm start` gives (default); false starts it bare, as the `tributary` bin would. */
  nodeFlags?: boolean;
  /** Pass the ports as flags (default), or leave them to env/config in `args`/`env`. */
  portFlags?: boolean;
  /** The ports to use (default: free ones the kit picks). */
  httpPort?: number;
  peerPort?: number;
  /** The node serves HTTPS with a certificate this CA signed: the kit speaks HTTPS to it, trusting the CA. */
  ca?: Buffer;
  /** The address the node listens on and is reached at (`--host`; default 127.0.0.1). */
  host?: string;
  /** A command the node runs under, e.g. `ip netns exec NS` (it must exec the node: same pid). */
  launcher?: readonly string[];
  /** Append everything the process prints to this file too, across restarts (a run's node logs). */
  logFile?: string;
}

const running = new Set<NodeProcess>();
const dataDirs = new Set<string>();

/** Ports picked for one start at most: a node that cannot bind the ones picked is started on others. */
const PORT_PICKS_MAX = 3;
/** What a node says when a port it was given is taken (http: EADDRINUSE; the peer port: transport.ts). */
const PORT_TAKEN = /EADDRINUSE|is the port taken/;

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

export function temporaryDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-test-'));
  dataDirs.add(dir);
  return dir;
}

export class NodeProcess {
  child: ChildProcess | undefined;
  output = '';

  private constructor(
    readonly name: string,
    public httpPort: number,
    public peerPort: number,
    readonly dataDir: string,
    private readonly options: StartOptions,
  ) {}

  get url(): string {
    return `${this.options.ca === undefined ? 'http' : 'https'}://${this.host}:${this.httpPort}`;
  }

  get host(): string {
    return this.options.host ?? '127.0.0.1';
  }

  static async start(options: StartOptions = {}): Promise<NodeProcess> {
    const picksPorts = options.httpPort === undefined && options.peerPort === undefined && options.portFlags !== false;
    const dataDir = options.dataDir ?? temporaryDataDir();
    for (let attempt = 1; ; attempt += 1) {
      const node = new NodeProcess(options.name ?? 'node-1', options.httpPort ?? (await freePort()), options.peerPort ?? (await freePort()), dataDir, options);
      running.add(node);
      if (options.ca !== undefined) trustedCas.set(new URL(node.url).origin, options.ca);
      try {
        await node.launch();
        return node;
      } catch (error) {
        // A port the kit picked can be taken before the node binds it (by any process's
        // outgoing connection, or a test file running beside this one): picked again.
        if (!picksPorts || attempt >= PORT_PICKS_MAX || !PORT_TAKEN.test(node.output)) throw error;
        running.delete(node);
      }
    }
  }

  /** Spawns the process and waits until it answers HTTP. */
  async launch(): Promise<void> {
    // The flags `npm start` gives a node (package.json, docs/configuration.md).
    const flags = this.options.nodeFlags === false ? [] : NODE_FLAGS_GIVEN;
    const args = [...flags, ...(this.options.execArgv ?? []), MAIN, 'start', '--name', this.name, '--data-dir', this.dataDir];
    if (this.options.portFlags !== false) {
      args.push('--http-port', String(this.httpPort), '--peer-port', String(this.peerPort));
    }
    if (this.options.host !== undefined) args.push('--host', this.options.host);
    if (this.options.join) args.push('--join');
    args.push('--internal-reads', '--log-level', 'warn', ...(this.options.args ?? []));
    this.output = '';
    const [file, ...prefix] = [...(this.options.launcher ?? []), process.execPath];
    const child = spawn(file!, [...prefix, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...this.options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const logFile = this.options.logFile;
    const keep = (chunk: Buffer): void => {
      this.output += chunk.toString();
      if (logFile !== undefined) appendFileSync(logFile, chunk);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    await this.waitReady(child);
  }

  private async waitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`node ${this.name} exited (${child.exitCode ?? child.signalCode}) before ready:\n${this.output}`);
      }
      try {
        const response = await http(`${this.url}/cluster/localNode`, 'GET');
        if (response.status === 200) return;
      } catch {
        // Not listening yet.
      }
      await sleep(50);
    }
    throw new Error(`node ${this.name} not ready after ${READY_TIMEOUT_MS} ms:\n${this.output}`);
  }

  /** Sends the signal and waits for the process to end; resolves with the time it took. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<number> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return 0;
    const started = Date.now();
    const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
    child.kill(signal);
    await exited;
    return Date.now() - started;
  }

  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async restart(): Promise<void> {
    await this.kill('SIGTERM');
    await this.launch();
  }

  /** Starts the stopped process again on other ports (an operator moving a node). */
  async launchOn(httpPort: number, peerPort: number): Promise<void> {
    this.httpPort = httpPort;
    this.peerPort = peerPort;
    await this.launch();
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }
}

/** Stops every process the kit started and removes every data folder it made. */
export async function cleanup(): Promise<void> {
  await Promise.all(
    [...running].map(async (node) => {
      node.resume();
      await node.kill('SIGKILL');
    }),
  );
  running.clear();
  trustedCas.clear();
  for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  dataDirs.clear();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

export interface HttpResult {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined when it is empty or not JSON. */
  json: any;
}

export async function http(
  url: string,
  method: string,
  body?: unknown,
  headers: Record<string, string> = {},
  timeoutMs?: number,
): Promise<HttpResult> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (timeoutMs !== undefined) init.signal = AbortSignal.timeout(timeoutMs);
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const ca = trustedCas.get(new URL(url).origin);
  if (ca !== undefined) return httpsCall(url, init, ca);
  const response = await fetch(url, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Origins of nodes that serve HTTPS, with the CA the kit trusts for them (fetch takes no CA). */
const trustedCas = new Map<string, Buffer>();

function httpsCall(url: string, init: RequestInit, ca: Buffer): Promise<HttpResult> {
  return new Promise((resolveCall, reject) => {
    const body = typeof init.body === 'string' ? Buffer.from(init.body) : undefined;
    const headers = { ...(init.headers as Record<string, string>), ...(body === undefined ? {} : { 'content-length': String(body.length) }) };
    const request = httpsRequest(url, { method: init.method, headers, ca, timeout: 30_000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => {
        let json: unknown;
        try {
          json = text === '' ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        const headers = new Headers();
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') headers.set(name, value);
        resolveCall({ status: response.statusCode ?? 0, headers, text, json });
      });
    });
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error(`no answer from ${url}`)));
    request.end(body);
  });
}

/** A small client bound to one node. */
export function client(node: { url: string }) {
  return {
    get: (path: string, headers?: Record<string, string>) => http(node.url + path, 'GET', undefined, headers),
    put: (path: string, body?: unknown, headers?: Record<string, string>) => http(node.url + path, 'PUT', body, headers),
    post: (path: string, body?: unknown, headers?: Record<string, string>) => http(node.url + path, 'POST', body, headers),
    delete: (path: string, headers?: Record<string, string>) => http(node.url + path, 'DELETE', undefined, headers),
  };
}
