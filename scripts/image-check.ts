// `node dist/scripts/image-check.js`: the container image's start, checked without a
// container engine (.ci/run runs it when no Docker daemon answers; docs/operating.md,
// "Containers"). It reads the Dockerfile's final stage (ENV, COPY targets, WORKDIR,
// ENTRYPOINT, CMD, HEALTHCHECK) and the commands of docs/operating.md between
// <!-- image-run --> markers, lays out a temporary folder as the image's WORKDIR (links to
// what each COPY puts there), and runs the image's command line there with the image's
// variables and the documented `docker run -d … -e` variables, on free ports. The node must
// answer /health, the HEALTHCHECK command must pass, the documented `status` must answer and
// the same without its token must be refused, and SIGTERM must stop the node.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { packageRoot } from '../src/lib/package-root.js';

const run = promisify(execFile);
const UP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;
const COMMAND_TIMEOUT_MS = 20_000;

/** What the final stage of the Dockerfile says about running the image. */
export interface ImageSpec {
  workdir: string;
  env: Record<string, string>;
  /** Paths below WORKDIR, each with the path of the package it comes from. */
  copies: Array<{ from: string; to: string }>;
  entrypoint: string[];
  cmd: string[];
  healthcheck: string[];
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(dockerfile: string): string[] {
  return dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

function jsonArray(text: string, what: string): string[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === 'string')) throw new Error(`${what} is not a JSON array of strings: ${text}`);
  return parsed;
}

/** The final stage of a Dockerfile, as far as running its image goes. */
export function parseDockerfile(dockerfile: string): ImageSpec {
  const all = instructions(dockerfile);
  const lastFrom = all.findLastIndex((line) => /^FROM\s/i.test(line));
  const stage = all.slice(lastFrom + 1);
  const args = new Map<string, string>();
  const spec: ImageSpec = { workdir: '/', env: {}, copies: [], entrypoint: [], cmd: [], healthcheck: [] };
  const expand = (value: string) => value.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, braced: string | undefined, bare: string | undefined) => args.get(braced ?? bare!) ?? spec.env[braced ?? bare!] ?? '');
  for (const line of stage) {
    const [keyword, ...rest] = line.split(/\s+/);
    const body = line.slice(keyword!.length).trim();
    switch (keyword!.toUpperCase()) {
      case 'ARG': {
        const [name, value] = body.split('=');
        args.set(name!, value ?? '');
        break;
      }
      case 'WORKDIR':
        spec.workdir = body;
        break;
      case 'ENV':
        for (const pair of rest) {
          const at = pair.indexOf('=');
          if (at <= 0) throw new Error(`ENV ${pair}: only NAME=value pairs are read`);
          spec.env[pair.slice(0, at)] = expand(pair.slice(at + 1));
        }
        break;
      case 'COPY': {
        const parts = rest.filter((part) => !part.startsWith('--'));
        const fromStage = rest.some((part) => part.startsWith('--from='));
        const to = parts[parts.length - 1]!;
        // A build stage's /app is the package's root (the build stage's WORKDIR).
        for (const source of parts.slice(0, -1)) spec.copies.push({ from: fromStage ? source.replace(/^\/app\/?/, '') : source, to: to === './' ? source.replace(/^\/app\//, '') : to });
        break;
      }
      case 'ENTRYPOINT':
        spec.entrypoint = jsonArray(body, 'ENTRYPOINT');
        break;
      case 'CMD':
        spec.cmd = jsonArray(body, 'CMD');
        break;
      case 'HEALTHCHECK':
        spec.healthcheck = jsonArray(body.slice(body.indexOf('CMD') + 3).trim(), 'HEALTHCHECK CMD');
        break;
    }
  }
  return spec;
}

/** One documented `docker run`: its -e variables and the arguments after the image's name. */
export interface DocumentedRun {
  detached: boolean;
  env: Record<string, string>;
  args: string[];
}

/**
 * The `docker run` commands between <!-- image-run --> markers. Shell variables set in the
 * block from a command substitution (`SECRET=$(openssl rand -hex 32)`) are given a random value.
 */
export function documentedRuns(markdown: string, image = 'tributary'): DocumentedRun[] {
  const block = /<!-- image-run[^>]*-->([\s\S]*?)<!-- \/image-run -->/.exec(markdown)?.[1];
  if (block === undefined) throw new Error('docs/operating.md has no <!-- image-run --> … <!-- /image-run --> block');
  const shell = new Map<string, string>();
  const runs: DocumentedRun[] = [];
  for (const raw of block.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '').trim();
    const assignment = /^(\w+)=\$\(.*\)$/.exec(line);
    if (assignment !== null) shell.set(assignment[1]!, randomBytes(32).toString('hex'));
    if (!line.startsWith('docker run ')) continue;
    const words = line.split(/\s+/).slice(2);
    const run: DocumentedRun = { detached: false, env: {}, args: [] };
    for (let index = 0; index < words.length; index += 1) {
      const word = words[index]!;
      if (word === image) {
        run.args = words.slice(index + 1).map((arg) => arg.replace(/^"|"$/g, ''));
        break;
      }
      if (word === '-d') run.detached = true;
      if (word === '-e') {
        const [name, value] = words[index + 1]!.split(/=(.*)/s) as [string, string];
        run.env[name] = value.replace(/^"|"$/g, '').replace(/\$(\w+)/g, (_, variable: string) => shell.get(variable) ?? '');
      }
    }
    runs.push(run);
  }
  return runs;
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** A temporary folder laid out as the image's WORKDIR: a link to the package's copy of each COPY. */
function imageFolder(spec: ImageSpec, root: string): string {
  const folder = mkdtempSync(join(tmpdir(), 'tributary-image-'));
  for (const { from, to } of spec.copies) {
    const source = join(root, from);
    if (!existsSync(source)) throw new Error(`the image copies ${from}, which the package does not have (build first: npm run build:src)`);
    const target = join(folder, to.replace(/^\.\/?/, '') || from);
    mkdirSync(dirname(target), { recursive: true });
    symlinkSync(source, target);
  }
  return folder;
}

/** The image's command with `node` as this Node binary. */
function command(words: readonly string[]): [string, string[]] {
  const [program, ...args] = words;
  return [program === 'node' ? process.execPath : program!, args];
}

async function runToEnd(words: readonly string[], cwd: string, env: Record<string, string>): Promise<{ code: number; output: string }> {
  const [program, args] = command(words);
  try {
    const { stdout, stderr } = await run(program, args, { cwd, env, timeout: COMMAND_TIMEOUT_MS });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

async function healthAnswers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })).status === 200;
  } catch {
    return false;
  }
}

