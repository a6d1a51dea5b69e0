import { describe, expect, it } from 'vitest';
import { missingNodeFlags } from '../../src/cli/node-flags.js';

describe('node flags - what `tributary start` must add to Node', () => {
  it('asks for both flags when Node was started bare', () => {
    expect(missingNodeFlags([], undefined)).toEqual(['--no-node-snapshot', '--max-semi-space-size=64']);
  });

  it('counts a flag given on the command line or in NODE_OPTIONS, with dashes or underscores', () => {
    expect(missingNodeFlags(['--no-node-snapshot', '--max-semi-space-size=64'], undefined)).toEqual([]);
    expect(missingNodeFlags([], '--no-node-snapshot  --max_semi_space_size=32')).toEqual([]);
    expect(missingNodeFlags(['--no-node-snapshot'], '--inspect')).toEqual(['--max-semi-space-size=64']);
  });

  it("keeps the user's own semi-space size", () => {
    expect(missingNodeFlags(['--max-semi-space-size=16'], '--no-node-snapshot')).toEqual([]);
  });
});
