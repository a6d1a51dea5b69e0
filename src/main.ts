#!/usr/bin/env node
// The command line (docs/operating.md): `start` runs a node (a contract for scripts and
// tests: --name, --http-port, --peer-port, --data-dir, --join, --config, and every other
// config key as a flag); `keygen` prints a data folder's public key, making it if needed;
// `status` prints the cluster as a node sees it; `health` probes /health or /ready;
// `version` prints the version.

import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { Command, Option } from 'commander';
import { missingNodeFlags, RESTARTED_ENV } from './cli/node-flags.js';
import { fetchStatus, probe, renderStatus } from './cli/status.js';
import { ConfigError, configKeys, loadConfig, readDefaults } from './config/config.js';
import { advertisedAddress } from './cluster/advertised-address.js';
import { parseJoinToken } from './cluster/join-token.js';
import { loadOrCreateIdentity } from './peer/identity.js';
import { StartupError } from './lib/errors.js';
import { createLogger } from './lib/log.js';
import { softwareVersion } from './lib/version.js';

/** SIGTERM must stop the node within 5 s; past this the process exits anyway. */
const STOP_DEADLINE_MS = 4_500;
/** Exit codes: a bad config, and another start-up failure an operator can fix. */
const EXIT_CONFIG = 2;
const EXIT_STARTUP = 1;
/** A command line that names no command (commander's own usage errors exit 1 too). */
const EXIT_USAGE = 1;
/**
 * The node broke an invariant of its cluster core, or could not persist its table: it stops
 * at once rather than run on with a wrong state (EX_SOFTWARE of sysexits.h).
 */
const EXIT_FATAL = 70;
/** A node started again under its flags checks this often that the process that started it lives. */
const PARENT_CHECK_MS = 1_000;
/** What a null default means, for --help. */
const NULL_DEFAULTS: Record<string, string> = {
  'data-dir': 'data/<name>',
  'advertise-address': 'host; with host 0.0.0.0 the first external IPv4 address',
  'admin-secret': 'none: admin endpoints closed',
  'brain-api-templates-file': 'config/brain-templates.json',
};

const version = softwareVersion();
const versionLine = `${version.number} (revision ${version.revision})`;
const program = new Command('tributary')
  .description('Tributary: a clustered streaming data platform node')
  .version(versionLine, '-v, --version', 'print the version and revision');

const start = program.command('start', { isDefault: true }).description('run a node (the default command)');
start.addOption(new Option('--config <file>', 'JSON config file merged over config/default.json'));
const keys = configKeys(readDefaults());
for (const key of keys) {
  const description = `config ${key.path.join('.')} (env ${key.env})`;
  const option = typeof key.defaultValue === 'boolean' ? new Option(`--${key.flag}`, description) : new Option(`--${key.flag} <value>`, description);
  // Shown by --help; only values given on the command line are used (the defaults come
  // from config/default.json, and a file or variable may override them before a flag).
  option.default(key.defaultValue, key.defaultValue === null ? (NULL_DEFAULTS[key.flag] ?? 'none') : JSON.stringify(key.defaultValue));
  start.addOption(option);
}
start.action(async (options: Record<string, string | boolean | undefined>, command: Command) => {
  const restarted = restartWithNodeFlags();
  if (restarted !== undefined) {
    process.exitCode = await restarted;
    return;
  }
  const fromCommandLine = (flag: string) => (command.getOptionValueSource(camel(flag)) === 'cli' ? options[camel(flag)] : undefined);
  const flags = Object.fromEntries(keys.map((key) => [key.flag, fromCommandLine(key.flag)]));
  const loaded = loadConfig({ configFile: options.config as string | undefined, env: process.env, flags, checkJoinToken: parseJoinToken });
  const config = { ...loaded, advertiseAddress: advertisedAddress(loaded.host, loaded.advertiseAddress) };
  const log = createLogger(config.name, config.logLevel, config.logFormat);
  if (loaded.advertiseAddress === null && config.advertiseAddress !== null) {
    log.info({ host: config.host, advertiseAddress: config.advertiseAddress }, 'listening on every interface: advertising the first external address (set --advertise-address to choose)');
  }
  // Loaded here: the other commands (status, keygen, health) start fast without the node's modules.
  const { startNode } = await import('./node.js');
  const node = await startNode(config, log, { onFatal: () => process.exit(EXIT_FATAL) });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    setTimeout(() => process.exit(1), STOP_DEADLINE_MS).unref();
    node.close().then(
      () => process.exit(0),
      (error: unknown) => {
        log.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // `npm run cluster` starts nodes with a pipe on stdin: when it dies (even by SIGKILL) the
  // pipe closes, and the node stops rather than live on without its parent.
  if (process.env.TRIBUTARY_STOP_WITH_STDIN === '1') {
    process.stdin.on('close', () => stop('stdin closed'));
    process.stdin.on('end', () => stop('stdin closed'));
    process.stdin.resume();
  }
  // Started again by `tributary start` under its flags: a parent killed outright (SIGKILL
  // forwards nothing) leaves this node to another parent, and it stops.
  if (process.env[RESTARTED_ENV] === '1') {
    const parent = process.ppid;
    setInterval(() => process.ppid !== parent && stop('the process that started it is gone'), PARENT_CHECK_MS).unref();
  }
});

/**
 * When Node lacks flags a node needs (cli/node-flags.ts), runs this same command again in a
 * child Node with them, hands it the terminal and the signals, and resolves with its exit
 * code (128 + the signal's number when a signal ended it); undefined when nothing lacks.
 */
function restartWithNodeFlags(): Promise<number> | undefined {
  if (process.env[RESTARTED_ENV] === '1') return undefined;
  const missing = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS);
  if (missing.length === 0) return undefined;
  const child = spawn(process.execPath, [...missing, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, [RESTARTED_ENV]: '1' },
  });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => child.kill(signal));
  return new Promise((resolveExit) => {
    child.once('error', () => resolveExit(EXIT_STARTUP));
    child.once('exit', (code, signal) => resolveExit(code ?? 128 + (signal === null ? 0 : constants.signals[signal])));
  });
}

