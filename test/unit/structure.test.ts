// The repository's structure, checked: no unused file or export (knip, configured in knip.json:
// the entry points are the package's bin and scripts, bench/run.ts, scripts/, and the tests);
// no import cycle between files of src (madge); and imports run one way, down the layer table
// of scripts/layers.ts (docs/architecture.md, "Layers"): no upward import but the listed
// exceptions, and no cycle between folders. And no function of src is longer than a screen
// (FUNCTION_LINES_MAX lines), so each can be read at once; and every function of the write
// path (cluster/ around the core, storage/, streams/ingest*) states an invariant with assert(),
// but those scripts/assertion-density.ts exempts and says why.

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { functionAssertions, unasserted, writePathFunctions } from '../../scripts/assertion-density.js';
import { LAYER_EXCEPTIONS, LAYERS, unitOf } from '../../scripts/layers.js';

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

/** Every import whose target's layer is above its source's, as `from -> to` (exceptions included). */
function upwardImports(graph: Record<string, string[]>): string[] {
  return Object.entries(graph).flatMap(([file, imports]) =>
    imports.filter((target) => unitOf(target)!.layer > unitOf(file)!.layer).map((target) => `${file} -> ${target}`),
  );
}

/** The groups of units that import each other through some path (Tarjan), each named by its file-to-file imports. */
function unitCycles(graph: Record<string, string[]>, skipped: ReadonlySet<string>): string[] {
  const edges = new Map<string, string[]>(); // unit -> the file imports that leave it
  for (const [file, imports] of Object.entries(graph)) {
    for (const target of imports) {
      const from = unitOf(file)!.name;
      if (from === unitOf(target)!.name || skipped.has(`${file} -> ${target}`)) continue;
      edges.set(from, [...(edges.get(from) ?? []), `${file} -> ${target}`]);
    }
  }
  const next = (unit: string) => [...new Set((edges.get(unit) ?? []).map((edge) => unitOf(edge.split(' -> ')[1]!)!.name))];
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (unit: string): void => {
    index.set(unit, index.size);
    low.set(unit, index.get(unit)!);
    stack.push(unit);
    for (const target of next(unit)) {
      if (!index.has(target)) visit(target);
      if (stack.includes(target)) low.set(unit, Math.min(low.get(unit)!, low.get(target)!));
    }
    if (low.get(unit) !== index.get(unit)) return;
    const component = stack.splice(stack.indexOf(unit));
    if (component.length > 1) components.push(component);
  };
  for (const unit of [...edges.keys()].sort()) if (!index.has(unit)) visit(unit);
  // Each group named by its units, then one file import for each pair of units it joins.
  return components.map((component) => {
    const inside = component.flatMap((unit) => (edges.get(unit) ?? []).filter((edge) => component.includes(unitOf(edge.split(' -> ')[1]!)!.name)));
    const byPair = new Map(inside.map((edge) => [`${unitOf(edge.split(' -> ')[0]!)!.name} -> ${unitOf(edge.split(' -> ')[1]!)!.name}`, edge]));
    return `${component.join(' ⇄ ')}: ${[...byPair.values()].join(', ')}`;
  });
}

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
  it.concurrent('has no import cycle between files of src, no upward import between layers and no cycle between folders (madge)', async () => {
    const graph = await sourceGraph();
    const files = Object.keys(graph.obj());
    expect(files.length).toBeGreaterThan(100); // the graph really is the source tree
    const cycles = graph.circular().map((cycle) => cycle.join(' > '));
    const withoutLayer = files.filter((file) => unitOf(file) === undefined);
    // A row naming a folder or file that is gone would keep the table from showing the tree.
    const gone = LAYERS.flatMap((unit) => unit.paths).filter((path) => !files.some((file) => (path.endsWith('/') ? file.startsWith(path) : file === path)));
    expect({ cycles, withoutLayer, gone }).toEqual({ cycles: [], withoutLayer: [], gone: [] });
    const allowed = new Set(LAYER_EXCEPTIONS.map((entry) => `${entry.from} -> ${entry.to}`));
    const upward = upwardImports(graph.obj());
    const unlisted = upward.filter((edge) => !allowed.has(edge));
    const staleExceptions = [...allowed].filter((edge) => !upward.includes(edge));
    const folderCycles = unitCycles(graph.obj(), allowed);
    expect({ unlisted, staleExceptions, folderCycles }).toEqual({ unlisted: [], staleExceptions: [], folderCycles: [] });
  }, 120_000);

  it('the layer check finds an upward import and a cycle between folders', () => {
    // A made-up graph: storage (layer 2) importing http (layer 8), and http importing storage.
    const graph = { 'storage/a.ts': ['http/b.ts'], 'http/b.ts': ['storage/a.ts'] };
    expect(upwardImports(graph)).toEqual(['storage/a.ts -> http/b.ts']);
    expect(unitCycles(graph, new Set())).toEqual(['http ⇄ storage: http/b.ts -> storage/a.ts, storage/a.ts -> http/b.ts']);
  });
});

