import { describe, expect, it } from 'vitest';
import { forEachLimited } from '../../src/lib/limited-concurrency.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('limited concurrency - a task per item, a bounded number in flight', () => {
  it('runs every item once, in order, never more than the limit at a time', async () => {
    const started: number[] = [];
    let inFlight = 0;
    let most = 0;
    await forEachLimited([...Array(23).keys()], 4, async (item) => {
      started.push(item);
      most = Math.max(most, ++inFlight);
      for (let turns = item % 3; turns >= 0; turns--) await tick();
      inFlight--;
    });
    expect(started).toEqual([...Array(23).keys()]);
    expect(most).toBe(4);
    await forEachLimited([], 4, async () => expect.unreachable());
  });

  it('rejects with the first failure and starts nothing after it', async () => {
    const started: number[] = [];
    const run = forEachLimited([...Array(20).keys()], 3, async (item) => {
      started.push(item);
      await tick();
      if (item === 4) throw new Error('owner out of reach');
      await tick();
    });
    await expect(run).rejects.toThrow('owner out of reach');
    for (let turns = 0; turns < 10; turns++) await tick();
    expect(Math.max(...started)).toBeLessThan(8);
    await expect(forEachLimited([1], 0, async () => {})).rejects.toThrow(/positive integer/);
  });
});
