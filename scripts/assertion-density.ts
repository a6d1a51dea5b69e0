// Assertions on the write path (docs/architecture.md, "The write path"): every function of
// cluster/ (the shell around the pure core in cluster-core/), storage/ and streams/ingest*
// states at least one invariant with assert() (src/lib/assert.ts). A function is a function
// declaration, a method, a constructor, an accessor, or an arrow or function expression given
// a name (a variable, a property); an anonymous callback (`.map((x) => …)`) is part of the
// function it is written in, and a named function inside another counts for itself only.
// Exempt, each for a reason written below (an assertion there would restate a line, or let
// outside input stop the node):
// - functions of at most TRIVIAL_STATEMENTS_MAX statements (nested statements counted, an
//   arrow with an expression body is one): getters, delegations, one-line helpers;
// - the checks and decoders of outside input by their names (…Problem, fromProto and
//   …FromProto, parse…): they return or throw what is wrong with it, for a 4xx or a refusal;
// - the functions of ASSERTION_EXEMPT, by file and name, grouped by their reason.
// test/unit/structure.test.ts fails on any other function without an assertion, and on an
// exemption that names no function any more; `node dist/scripts/assertion-density.js` lists
// the functions without one and the counts.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { packageRoot } from '../src/lib/package-root.js';

/** A function of at most this many statements needs no assertion. */
export const TRIVIAL_STATEMENTS_MAX = 3;

/** Names of the functions that check or decode outside input (peer-input.ts, the codecs, parsers). */
const INPUT_CHECK_NAME = /Problem$|^fromProto$|FromProto$|^parse[A-Z]/;

/** Functions without an assertion, by `file name`, grouped by why none is due. */
export const ASSERTION_EXEMPT: ReadonlyArray<{ readonly why: string; readonly functions: readonly string[] }> = [
  {
    why: 'reads outside input (a peer\'s message, answer or chunk, a client\'s request, a file, stored bytes, the machine): it refuses, classifies or skips what is wrong, and an assertion would let bad input stop the node',
    functions: [
      'src/cluster/advertised-address.ts advertisedAddress',
      'src/cluster/cluster-shell.ts adopt',
      'src/cluster/cluster-shell.ts receiveChunk',
      'src/cluster/cluster-shell.ts refused',
      'src/cluster/core-state-store.ts readTableFile',
      'src/cluster/identity-proof.ts causeOf',
      'src/cluster/identity-proof.ts grpcFailure',
      'src/cluster/identity-proof.ts identityProofFailure',
      'src/cluster/membership-service.ts proveIdentity',
      'src/cluster/node-table.ts get',
      'src/cluster/peer-input.ts isPublicKey',
      'src/cluster/peer-server.ts admitSenderKey',
      'src/cluster/replica-writer.ts failed',
      'src/cluster/follow-up-store.ts partOf',
      'src/cluster/write-follow-ups.ts readKeys',
      'src/cluster/transfer-chunks.ts storedProgress',
      'src/cluster/transfer-chunks.ts take',
      'src/storage/database.ts readLedger',
      'src/storage/definition-store.ts checkVersion',
      'src/storage/definition-store.ts open',
      'src/storage/integrity.ts damageInLevelLog',
      'src/storage/repository-convert.ts blockToDocuments',
      'src/storage/tsr-block.ts blockHeader',
      'src/storage/tsr-block.ts bodyOf',
      'src/storage/tsr-block.ts column',
      'src/storage/tsr-block.ts constructor',
      'src/storage/tsr-block.ts decodeBlock',
      'src/storage/tsr-block.ts decodeColumn',
      'src/storage/tsr-block.ts headerInteger',
      'src/storage/tsr-block.ts readColumnPlace',
      'src/storage/tsr-block.ts readPositions',
      'src/storage/tsr-block.ts readStrings',
      'src/storage/tsr-block.ts readStringsLine',
      'src/storage/tsr-block.ts restOf',
      'src/storage/tsr-block.ts stringsOf',
      'src/storage/tsr-block.ts readTimestamps',
      'src/storage/tsr-block.ts skip',
      'src/storage/tsr-block.ts sortedColumns',
      'src/storage/tsr.ts decoded',
      'src/storage/tsr.ts payloadsInBlockKey',
      'src/streams/ingest-checks.ts payloadsOf',
      'src/streams/ingest.ts checkStores',
      'src/streams/ingest.ts prepare',
    ],
  },
  {
    why: 'registers the handlers of peer calls: what they are given is outside input, and the parts they call assert',
    functions: ['src/cluster/cluster-node.ts serveShell', 'src/cluster/data-plane.ts serveDataPlane'],
  },
  {
    why: 'I/O with no state of its own: opens, writes and syncs a file or a database, or stops timers and streams; what it writes is checked where it is read',
    functions: [
      'src/cluster/cluster-shell.ts failed',
      'src/cluster/cluster-shell.ts onClose',
      'src/cluster/cluster-shell.ts stop',
      'src/cluster/core-state-store.ts markMember',
      'src/cluster/core-state-store.ts writeSynced',
      'src/storage/database.ts open',
      'src/storage/database.ts verify',
      'src/storage/files.ts writeFileDurably',
      'src/storage/integrity.ts repairAndOpen',
    ],
  },
  {
    why: 'answers a question about its arguments or its state, where every answer is valid (a predicate, a lookup, a choice between two configs, a refusal)',
    functions: [
      'src/cluster/core-state-store.ts joinIfTableLost',
      'src/cluster/data-plane.ts store',
      'src/storage/database.ts writeRefusal',
      'src/storage/definition-store.ts get',
      'src/storage/definition-store.ts list',
      'src/storage/local-replica.ts place',
      'src/storage/tsr-block.ts hasNames',
      'src/storage/tsr-block.ts isSorted',
      'src/storage/tsr-block.ts valueKind',
      'src/streams/ingest.ts wanted',
    ],
  },
  {
    why: 'its contract is asserted by its callers: put, delete and applyRemote check after each write that no other write of the key ran meanwhile',
    functions: ['src/storage/definition-store.ts serialised'],
  },
];

