// The last values per key of a tsr stream: what `group by k select k, last(a),
// last(b)` needs, read from the newest blocks back only as far as the answer can change,
// as InfluxDB answers last() from the newest block of each series.
//
// An owner answers for one partition: it keeps, per (stream, partition, key field), the
// key's distinct values and the widest span of a block (built from the partition once,
// then kept by every write stored here, dropped when a transfer or a drop changes the
// partition). It reads blocks newest first and keeps, per key and field, the newest
// payload whose field is not null, by (event time, writeId), the order `last` follows. It
// stops once every key of the partition has every field and no block left can hold a
// newer payload: blocks left start no later than the next one, and end less than the
// widest span after it. A key field of too many values (KEY_VALUES_MAX) is read to the
// end. The answer is kept too, as InfluxDB keeps the last values of series in memory: the
// same question again reads nothing. Blocks stored while a read runs are taken into what it
// built before it is kept (a block taken twice changes nothing), so an answer read while
// ingest runs is kept too. Blocks stored later wait beside a kept answer until it is next
// asked for, then are taken newest first, and a block whose newest payload is older than
// every key's every field is passed over unread (a dashboard asking while ingest runs reads
// the newest blocks, not every block every write stored). The query's node keeps, per key
// and field, the newest of the partitions' answers.

import type { Value } from '../expression/index.js';
import { assert } from '../lib/assert.js';
import { stringifyJson } from '../lib/json.js';
import type { SpannedBlock } from '../storage/tsr.js';
import { type Block, blockHeader, columnValue, decodeBlock } from '../storage/tsr-block.js';
import { payloadWriteId } from '../storage/tsr-order.js';
import type { StoredRecord } from '../storage/repository.js';

/** Distinct values a key index keeps for one partition; past it, the partition is read to the end. */
const KEY_VALUES_MAX = 10_000;
/** Partitions whose indexes and answers are kept at once; past it, all are dropped and built again when asked for. */
const PARTITIONS_MAX = 4_096;
/** Entries of kept answers, in all; past it, every kept answer is dropped. */
const ANSWER_ENTRIES_MAX = 1_000_000;
/** Blocks stored since a partition's answers were last asked for; past either, its answers are dropped (read again when asked). */
const PENDING_BLOCKS_MAX = 1_024;
const PENDING_CHARS_MAX = 1024 * 1024;
/** Characters of such blocks over every partition; past it, every kept answer is dropped. */
const PENDING_CHARS_TOTAL_MAX = 32 * 1024 * 1024;

export interface LatestRequest {
  readonly stream: string;
  readonly partition: number;
  readonly key: string;
  readonly fields: readonly string[];
}

/** The newest payload of a key with a field not null: its time, writeId and the value. */
export interface LatestSlot {
  readonly timestamp: number;
  readonly writeId: string;
  readonly value: Value;
}

export interface LatestEntry {
  readonly key: Value;
  /** Per field asked for, null when no payload of the key holds it. Never changed once handed out. */
  readonly slots: ReadonlyArray<LatestSlot | null>;
}

/** An entry while a read builds it, before it is kept or handed out. */
interface OpenEntry {
  readonly key: Value;
  readonly slots: Array<LatestSlot | null>;
}

export interface LatestSource {
  partitionBlocks(stream: string, partition: number, newestFirst: boolean): AsyncIterable<SpannedBlock>;
}

/** A partition's distinct values of one field (undefined: more than KEY_VALUES_MAX), and its widest block. */
interface KeyIndex {
  keys: Map<unknown, Value> | undefined;
  spanMs: number;
}

/** The Map key of a key value (1 and '1' apart; records and arrays by their JSON). */
function keyOf(value: Value): unknown {
  return typeof value === 'object' && value !== null ? `\u0000${stringifyJson(value)}` : value;
}

/** Reads a top-level field of a block's payloads: its value, null where a payload lacks it. */
function fieldReader(block: Block, field: string): (index: number) => Value {
  const column = block.column(field);
  if (column !== undefined) return (index) => columnValue(column, block, index) as Value;
  const rest = block.rest;
  if (rest === undefined) return () => null;
  return (index) => (Object.hasOwn(rest[index]!, field) ? ((rest[index]![field] ?? null) as Value) : null);
}

