// TimeSlice.forEach: long loops give the event loop turns, short ones cost no await.

import { describe, expect, it } from 'vitest';
import { TimeSlice } from '../../src/lib/time-slice.js';

describe('time slice - forEach', () => {
  it('visits every position in order without a turn while the slice lasts, and returns nothing to await', () => {
    const visited: number[] = [];
    const pending = new TimeSlice(60_000).forEach(3, 5_000, (at) => visited.push(at), 100);
    expect(pending).toBeUndefined();
    expect(visited).toEqual(Array.from({ length: 4_997 }, (_, i) => i + 3));
  });

  it('gives the event loop a turn every so many positions once the slice is used up, and still visits each once, in order', async () => {
    const visited: number[] = [];
    let turns = 0;
    let turnsSeen = -1;
    const turnsAt: number[] = [];
    const tick = (): void => {
      turns += 1;
      if (turns < 1_000) setImmediate(tick);
    };
    setImmediate(tick);
    const pending = new TimeSlice(0).forEach(0, 1_000, (at) => {
      if (turns !== turnsSeen) turnsAt.push(at);
      turnsSeen = turns;
      visited.push(at);
    }, 100);
    expect(pending).toBeInstanceOf(Promise);
    // The first 100 positions ran before anything else could.
    expect(visited).toEqual(Array.from({ length: 100 }, (_, i) => i));
    await pending;
    expect(visited).toEqual(Array.from({ length: 1_000 }, (_, i) => i));
    // Other work ran between each run of 100 positions.
    expect(turnsAt).toEqual([0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
  });

  it('an empty range is done at once', () => {
    expect(new TimeSlice(0).forEach(7, 7, () => expect.unreachable())).toBeUndefined();
  });
});
