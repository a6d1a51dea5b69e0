// Node configuration: config/default.json, then an optional --config FILE, then TRIBUTARY_*
// environment variables, then CLI flags; the last one that sets a key wins. Every key of
// default.json can be set by all three, by one naming rule:
//   limits.bodyBytesMax  ⇔  TRIBUTARY_LIMITS_BODY_BYTES_MAX  ⇔  --limits-body-bytes-max
// A bad config is refused at start with a message that names the key and where it came from.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { isPlainObject } from '../lib/json.js';
import { NAME_LENGTH_MAX } from '../lib/names.js';
import { packageRoot } from '../lib/package-root.js';

const port = z.number().int().min(1).max(65535);
const name = z
  .string()
  .min(1)
  .max(NAME_LENGTH_MAX)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
  .refine((value) => !value.includes('..'), 'must not contain ".."');
const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

// Every key says what it does with `.describe()`: docs/configuration.md's table is generated
// from this schema (`npm run docs`), and a unit test fails when the two differ.
export const configSchema = z
  .object({
    name: name.describe("The node's name, unique in its cluster; also names its data folder"),
    zone: z.string().min(1).max(NAME_LENGTH_MAX).describe('A label shown with the node (`_cat/nodes`, `status`)'),
    host: z.string().min(1).describe('The address HTTP and the peer port listen on; beyond loopback an admin secret is required'),
    advertiseAddress: z
      .string()
      .min(1)
      .nullable()
      .describe('The address other nodes reach this one at. null: `host`, or with `host` 0.0.0.0 (or `::`) the first external IPv4 address'),
    httpPort: port.describe('The HTTP port: the platform interface, the console, `/health`, `/ready`, `/metrics`'),
    peerPort: port.describe('The gRPC peer port other nodes call; the `port` of `POST /cluster/nodes`'),
    dataDir: z.string().min(1).nullable().describe('The data folder. null: `data/<name>` below the working directory'),
    join: z.boolean().describe('Start Pending and wait to be added to a cluster, instead of as a lone Joined node'),
    joinToken: z
      .string()
      .min(1)
      .nullable()
      .describe('A token from `GET /cluster/join-token`: start Pending, and take an Admit only when one of the node keys it names signed it (implies `join`)'),
    logLevel: logLevel.describe('The log level (pino, on stdout; see docs/operating.md, "Logs")'),
    logFormat: z.enum(['auto', 'pretty', 'json']).describe('`pretty`: readable lines; `json`: one JSON object a line; `auto`: pretty when stdout is a terminal'),
    accessLogLevel: logLevel.describe('The level of the one access line written per HTTP request; `silent` writes none'),
    defaultTenants: z.array(name).describe('Tenants made on the first start of a lone node'),
    internalReads: z.boolean().describe('Serve `/_internal` reads of raw repository contents (tests and operators)'),
    corsOrigins: z
      .array(z.string().min(1).max(1024).refine((origin) => origin === '*' || /^https?:\/\/[^/\s]+$/.test(origin), 'an origin is "*" or scheme://host[:port]'))
      .max(1_000)
      .describe('Origins browsers may call from: `*` for any, scheme://host[:port] each, `[]` (in a config file) for no CORS'),
    monitoring: z
      .object({
        actorsEnabled: z.boolean().describe('Serve the `actors` monitoring service (the spec: disabled unless configured)'),
        auditEntriesMax: z.number().int().min(1).max(1_000_000).describe('Entries the `audit` monitoring service keeps (the oldest go first)'),
      })
      .strict(),
    limits: z
      .object({
        bodyBytesMax: z.number().int().min(1024).max(1024 * 1024 * 1024).describe('Bytes of a request body; larger is 413'),
        ingestBatchPayloadsMax: z.number().int().min(1).max(10_000_000).describe('Payloads in one POST to a stream'),
        ingestThreads: z.number().int().min(0).max(64).describe('Worker threads that parse, check and pack tsr ingests (0: all on the main thread)'),
        tagTimeoutMs: z.number().int().min(1).max(60_000).describe('Time a tag script gets per call'),
        tagMemoryMb: z.number().int().min(8).max(4096).describe('Heap of one tag isolate'),
        hintBufferBytesMax: z.number().int().min(1024 * 1024).describe('Bytes of hints held for nodes that did not take their writes yet'),
        sseClientsMax: z.number().int().min(1).max(100_000).describe('Open server-sent-event connections'),
        sseClientBufferBytesMax: z.number().int().min(1024).describe('Bytes waiting for one SSE client; a client that falls further behind is dropped'),
        sseKeepAliveMs: z.number().int().min(100).max(600_000).describe('Interval of the keep-alive comment on an idle SSE connection'),
        jsonDepthMax: z.number().int().min(8).max(1_000).describe('Deepest JSON a request body may nest (arrays and objects); deeper is 400'),
        connectionsMax: z.number().int().min(16).max(1_000_000).describe('Open HTTP connections; more are closed as they arrive'),
        headersTimeoutMs: z.number().int().min(1_000).max(600_000).describe("Time a client gets to send a request's headers; a silent connection is closed"),
        requestTimeoutMs: z.number().int().min(1_000).max(3_600_000).describe('Time a client gets to send a whole request, headers and body (408)'),
        definitionBytesMax: z
          .number()
          .int()
          .min(64 * 1024)
          .max(1024 * 1024 * 1024)
          .describe('Bytes of JSON one definition (stream, vendor, session, …) may hold (413)'),
        tenantDefinitionBytesMax: z
          .number()
          .int()
          .min(1024 * 1024)
          .describe('Bytes of JSON all definitions of one tenant may hold, each kept on every node (413)'),
        isolatesMax: z.number().int().min(1).max(100_000).describe('Script isolates (tags, session functions) kept loaded; the least recently used are unloaded beyond it'),
        isolatesMemoryMb: z
          .number()
          .int()
          .min(16)
          .max(1024 * 1024)
          .describe('Heap all loaded isolates may hold together; the least recently used are unloaded beyond it'),
        peerCallsInFlightMax: z.number().int().min(4).max(100_000).describe('Inbound peer calls served at once; more are refused (`PEER_BUSY`) before their body is read'),
      })
      .strict(),
    storage: z
      .object({
        writeBufferBytes: z
          .number()
          .int()
          .min(1024 * 1024)
          .max(1024 * 1024 * 1024)
          .describe("LevelDB's write buffer: bigger means fewer level-0 files and write stalls under sustained ingest, up to twice this in memory, and this much log to replay after a crash"),
        diskFreeMinBytes: z
          .number()
          .int()
          .min(0)
          .max(Number.MAX_SAFE_INTEGER)
          .describe('Free bytes the data folder\'s filesystem keeps: below them ingest is refused with 507 before LevelDB fails (docs/storage.md); 0: no floor'),
        diskCheckIntervalMs: z.number().int().min(50).max(60_000).describe('How often the free bytes are read (the floor, and reopening the database after a failed write)'),
        moveChunkRecords: z.number().int().min(1).max(100_000).describe('Records read from the old repository per step of a move to another repository (docs/storage.md)'),
        movePacingMs: z.number().int().min(0).max(60_000).describe('Pause between two steps of a move to another repository: 0 moves as fast as the node writes'),
        moveGraceMs: z.number().int().min(0).max(24 * 3_600_000).describe('Time without a read of the old repository before a move deletes its copy there'),
      })
      .strict(),
    cluster: z
      .object({
        heartbeatIntervalMs: z.number().int().min(10).max(60_000).describe('Interval of the heartbeats every node sends every other'),
        failureTimeoutMs: z.number().int().min(50).max(600_000).describe('A peer not heard from for this long is unavailable (`available` "false")'),
        transferStallMs: z.number().int().min(100).max(3_600_000).describe('A transfer with no progress for this long is stalled and requested again from its last ack'),
        transferChunkBytes: z
          .number()
          .int()
          .min(1024)
          .max(8 * 1024 * 1024)
          .describe('Bytes of one chunk of a data transfer'),
        transferWindowChunks: z.number().int().min(1).max(64).describe('Chunks of a transfer in flight at once'),
        peerReplayWindowMs: z.number().int().min(1_000).max(600_000).describe('Peer messages older or newer than this are refused as replays'),
        peerDeadlineMs: z.number().int().min(100).max(600_000).describe('Deadline of a peer call'),
        writeDeadlineMs: z.number().int().min(50).max(600_000).describe('A replica write not answered this soon is hinted and its owner taken for unavailable'),
        repairIntervalMs: z
          .number()
          .int()
          .min(0)
          .max(7 * 24 * 3_600_000)
          .describe('Background anti-entropy: one sweep of every partition this often; 0 turns it off'),
      })
      .strict()
      .refine((cluster) => cluster.failureTimeoutMs > cluster.heartbeatIntervalMs, {
        message: 'failureTimeoutMs must exceed heartbeatIntervalMs',
      }),
    execution: z
      .object({
        sessionQueriesMax: z.number().int().min(1).max(10_000).describe('Queries, variables and functions a session may hold, each'),
        queryGroupsMax: z.number().int().min(1).max(10_000_000).describe('Groups (keys × open windows) one query may hold'),
        queryRowsHeldMax: z.number().int().min(1).max(100_000_000).describe('Rows a query may hold to order them or to group grouped rows again'),
        outputRetainedRowsMax: z
          .number()
          .int()
          .min(0)
          .max(10_000_000)
          .describe("Rows an output keeps for a subscriber that connects late (a finished historical query's result)"),
        outputLogMessagesMax: z.number().int().min(16).max(1_000_000).describe("Messages an output keeps for other nodes' subscribers to catch up on"),
        liveForwardQueuePayloadsMax: z
          .number()
          .int()
          .min(1)
          .max(10_000_000)
          .describe("Payloads waiting to be forwarded to one node's live queries; beyond it they are dropped and counted"),
        historicalPageRecords: z.number().int().min(1).max(100_000).describe('Records per page a historical query reads from a partition owner'),
        functionTimeoutMs: z.number().int().min(1).max(60_000).describe('Time a session function gets per call (it runs in the tag sandbox)'),
        functionBudgetMs: z.number().int().min(1).max(1_000_000).describe("CPU time a query's session functions may use per second of its run, summed over calls"),
        outputRetainedBytesMax: z
          .number()
          .int()
          .min(0)
          .max(64 * 1024 * 1024 * 1024)
          .describe("Bytes of JSON an output keeps of a query's rows for late subscribers"),
      })
      .strict(),
    // Short secrets are refused: they can be guessed.
    adminSecret: z
      .string()
      .min(16, 'must be at least 16 characters')
      .max(1024)
      .nullable()
      .describe('The administrator\'s bearer token: membership changes, join tokens, `/api/v1/admin`. null: those are closed. Required when `host` is beyond loopback'),
    auth: z
      .enum(['auto', 'on', 'off'])
      .describe('Bearer tokens on the platform interface. `auto`: required beyond loopback, off (and logged) on loopback'),
    // All three paths or none: checkExposure refuses a partial set.
    tls: z
      .object({
        certFile: z.string().min(1).nullable().describe("The node's certificate (PEM). With keyFile and caFile: HTTPS, and mutual TLS on the peer port; null: plain TCP"),
        keyFile: z.string().min(1).nullable().describe("The certificate's private key (PEM)"),
        caFile: z.string().min(1).nullable().describe("The cluster CA (PEM) that signed every node's certificate"),
      })
      .strict(),
    brainApi: z
      .object({
        enabled: z.boolean().describe('The hive-wide switch of `/api/v1` until an administrator sets it with the accounts CLI'),
        templatesFile: z.string().min(1).nullable().describe('The brain templates. null: `config/brain-templates.json` of the package'),
      })
      .strict(),
    licence: z
      .object({
        tier: z.enum(['free', 'paid']).describe("The licence tier when the cluster is born (later: `PATCH /api/v1/admin/licence`)"),
        brainAllowance: z
          .number()
          .int()
          .min(0)
          .max(1_000_000)
          .describe('Brains the whole cluster may hold (one pool; soft-deleted brains do not count), when the cluster is born'),
      })
      .strict(),
  })
  .strict();

