import { describe, expect, it } from 'vitest';
import { decodeTimestamp, encodeTimestamp } from '../../src/storage/repository.js';
import { Prng } from '../sim/prng.js';

/** The key part as it was first written: the offset timestamp's hex, 14 digits. */
function reference(timestamp: number): string {
  return (Math.trunc(timestamp) + 2 ** 52).toString(16).padStart(14, '0');
}

describe('timestamps in keys', () => {
  it('are the 14 hex digits they always were, at the edges and between', () => {
    const prng = new Prng(37);
    const edges = [0, 1, -1, 2 ** 32 - 1, 2 ** 32, -(2 ** 32), 1.5, -1.5, Date.UTC(2024, 0, 1), -(2 ** 52), 2 ** 52 - 1, 2 ** 56 - 2 ** 52 - 1, 2 ** 56 - 2 ** 52, 8.64e15, -8.64e15];
    const random = Array.from({ length: 10_000 }, () => (prng.int(0, 1) === 0 ? -1 : 1) * prng.int(0, 2 ** 30) * 2 ** prng.int(0, 22));
    for (const timestamp of [...edges, ...random]) {
      expect(encodeTimestamp(timestamp)).toBe(reference(timestamp));
      if (Math.abs(timestamp) <= 8.64e15) expect(decodeTimestamp(encodeTimestamp(timestamp))).toBe(Math.trunc(timestamp));
    }
  });

  it('sort as the times do', () => {
    const times = [-8.64e15, -(2 ** 40), -1, 0, 1, 2 ** 32 - 1, 2 ** 32, Date.UTC(2024, 0, 1), 8.64e15];
    const keys = times.map(encodeTimestamp);
    expect([...keys].sort()).toEqual(keys);
    for (const key of keys) expect(key).toHaveLength(14);
  });
});
