import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingNodeFlags, NODE_FLAGS_GIVEN } from '../../src/cli/node-flags.js';
import { packageRoot } from '../../src/lib/package-root.js';

const ALL = ['--no-node-snapshot', '--max-semi-space-size=64', '--initial-old-space-size=256'];

describe('node flags - what `tributary start` must add to Node', () => {
  it('asks for every flag when Node was started bare', () => {
    expect(missingNodeFlags([], undefined)).toEqual(ALL);
  });

  it('counts a flag given on the command line or in NODE_OPTIONS, with dashes or underscores', () => {
    expect(missingNodeFlags(ALL, undefined)).toEqual([]);
    expect(missingNodeFlags([], '--no-node-snapshot  --max_semi_space_size=32 --initial_old_space_size=64')).toEqual([]);
    expect(missingNodeFlags(['--no-node-snapshot'], '--inspect')).toEqual(['--max-semi-space-size=64', '--initial-old-space-size=256']);
  });

  it("keeps the user's own sizes", () => {
    expect(missingNodeFlags(['--max-semi-space-size=16', '--initial-old-space-size=32'], '--no-node-snapshot')).toEqual([]);
  });

  // The Docker image's ENTRYPOINT is checked whole by test/integration/image-start.test.ts.
  it('are given by `npm start`, so it starts no second Node', () => {
    const start = (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start']!;
    expect(NODE_FLAGS_GIVEN).toEqual(ALL);
    expect(missingNodeFlags(start.split(' '), undefined)).toEqual([]);
  });
});
