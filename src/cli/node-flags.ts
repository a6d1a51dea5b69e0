// The flags a node's Node.js process needs (docs/configuration.md, "Starting a node"): `--no-node-snapshot`,
// which the tag sandbox (isolated-vm) asks for on Node 20, and a 64 MiB young-generation
// semi-space, as a batch's payloads and blocks live across the awaits of its write. `npm
// start`, the Dockerfile and the test kit give them; `tributary start` run any other way
// (the package's bin, `node dist/src/main.js start`) starts itself again with the ones
// missing (main.ts). Pure.

/** Each flag, and the option name that counts as given (a semi-space size of the user's own is kept). */
const NODE_FLAGS: ReadonlyArray<{ flag: string; option: string }> = [
  { flag: '--no-node-snapshot', option: '--no-node-snapshot' },
  { flag: '--max-semi-space-size=64', option: '--max-semi-space-size' },
];

/** Set in the started process: it never starts itself again, whatever it finds. */
export const RESTARTED_ENV = 'TRIBUTARY_NODE_FLAGS_GIVEN';

/**
 * The flags neither on Node's command line (`process.execArgv`) nor in NODE_OPTIONS. Node
 * takes V8 options with dashes or underscores (`--max_semi_space_size`), either counts.
 */
export function missingNodeFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map((arg) => arg.split('=')[0]!.replace(/_/g, '-'));
  return NODE_FLAGS.filter(({ option }) => !given.includes(option)).map(({ flag }) => flag);
}