/** Whether `file` (relative to the repository, `src/…`) is on the write path this rule covers. */
export function onWritePath(file: string): boolean {
  return /^src\/(cluster|storage)\/[^/]+\.ts$/.test(file) || /^src\/streams\/ingest[^/]*\.ts$/.test(file);
}

interface FunctionAssertions {
  readonly key: string; // file name
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
      found.push({ key: `${file} ${name}`, where: `${file}:${line} ${name}`, ...countBody(node as NamedFunction, source) });
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

/** Why a function without an assertion needs none, or undefined when it needs one. */
function exemption(entry: FunctionAssertions, listed: ReadonlySet<string>): string | undefined {
  if (entry.statements <= TRIVIAL_STATEMENTS_MAX) return 'trivial';
  if (INPUT_CHECK_NAME.test(entry.key.slice(entry.key.indexOf(' ') + 1))) return 'checks outside input';
  return listed.has(entry.key) ? 'listed' : undefined;
}

/** Those that should state an invariant and do not, and the listed exemptions that name no function without one. */
export function unasserted(functions: readonly FunctionAssertions[], exempt = ASSERTION_EXEMPT): { missing: string[]; staleExemptions: string[] } {
  const listed = new Set(exempt.flatMap((group) => group.functions));
  const without = functions.filter((entry) => entry.asserts === 0);
  return {
    missing: without.filter((entry) => exemption(entry, listed) === undefined).map((entry) => `${entry.where} (${entry.statements} statements)`),
    staleExemptions: [...listed].filter((key) => !without.some((entry) => entry.key === key && exemption(entry, listed) === 'listed')),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const functions = writePathFunctions(packageRoot());
  const asserted = functions.filter((entry) => entry.asserts > 0).length;
  const listed = new Set(ASSERTION_EXEMPT.flatMap((group) => group.functions));
  const reasons = functions.filter((entry) => entry.asserts === 0).map((entry) => exemption(entry, listed));
  const count = (reason: string | undefined) => reasons.filter((each) => each === reason).length;
  const { missing, staleExemptions } = unasserted(functions);
  const assertions = functions.reduce((sum, entry) => sum + entry.asserts, 0);
  for (const line of [...missing, ...staleExemptions.map((key) => `stale exemption: ${key}`)]) console.log(line);
  console.log(
    `${functions.length} functions: ${asserted} with an assertion (${assertions} assertions); without one: ${count('trivial')} of ≤ ${TRIVIAL_STATEMENTS_MAX} statements, ` +
      `${count('checks outside input')} checks of outside input by name, ${count('listed')} listed, ${missing.length} missing`,
  );
}
