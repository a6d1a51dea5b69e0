#!/usr/bin/env node
// The accounts CLI: a contract operators script against.
//
//   npm run accounts -- COMMAND [NAME [TENANT LEVEL]] --url http://127.0.0.1:8888 --admin-secret SECRET
//
// It talks to a running node's /api/v1/admin endpoints with the node's admin secret
// (--admin-secret, else TRIBUTARY_ADMIN_SECRET). `create` prints the new token, once, on its
// own line and nothing else on stdout. Exit codes: 0 done, 1 the server refused (or could not
// be reached; the problem's detail goes to stderr), 2 usage.

import { Command, CommanderError, Option } from 'commander';

const EXIT_REFUSED = 1;
const EXIT_USAGE = 2;
const REQUEST_TIMEOUT_MS = 15_000;
const DEFAULT_URL = 'http://127.0.0.1:8888';

interface GlobalOptions {
  url: string;
  adminSecret?: string;
  json?: boolean;
}

interface Account {
  name: string;
  apiAccessEnabled: boolean;
  status: string;
  createdAt: string;
}

class UsageError extends Error {}

/** The server answered with a problem document (or not at all). */
class RefusedError extends Error {}

function addConnectionOptions(command: Command): Command {
  return command
    .addOption(new Option('--url <url>', 'the node to talk to').env('TRIBUTARY_URL').default(DEFAULT_URL))
    .addOption(new Option('--admin-secret <secret>', "the node's admin secret").env('TRIBUTARY_ADMIN_SECRET'));
}

async function call(options: GlobalOptions, method: string, path: string, body?: unknown): Promise<any> {
  if (options.adminSecret === undefined || options.adminSecret === '') {
    throw new UsageError('the admin secret is required: --admin-secret SECRET or TRIBUTARY_ADMIN_SECRET');
  }
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new UsageError(`--url '${options.url}' is not a URL`);
  }
  const url = new URL(`/api/v1/admin${path}`, base);
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${options.adminSecret}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    throw new RefusedError(`cannot reach ${base.origin}: ${(error as Error).message}`);
  }
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const detail = typeof parsed?.detail === 'string' ? parsed.detail : text.slice(0, 200);
    throw new RefusedError(`${detail} (${response.status}${typeof parsed?.title === 'string' ? ` ${parsed.title}` : ''})`);
  }
  return parsed;
}

const encode = (name: string) => encodeURIComponent(name);

function buildProgram(): Command {
  const program = new Command('accounts')
    .description('Manage service accounts and the brain API switch of a running Tributary node')
    .exitOverride()
    .showHelpAfterError()
    .configureOutput({ writeOut: (text) => process.stdout.write(text), writeErr: (text) => process.stderr.write(text) });

  const command = (name: string, description: string) => addConnectionOptions(program.command(name).description(description).exitOverride());

  command('create <name>', 'create a service account; prints its token, once').action(async (name: string, options: GlobalOptions) => {
    const created = await call(options, 'POST', '/accounts', { name });
    process.stdout.write(`${created.token}\n`);
  });
  command('grant-api <name>', 'turn api_access_enabled on for the account').action(async (name: string, options: GlobalOptions) => {
    await call(options, 'PATCH', `/accounts/${encode(name)}`, { apiAccessEnabled: true });
    console.log(`API access granted to ${name}`);
  });
  command('revoke-api <name>', 'turn api_access_enabled off for the account').action(async (name: string, options: GlobalOptions) => {
    await call(options, 'PATCH', `/accounts/${encode(name)}`, { apiAccessEnabled: false });
    console.log(`API access revoked from ${name}`);
  });
  command('grant <name> <tenant> <level>', 'give the account read, write or admin on a tenant of the platform interface (system: every tenant)').action(
    async (name: string, tenant: string, level: string, options: GlobalOptions) => {
      if (!['read', 'write', 'admin'].includes(level)) throw new UsageError(`level must be read, write or admin, not '${level}'`);
      await call(options, 'PATCH', `/accounts/${encode(name)}`, { permissions: { [tenant]: level } });
      console.log(`${name} has ${level} on ${tenant}`);
    },
  );
  command('ungrant <name> <tenant>', "remove the account's permission on a tenant").action(async (name: string, tenant: string, options: GlobalOptions) => {
    await call(options, 'PATCH', `/accounts/${encode(name)}`, { permissions: { [tenant]: null } });
    console.log(`${name} has no permission on ${tenant}`);
  });
  command('revoke <name>', "revoke the account's token: it stops working at once").action(async (name: string, options: GlobalOptions) => {
    await call(options, 'POST', `/accounts/${encode(name)}/revoke`);
    console.log(`token of ${name} revoked`);
  });
  command('list', 'list the service accounts (tab-separated: name, api access, status, created)')
    .option('--json', 'print the accounts as JSON')
    .action(async (options: GlobalOptions) => {
      const { accounts } = (await call(options, 'GET', '/accounts')) as { accounts: Account[] };
      if (options.json) return console.log(JSON.stringify(accounts, null, 2));
      console.log(['NAME', 'API_ACCESS', 'STATUS', 'CREATED'].join('\t'));
      for (const account of accounts) {
        console.log([account.name, account.apiAccessEnabled ? 'on' : 'off', account.status, account.createdAt].join('\t'));
      }
    });
  command('api-enable', 'open the brain management API for the whole cluster (hive-wide switch)').action(async (options: GlobalOptions) => {
    await call(options, 'PATCH', '/settings', { apiEnabled: true });
    console.log('brain management API enabled');
  });
  command('api-disable', 'close the brain management API for the whole cluster (hive-wide switch)').action(async (options: GlobalOptions) => {
    await call(options, 'PATCH', '/settings', { apiEnabled: false });
    console.log('brain management API disabled');
  });
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  if (argv.length <= 2) {
    program.outputHelp({ error: true });
    return EXIT_USAGE;
  }
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are answers, not mistakes.
      return ['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(error.code) ? 0 : EXIT_USAGE;
    }
    if (error instanceof UsageError) {
      process.stderr.write(`accounts: ${error.message}\n`);
      return EXIT_USAGE;
    }
    if (error instanceof RefusedError) {
      process.stderr.write(`accounts: ${error.message}\n`);
      return EXIT_REFUSED;
    }
    process.stderr.write(`accounts: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT_REFUSED;
  }
}

process.exitCode = await main(process.argv);
