#!/usr/bin/env node
// The command line: `start` runs a node (the CLI of issue 2 is a contract for scripts and
// tests: --name, --http-port, --peer-port, --data-dir, --join, --config, and every other
// config key as a flag); `keygen` prints a data folder's public key, making it if needed.

import { Command, Option } from 'commander';
import { ConfigError, configKeys, loadConfig, readDefaults } from './config.js';
import { loadOrCreateIdentity } from './cluster/identity.js';
import { createLogger } from './log.js';
import { startNode } from './node.js';

/** SIGTERM must stop the node within 5 s (issue 2); past this the process exits anyway. */
const STOP_DEADLINE_MS = 4_500;

const program = new Command('tributary').description('Tributary: a clustered streaming data platform node');

const start = program.command('start', { isDefault: true }).description('run a node');
start.addOption(new Option('--config <file>', 'JSON config file merged over config/default.json'));
const keys = configKeys(readDefaults());
for (const key of keys) {
  const option =
    typeof key.defaultValue === 'boolean'
      ? new Option(`--${key.flag}`, `config ${key.path.join('.')} (env ${key.env})`)
      : new Option(`--${key.flag} <value>`, `config ${key.path.join('.')} (env ${key.env})`);
  start.addOption(option);
}
start.action(async (options: Record<string, string | boolean | undefined>) => {
  const flags = Object.fromEntries(keys.map((key) => [key.flag, options[camel(key.flag)]]));
  const config = loadConfig({ configFile: options.config as string | undefined, env: process.env, flags });
  const log = createLogger(config.name, config.logLevel);
  const node = await startNode(config, log);
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
});

program
  .command('keygen')
  .description("print the node's public key (base64), making the key pair on first use")
  .requiredOption('--data-dir <dir>', 'the data folder of the node')
  .action((options: { dataDir: string }) => {
    console.log(loadOrCreateIdentity(options.dataDir).publicKeyBase64);
  });

function camel(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}

program.parseAsync(process.argv).catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : (error as Error).stack ?? String(error);
  console.error(`tributary: ${message}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
