// The order of a tsr stream's payloads: by event time, then writeId. A payload's writeId is its
// write's id and its place in the write, so payloads of one moment sort in the order they
// arrived, whatever their partitions and blocks. Blocks of different writes may overlap in
// time; BlockMerge reads several at once in that order. Pure.

import { assert } from '../lib/assert.js';
import type { Block } from './tsr-block.js';
import { MinHeap } from '../lib/min-heap.js';

/** Digits of a payload's place in its write, in its writeId ("<write id>:<place>"). */
const POSITION_DIGITS = 7;

/**
 * The suffix of the record writeId of a block that holds one payload moved from ssr
 * (repository-convert.ts): the payload keeps its ssr writeId, which is the id before it.
 */
export const MOVED_PAYLOAD_SUFFIX = '.=';

/**
 * A payload's writeId: its write's id (its block's record writeId is that id, a dot and the
 * block's ordinal in the write) and its place in the write; or, in a block of one payload
 * moved from ssr, the payload's own writeId, kept so that it is one payload in both.
 */
export function payloadWriteId(blockWriteId: string, position: number): string {
  // A place in a write fits its digits (tsr-block.ts's POSITION_MAX).
  assert(Number.isInteger(position) && position >= 0 && position < 16 ** POSITION_DIGITS, () => `payload place ${position} in ${blockWriteId}`);
  if (blockWriteId.endsWith(MOVED_PAYLOAD_SUFFIX)) return blockWriteId.slice(0, -MOVED_PAYLOAD_SUFFIX.length);
  const dot = blockWriteId.lastIndexOf('.');
  return `${dot < 0 ? blockWriteId : blockWriteId.slice(0, dot)}:${position.toString(16).padStart(POSITION_DIGITS, '0')}`;
}

/** A block being read: its next payload is at `index`. */
export interface BlockCursor {
  readonly block: Block;
  /** The block's record writeId. */
  readonly blockId: string;
  index: number;
  /** The writeId of the payload at `index`, made when it is compared with another block's at the same time. */
  writeId: string | undefined;
}

/**
 * A min-heap of block cursors by (timestamp, writeId) of each one's next payload. A block
 * must join before any payload later than its first is taken: then what is taken is in
 * order. Blocks of one write rarely overlap another's, so it mostly holds a few.
 */
export class BlockMerge {
  private readonly cursors = new MinHeap<BlockCursor>(before);

  get size(): number {
    return this.cursors.size;
  }

  add(blockId: string, block: Block): void {
    assert(block.count > 0, `block ${blockId} joins the merge with no payload`);
    this.cursors.push({ block, blockId, index: 0, writeId: undefined });
  }

  /** The time of the next payload; only when size > 0. */
  peekTimestamp(): number {
    assert(this.cursors.size > 0, 'the time of the next payload of an empty merge');
    const top = this.cursors.peek();
    return top.block.timestamps[top.index]!;
  }

  /** The cursor at the next payload, until advance(); only when size > 0. */
  top(): BlockCursor {
    assert(this.cursors.size > 0, 'the next payload of an empty merge');
    return this.cursors.peek();
  }

  /** Moves past the next payload. */
  advance(): void {
    const top = this.cursors.peek();
    assert(top.index < top.block.count, () => `a merge cursor past its block's ${top.block.count} payloads`);
    top.index += 1;
    top.writeId = undefined;
    if (top.index === top.block.count) this.cursors.pop();
    else this.cursors.topChanged();
  }
}

function before(a: BlockCursor, b: BlockCursor): boolean {
  // A cursor past its block's last payload leaves the heap (next()): only cursors within their blocks compare.
  assert(a.index < a.block.count && b.index < b.block.count, 'a merge cursor compared past its block');
  const x = a.block.timestamps[a.index]!;
  const y = b.block.timestamps[b.index]!;
  if (x !== y) return x < y;
  a.writeId ??= payloadWriteId(a.blockId, a.block.positions[a.index]!);
  b.writeId ??= payloadWriteId(b.blockId, b.block.positions[b.index]!);
  return a.writeId < b.writeId;
}
