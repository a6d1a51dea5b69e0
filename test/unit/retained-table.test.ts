// The table an output channel keeps for late subscribers (retained-table.ts): adds wait
// unkeyed, and the table must always be the one keying every change as it came makes.

import { describe, expect, it } from 'vitest';
import { type ChangeItem, RetainedTable, type RetainedTableLimits } from '../../src/sessions/retained-table.js';
import { stringifyJson } from '../../src/lib/json.js';
import { Prng } from '../sim/prng.js';

/** Every change keyed as it comes (the channel's table before adds could wait): the reference. */
class KeyedAtOnce {
  readonly rows = new Map<string, Record<string, unknown>>();
  private readonly rowBytes = new Map<string, number>();
  private bytes = 0;

  constructor(
    private readonly keys: readonly string[],
    private readonly limits: RetainedTableLimits,
  ) {}

  apply(item: ChangeItem): void {
    const size = stringifyJson(item.data).length;
    const key = this.keys.length === 0 ? stringifyJson(item.data) : stringifyJson(this.keys.map((name) => item.data[name] ?? null));
    if (item.action === 'remove') this.set(key, undefined, 0);
    else if (item.action === 'update' && this.keys.length === 0 && this.rows.size === 1) this.set([...this.rows.keys()][0]!, item.data, size);
    else if (this.rows.size < this.limits.rowsMax || this.rows.has(key)) this.set(key, item.data, size);
  }

  private set(key: string, data: Record<string, unknown> | undefined, dataBytes: number): void {
    const before = this.rowBytes.get(key) ?? 0;
    const after = data === undefined ? 0 : dataBytes + key.length;
    if (after > before && this.bytes - before + after > this.limits.bytesMax) return;
    this.bytes += after - before;
    if (data === undefined) {
      this.rows.delete(key);
      this.rowBytes.delete(key);
    } else {
      this.rows.set(key, data);
      this.rowBytes.set(key, after);
    }
  }
}

function randomChange(prng: Prng, hosts: number): ChangeItem {
  const action = prng.pick(['add', 'add', 'add', 'add', 'update', 'remove'] as const);
  const data: Record<string, unknown> = { host: `h${prng.int(0, hosts)}`, n: prng.int(0, 1000), text: 'x'.repeat(prng.int(0, 200)) };
  // Rows without a key field, and with a key field holding nothing the row's text shows.
  if (prng.int(0, 12) === 0) delete data.host;
  if (prng.int(0, 12) === 0) data.host = undefined;
  if (prng.int(0, 6) === 0) data.at = `2024-01-01T00:0${prng.int(0, 9)}:00.000Z`;
  return { action, data };
}

describe('retained table - late subscribers', () => {
  it('holds what keying every change as it came holds, in the same order, near and past both bounds', () => {
    const keyChoices: string[][] = [[], ['host'], ['host', 'at'], ['host', 'host'], ['missing']];
    for (let seed = 1; seed <= 300; seed += 1) {
      const prng = new Prng(seed);
      const keys = keyChoices[seed % keyChoices.length]!;
      const limits = { rowsMax: prng.int(1, 40), bytesMax: prng.pick([300, 2_000, 10_000, 1_000_000]) };
      const table = new RetainedTable(keys, limits);
      const reference = new KeyedAtOnce(keys, limits);
      for (let increment = 0; increment < prng.int(1, 12); increment += 1) {
        // Mostly adds, in runs, as bounded results come; changes of every kind between.
        const items = Array.from({ length: prng.int(1, 30) }, () => (prng.int(0, 2) === 0 ? randomChange(prng, 30) : { action: 'add' as const, data: randomChange(prng, 60).data }));
        table.apply(items, items.map((item) => stringifyJson(item.data)));
        for (const item of items) reference.apply(item);
        if (prng.int(0, 3) === 0) expect(table.held(), `seed ${seed}`).toEqual([...reference.rows.values()]);
      }
      expect(table.held(), `seed ${seed}`).toEqual([...reference.rows.values()]);
    }
  });

  it('keys no add until a change or the state needs it, and keys adds as they come once waiting ones would pass a bound', () => {
    const reads: string[] = [];
    const row = (host: string) =>
      new Proxy({ host, n: 1 }, {
        get(target, name, receiver) {
          reads.push(String(name));
          return Reflect.get(target, name, receiver);
        },
      });
    const adds = (count: number) => Array.from({ length: count }, (_, index) => ({ action: 'add' as const, data: row(`h${index}`) }));
    const textOf = (items: ReadonlyArray<{ data: Record<string, unknown> }>) => items.map((item) => JSON.stringify({ host: item.data.host, n: 1 }));
    const rows = adds(100);
    const json = textOf(rows);
    reads.length = 0;
    const table = new RetainedTable(['host'], { rowsMax: 1_000, bytesMax: 1_000_000 });
    table.apply(rows, json);
    expect(reads).toEqual([]);
    expect(table.held().map((data) => data.host)).toEqual(rows.map((item) => item.data.host));
    // An update keys the rows: it finds the row it changes.
    table.apply([{ action: 'update', data: { host: 'h5', n: 2 } }], ['{"host":"h5","n":2}']);
    expect(table.held()[5]).toEqual({ host: 'h5', n: 2 });
    expect(table.held()).toHaveLength(100);
    // What waits stays within the table's bounds: past them, adds are keyed as they come.
    for (const limits of [{ rowsMax: 10, bytesMax: 1_000_000 }, { rowsMax: 1_000, bytesMax: 20 * json[0]!.length }]) {
      const bounded = new RetainedTable(['host'], limits);
      const more = adds(100);
      const moreJson = textOf(more);
      reads.length = 0;
      bounded.apply(more, moreJson);
      expect(reads, JSON.stringify(limits)).toContain('host');
    }
  });
});
