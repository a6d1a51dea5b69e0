// Node configuration: config/default.json, then an optional --config FILE, then TRIBUTARY_*
// environment variables, then CLI flags; the last one that sets a key wins. Every key of
// default.json can be set by all three, by one naming rule:
//   limits.bodyBytesMax  ⇔  TRIBUTARY_LIMITS_BODY_BYTES_MAX  ⇔  --limits-body-bytes-max
// A bad config is refused at start with a message that names the key and where it came from.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { isPlainObject } from './json.js';
import { NAME_LENGTH_MAX } from './names.js';
import { packageRoot } from './package-root.js';
import { parseJoinToken } from './cluster/join-token.js';

const port = z.number().int().min(1).max(65535);
const name = z
  .string()
  .min(1)
  .max(NAME_LENGTH_MAX)
  .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
  .refine((value) => !value.includes('..'), 'must not contain ".."');

export const configSchema = z
  .object({
    name,
    zone: z.string().min(1).max(NAME_LENGTH_MAX),
    /** The address HTTP and the peer port listen on. */
    host: z.string().min(1),
    /** The address other nodes reach this one at (null: `host`); set it when host is 0.0.0.0. */
    advertiseAddress: z.string().min(1).nullable(),
    httpPort: port,
    peerPort: port,
    /** null: data/<name> below the working directory. */
    dataDir: z.string().min(1).nullable(),
    /** Start Pending and wait to be added to a cluster, instead of as a lone Joined node. */
    join: z.boolean(),
    /**
     * A join token from GET /cluster/join-token (issue 15): start Pending, and take an Admit
     * only when it is signed by one of the node keys the token names. Implies `join`.
     */
    joinToken: z.string().min(1).nullable(),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    /** pretty: readable lines (pino-pretty); json: one JSON object a line; auto: pretty when stdout is a terminal. */
    logFormat: z.enum(['auto', 'pretty', 'json']),
    /** The level of the access line written per HTTP request; silent writes none. */
    accessLogLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    /** Tenants created on the first start of a lone node. */
    defaultTenants: z.array(name),
    /** Serve /_internal reads of raw repository contents (tests and operators). */
    internalReads: z.boolean(),
    /** Origins browsers may call from (issue 13 item 3e): "*" for any, [] for none. */
    corsOrigins: z.array(z.string().min(1).max(1024).refine((origin) => origin === '*' || /^https?:\/\/[^/\s]+$/.test(origin), 'an origin is "*" or scheme://host[:port]')).max(1_000),
    monitoring: z
      .object({
        /** The `actors` monitoring service (the spec: disabled unless configured). */
        actorsEnabled: z.boolean(),
        /** Entries the `audit` monitoring service keeps (the oldest go first). */
        auditEntriesMax: z.number().int().min(1).max(1_000_000),
      })
      .strict(),
    limits: z
      .object({
        bodyBytesMax: z.number().int().min(1024).max(1024 * 1024 * 1024),
        ingestBatchPayloadsMax: z.number().int().min(1).max(10_000_000),
        /** Worker threads that parse, check and pack tsr ingests (0: all on the main thread). */
        ingestThreads: z.number().int().min(0).max(64),
        tagTimeoutMs: z.number().int().min(1).max(60_000),
        tagMemoryMb: z.number().int().min(8).max(4096),
        hintBufferBytesMax: z.number().int().min(1024 * 1024),
        sseClientsMax: z.number().int().min(1).max(100_000),
        sseClientBufferBytesMax: z.number().int().min(1024),
        sseKeepAliveMs: z.number().int().min(100).max(600_000),
        /** Deepest JSON a request body may nest (arrays and objects); deeper is a 400. */
        jsonDepthMax: z.number().int().min(8).max(1_000),
        /** Open HTTP connections; more are closed as they arrive. */
        connectionsMax: z.number().int().min(16).max(1_000_000),
        /** Time a client gets to send a request's headers. */
        headersTimeoutMs: z.number().int().min(1_000).max(600_000),
        /** Time a client gets to send a whole request, headers and body. */
        requestTimeoutMs: z.number().int().min(1_000).max(3_600_000),
        /** Bytes of JSON one definition (stream, vendor, session, …) may hold. */
        definitionBytesMax: z.number().int().min(64 * 1024).max(1024 * 1024 * 1024),
        /** Bytes of JSON all definitions of one tenant may hold (each is kept on every node). */
        tenantDefinitionBytesMax: z.number().int().min(1024 * 1024),
        /** Script isolates (tags, session functions) kept loaded; the least recently used are unloaded beyond it. */
        isolatesMax: z.number().int().min(1).max(100_000),
        /** Heap all loaded isolates may hold together; the least recently used are unloaded beyond it. */
        isolatesMemoryMb: z.number().int().min(16).max(1024 * 1024),
        /** Peer calls this node serves at once; more are refused (RESOURCE_EXHAUSTED) before their body is read. */
        peerCallsInFlightMax: z.number().int().min(4).max(100_000),
      })
      .strict(),
    storage: z
      .object({
        /** LevelDB's write buffer (memtable) in bytes; bigger: fewer level-0 files and write stalls, more memory and log to replay after a crash. */
        writeBufferBytes: z.number().int().min(1024 * 1024).max(1024 * 1024 * 1024),
        /** Records read from the old repository per step of a move to another repository (docs/storage.md). */
        moveChunkRecords: z.number().int().min(1).max(100_000),
        /** Pause between two steps of a move: 0 moves as fast as the node writes. */
        movePacingMs: z.number().int().min(0).max(60_000),
        /** Time without a read of the old repository before a move deletes its copy there. */
        moveGraceMs: z.number().int().min(0).max(24 * 3_600_000),
      })
      .strict(),
    cluster: z
      .object({
        heartbeatIntervalMs: z.number().int().min(10).max(60_000),
        /** A peer not heard from for this long is unavailable. */
        failureTimeoutMs: z.number().int().min(50).max(600_000),
        /** A transfer with no progress for this long is requested again from its last ack. */
        transferStallMs: z.number().int().min(100).max(3_600_000),
        transferChunkBytes: z.number().int().min(1024).max(8 * 1024 * 1024),
        transferWindowChunks: z.number().int().min(1).max(64),
        /** Peer messages older or newer than this are refused as replays. */
        peerReplayWindowMs: z.number().int().min(1_000).max(600_000),
        peerDeadlineMs: z.number().int().min(100).max(600_000),
        /** A replica write not answered this soon is hinted and its owner suspected (issue 12, item 6). */
        writeDeadlineMs: z.number().int().min(50).max(600_000),
        /** Background anti-entropy: one sweep of every partition this often; 0 turns it off. */
        repairIntervalMs: z.number().int().min(0).max(7 * 24 * 3_600_000),
      })
      .strict()
      .refine((cluster) => cluster.failureTimeoutMs > cluster.heartbeatIntervalMs, {
        message: 'failureTimeoutMs must exceed heartbeatIntervalMs',
      }),
    execution: z
      .object({
        /** Queries, variables and functions a session may hold, each. */
        sessionQueriesMax: z.number().int().min(1).max(10_000),
        /** Groups (keys × open windows) one query may hold. */
        queryGroupsMax: z.number().int().min(1).max(10_000_000),
        /** Rows a query may hold to order them or to group grouped rows again. */
        queryRowsHeldMax: z.number().int().min(1).max(100_000_000),
        /** Rows an output keeps for a subscriber that connects late (a finished historical query's result). */
        outputRetainedRowsMax: z.number().int().min(0).max(10_000_000),
        /** Messages an output keeps for other nodes' subscribers to catch up on. */
        outputLogMessagesMax: z.number().int().min(16).max(1_000_000),
        /** Payloads waiting to be forwarded to one node's live queries; beyond it they are dropped and counted. */
        liveForwardQueuePayloadsMax: z.number().int().min(1).max(10_000_000),
        /** Records per page a historical query reads from a partition owner. */
        historicalPageRecords: z.number().int().min(1).max(100_000),
        /** Time a session function gets per call (it runs in the tag sandbox). */
        functionTimeoutMs: z.number().int().min(1).max(60_000),
        /** CPU time a query's session functions may use per second of its run, summed over calls. */
        functionBudgetMs: z.number().int().min(1).max(1_000_000),
        /** Bytes of JSON an output keeps of a finished query's rows for late subscribers. */
        outputRetainedBytesMax: z.number().int().min(0).max(64 * 1024 * 1024 * 1024),
      })
      .strict(),
    /**
     * The secret the accounts CLI authenticates with on /api/v1/admin (issue 6). null: the
     * admin endpoints are closed (403). Short secrets are refused: they can be guessed.
     */
    adminSecret: z.string().min(16, 'must be at least 16 characters').max(1024).nullable(),
    /**
     * Bearer-token authentication of the platform interface (issue 15): `auto` is on when
     * the node listens beyond loopback and off (announced in the log) on loopback.
     */
    auth: z.enum(['auto', 'on', 'off']),
    /**
     * TLS: HTTPS for the front end and mutual TLS on the peer port, every node's certificate
     * signed by the cluster CA in caFile. All three paths, or none (plain TCP).
     */
    tls: z
      .object({
        certFile: z.string().min(1).nullable(),
        keyFile: z.string().min(1).nullable(),
        caFile: z.string().min(1).nullable(),
      })
      .strict(),
    brainApi: z
      .object({
        /** The hive-wide switch of /api/v1 until an administrator sets it with the CLI. */
        enabled: z.boolean(),
        /** null: config/brain-templates.json of the package. */
        templatesFile: z.string().min(1).nullable(),
      })
      .strict(),
    licence: z
      .object({
        tier: z.enum(['free', 'paid']),
        /** Brains the whole cluster may hold (one pool); soft-deleted brains do not count. */
        brainAllowance: z.number().int().min(0).max(1_000_000),
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
}

export function loadConfig(sources: ConfigSources): Config {
  const defaults = readDefaults();
  let merged: Record<string, unknown> = structuredClone(defaults);
  // Where each key's value came from, so an invalid value names its source (issue 14).
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
  return validate(merged, (path) => originOf(origins, path, sources.configFile));
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

function validate(merged: Record<string, unknown>, originOfPath: (path: string) => string): Config {
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
  checkExposure(config);
  const joining = config.join || config.joinToken !== null;
  const authRequired = config.auth === 'on' || (config.auth === 'auto' && !isLoopbackHost(config.host));
  return { ...config, join: joining, authRequired, dataDir: config.dataDir ?? join('data', config.name) };
}

/**
 * What a node listening beyond loopback must have (issue 15): an admin secret, so that
 * membership changes need authority, and a join token rather than bare --join, so that it
 * trusts only the cluster it was told about.
 */
function checkExposure(config: z.infer<typeof configSchema>): void {
  if (config.joinToken !== null) {
    try {
      parseJoinToken(config.joinToken);
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
