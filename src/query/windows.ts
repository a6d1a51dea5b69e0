// Which windows an event falls into (docs/query-language.md, "Grouping and windows"). Windows are
// aligned to the epoch: a window of size S every H starts at each multiple of H and covers
// [start, start + S). A tumbling window is one whose hop is its size. The output key of a
// window is its start.

import type { WindowSpec } from './ast.js';

/**
 * The starts of the windows holding an event at `eventMs` (epoch milliseconds), oldest
 * first. At most ceil(size / hop) of them; none
 * when the hop is longer than the size and the event falls between two windows.
 */
export function windowStartsMs(eventMs: number, window: WindowSpec): number[] {
  const size = window.size.ms;
  const hop = window.hop?.ms ?? size;
  const starts: number[] = [];
  for (let start = Math.floor(eventMs / hop) * hop; start > eventMs - size; start -= hop) starts.push(start);
  return starts.reverse();
}
