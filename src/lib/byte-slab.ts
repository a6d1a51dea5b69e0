// Memory for many small typed arrays, carved out of shared ArrayBuffers. A historical read
// decodes tens of thousands of tsr blocks of about 1.5 KiB each, and a grouping over them
// keeps a number summary for each of tens of thousands of groups; an ArrayBuffer of its own
// for each cost more than filling it (carving blocks out of 64 KiB slabs took a
// block of 40 points from 7.4 to 4.7 µs). A slab lives as long as any array carved from
// it: the bytes nobody holds any more are freed with the last array of their slab.

import { assert } from './assert.js';

/** Typed arrays over a carved place need it aligned for their element size, 8 at most. */
const ALIGNMENT_BYTES = 8;

export interface CarvedBytes {
  readonly buffer: ArrayBuffer;
  /** Where the bytes start in `buffer`: a multiple of 8. */
  readonly offset: number;
}

export class ByteSlab {
  private slab: ArrayBuffer;
  private used = 0;

  constructor(private readonly slabBytes: number) {
    assert(Number.isInteger(slabBytes) && slabBytes >= ALIGNMENT_BYTES && slabBytes % ALIGNMENT_BYTES === 0, `a slab of ${slabBytes} bytes`);
    this.slab = new ArrayBuffer(slabBytes);
  }

  /**
   * `bytes` zeroed bytes no other carve shares. A request over a quarter of a slab gets an
   * ArrayBuffer of its own (so a slab is never mostly wasted on one).
   */
  carve(bytes: number): CarvedBytes {
    // A constant message: a template would build a string on every carve.
    assert(Number.isInteger(bytes) && bytes >= 0, 'carving a byte count that is not a whole number');
    if (bytes > this.slabBytes / 4) return { buffer: new ArrayBuffer(bytes), offset: 0 };
    if (this.used + bytes > this.slabBytes) {
      this.slab = new ArrayBuffer(this.slabBytes);
      this.used = 0;
    }
    const offset = this.used;
    this.used += Math.ceil(bytes / ALIGNMENT_BYTES) * ALIGNMENT_BYTES;
    return { buffer: this.slab, offset };
  }
}
