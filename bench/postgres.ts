// A throw-away PostgreSQL cluster for benchmarks: initdb into a temporary
// folder, pg_ctl start on a free loopback port, and stop + remove it afterwards. The server
// refuses to run as root, so as root it runs as the `postgres` system user (which the
// Debian packages create). Nothing here is used by the product.

import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/kit/node-process.js';

export interface PostgresBinaries {
  dir: string;
  /** `postgres --version`, e.g. "postgres (PostgreSQL) 15.18 (Debian …)". */
  version: string;
}

export interface PostgresCluster {
  binaries: PostgresBinaries;
  host: string;
  port: number;
  user: string;
  /** The cluster's folder: data, log, socket, and any file the bench hands COPY. */
  dir: string;
  /** Makes a file written by the bench readable by the server (its owner when run as root). */
  handOver(path: string): void;
  /** Stops the server (immediately: the data is thrown away) and removes the folder. */
  stop(): void;
}

/**
 * The binaries of PostgreSQL 15 (or the newest installed, when 15 is not), from
 * PG_BIN_DIR, /usr/lib/postgresql/<major>/bin or `pg_config --bindir`; undefined: none.
 */
export function findPostgres(): PostgresBinaries | undefined {
  const candidates: string[] = [];
  if (process.env.PG_BIN_DIR) candidates.push(process.env.PG_BIN_DIR);
  const debianRoot = '/usr/lib/postgresql';
  if (existsSync(debianRoot)) {
    const majors = readdirSync(debianRoot).filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a));
    if (majors.includes('15')) candidates.push(join(debianRoot, '15', 'bin'));
    candidates.push(...majors.map((major) => join(debianRoot, major, 'bin')));
  }
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // No pg_config on PATH.
  }
  for (const dir of candidates) {
    if (!['initdb', 'pg_ctl', 'postgres'].every((binary) => existsSync(join(dir, binary)))) continue;
    const version = execFileSync(join(dir, 'postgres'), ['--version'], { encoding: 'utf8' }).trim();
    return { dir, version };
  }
  return undefined;
}

/** As root: the uid and gid of the `postgres` user, created (system, no login) if missing. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => {
    const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((entry) => entry.startsWith('postgres:'));
    if (line === undefined) return undefined;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  };
  const found = lookup();
  if (found !== undefined) return found;
  execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
  const created = lookup();
  if (created === undefined) throw new Error('useradd postgres did not create the user');
  return created;
}

function run(binaries: PostgresBinaries, binary: string, args: string[], owner: { uid: number; gid: number } | undefined): void {
  const result = spawnSync(join(binaries.dir, binary), args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(owner === undefined ? {} : { uid: owner.uid, gid: owner.gid }),
    env: { ...process.env, LC_ALL: 'C', ...(owner === undefined ? {} : { HOME: '/tmp', USER: 'postgres' }) },
    timeout: 120_000,
  });
  if (result.error !== undefined) throw result.error;
  if (result.status !== 0) throw new Error(`${binary} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
}

/**
 * initdb + pg_ctl start on a free loopback port. `settings` are passed as `-c name=value`.
 * The caller must stop() it, also on failure.
 */
export async function startPostgres(binaries: PostgresBinaries, settings: Record<string, string | number>): Promise<PostgresCluster> {
  const owner = serverUser();
  const dir = mkdtempSync(join(os.tmpdir(), 'tributary-bench-pg-'));
  const handOver = (path: string) => {
    if (owner !== undefined) chownSync(path, owner.uid, owner.gid);
  };
  handOver(dir);
  const data = join(dir, 'data');
  const user = 'postgres';
  const port = await freePort();
  let started = false;
  const stop = () => {
    try {
      if (started) run(binaries, 'pg_ctl', ['stop', '-D', data, '-m', 'immediate', '-w'], owner);
    } finally {
      started = false;
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    run(binaries, 'initdb', ['-D', data, '-U', user, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'], owner);
    const options = [`-p ${port}`, `-k ${dir}`, "-c listen_addresses='127.0.0.1'", ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)];
    started = true;
    run(binaries, 'pg_ctl', ['start', '-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options.join(' ')], owner);
  } catch (error) {
    const log = existsSync(join(dir, 'server.log')) ? readFileSync(join(dir, 'server.log'), 'utf8').slice(-2000) : '';
    try {
      stop();
    } catch {
      // The start failed; the folder is gone either way.
    }
    throw new Error(`${(error as Error).message}\n${log}`);
  }
  return { binaries, host: '127.0.0.1', port, user, dir, handOver, stop };
}