/** Waits for the node to answer /health, or to exit; the problem, or undefined when it is up. */
async function waitUp(child: ChildProcess, url: string, output: () => string): Promise<string | undefined> {
  const deadline = Date.now() + UP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) return `the image's command exited ${child.exitCode} before answering /health:\n${output().slice(-2_000)}`;
    if (await healthAnswers(url)) return undefined;
    await new Promise((resolveSleep) => setTimeout(resolveSleep, 100));
  }
  return `the node did not answer /health within ${UP_TIMEOUT_MS} ms:\n${output().slice(-2_000)}`;
}

async function stop(child: ChildProcess): Promise<string | undefined> {
  if (child.exitCode !== null) return undefined;
  const exited = new Promise<boolean>((resolveExit) => {
    child.once('exit', () => resolveExit(true));
    setTimeout(() => resolveExit(false), STOP_TIMEOUT_MS).unref();
  });
  child.kill('SIGTERM');
  if (await exited) return undefined;
  child.kill('SIGKILL');
  return `SIGTERM did not stop the node within ${STOP_TIMEOUT_MS} ms`;
}

/** The image started as documented, outside a container: every problem found (none: it starts). */
export async function checkImageStart(options: { withoutDocumentedEnv?: boolean } = {}): Promise<string[]> {
  const root = packageRoot();
  const spec = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
  const runs = documentedRuns(readFileSync(join(root, 'docs', 'operating.md'), 'utf8'));
  const start = runs.find((documented) => documented.detached);
  const status = runs.find((documented) => documented.args[0] === 'status');
  if (start === undefined || status === undefined) return ['docs/operating.md documents no `docker run -d` of the node or no `status` run'];
  const [httpPort, peerPort] = [await freePort(), await freePort()];
  const ports = { TRIBUTARY_HTTP_PORT: String(httpPort), TRIBUTARY_PEER_PORT: String(peerPort) };
  const env = { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...spec.env, ...(options.withoutDocumentedEnv === true ? {} : start.env), ...ports };
  const folder = imageFolder(spec, root);
  const url = `http://127.0.0.1:${httpPort}`;
  const [program, args] = command([...spec.entrypoint, ...(start.args.length > 0 ? start.args : spec.cmd)]);
  const child = spawn(program, args, { cwd: folder, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const problems: string[] = [];
  try {
    const down = await waitUp(child, url, () => output);
    if (down !== undefined) return [down];
    const health = await runToEnd(spec.healthcheck, folder, env);
    if (health.code !== 0) problems.push(`the HEALTHCHECK command exited ${health.code}: ${health.output}`);
    const statusArgs = status.args.map((arg) => arg.replace(/^http:\/\/127\.0\.0\.1:8888$/, url));
    const documented = await runToEnd([...spec.entrypoint, ...statusArgs], folder, { ...env, ...status.env });
    if (documented.code !== 0) problems.push(`the documented status exited ${documented.code}: ${documented.output}`);
    const anonymous = await runToEnd([...spec.entrypoint, ...statusArgs], folder, env);
    if (anonymous.code === 0) problems.push('status without the token was answered: authentication is off on 0.0.0.0');
  } finally {
    const stopProblem = await stop(child);
    if (stopProblem !== undefined) problems.push(stopProblem);
    rmSync(folder, { recursive: true, force: true });
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const problems = await checkImageStart();
  for (const problem of problems) console.error(`image check: ${problem}`);
  console.log(problems.length === 0 ? 'image check: the image command starts a node with the image\'s variables, as documented' : `image check: ${problems.length} problem(s)`);
  process.exitCode = problems.length === 0 ? 0 : 1;
}
