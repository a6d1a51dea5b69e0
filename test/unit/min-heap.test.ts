import { describe, expect, it } from 'vitest';
import { MinHeap } from '../../src/lib/min-heap.js';
import { Prng } from '../sim/prng.js';

describe('MinHeap', () => {
  it('gives items in order, from items given at the start, pushed later, moved on in place or put in the first one\'s place', () => {
    const random = new Prng(17);
    for (let round = 0; round < 50; round += 1) {
      const start = Array.from({ length: random.int(0, 40) }, () => ({ key: random.int(0, 20) }));
      const heap = new MinHeap<{ key: number }>((a, b) => a.key < b.key, [...start]);
      const expected = start.map((item) => item.key);
      for (let step = 0; step < 200; step += 1) {
        const choice = random.int(0, 4);
        if (choice === 0 || heap.size === 0) {
          const key = random.int(0, 20);
          heap.push({ key });
          expected.push(key);
        } else if (choice === 1) {
          // The top moves on: its key grows, as a cursor's does.
          const top = heap.peek();
          const grown = top.key + random.int(1, 5);
          expected.splice(expected.indexOf(top.key), 1, grown);
          top.key = grown;
          heap.topChanged();
        } else if (choice === 2) {
          // The first is let go for another, as a bounded heap keeping its best does.
          const key = random.int(0, 20);
          expected.splice(expected.indexOf(heap.peek().key), 1, key);
          heap.replaceTop({ key });
        } else {
          const smallest = Math.min(...expected);
          expect(heap.peek().key).toBe(smallest);
          heap.pop();
          expected.splice(expected.indexOf(smallest), 1);
        }
        expect(heap.size).toBe(expected.length);
      }
      // What is left comes out smallest first.
      const rest: number[] = [];
      while (heap.size > 0) {
        rest.push(heap.peek().key);
        heap.pop();
      }
      expect(rest).toEqual(expected.sort((a, b) => a - b));
    }
  });
});