/** Longest function, method or arrow function of src, in lines from its first to its last. */
const FUNCTION_LINES_MAX = 70;

/** Functions allowed to be longer, by `file function`: none. */
const LONG_FUNCTIONS_ALLOWED = new Set<string>();

/** Every function-like node with a body in `text` longer than `linesMax`, as `file:line function (n lines)`. */
function longFunctions(file: string, text: string, linesMax: number): Array<{ key: string; where: string }> {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Array<{ key: string; where: string }> = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      const lines = source.getLineAndCharacterOfPosition(node.end).line + 2 - first;
      if (lines > linesMax) {
        const name = functionName(node, source);
        found.push({ key: `${file} ${name}`, where: `${file}:${first} ${name} (${lines} lines)` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** A function's name, or for an arrow or function expression the name it is given (a variable, a property), else `<anonymous>`. */
function functionName(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name !== undefined) return node.name.getText(source);
  const parent = node.parent;
  if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name !== undefined) return parent.name.getText(source);
  return '<anonymous>';
}

describe('structure - function length', () => {
  it(`has no function, method or arrow in src longer than ${FUNCTION_LINES_MAX} lines (but the listed ones)`, () => {
    const files = (readdirSync(join(root, 'src'), { recursive: true }) as string[]).filter((file) => file.endsWith('.ts')).map((file) => `src/${file}`);
    expect(files.length).toBeGreaterThan(100);
    const long = files.flatMap((file) => longFunctions(file, readFileSync(join(root, file), 'utf8'), FUNCTION_LINES_MAX));
    const unlisted = long.filter((entry) => !LONG_FUNCTIONS_ALLOWED.has(entry.key)).map((entry) => entry.where);
    const staleExceptions = [...LONG_FUNCTIONS_ALLOWED].filter((key) => !long.some((entry) => entry.key === key));
    expect({ unlisted, staleExceptions }).toEqual({ unlisted: [], staleExceptions: [] });
  });

  it('the length check names the file, line and function of a long one, arrows included', () => {
    const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `export function short() {\n${body(5)}\n}\nconst long = () => {\n${body(8)}\n};\nclass K {\n  method() {\n${body(9)}\n  }\n}\n`;
    expect(longFunctions('src/x.ts', text, 7).map((entry) => entry.where)).toEqual(['src/x.ts:6 long (8 lines)', 'src/x.ts:15 method (9 lines)']);
  });
});

describe('structure - assertions on the write path', () => {
  it('every function of cluster/ (not cluster-core/), storage/ and streams/ingest* has an assert() but the exempt ones', () => {
    const functions = writePathFunctions(root);
    expect(functions.length).toBeGreaterThan(400);
    expect(unasserted(functions)).toEqual({ missing: [], staleExemptions: [] });
  });

  it('the count takes methods and named arrows as functions, an anonymous callback as part of its function, and finds one without', () => {
    const text = [
      'export function checked(values: number[]) {',
      '  return values.map((value) => {',
      "    assert(value >= 0, 'negative');",
      '    return value * 2;',
      '  });',
      '}',
      'const unchecked = (a: number) => {',
      '  const b = a + 1;',
      '  const c = b + 1;',
      '  const d = c + 1;',
      '  return d;',
      '};',
      'class K {',
      '  short() {',
      '    return 1;',
      '  }',
      '}',
    ].join('\n');
    const found = functionAssertions('src/x.ts', text);
    expect(found.map(({ key, statements, asserts }) => ({ key, statements, asserts }))).toEqual([
      { key: 'src/x.ts checked', statements: 3, asserts: 1 },
      { key: 'src/x.ts unchecked', statements: 4, asserts: 0 },
      { key: 'src/x.ts short', statements: 1, asserts: 0 },
    ]);
    expect(unasserted(found, [])).toEqual({ missing: ['src/x.ts:7 unchecked (4 statements)'], staleExemptions: [] });
    expect(unasserted(found, [{ why: 'a test', functions: ['src/x.ts unchecked', 'src/x.ts gone'] }])).toEqual({ missing: [], staleExemptions: ['src/x.ts gone'] });
  });
});

describe('structure - dead code', () => {
  it.concurrent('has no unused file, export or exported type (knip)', async () => {
    expect(await knipFindings()).toEqual([]);
  }, 120_000);
});
