// Carved places for decoded blocks (src/lib/byte-slab.ts): aligned, zeroed, never shared.

import { describe, expect, it } from 'vitest';
import { ByteSlab } from '../../src/lib/byte-slab.js';

describe('byte slab - carving', () => {
  it('gives aligned, zeroed places that no other carve shares, across slabs, and large ones a buffer of their own', () => {
    const slab = new ByteSlab(1024);
    const carved = [1, 7, 8, 9, 100, 256, 257, 300, 0, 13, 800, 64, 5, 200, 255].map((bytes, index) => ({ bytes, index, ...slab.carve(bytes) }));
    for (const place of carved) {
      expect(place.offset % 8).toBe(0);
      expect(place.offset + place.bytes).toBeLessThanOrEqual(place.buffer.byteLength);
      const bytes = new Uint8Array(place.buffer, place.offset, place.bytes);
      expect(bytes.every((byte) => byte === 0)).toBe(true);
      bytes.fill(place.index + 1);
    }
    // Each place still holds what was written to it: no later carve overlapped it.
    for (const place of carved) expect(new Uint8Array(place.buffer, place.offset, place.bytes).every((byte) => byte === place.index + 1)).toBe(true);
    expect(new Set(carved.map((place) => place.buffer)).size).toBeGreaterThan(2);
    expect(carved.filter((place) => place.bytes > 256).every((place) => place.offset === 0 && place.buffer.byteLength === place.bytes)).toBe(true);
  });
});