program
  .command('keygen')
  .description("print the node's public key (base64), making the key pair on first use")
  .requiredOption('--data-dir <dir>', 'the data folder of the node')
  .action((options: { dataDir: string }) => {
    console.log(loadOrCreateIdentity(options.dataDir).publicKeyBase64);
  });

program
  .command('status')
  .description('print the nodes (state, availability, ownership, records, bytes) and running transfers, as a node sees them')
  .option('--url <url>', "a node's HTTP address", 'http://127.0.0.1:8888')
  .option('--json', 'print the JSON of /_cat/nodes and /_cat/transfers instead')
  .addOption(new Option('--token <token>', 'a bearer token with read on system, for a node with authentication on').env('TRIBUTARY_TOKEN'))
  .action(async (options: { url: string; json?: boolean; token?: string }) => {
    const { nodes, transfers } = await fetchStatus(options.url, options.token);
    process.stdout.write(options.json === true ? `${JSON.stringify({ nodes, transfers }, null, 2)}\n` : renderStatus(options.url, nodes, transfers));
  });

program
  .command('health')
  .description('exit 0 when the node answers GET /health (the container HEALTHCHECK); with --ready, only when GET /ready says ready')
  .option('--url <url>', "the node's HTTP address (default: http://127.0.0.1:$TRIBUTARY_HTTP_PORT, else port 8888)")
  .option('--ready', 'ask GET /ready: exit 1 while the node refuses client requests, printing why')
  .action(async (options: { url?: string; ready?: boolean }) => {
    const url = options.url ?? `http://127.0.0.1:${process.env.TRIBUTARY_HTTP_PORT ?? 8888}`;
    const { ok, body } = await probe(`${url.replace(/\/+$/, '')}/${options.ready === true ? 'ready' : 'health'}`);
    process.stdout.write(`${body}\n`);
    process.exitCode = ok ? 0 : 1;
  });

program
  .command('version')
  .description('print the version and the revision it was built from')
  .action(() => console.log(versionLine));

function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

/**
 * `start` is the default command, so a word that names no command would reach it as an
 * argument ("too many arguments for 'start'"): it is answered here with the commands there are.
 * `-V` stays an alias of `--version`, which it was before `-v`.
 */
function commandLine(argv: readonly string[]): string[] | undefined {
  const [first] = argv.slice(2);
  if (first === '-V') return [...argv.slice(0, 2), '--version', ...argv.slice(3)];
  const commands = program.commands.map((command) => command.name());
  if (first === undefined || first.startsWith('-') || first === 'help' || commands.includes(first)) return [...argv];
  console.error(`tributary: unknown command '${first}'. Commands: ${commands.map((name) => (name === 'start' ? 'start (the default)' : name)).join(', ')}; \`tributary <command> --help\` for one's options.`);
  return undefined;
}

const argv = commandLine(process.argv);
if (argv === undefined) process.exitCode = EXIT_USAGE;
else program.parseAsync(argv).catch((error: unknown) => {
  // Expected failures are one line without a stack; anything else is a bug: show the stack.
  const expected = error instanceof ConfigError || error instanceof StartupError;
  console.error(`tributary: ${expected ? (error as Error).message : ((error as Error).stack ?? String(error))}`);
  process.exit(error instanceof ConfigError ? EXIT_CONFIG : EXIT_STARTUP);
});