function partitionKey(stream: string, partition: number): string {
  return `${stream}\n${partition}`;
}

/** The key of a kept answer within its partition: the key field and the fields asked for. */
function questionOf(request: LatestRequest): string {
  return `${request.key}\n${request.fields.join('\n')}`;
}

/** A block stored since the partition's answers were last asked for: its text, id and newest time. */
interface PendingBlock {
  readonly text: string;
  readonly writeId: string;
  readonly maxTs: number;
}

/** Blocks stored since some moment, for an answer or a read to take; PENDING_BLOCKS_MAX and PENDING_CHARS_MAX bound them. */
interface WaitingBlocks {
  blocks: PendingBlock[];
  chars: number;
}

/** Blocks stored into a partition while a read of it runs, for what the read builds. */
interface Capture extends WaitingBlocks {
  /** Past the bounds: what the read builds is used, not kept. */
  overflowed: boolean;
}

/** What is kept of one partition: key indexes by field, answers by question (key and fields), and the blocks the answers have yet to take. */
interface PartitionState {
  readonly indexes: Map<string, KeyIndex>;
  readonly answers: Map<string, { readonly request: LatestRequest; readonly entries: Map<unknown, LatestEntry> }>;
  readonly pending: WaitingBlocks;
}

export class LatestValues {
  private readonly partitions = new Map<string, PartitionState>();
  /** Drops per partition (forget), so that what is built meanwhile is not kept. */
  private readonly drops = new Map<string, number>();
  /** The reads running per partition, each taking the blocks stored meanwhile. */
  private readonly captures = new Map<string, Set<Capture>>();
  private answerEntries = 0;
  /** The characters of every partition's pending blocks. */
  private pendingChars = 0;

  constructor(private readonly source: LatestSource) {}

  /** The partition's answer when one is kept: what latest() would answer, without a read or a wait. */
  kept(request: LatestRequest): LatestEntry[] | undefined {
    return this.keptAt(partitionKey(request.stream, request.partition), questionOf(request));
  }

  /** The partition's answer: per key, the newest value of each field. */
  async latest(request: LatestRequest): Promise<LatestEntry[]> {
    const partition = partitionKey(request.stream, request.partition);
    const question = questionOf(request);
    const kept = this.keptAt(partition, question);
    if (kept !== undefined) return kept;
    const { built: entries, stored } = await this.capturing(partition, () => this.read(request));
    if (stored !== undefined) {
      takePending(entries, request, stored, this.partitions.get(partition)?.indexes.get(request.key));
      if (this.answerEntries + entries.size > ANSWER_ENTRIES_MAX) this.dropAnswers();
      const answers = this.state(partition).answers;
      // Two reads of the same question at once: the later one's answer is kept.
      this.answerEntries -= answers.get(question)?.entries.size ?? 0;
      answers.set(question, { request, entries });
      this.answerEntries += entries.size;
    }
    return [...entries.values()];
  }

  /**
   * Runs a read of the partition, taking the blocks stored meanwhile (from before its first
   * await: a block stored before the read's snapshot is taken too, which changes nothing).
   * `stored` is undefined when what the read built may not be kept: the partition was
   * dropped meanwhile, or more blocks came than a capture keeps.
   */
  private async capturing<T>(partition: string, read: () => Promise<T>): Promise<{ built: T; stored: PendingBlock[] | undefined }> {
    const capture: Capture = { blocks: [], chars: 0, overflowed: false };
    const dropsBefore = this.drops.get(partition) ?? 0;
    let running = this.captures.get(partition);
    if (running === undefined) this.captures.set(partition, (running = new Set()));
    running.add(capture);
    try {
      const built = await read();
      const whole = !capture.overflowed && (this.drops.get(partition) ?? 0) === dropsBefore;
      return { built, stored: whole ? capture.blocks : undefined };
    } finally {
      running.delete(capture);
      if (running.size === 0) this.captures.delete(partition);
    }
  }

