// Assertions on the write path (docs/architecture.md, "The write path"): every function of
// cluster/ (the shell around the pure core in cluster-core/), storage/ and streams/ingest*
// states at least one invariant with assert() (src/lib/assert.ts). A function is a function
// declaration, a method, a constructor, an accessor, or an arrow or function expression given
// a name (a variable, a property); an anonymous callback (`.map((x) => …)`) is part of the
// function it is written in, and a named function inside another counts for itself only.
// Exempt: functions of at most TRIVIAL_STATEMENTS_MAX statements (nested statements counted,
// an arrow with an expression body is one), the getters, delegations and one-line helpers
// where an assertion would only restate the line. test/unit/structure.test.ts fails on any
// other function without an assertion; `node dist/scripts/assertion-density.js` lists them.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { packageRoot } from '../src/lib/package-root.js';

/** A function of at most this many statements needs no assertion. */
export const TRIVIAL_STATEMENTS_MAX = 3;

/** Whether `file` (relative to the repository, `src/…`) is on the write path this rule covers. */
export function onWritePath(file: string): boolean {
  return /^src\/(cluster|storage)\/[^/]+\.ts$/.test(file) || /^src\/streams\/ingest[^/]*\.ts$/.test(file);
}

interface FunctionAssertions {
  readonly where: string; // file:line name
  readonly statements: number;
  readonly asserts: number;
}

type NamedFunction = ts.FunctionLikeDeclaration & { body: ts.Node };

/** The function's name when it is one this rule counts, else undefined (an anonymous callback). */
function namedFunction(node: ts.Node, source: ts.SourceFile): string | undefined {
  if (!ts.isFunctionLike(node) || !('body' in node) || node.body === undefined) return undefined;
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)) {
    return node.name?.getText(source) ?? 'default';
  }
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (!ts.isArrowFunction(node) && !ts.isFunctionExpression(node)) return undefined;
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText(source);
  return undefined;
}

/** Counts the statements and assert( calls of one function, leaving out the named functions inside it. */
function countBody(fn: NamedFunction, source: ts.SourceFile): { statements: number; asserts: number } {
  let statements = ts.isBlock(fn.body) ? 0 : 1;
  let asserts = 0;
  const visit = (node: ts.Node): void => {
    if (node !== fn && namedFunction(node, source) !== undefined) return;
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'assert') asserts += 1;
    if (ts.isStatement(node) && !ts.isBlock(node) && node !== fn) statements += 1;
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(fn, visit);
  return { statements, asserts };
}

/** Every counted function of one file, with its statements and assertions. */
export function functionAssertions(file: string, text: string): FunctionAssertions[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: FunctionAssertions[] = [];
  const visit = (node: ts.Node): void => {
    const name = namedFunction(node, source);
    if (name !== undefined) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push({ where: `${file}:${line} ${name}`, ...countBody(node as NamedFunction, source) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The counted functions of every write path file of the repository at `root`. */
export function writePathFunctions(root: string): FunctionAssertions[] {
  const files = (readdirSync(join(root, 'src'), { recursive: true }) as string[]).map((file) => `src/${file}`).filter(onWritePath).sort();
  return files.flatMap((file) => functionAssertions(file, readFileSync(join(root, file), 'utf8')));
}

/** Those that should state an invariant and do not. */
export function unasserted(functions: readonly FunctionAssertions[]): string[] {
  return functions.filter((entry) => entry.asserts === 0 && entry.statements > TRIVIAL_STATEMENTS_MAX).map((entry) => `${entry.where} (${entry.statements} statements)`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const functions = writePathFunctions(packageRoot());
  const asserted = functions.filter((entry) => entry.asserts > 0).length;
  const trivial = functions.filter((entry) => entry.asserts === 0 && entry.statements <= TRIVIAL_STATEMENTS_MAX).length;
  const missing = unasserted(functions);
  const assertions = functions.reduce((sum, entry) => sum + entry.asserts, 0);
  console.log(missing.join('\n'));
  console.log(`${functions.length} functions: ${asserted} with an assertion (${assertions} assertions), ${trivial} exempt (≤ ${TRIVIAL_STATEMENTS_MAX} statements), ${missing.length} without`);
}
