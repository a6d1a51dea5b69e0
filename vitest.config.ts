import { defineConfig } from 'vitest/config';

// isolated-vm asks for --no-node-snapshot on Node 20; test workers load the sandbox, so they
// get the same flag as the node process.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    execArgv: ['--no-node-snapshot'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