  /** The kept answer to the question of the partition, if one is kept, with every block stored since taken. */
  private keptAt(partition: string, question: string): LatestEntry[] | undefined {
    const state = this.partitions.get(partition);
    if (state === undefined) return undefined;
    this.settle(state);
    const kept = state.answers.get(question);
    return kept === undefined ? undefined : [...kept.entries.values()];
  }

  /** The partition's answers take the blocks stored since they were last asked for. */
  private settle(state: PartitionState): void {
    if (state.pending.blocks.length === 0) return;
    const pending = state.pending.blocks;
    this.clearPending(state);
    for (const answer of state.answers.values()) {
      this.answerEntries += takePending(answer.entries, answer.request, pending, state.indexes.get(answer.request.key));
    }
    if (this.answerEntries > ANSWER_ENTRIES_MAX) this.dropAnswers();
  }

  /** The partition read newest first, as far as the answer can change. */
  private async read(request: LatestRequest): Promise<Map<unknown, LatestEntry>> {
    const index = await this.index(request.stream, request.partition, request.key);
    const entries = new Map<unknown, OpenEntry>();
    for (const value of index.keys?.values() ?? []) entries.set(keyOf(value), { key: value, slots: request.fields.map(() => null) });
    let open = index.keys === undefined ? Infinity : entries.size * request.fields.length;
    for await (const stored of this.source.partitionBlocks(request.stream, request.partition, true)) {
      // Every key holds every field, newer than anything a block left can hold: done.
      if (open === 0 && oldestSlot(entries) > stored.minTs + index.spanMs) break;
      const block = decodeBlock(stored.value);
      const keyOfRow = fieldReader(block, request.key);
      const fieldsOfRow = request.fields.map((field) => fieldReader(block, field));
      for (let row = block.count - 1; row >= 0; row -= 1) {
        const key = keyOfRow(row);
        let entry = entries.get(keyOf(key));
        if (entry === undefined) {
          // A key the index does not have yet (stored while this read runs): it must be found too.
          entries.set(keyOf(key), (entry = { key, slots: request.fields.map(() => null) }));
          open += request.fields.length;
        }
        const timestamp = block.timestamps[row]!;
        let writeId: string | undefined;
        for (let slot = 0; slot < fieldsOfRow.length; slot += 1) {
          const kept = entry.slots[slot];
          if (kept !== null && kept !== undefined && kept.timestamp > timestamp) continue;
          const value = fieldsOfRow[slot]!(row);
          if (value === null) continue;
          writeId ??= payloadWriteId(stored.writeId, block.positions[row]!);
          if (kept !== null && kept !== undefined && kept.timestamp === timestamp && kept.writeId >= writeId) continue;
          if (kept === null) open -= 1;
          entry.slots[slot] = { timestamp, writeId, value };
        }
      }
    }
    return entries;
  }

  /** Blocks just stored here (a write, a hint, a repair): the partition's indexes learn their keys, its answers and reads take them. */
  stored(records: readonly StoredRecord[]): void {
    for (const record of records) {
      const partition = partitionKey(record.stream, record.partition);
      const state = this.partitions.get(partition);
      const captures = this.captures.get(partition);
      if (state === undefined && captures === undefined) continue;
      let maxTs: number;
      if (state !== undefined && state.indexes.size > 0) {
        const block = decodeBlock(record.value);
        for (const [field, index] of state.indexes) learn(index, block, field);
        maxTs = block.maxTs;
      } else maxTs = blockHeader(record.value).maxTs;
      const stored: PendingBlock = { text: record.value, writeId: record.writeId, maxTs };
      if (state !== undefined && state.answers.size > 0) this.defer(state, stored);
      for (const capture of captures ?? []) {
        if (!capture.overflowed && !takeInto(capture, stored)) {
          capture.overflowed = true;
          capture.blocks = [];
        }
      }
    }
  }

