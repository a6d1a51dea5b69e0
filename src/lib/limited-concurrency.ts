// Runs one async task per item with at most `limit` in flight: enough to overlap I/O and
// round trips, bounded so that a long list cannot open a request or a read per item at once.

/**
 * Calls `run` for every item, at most `limit` at a time, in the items' order. Resolves when
 * all are done; the first failure rejects it, and no item not yet started is started after.
 */
export async function forEachLimited<T>(items: readonly T[], limit: number, run: (item: T) => Promise<void>): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`at most ${limit} in flight: the limit must be a positive integer`);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await run(item);
      } catch (error) {
        next = items.length;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
