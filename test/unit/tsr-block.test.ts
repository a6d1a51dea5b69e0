import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../src/storage/database.js';
import type { StoredPayload, StoredRecord } from '../../src/storage/repository.js';
import { BadBlockError, BLOCK_CHARS_MAX, BLOCK_PAYLOADS_MAX, BLOCK_SPAN_MS, blockEncoding, blockHeader, blockPayload, decodeBlock, isoString, packBlocks, type BlockEntry } from '../../src/storage/tsr-block.js';
import { InvariantError } from '../../src/lib/assert.js';
import { TimeSeriesRepository } from '../../src/storage/tsr.js';
import { payloadWriteId } from '../../src/storage/tsr-order.js';
import { isIsoStringOf } from '../../src/lib/iso-time.js';
import { canonicalJson, parseJson } from '../../src/lib/json.js';
import { Prng } from '../sim/prng.js';

const START_MS = Date.UTC(2024, 0, 1);

/** Payloads of many shapes: every kind of column, fields some payloads lack, values no column holds. */
function randomEntry(prng: Prng, index: number): BlockEntry {
  const timestamp = START_MS + prng.int(0, 120_000);
  const payload: Record<string, unknown> = { at: isoString(timestamp), host: `host-${prng.int(0, 3)}`, cpu: prng.int(0, 400) / 4, seq: index };
  if (prng.int(0, 1) === 0) payload.note = prng.pick(['', 'é😀', 'line\nbreak', '"quoted"']);
  if (prng.int(0, 3) === 0) payload.mixed = prng.pick([1, 'one', true, null, [1, 2], { nested: { deep: [null] } }]);
  if (prng.int(0, 5) === 0) payload.big = parseJson('12345678901234567890');
  if (prng.int(0, 5) === 0) payload.huge = 1e21;
  if (prng.int(0, 7) === 0) payload.at = '2024-01-01T00:00:00Z';
  if (prng.int(0, 7) === 0) delete payload.cpu;
  if (prng.int(0, 9) === 0) Object.defineProperty(payload, '__proto__', { value: { x: 1 }, enumerable: true, configurable: true, writable: true });
  payload.ok = prng.int(0, 1) === 0;
  return { timestamp, payload, position: index * 3 };
}

function decodedAll(texts: readonly string[]): Array<{ timestamp: number; json: string }> {
  return texts.flatMap((text) => {
    const block = decodeBlock(text);
    return Array.from({ length: block.count }, (_, index) => ({ timestamp: block.timestamps[index]!, json: canonicalJson(blockPayload(block, index)) }));
  });
}