  /** A stored block waits for the partition's answers to be asked for; past the bounds, they are dropped instead. */
  private defer(state: PartitionState, block: PendingBlock): void {
    this.pendingChars += block.text.length;
    if (!takeInto(state.pending, block)) this.dropAnswersOf(state);
    else if (this.pendingChars > PENDING_CHARS_TOTAL_MAX) this.dropAnswers();
  }

  /** The partition changed otherwise (a transfer, a drop): what was kept of it is built again when next asked for. */
  forget(stream: string, partition: number): void {
    const key = partitionKey(stream, partition);
    const state = this.partitions.get(key);
    if (state !== undefined) this.dropAnswersOf(state);
    this.partitions.delete(key);
    this.drops.set(key, (this.drops.get(key) ?? 0) + 1);
  }

  private state(partition: string): PartitionState {
    let state = this.partitions.get(partition);
    if (state === undefined) {
      if (this.partitions.size >= PARTITIONS_MAX) {
        this.partitions.clear();
        this.answerEntries = 0;
        this.pendingChars = 0;
      }
      this.partitions.set(partition, (state = { indexes: new Map(), answers: new Map(), pending: { blocks: [], chars: 0 } }));
    }
    return state;
  }

  private dropAnswers(): void {
    for (const state of this.partitions.values()) this.dropAnswersOf(state);
    assert(this.answerEntries === 0 && this.pendingChars === 0, `${this.answerEntries} answer entries and ${this.pendingChars} pending characters left after a drop`);
  }

  private dropAnswersOf(state: PartitionState): void {
    for (const answer of state.answers.values()) this.answerEntries -= answer.entries.size;
    state.answers.clear();
    this.clearPending(state);
  }

  private clearPending(state: PartitionState): void {
    this.pendingChars -= state.pending.chars;
    state.pending.blocks = [];
    state.pending.chars = 0;
  }

  private async index(stream: string, partition: number, field: string): Promise<KeyIndex> {
    const key = partitionKey(stream, partition);
    const known = this.partitions.get(key)?.indexes.get(field);
    if (known !== undefined) return known;
    const { built: index, stored } = await this.capturing(key, async () => {
      const built: KeyIndex = { keys: new Map(), spanMs: 0 };
      for await (const block of this.source.partitionBlocks(stream, partition, false)) {
        const header = blockHeader(block.value);
        built.spanMs = Math.max(built.spanMs, header.maxTs - header.minTs);
        if (built.keys !== undefined) learn(built, decodeBlock(block.value), field);
      }
      return built;
    });
    // Without every block stored meanwhile (too many, or a drop), it is used for this read, not kept.
    if (stored !== undefined) {
      for (const block of stored) learn(index, decodeBlock(block.text), field);
      this.state(key).indexes.set(field, index);
    }
    return index;
  }
}

/** Adds a stored block to those waiting; false once they are past the bounds. */
function takeInto(waiting: WaitingBlocks, block: PendingBlock): boolean {
  waiting.blocks.push(block);
  waiting.chars += block.text.length;
  return waiting.blocks.length <= PENDING_BLOCKS_MAX && waiting.chars <= PENDING_CHARS_MAX;
}

/**
 * Takes blocks stored since the answer was last asked for, newest first; returns how many
 * keys they added. Once the answer holds every key the partition's index knows (and so every
 * key of these blocks, which the index learned as they were stored) with every field, a
 * block whose newest payload is older than the oldest of them cannot change it: it is passed
 * over unread. Without the index (past KEY_VALUES_MAX keys), every block is read. The
 * oldest time is found again after the 1st, 2nd, 4th, 8th… block read: a few times, however
 * many are read (a field no payload holds keeps it at -Infinity).
 */
function takePending(entries: Map<unknown, LatestEntry>, request: LatestRequest, pending: readonly PendingBlock[], index: KeyIndex | undefined): number {
  let added = 0;
  let read = 0;
  let oldest = oldestWhenWhole(entries, index);
  for (let at = pending.length - 1; at >= 0; at -= 1) {
    const block = pending[at]!;
    if (block.maxTs < oldest) continue;
    added += update(entries, request, decodeBlock(block.text), block.writeId);
    read += 1;
    if ((read & (read - 1)) === 0) oldest = oldestWhenWhole(entries, index);
  }
  return added;
}

