// The running software's version for node documents: package.json's version, and the git
// revision it was built from (TRIBUTARY_REVISION, else read from .git without a subprocess).

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from './package-root.js';

export interface SoftwareVersion {
  number: string;
  revision: string;
}

export function softwareVersion(env: NodeJS.ProcessEnv = process.env): SoftwareVersion {
  const root = packageRoot();
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  return { number: pkg.version, revision: env.TRIBUTARY_REVISION ?? gitRevision(root) ?? 'unknown' };
}

function gitRevision(root: string): string | undefined {
  try {
    const head = readFileSync(join(root, '.git', 'HEAD'), 'utf8').trim();
    if (!head.startsWith('ref: ')) return head.slice(0, 12);
    const refPath = join(root, '.git', head.slice(5));
    if (existsSync(refPath)) return readFileSync(refPath, 'utf8').trim().slice(0, 12);
    const packed = readFileSync(join(root, '.git', 'packed-refs'), 'utf8');
    const line = packed.split('\n').find((entry) => entry.endsWith(' ' + head.slice(5)));
    return line?.slice(0, 12);
  } catch {
    return undefined;
  }
}
