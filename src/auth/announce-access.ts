// Says at start who may do what, so an open node is never open by surprise.

import { isLoopbackHost, type Config } from '../config/config.js';
import type { Logger } from '../lib/log.js';

export function announceAccess(config: Pick<Config, 'adminSecret' | 'authRequired' | 'auth' | 'host'>, log: Logger): void {
  const membership = config.adminSecret === null ? 'open to anyone who reaches this node (no admin secret)' : 'need the admin secret';
  if (config.authRequired) {
    log.info({ auth: config.auth }, `platform API authentication is on: every route but /cluster/localNode, /health, /ready and the pages (/, /docs, /openapi.json, /console) needs a bearer token; membership changes ${membership}`);
  } else {
    const who = isLoopbackHost(config.host) ? 'any local process (loopback development)' : 'anyone who reaches this node (auth: off)';
    log.warn({ auth: config.auth, host: config.host }, `platform API authentication is OFF: ${who} may read and change everything; membership changes ${membership}`);
  }
}
