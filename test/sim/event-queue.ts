// The simulations' agenda: events ordered by virtual time, then by the order they were
// scheduled (so a seed replays exactly). A binary heap.

export class EventQueue {
  private readonly heap: Array<{ at: number; order: number; run: () => void }> = [];
  private order = 0;

  get size(): number {
    return this.heap.length;
  }

  push(at: number, run: () => void): void {
    const heap = this.heap;
    heap.push({ at, order: this.order++, run });
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!earlier(heap[index]!, heap[parent]!)) break;
      [heap[index], heap[parent]] = [heap[parent]!, heap[index]!];
      index = parent;
    }
  }

  peekTime(): number | undefined {
    return this.heap[0]?.at;
  }

  pop(): { at: number; run: () => void } | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    heap[0] = last;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && earlier(heap[left]!, heap[smallest]!)) smallest = left;
      if (right < heap.length && earlier(heap[right]!, heap[smallest]!)) smallest = right;
      if (smallest === index) break;
      [heap[index], heap[smallest]] = [heap[smallest]!, heap[index]!];
      index = smallest;
    }
    return top;
  }
}

function earlier(a: { at: number; order: number }, b: { at: number; order: number }): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}
