// The peer systems a bench runs beside ours come from Debian's packages (nats-server,
// influxdb). When one is missing and the bench runs as root (as CI and the project's sessions
// do), it is installed with apt-get first; otherwise its comparison is skipped and the bench
// says so.

import { spawnSync } from 'node:child_process';
import { log } from './ingest.js';

const APT_TIMEOUT_MS = 600_000;
let listsUpdated = false;

/** Installs `name` with apt-get; false when not root or apt-get failed (the comparison is skipped). */
export function installDebianPackage(name: string): boolean {
  if (process.getuid?.() !== 0) return false;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!listsUpdated) {
    log('apt-get update (for the peer systems the bench runs beside ours)…');
    spawnSync('apt-get', ['update'], { stdio: 'ignore', env, timeout: APT_TIMEOUT_MS });
    listsUpdated = true;
  }
  log(`apt-get install ${name}…`);
  const result = spawnSync('apt-get', ['install', '-y', '--no-install-recommends', name], { stdio: 'ignore', env, timeout: APT_TIMEOUT_MS });
  return result.status === 0;
}
