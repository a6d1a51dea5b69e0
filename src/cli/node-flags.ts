// The flags a node's Node.js process needs (docs/configuration.md, "Starting a node"):
// - `--no-node-snapshot`, which the tag sandbox (isolated-vm) asks for on Node 20;
// - a 64 MiB young-generation semi-space, as a batch's payloads and blocks live across the
//   awaits of its write;
// - an old generation of 256 MiB before V8 starts full collections. V8 counts the Buffers
//   made since its last full collection as old-generation bytes, and starts marking once
//   its limit is nearer than the young generation's capacity. With a 64 MiB semi-space and
//   a small live heap that margin is 8 MiB, and a transfer's source makes ~4 MiB of
//   Buffers a chunk, which a young collection frees only once 32 MiB of them are made: a
//   source marked its whole heap every ~100 ms (40 full collections a join, 1.7 s of V8's
//   threads). With this floor the margin is 256 MiB less the live heap and the young
//   generation, so a live heap of up to ~160 MiB keeps 32 MiB.
// `npm start`, the Dockerfile, scripts/cluster.ts and the test kit give them; `tributary
// start` run any other way (the package's bin, `node dist/src/main.js start`) starts itself
// again with the ones missing (main.ts). Pure.

/** Each flag, and the option name that counts as given (a size of the user's own is kept). */
const NODE_FLAGS: ReadonlyArray<{ flag: string; option: string }> = [
  { flag: '--no-node-snapshot', option: '--no-node-snapshot' },
  { flag: '--max-semi-space-size=64', option: '--max-semi-space-size' },
  { flag: '--initial-old-space-size=256', option: '--initial-old-space-size' },
];

/** Every flag, as `npm start` and the Dockerfile give them. */
export const NODE_FLAGS_GIVEN: readonly string[] = NODE_FLAGS.map(({ flag }) => flag);

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
