// The layers of src (docs/architecture.md, "Layers"): every folder, and the loose files at
// the root of src grouped, has a layer; a file imports (type-only imports included) only from
// its own layer or a lower one, and no two units import each other through any path.
// test/unit/structure.test.ts checks the import graph against this table, and `npm run docs`
// writes it into docs/architecture.md (the docs test fails when the two differ).
// An import that still runs upward is listed in LAYER_EXCEPTIONS, by file, with its reason:
// any other upward import fails the test, and so does an exception that no longer occurs.

import { join } from 'node:path';
import { packageRoot } from '../src/lib/package-root.js';

/** One unit of the table: a folder of src (`storage/`) or a group of loose files (`node.ts`, `main.ts`). */
interface LayerUnit {
  readonly name: string;
  readonly layer: number;
  /** Paths relative to src: a folder ends in `/`; the longest path that matches a file wins. */
  readonly paths: readonly string[];
  readonly owns: string;
}

/** An import that still runs upward, kept until it is removed: the test fails on any other. */
interface LayerException {
  readonly from: string;
  readonly to: string;
  readonly why: string;
}

export const LAYERS: readonly LayerUnit[] = [
  {
    name: 'lib',
    layer: 0,
    paths: ['lib/'],
    owns: 'helpers every part uses: assert() for invariants (an InvariantError is a bug, never a 4xx), one error type with named subclasses, bounded JSON and canonical JSON, request body text, ISO 8601 times, names, logging, timers, zod schema → the 400 naming the JSON path',
  },
  { name: 'metrics', layer: 0, paths: ['metrics/'], owns: 'the Prometheus registry and instruments (prom-client); parts get observer functions' },
  { name: 'config', layer: 1, paths: ['config/'], owns: 'config sources (defaults, file, variables, flags) and their zod schema; TLS material from the config' },
  { name: 'protocol', layer: 1, paths: ['protocol/'], owns: "the cluster's vocabulary (tables, members, transfer plans, core messages, transfer actions), below both cluster and peer" },
  { name: 'scripting', layer: 1, paths: ['scripting/'], owns: 'the isolated-vm sandbox for tenant scripts' },
  { name: 'expression', layer: 1, paths: ['expression/'], owns: 'the shared expression language, pure (search, domains, query language, execution)' },
  { name: 'auth', layer: 1, paths: ['auth/'], owns: 'platform permissions and the table of what each route needs' },
  { name: 'storage', layer: 2, paths: ['storage/'], owns: 'the classic-level wrapper, the definition store (definition-store.ts), ssr, tsr (tsr-block: the block format; tsr-order: payload order across blocks), group commit, hints' },
  { name: 'peer', layer: 2, paths: ['peer/'], owns: 'the gRPC peer transport from proto/peer.proto: envelopes, signing, the node identity, the inbound gate, limits, transfer streams, and the registry of message kinds (each subsystem declares its own kinds, codecs and handlers; fields.ts and documents.ts check their bodies)' },
  { name: 'cluster-core', layer: 2, paths: ['cluster-core/'], owns: 'the pure membership and transfer state machine; placement.ts: the one ring placement function' },
  { name: 'streams', layer: 3, paths: ['streams/'], owns: 'schemas, the payload validator, taxonomy, tags, distribution policy, partitioner, placements (policies, mappings, slots in use), stream definitions, runtime, ingest (ingest-pool, ingest-worker, tsr-batch: tsr batches packed in worker threads)' },
  { name: 'replicated-definitions', layer: 3, paths: ['replicated-definitions/'], owns: 'how definitions reach every node: the coordinator, push and hints, their peer messages and reads, byte quotas per tenant; tenants (a definition each)' },
  { name: 'query', layer: 4, paths: ['query/'], owns: 'the query language: parser, checker, types, windows' },
  { name: 'search', layer: 4, paths: ['search/'], owns: 'the per-partition ssr index, facets, histograms, the search service' },
  { name: 'repair', layer: 4, paths: ['repair/'], owns: 'anti-entropy: key digests, partition sync, repair runs, damage refill' },
  { name: 'cluster', layer: 4, paths: ['cluster/'], owns: 'the cluster shell around the core: membership service and feed, node table, events, peer server, transfer chunks, partition router, replica writer (both halves of the epoch fence), hints, hand-offs, the data plane, its peer messages (core-messages.ts, write-messages.ts), and cluster-node.ts: prepareClusterNode and its start, the one composition of core, shell, data plane and their peer handlers that node.ts and the shell simulation both run' },
  { name: 'contributors', layer: 4, paths: ['contributors/'], owns: 'contributor types and instances' },
  { name: 'pipeline', layer: 5, paths: ['pipeline/'], owns: "the query operator runtime, pure: a checked query's steps as a chain of operators (where, select, groupings, paned windows, ordering, aggregates) from rows to output changes; no I/O, no clock read" },
  { name: 'historical', layer: 6, paths: ['historical/'], owns: "historical reads of stored streams: whole payloads merged in time order, tsr blocks by column (block-row-plan.ts), last values per key, the time bounds of a query, this node's answers for the partitions it owns (local-reads.ts), and their peer messages (ScanRead, BlockRead, LatestRead: historical-messages.ts, historical-peer.ts)" },
  { name: 'sessions', layer: 7, paths: ['sessions/'], owns: 'execution sessions and daemons: session documents and transitions, the services behind the Execution and daemon routes, hosting (placement, routing, session-host), query context and runners, function budgets, the live feed, outputs (output channels, their registry, retained tables), and their peer messages (OutputPoll, ExecutionStatusRead, LivePayloads)' },
  { name: 'monitoring', layer: 5, paths: ['monitoring/'], owns: 'the ten monitoring services, the audit log, ingest and storage counters' },
  { name: 'ops', layer: 5, paths: ['ops/'], owns: "operators' views: _cat tables and rows, store counts, transfer watch, health and readiness, the ring view the console draws (ring-view.ts)" },
  { name: 'node-history', layer: 5, paths: ['node-history/'], owns: "each node's figures over time for the console's charts: samples from the Prometheus instruments in a bounded ring, and the read of every member's ring over the peer port" },
  { name: 'domains', layer: 5, paths: ['domains/'], owns: 'domains: named groups of contributors given by filters' },
  { name: 'admin', layer: 5, paths: ['admin/'], owns: "approved vendors of a tenant" },
  { name: 'http', layer: 8, paths: ['http/'], owns: "the Koa app, error mapping, JSON bodies, SSE, version headers, authentication, one router per family; openapi/: the platform interface's OpenAPI document, from the zod schemas" },
  { name: 'api-v1', layer: 8, paths: ['api-v1/'], owns: 'the brain management interface: accounts, gates, brains, licence, its OpenAPI and docs page, its CLI' },
  { name: 'cli', layer: 8, paths: ['cli/'], owns: 'the `status` and `health` commands, the node process flags' },
  { name: 'node', layer: 9, paths: ['node.ts', 'main.ts'], owns: 'node.ts: the composition root, the only wiring, one function per subsystem; main.ts: the command line (commander)' },
];

