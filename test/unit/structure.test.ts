// The repository's structure, checked: no unused file or export (knip, configured in knip.json:
// the entry points are the package's bin and scripts, bench/run.ts, scripts/, and the tests);
// no import cycle between files of src (madge); and imports run one way: storage and peer
// import nothing from cluster.

import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

interface MadgeResult {
  obj(): Record<string, string[]>;
  circular(): string[][];
}
// madge is CommonJS without type declarations: loaded through require, typed here.
const madge = createRequire(import.meta.url)('madge') as (path: string, config: object) => Promise<MadgeResult>;

/** The import graph of src (type-only imports included: they tie files together as much). */
async function sourceGraph(): Promise<MadgeResult> {
  return madge(join(root, 'src'), { baseDir: join(root, 'src'), fileExtensions: ['ts'], tsConfig: join(root, 'tsconfig.json') });
}

/** Folders below cluster: what they import from cluster would make the layers a cycle. */
const BELOW_CLUSTER = ['storage/', 'peer/'];

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

describe('structure - imports', () => {
  it.concurrent('has no import cycle between files of src, and storage and peer import nothing from cluster (madge)', async () => {
    const graph = await sourceGraph();
    const files = Object.keys(graph.obj());
    expect(files.length).toBeGreaterThan(100); // the graph really is the source tree
    const cycles = graph.circular().map((cycle) => cycle.join(' > '));
    const upward = Object.entries(graph.obj()).flatMap(([file, imports]) =>
      BELOW_CLUSTER.some((folder) => file.startsWith(folder)) ? imports.filter((target) => target.startsWith('cluster/')).map((target) => `${file} -> ${target}`) : [],
    );
    expect({ cycles, upward }).toEqual({ cycles: [], upward: [] });
  }, 120_000);
});

describe('structure - dead code', () => {
  it.concurrent('has no unused file, export or exported type (knip)', async () => {
    expect(await knipFindings()).toEqual([]);
  }, 120_000);
});