describe('tsr block - encoding', () => {
  it('reads back every payload as stored, in time order, ties in the order written', () => {
    for (let seed = 1; seed <= 30; seed += 1) {
      const prng = new Prng(seed);
      const entries = Array.from({ length: prng.int(1, 300) }, (_, index) => randomEntry(prng, index));
      const packed = packBlocks(entries);
      const expected = [...entries].sort((a, b) => a.timestamp - b.timestamp || a.position - b.position);
      expect(decodedAll(packed.map((block) => block.text))).toEqual(expected.map((entry) => ({ timestamp: entry.timestamp, json: canonicalJson(entry.payload) })));
      expect(packed.flatMap((block) => block.members)).toEqual(expected.map((entry) => entry.position / 3));
      expect(packed.flatMap((block) => [...decodeBlock(block.text).positions])).toEqual(expected.map((entry) => entry.position));
      for (const block of packed) expect(block.minTs).toBe(blockHeader(block.text).minTs);
    }
  });

  it('keeps every decoded block intact while many more are decoded (their bytes share slabs)', () => {
    const prng = new Prng(99);
    const texts = Array.from({ length: 400 }, (_, write) => packBlocks(Array.from({ length: prng.int(1, 60) }, (_, index) => randomEntry(prng, write * 100 + index))).map((block) => block.text)).flat();
    const expected = decodedAll(texts);
    // Every block and every column decoded first, read only once all are: none may share bytes with another.
    const blocks = texts.map((text) => decodeBlock(text));
    for (const block of blocks) for (const name of block.columnNames) block.column(name);
    const read = blocks.flatMap((block) => Array.from({ length: block.count }, (_, index) => ({ timestamp: block.timestamps[index]!, json: canonicalJson(blockPayload(block, index)) })));
    expect(read).toEqual(expected);
  });

  it('keeps a payload\'s own field named __proto__ as a field', () => {
    const payload = JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown>;
    const [block] = packBlocks([{ timestamp: START_MS, payload, position: 0 }]);
    const back = blockPayload(decodeBlock(block!.text), 0);
    expect(Object.getPrototypeOf(back)).toBe(Object.prototype);
    expect(canonicalJson(back)).toBe('{"__proto__":{"x":1},"a":1}');
  });

  it('stores an ISO timestamp field once, as the timestamps, and repeated strings as a dictionary', () => {
    const entries = Array.from({ length: 40 }, (_, i) => ({ timestamp: START_MS + i * 1000, payload: { at: new Date(START_MS + i * 1000).toISOString(), host: `h${i % 4}`, id: `id-${i}`, n: i, x: i === 3 ? -0 : i / 3 }, position: i }));
    const [block] = packBlocks(entries);
    const decoded = decodeBlock(block!.text);
    expect(decoded.column('at')).toEqual({ kind: 'iso' });
    expect(decoded.column('host')).toMatchObject({ kind: 'dictionary', distinct: ['h0', 'h1', 'h2', 'h3'] });
    expect(decoded.column('id')?.kind).toBe('string');
    expect(decoded.column('n')?.kind).toBe('number');
    expect(Buffer.from(block!.text.split('\n')[1]!, 'base64').toString('latin1')).not.toContain('2024-01-01T');
    // Numbers as float64s: the same doubles back, -0 as 0 (as JSON text gave it).
    expect(Array.from({ length: 40 }, (_, i) => blockPayload(decoded, i).x)).toEqual(entries.map((entry) => (entry.payload.x === 0 ? 0 : entry.payload.x)));
    expect(Object.is(blockPayload(decoded, 3).x, 0)).toBe(true);
    expect(Array.from({ length: 40 }, (_, i) => blockPayload(decoded, i).n)).toEqual(entries.map((entry) => entry.payload.n));
  });

  it('keeps long strings as they are, even repeated, and reads them back', () => {
    // Free text: a dictionary is looked for only among short strings (a lookup hashes each one whole).
    const long = (i: number) => `${i % 2 === 0 ? 'even' : 'odd'} ${'message text '.repeat(10)}`;
    const entries = Array.from({ length: 20 }, (_, i) => ({ timestamp: START_MS + i, payload: { message: long(i), unit: i % 2 === 0 ? 'ms' : 's' }, position: i }));
    const [block] = packBlocks(entries);
    const decoded = decodeBlock(block!.text);
    expect(decoded.column('message')?.kind).toBe('string');
    expect(decoded.column('unit')).toMatchObject({ kind: 'dictionary', distinct: ['ms', 's'] });
    expect(Array.from({ length: 20 }, (_, i) => blockPayload(decoded, i).message)).toEqual(entries.map((entry) => entry.payload.message));
  });

  it('splits blocks by span, by payload count and by size', () => {
    const spread = Array.from({ length: 10 }, (_, i) => ({ timestamp: START_MS + i * (BLOCK_SPAN_MS / 3), payload: { i }, position: i }));
    const bySpan = packBlocks(spread).map((block) => blockHeader(block.text));
    expect(bySpan.length).toBeGreaterThan(1);
    for (const header of bySpan) expect(header.maxTs - header.minTs).toBeLessThan(BLOCK_SPAN_MS);
    const many = Array.from({ length: BLOCK_PAYLOADS_MAX + 5 }, (_, i) => ({ timestamp: START_MS, payload: { i }, position: i }));
    expect(packBlocks(many).map((block) => blockHeader(block.text).count)).toEqual([BLOCK_PAYLOADS_MAX, 5]);
    const large = Array.from({ length: 8 }, (_, i) => ({ timestamp: START_MS + i, payload: { text: `${i}`.repeat(BLOCK_CHARS_MAX / 4) }, position: i }));
    const bySize = packBlocks(large);
    expect(bySize.length).toBeGreaterThan(2);
    expect(decodedAll(bySize.map((block) => block.text)).map((entry) => entry.json)).toEqual(large.map((entry) => canonicalJson(entry.payload)));
  });

  it('refuses text that is not a block, naming what is wrong', () => {
    // Two payloads: column 'a' (doubles at 24), 'h' (a dictionary at 40: one distinct value,
    // indices at 56), 's' (strings at 64); the string table's lengths at 80; 112 bytes in
    // all; then the strings' line.
    const [block] = packBlocks([{ timestamp: START_MS, payload: { a: 1.5, h: 'x', s: 'p' }, position: 0 }, { timestamp: START_MS + 5, payload: { a: 2.5, h: 'x', s: 'q' }, position: 1 }]);
    const text = block!.text;
    const [header, body, strings] = text.split('\n') as [string, string, string];
    const damaged = (change: (bytes: Buffer) => void) => {
      const bytes = Buffer.from(body, 'base64');
      change(bytes);
      return `${header}\n${bytes.toString('base64')}\n${strings}`;
    };
    expect(strings).toBe('ahxspq');
    expect(Buffer.from(body, 'base64').length).toBe(112);
    expect(Buffer.from(body, 'base64').readDoubleLE(24)).toBe(1.5);
    const cases: Array<[string, RegExp]> = [
      ['{"a":1}', /no header/],
      [text.replace('tsb2 2 ', 'tsb2 0 '), /holds 1 to/],
      [text.replace(`tsb2 2 ${START_MS} ${START_MS + 5}`, `tsb2 2 ${START_MS} ${START_MS + BLOCK_SPAN_MS}`), /spans less than/],
      [`${header}\n${body.slice(0, -8)}\n${strings}`, /body of \d+ bytes/],
      [`${header}\n${body}`, /without its strings/],
      [`${header}\n${body}\n${strings.slice(0, -1)}`, /strings end early/],
      [`${text}x`, /strings do not end its line/],
      [damaged((bytes) => bytes.writeInt32LE(-5, 12)), /out of order/],
      [damaged((bytes) => bytes.writeInt32LE(4, 12)), /disagree with its header/],
      [damaged((bytes) => bytes.writeDoubleLE(Number.NaN, 32)), /column 'a' of a tsr block holds a number that is not finite/],
      [damaged((bytes) => bytes.writeUInt16LE(1, 58)), /column 'h' of a tsr block points outside its dictionary/],
      [damaged((bytes) => bytes.writeUInt32LE(9, 40)), /no known kind \(9\)/],
      [damaged((bytes) => bytes.writeUInt32LE(4_000, 52)), /has 4000 distinct values of 2/],
      [damaged((bytes) => bytes.writeUInt32LE(50, 20)), /names string 50 of 6/],
      [damaged((bytes) => bytes.writeUInt32LE(0, 0)), /body goes on after its string table/],
      [damaged((bytes) => bytes.writeUInt32LE(1_000, 80)), /ends early/],
      [`${text}\n[{}`, /rest is not JSON/],
      [`${text}\n[{}]`, /rest is not 2 objects/],
    ];
    // A column is checked when first read: a payload reads every column.
    const read = (bad: string) => blockPayload(decodeBlock(bad), 0);
    for (const [bad, message] of cases) {
      expect(bad).not.toBe(text);
      expect(() => read(bad)).toThrow(BadBlockError);
      expect(() => read(bad)).toThrow(message);
    }
  });

  it('keeps strings with line breaks and characters beyond the BMP in its strings line', () => {
    const payloads = [
      { timestamp: START_MS, payload: { n: 'line\nbreak', m: 'é😀', k: 'a' }, position: 0 },
      { timestamp: START_MS + 1, payload: { n: '\n', m: '😀\n😀', k: 'a' }, position: 1 },
    ];
    const [block] = packBlocks(payloads);
    const decoded = decodeBlock(block!.text);
    expect(decoded.column('n')).toMatchObject({ kind: 'string' });
    expect(decoded.rest).toBeUndefined();
    expect([0, 1].map((index) => blockPayload(decoded, index))).toEqual(payloads.map((entry) => entry.payload));
  });

  it('reads blocks of the first layout (tsb1: the strings as UTF-8 inside the body) as stored before', () => {
    const payloads = [
      { timestamp: START_MS, payload: { a: 1.5, h: 'x', s: 'p', t: [1] }, position: 0 },
      { timestamp: START_MS + 5, payload: { a: 2.5, h: 'x', s: 'q', t: [2] }, position: 1 },
    ];
    const [block] = packBlocks(payloads);
    const [header, body, line] = block!.text.split('\n') as [string, string, string, string];
    const rest = block!.text.slice(header.length + body.length + line.length + 3);
    // tsb1's body: the same up to the strings' lengths (108 bytes), then the strings as UTF-8, padding to 8.
    const bytes = Buffer.from(body, 'base64');
    const table = Buffer.from(line, 'utf8');
    const v1Body = Buffer.concat([bytes.subarray(0, 108), table, Buffer.alloc(Math.ceil((108 + table.length) / 8) * 8 - 108 - table.length)]);
    const v1 = `${header.replace('tsb2', 'tsb1')}\n${v1Body.toString('base64')}\n${rest}`;
    const decoded = decodeBlock(v1);
    expect([0, 1].map((index) => blockPayload(decoded, index))).toEqual(payloads.map((entry) => entry.payload));
    expect(() => blockPayload(decodeBlock(`${v1}x`), 0)).toThrow(/rest is not JSON/);
  });

  it('formats ISO strings as toISOString does', () => {
    const prng = new Prng(7);
    for (let i = 0; i < 2_000; i += 1) {
      const ms = prng.int(-5_000_000, 5_000_000) * 1_000_003 + prng.int(0, 999);
      expect(isoString(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('tells whether a text is the ISO string of a time as comparing with toISOString does', () => {
    const prng = new Prng(9);
    for (let i = 0; i < 20_000; i += 1) {
      const ms = prng.int(-5_000_000, 5_000_000) * 1_000_003 + prng.int(0, 999);
      const iso = new Date(ms).toISOString();
      // The text itself, or one character of it changed, or the time a little off.
      const at = prng.int(0, iso.length - 1);
      const text = prng.pick([iso, `${iso.slice(0, at)}${prng.pick(['0', '9', ':', '.', 'Z', 'x'])}${iso.slice(at + 1)}`, `${iso} `, iso.slice(0, 20)]);
      const other = ms + prng.pick([0, 1, -1, 1000, 60_000, 3_600_000, 86_400_000]);
      expect(isIsoStringOf(text, other), `${text} ${other}`).toBe(text === new Date(other).toISOString());
    }
  });
});

// ---------------------------------------------------------------- the repository

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function withRepository(work: (tsr: TimeSeriesRepository, database: Database) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tributary-tsr-'));
  dirs.push(dir);
  const database = await Database.open(dir);
  try {
    await work(new TimeSeriesRepository(database), database);
  } finally {
    await database.close();
  }
}

/** Writes of overlapping time ranges, each packed into blocks as ingest packs them. */
function overlappingWrites(prng: Prng, writes: number, partition: number): { records: StoredRecord[]; payloads: StoredPayload[] } {
  const records: StoredRecord[] = [];
  const payloads: StoredPayload[] = [];
  for (let write = 0; write < writes; write += 1) {
    const base = START_MS + prng.int(0, 3 * BLOCK_SPAN_MS);
    const entries = Array.from({ length: prng.int(1, 60) }, (_, i) => ({ timestamp: base + prng.int(0, BLOCK_SPAN_MS / 2) * (prng.int(0, 9) === 0 ? 3 : 1), payload: { w: write, i }, position: i }));
    packBlocks(entries).forEach((block, ordinal) => {
      const writeId = `w${String(write).padStart(3, '0')}.${ordinal}`;
      records.push({ stream: 's/c/m', partition, timestamp: block.minTs, writeId, value: block.text });
      const decoded = decodeBlock(block.text);
      for (let index = 0; index < decoded.count; index += 1) {
        payloads.push({ stream: 's/c/m', partition, timestamp: decoded.timestamps[index]!, writeId: payloadWriteId(writeId, decoded.positions[index]!), payload: blockPayload(decoded, index) });
      }
    });
  }
  payloads.sort((a, b) => a.timestamp - b.timestamp || (a.writeId < b.writeId ? -1 : a.writeId > b.writeId ? 1 : 0));
  return { records, payloads };
}

async function all<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe('tsr repository - blocks', () => {
  it('scans a partition in (time, writeId) order over overlapping blocks, in any time range and from any page boundary', async () => {
    await withRepository(async (tsr, database) => {
      const prng = new Prng(11);
      const { records, payloads } = overlappingWrites(prng, 40, 3);
      await database.batch(tsr.writeOperations(records), { sync: true });
      expect(await all(tsr.scan('s/c/m'))).toEqual(payloads);
      for (let run = 0; run < 20; run += 1) {
        const fromTimestamp = START_MS + prng.int(-1000, 4 * BLOCK_SPAN_MS);
        const toTimestamp = fromTimestamp + prng.int(0, BLOCK_SPAN_MS);
        const inRange = payloads.filter((payload) => payload.timestamp >= fromTimestamp && payload.timestamp <= toTimestamp);
        expect(await all(tsr.scan('s/c/m', { partition: 3, fromTimestamp, toTimestamp }))).toEqual(inRange);
        const after = payloads[prng.int(0, payloads.length - 1)]!;
        const limit = prng.int(1, 50);
        const page = await all(tsr.scan('s/c/m', { partition: 3, after: { timestamp: after.timestamp, writeId: after.writeId }, limit }));
        const start = payloads.indexOf(after) + 1;
        expect(page).toEqual(payloads.slice(start, start + limit));
      }
    });
  });

  it('counts payloads from the keys, and repair reads back records that store under the same keys', async () => {
    await withRepository(async (tsr, database) => {
      const prng = new Prng(12);
      const first = overlappingWrites(prng, 10, 0);
      const second = overlappingWrites(prng, 10, 5);
      await database.batch(tsr.writeOperations([...first.records, ...second.records]), { sync: true });
      expect(Object.fromEntries(await tsr.countByPartition('s/c/m'))).toEqual({ 0: first.payloads.length, 5: second.payloads.length });
      const keys = await tsr.partitionKeys('s/c/m', 5);
      expect(keys).toHaveLength(second.records.length);
      const read = await tsr.recordsAt('s/c/m', 5, keys);
      expect(new Set(read.map((record) => JSON.stringify(record)))).toEqual(new Set(second.records.map((record) => JSON.stringify(record))));
      expect(tsr.writeOperations(read).map((operation) => operation.key).sort()).toEqual(keys.map((key) => `s/c/m/0005/${key}`));
    });
  });

  it('refuses a record that is not a block, and answers a damaged stored block as damaged data', async () => {
    await withRepository(async (tsr, database) => {
      const record = { stream: 's/c/m', partition: 1, timestamp: START_MS, writeId: 'w1', value: '{"a":1}' };
      expect(() => tsr.writeOperations([record])).toThrow(/not a tsr block/);
      const [block] = packBlocks([{ timestamp: START_MS, payload: { a: 1 }, position: 0 }]);
      expect(() => tsr.writeOperations([{ ...record, timestamp: START_MS + 1, value: block!.text }])).toThrow(/not its block's first/);
      expect(() => tsr.writeOperations([{ ...record, writeId: 'a/b', value: block!.text }])).toThrow(/holds a '\/'/);
      const [operation] = tsr.writeOperations([{ ...record, value: block!.text }]);
      await database.batch([{ ...operation!, type: 'put', value: `${block!.text.split('\n')[0]}\nAAAA` }], { sync: true });
      await expect(all(tsr.scan('s/c/m'))).rejects.toThrow(/damaged/);
    });
  });
});

describe('tsr block - encoding checked', () => {
  const entries = (cpu: number): BlockEntry[] => [
    { timestamp: START_MS, payload: { host: 'a', cpu }, position: 0 },
    { timestamp: START_MS + 1_000, payload: { host: 'b', cpu: 2 }, position: 1 },
  ];
  afterEach(() => {
    blockEncoding.fault = undefined;
    blockEncoding.decodeAll = true;
  });

  it('decodes every block it encodes under vitest, so an encoder that writes a wrong value fails before anything is stored', () => {
    expect(blockEncoding.decodeAll).toBe(true);
    // The encoder's fault: a block of the same moments and places, with another value in it.
    const wrong = packBlocks(entries(99))[0]!.text;
    blockEncoding.fault = () => wrong;
    expect(() => packBlocks(entries(1))).toThrow(InvariantError);
    expect(() => packBlocks(entries(1))).toThrow(/payload 0 reads back as \{"cpu":99,"host":"a"\}, was \{"cpu":1,"host":"a"\}/);
    // Without the whole decode (production), only the header is read back: the same fault passes.
    blockEncoding.decodeAll = false;
    expect(packBlocks(entries(1))[0]!.text).toBe(wrong);
  });

  it('always reads the header back: a block whose header names other moments fails even without the whole decode', () => {
    blockEncoding.decodeAll = false;
    blockEncoding.fault = (text) => text.replace(` ${START_MS} `, ` ${START_MS - 1} `);
    expect(() => packBlocks(entries(1))).toThrow(/encoded with header 2 /);
  });
});
