// The container image starts as docs/operating.md says (scripts/image-check.ts, which .ci/run
// also runs where no Docker daemon answers): the Dockerfile's command line and variables,
// with the documented `docker run -e` variables, bring up a node on 0.0.0.0 that answers
// /health, passes its HEALTHCHECK and answers `status` with the documented token only.
// Without the documented variables the same command must fail as the image would.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';
import { packageRoot } from '../../src/lib/package-root.js';
import { checkImageStart, documentedRuns, parseDockerfile } from '../../scripts/image-check.js';

describe('image start - the Dockerfile run as documented, without a container engine', () => {
  it('reads the final stage: a node on 0.0.0.0, started by the CLI, its health checked by the CLI', () => {
    const spec = parseDockerfile(readFileSync(join(packageRoot(), 'Dockerfile'), 'utf8'));
    expect(spec.env).toMatchObject({ TRIBUTARY_HOST: '0.0.0.0', TRIBUTARY_REVISION: 'unknown' });
    expect(spec.entrypoint).toEqual(['node', ...NODE_FLAGS_GIVEN, 'dist/src/main.js']);
    expect(spec.cmd).toEqual(['start']);
    expect(spec.healthcheck).toEqual(['node', '--no-node-snapshot', 'dist/src/main.js', 'health']);
    expect(spec.copies.map((copy) => copy.to)).toEqual(expect.arrayContaining(['dist/src', 'node_modules', 'config', 'console', 'proto', 'package.json']));
    const runs = documentedRuns(readFileSync(join(packageRoot(), 'docs', 'operating.md'), 'utf8'));
    const start = runs.find((run) => run.detached)!;
    expect(start.env.TRIBUTARY_ADMIN_SECRET).toMatch(/^[0-9a-f]{64}$/);
    expect(runs.find((run) => run.args[0] === 'status')!.env.TRIBUTARY_TOKEN).toBe(start.env.TRIBUTARY_ADMIN_SECRET);
  });

  it('starts a node that answers /health, passes the HEALTHCHECK, answers status with the token only, and stops on SIGTERM', async () => {
    expect(await checkImageStart()).toEqual([]);
  }, 90_000);

  it('fails, naming why, when the documented variables are left out', async () => {
    const problems = await checkImageStart({ withoutDocumentedEnv: true });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/exited 2 before answering \/health/);
    expect(problems[0]).toMatch(/admin secret is required/);
  }, 60_000);
});
