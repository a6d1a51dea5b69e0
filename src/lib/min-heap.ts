// A binary min-heap in a caller's order: the k-way merges of stored reads (payload cursors
// of partitions, tsr blocks, partitions' pages of blocks) take their next item from it, and
// a search's best hits are kept in one whose first is the worst kept. Pure.

export class MinHeap<T> {
  private readonly items: T[];

  /** `before(a, b)`: whether a comes first. The items given are put in order here. */
  constructor(
    private readonly before: (a: T, b: T) => boolean,
    items: T[] = [],
  ) {
    this.items = items;
    for (let index = Math.floor(items.length / 2) - 1; index >= 0; index -= 1) this.siftDown(index);
  }

  get size(): number {
    return this.items.length;
  }

  /** The first item; only when size > 0. */
  peek(): T {
    return this.items[0]!;
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!this.before(items[index]!, items[parent]!)) return;
      [items[index], items[parent]] = [items[parent]!, items[index]!];
      index = parent;
    }
  }

  /** Removes the first item. */
  pop(): void {
    const last = this.items.pop()!;
    if (this.items.length === 0) return;
    this.items[0] = last;
    this.siftDown(0);
  }

  /** Puts an item in the first one's place (a bounded heap letting its first go for a better one). */
  replaceTop(item: T): void {
    this.items[0] = item;
    this.siftDown(0);
  }

  /** The items, in no particular order. */
  values(): readonly T[] {
    return this.items;
  }

  /** Puts the first item back in its place after it moved on (its key can only have grown). */
  topChanged(): void {
    this.siftDown(0);
  }

  private siftDown(start: number): void {
    const items = this.items;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < items.length && this.before(items[left]!, items[smallest]!)) smallest = left;
      if (right < items.length && this.before(items[right]!, items[smallest]!)) smallest = right;
      if (smallest === index) return;
      [items[index], items[smallest]] = [items[smallest]!, items[index]!];
      index = smallest;
    }
  }
}