export type Config = z.infer<typeof configSchema> & {
  dataDir: string;
  /** Whether the platform interface requires bearer tokens (auth, resolved against host). */
  authRequired: boolean;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** A leaf of default.json: its path, and the names it has as a flag and a variable. */
export interface ConfigKey {
  path: string[];
  flag: string;
  env: string;
  defaultValue: unknown;
}

export function defaultConfigPath(): string {
  return join(packageRoot(), 'config', 'default.json');
}

export function readDefaults(): Record<string, unknown> {
  return readJsonObject(defaultConfigPath());
}

export function configKeys(defaults: Record<string, unknown>, prefix: string[] = []): ConfigKey[] {
  const keys: ConfigKey[] = [];
  for (const [key, value] of Object.entries(defaults)) {
    const path = [...prefix, key];
    if (isPlainObject(value)) {
      keys.push(...configKeys(value, path));
      continue;
    }
    const words = path.flatMap((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase().split(' '));
    keys.push({ path, flag: words.join('-'), env: 'TRIBUTARY_' + words.join('_').toUpperCase(), defaultValue: value });
  }
  return keys;
}

export interface ConfigSources {
  /** Path of a JSON file merged over the defaults. */
  configFile?: string | undefined;
  env: NodeJS.ProcessEnv;
  /** Flag values by flag name (kebab case), as strings or booleans from the CLI parser. */
  flags: Record<string, string | boolean | undefined>;
  /**
   * Throws, naming what is wrong, for a join token that does not parse (main.ts gives
   * cluster/join-token.ts's parseJoinToken: config sits below cluster and imports nothing from it).
   */
  checkJoinToken(token: string): void;
}

export function loadConfig(sources: ConfigSources): Config {
  const defaults = readDefaults();
  let merged: Record<string, unknown> = structuredClone(defaults);
  // Where each key's value came from, so an invalid value names its source.
  const origins = new Map<string, string>();
  if (sources.configFile !== undefined) {
    const file = readJsonObject(sources.configFile);
    merged = deepMerge(merged, file);
    for (const path of leafPaths(file)) origins.set(path, sources.configFile);
  }
  for (const key of configKeys(defaults)) {
    const fromEnv = sources.env[key.env];
    if (fromEnv !== undefined && fromEnv !== '') {
      setPath(merged, key.path, parseText(fromEnv, key, key.env));
      origins.set(key.path.join('.'), key.env);
    }
    const fromFlag = sources.flags[key.flag];
    if (fromFlag !== undefined) {
      const value = typeof fromFlag === 'boolean' ? fromFlag : parseText(fromFlag, key, `--${key.flag}`);
      setPath(merged, key.path, value);
      origins.set(key.path.join('.'), `--${key.flag}`);
    }
  }
  return validate(merged, (path) => originOf(origins, path, sources.configFile), sources.checkJoinToken);
}

/** The source of the value at `path` (or of a value below it), else the defaults file. */
function originOf(origins: ReadonlyMap<string, string>, path: string, configFile: string | undefined): string {
  const exact = origins.get(path);
  if (exact !== undefined) return exact;
  const below = [...origins.entries()].find(([key]) => path === '' || key.startsWith(`${path}.`));
  if (below !== undefined) return below[1];
  return configFile ?? defaultConfigPath();
}

/** Dotted paths of the leaves of a JSON object (arrays are leaves). */
function leafPaths(value: Record<string, unknown>, prefix = ''): string[] {
  return Object.entries(value).flatMap(([key, child]) => {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    return isPlainObject(child) ? [path, ...leafPaths(child, path)] : [path];
  });
}

function validate(merged: Record<string, unknown>, originOfPath: (path: string) => string, checkJoinToken: (token: string) => void): Config {
  const result = configSchema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const path = issue.path.join('.');
    const key = path || '(root)';
    if (issue.code === 'unrecognized_keys') {
      // Only a config file can bring keys the defaults do not have.
      const where = originOfPath(issue.keys.map((unknown) => (path === '' ? unknown : `${path}.${unknown}`))[0]!);
      throw new ConfigError(`invalid config key '${key}' from ${where}: unknown key(s) ${issue.keys.join(', ')}`);
    }
    throw new ConfigError(`invalid config key '${key}' from ${originOfPath(path)}: ${issue.message}`);
  }
  const config = result.data;
  checkExposure(config, checkJoinToken);
  const joining = config.join || config.joinToken !== null;
  const authRequired = config.auth === 'on' || (config.auth === 'auto' && !isLoopbackHost(config.host));
  return { ...config, join: joining, authRequired, dataDir: config.dataDir ?? join('data', config.name) };
}

/**
 * What a node listening beyond loopback must have (docs/security.md): an admin secret, so that
 * membership changes need authority, and a join token rather than bare --join, so that it
 * trusts only the cluster it was told about.
 */
function checkExposure(config: z.infer<typeof configSchema>, checkJoinToken: (token: string) => void): void {
  if (config.joinToken !== null) {
    try {
      checkJoinToken(config.joinToken);
    } catch (error) {
      throw new ConfigError(`invalid config key 'joinToken': ${(error as Error).message}`);
    }
  }
  const tlsPaths = [config.tls.certFile, config.tls.keyFile, config.tls.caFile];
  if (tlsPaths.some((path) => path !== null) && tlsPaths.some((path) => path === null)) {
    throw new ConfigError("invalid config key 'tls': give certFile, keyFile and caFile together, or none");
  }
  if (isLoopbackHost(config.host)) return;
  if (config.adminSecret === null) {
    throw new ConfigError(`invalid config key 'adminSecret': host ${config.host} is beyond loopback, so an admin secret is required (TRIBUTARY_ADMIN_SECRET)`);
  }
  if (config.join && config.joinToken === null) {
    throw new ConfigError(`invalid config key 'joinToken': host ${config.host} is beyond loopback, so --join needs --join-token (GET /cluster/join-token on a member)`);
  }
}

/** 127.0.0.0/8, ::1 and localhost: addresses no other machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

function parseText(text: string, key: ConfigKey, source: string): unknown {
  const fail = (expected: string): never => {
    throw new ConfigError(`invalid config key '${key.path.join('.')}' from ${source}: expected ${expected}, got '${text}'`);
  };
  const sample = key.defaultValue;
  if (typeof sample === 'number') {
    const value = Number(text);
    return Number.isFinite(value) ? value : fail('a number');
  }
  if (typeof sample === 'boolean') {
    if (['true', '1', 'yes'].includes(text)) return true;
    if (['false', '0', 'no'].includes(text)) return false;
    return fail('true or false');
  }
  if (Array.isArray(sample)) return text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  return text;
}

function readJsonObject(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`cannot read config file ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (!isPlainObject(value)) throw new ConfigError(`config file ${path} must hold a JSON object`);
  return value;
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const part of path.slice(0, -1)) {
    const next = node[part];
    if (!isPlainObject(next)) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}
