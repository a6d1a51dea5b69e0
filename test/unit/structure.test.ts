// The repository's structure, checked (issue 16, item 4): no unused file or export (knip,
// configured in knip.json: the entry points are the package's bin and scripts, bench/run.ts,
// scripts/, and the tests).

import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

interface KnipIssue {
  file: string;
  files?: unknown[];
  exports?: Array<{ name: string; line: number }>;
  types?: Array<{ name: string; line: number }>;
}

/** Runs knip's CLI over the repository: its findings of unused files, exports and types, one line each. */
async function knipFindings(): Promise<string[]> {
  // The package's bin (its `exports` hide package.json, so it is found by path).
  const cli = join(root, 'node_modules', 'knip', 'bin', 'knip.js');
  const args = [cli, '--no-progress', '--no-config-hints', '--include', 'files,exports,types', '--reporter', 'json'];
  // knip exits 1 when it finds something; its report is on stdout either way.
  const { stdout } = await run(process.execPath, args, { cwd: root, maxBuffer: 16 * 1024 * 1024 }).catch((error: { stdout?: string; stderr?: string; code?: number }) => {
    if (error.code !== 1 || !error.stdout) throw new Error(`knip failed: ${error.stderr ?? String(error)}`);
    return { stdout: error.stdout };
  });
  const report = JSON.parse(stdout) as { issues: KnipIssue[] };
  return report.issues.flatMap((issue) => [
    ...((issue.files ?? []).length > 0 ? [`unused file ${issue.file}`] : []),
    ...(issue.exports ?? []).map((entry) => `unused export ${entry.name} (${issue.file}:${entry.line})`),
    ...(issue.types ?? []).map((entry) => `unused exported type ${entry.name} (${issue.file}:${entry.line})`),
  ]);
}

describe('structure - dead code', () => {
  it('has no unused file, export or exported type (knip)', async () => {
    expect(await knipFindings()).toEqual([]);
  }, 120_000);
});
