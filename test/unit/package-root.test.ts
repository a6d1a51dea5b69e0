// The package root (src/lib/package-root.ts) is found from the file's own place: the compiled
// module under dist/src/lib/ and the source under src/lib/ both find the repository's
// package.json, so a node reports package.json's version (src/lib/version.ts) whichever runs.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/lib/package-root.js';
import { softwareVersion } from '../../src/lib/version.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('package root', () => {
  it('is the repository from the source and from the build in dist/', () => {
    expect(packageRoot()).toBe(root);
    // The compiled module, run by node as a node process runs it (npm test builds first).
    const script = "import('./dist/src/lib/version.js').then(async (v) => { const r = await import('./dist/src/lib/package-root.js'); console.log(JSON.stringify([r.packageRoot(), v.softwareVersion().number])); })";
    const [built, version] = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 10_000 })) as [string, string];
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect({ built, version, source: softwareVersion().number }).toEqual({ built: root, version: pkg.version, source: pkg.version });
  });
});