/** oldestSlot of the entries when they hold every key of the index; -Infinity otherwise. */
function oldestWhenWhole(entries: ReadonlyMap<unknown, LatestEntry>, index: KeyIndex | undefined): number {
  const keys = index?.keys;
  if (keys === undefined || keys.size > entries.size) return -Infinity;
  for (const key of keys.keys()) if (!entries.has(key)) return -Infinity;
  return oldestSlot(entries);
}

/**
 * Takes a stored block's payloads into a kept answer; returns how many keys it added. An
 * entry that changes is replaced, never changed in place: answers handed out hold the old one.
 */
function update(entries: Map<unknown, LatestEntry>, request: LatestRequest, block: Block, blockId: string): number {
  const keyOfRow = fieldReader(block, request.key);
  const fieldsOfRow = request.fields.map((field) => fieldReader(block, field));
  let added = 0;
  for (let row = 0; row < block.count; row += 1) {
    const key = keyOfRow(row);
    const mapKey = keyOf(key);
    const entry = entries.get(mapKey);
    if (entry === undefined) added += 1;
    const timestamp = block.timestamps[row]!;
    let slots: Array<LatestSlot | null> | undefined;
    for (let slot = 0; slot < fieldsOfRow.length; slot += 1) {
      const kept = entry?.slots[slot] ?? null;
      if (kept !== null && kept.timestamp > timestamp) continue;
      const value = fieldsOfRow[slot]!(row);
      if (value === null) continue;
      const writeId = payloadWriteId(blockId, block.positions[row]!);
      if (kept !== null && kept.timestamp === timestamp && kept.writeId >= writeId) continue;
      slots ??= entry === undefined ? request.fields.map(() => null) : [...entry.slots];
      slots[slot] = { timestamp, writeId, value };
    }
    if (entry === undefined || slots !== undefined) entries.set(mapKey, { key, slots: slots ?? request.fields.map(() => null) });
  }
  return added;
}

/** Adds a block's values of the field and its span to an index. */
function learn(index: KeyIndex, block: Block, field: string): void {
  index.spanMs = Math.max(index.spanMs, block.maxTs - block.minTs);
  const keys = index.keys;
  if (keys === undefined) return;
  const column = block.column(field);
  // Strings: their own Map keys (keyOf).
  if (column?.kind === 'dictionary') for (const value of column.distinct) keys.set(value, value);
  else {
    const read = fieldReader(block, field);
    for (let row = 0; row < block.count; row += 1) {
      const value = read(row);
      keys.set(keyOf(value), value);
    }
  }
  if (keys.size > KEY_VALUES_MAX) index.keys = undefined;
}

/** The oldest time among every key's kept fields; -Infinity while one is not kept. */
function oldestSlot(entries: ReadonlyMap<unknown, LatestEntry>): number {
  let oldest = Infinity;
  for (const entry of entries.values()) for (const slot of entry.slots) oldest = Math.min(oldest, slot === null ? -Infinity : slot.timestamp);
  return oldest;
}

/** The newest of the partitions' answers, per key and field. */
export function mergeLatest(answers: ReadonlyArray<readonly LatestEntry[]>, fieldCount: number): LatestEntry[] {
  const merged = new Map<unknown, OpenEntry>();
  for (const answer of answers) {
    for (const entry of answer) {
      const mapKey = keyOf(entry.key);
      let kept = merged.get(mapKey);
      if (kept === undefined) merged.set(mapKey, (kept = { key: entry.key, slots: new Array<LatestSlot | null>(fieldCount).fill(null) }));
      for (let index = 0; index < fieldCount; index += 1) {
        const slot = entry.slots[index] ?? null;
        const current = kept.slots[index]!;
        if (slot !== null && (current === null || slot.timestamp > current.timestamp || (slot.timestamp === current.timestamp && slot.writeId > current.writeId))) kept.slots[index] = slot;
      }
    }
  }
  return [...merged.values()];
}