export const LAYER_EXCEPTIONS: readonly LayerException[] = [];

/** The unit a file of src (path relative to src) belongs to: the longest path of the table that matches. */
export function unitOf(file: string): LayerUnit | undefined {
  let best: { unit: LayerUnit; length: number } | undefined;
  for (const unit of LAYERS) {
    for (const path of unit.paths) {
      const matches = path.endsWith('/') ? file.startsWith(path) : file === path;
      if (matches && (best === undefined || path.length > best.length)) best = { unit, length: path.length };
    }
  }
  return best?.unit;
}

const BEGIN = '<!-- layer-table: generated by `npm run docs` from scripts/layers.ts; do not edit -->';
const END = '<!-- /layer-table -->';

/** The table as markdown: one row per layer, then the exceptions still allowed. */
export function layerTable(): string {
  const layers = [...new Set(LAYERS.map((unit) => unit.layer))].sort((a, b) => b - a);
  const rows = layers.flatMap((layer) =>
    LAYERS.filter((unit) => unit.layer === layer).map((unit) => `| ${layer} | ${unit.paths.map((path) => `\`src/${path}\``).join(' ')} | ${unit.owns} |`),
  );
  // One line per importing file and reason, naming what it imports.
  const groups = new Map<string, string[]>();
  for (const entry of LAYER_EXCEPTIONS) {
    const key = `${entry.from}\n${entry.why}`;
    groups.set(key, [...(groups.get(key) ?? []), `\`src/${entry.to}\``]);
  }
  const exceptions = [...groups].map(([key, targets]) => {
    const [from, why] = key.split('\n');
    return `- \`src/${from}\` → ${targets.join(', ')}: ${why}`;
  });
  const allowed = exceptions.length === 0 ? ['No upward import is allowed.'] : ['Upward imports still allowed (each to be removed):', '', ...exceptions];
  return ['| layer | folders and files | owns |', '|---|---|---|', ...rows, '', ...allowed].join('\n');
}

/** docs/architecture.md with its layer table replaced by `table`. */
export function withLayerTable(text: string, table: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`docs/architecture.md has no ${BEGIN} … ${END} section`);
  return `${text.slice(0, begin + BEGIN.length)}\n${table}\n${text.slice(end)}`;
}

export function architectureDocPath(): string {
  return join(packageRoot(), 'docs', 'architecture.md');
}
