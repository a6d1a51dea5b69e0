// One query output of type OUTPUT_CHANNEL (docs/query-language.md, "Outputs"): the messages a
// query sends (`sos`, `increment`, `eos`), handed to local subscribers as they come, kept
// in a bounded log that other nodes poll (any node serves any output), and the
// current state a subscriber that connects late is given first: the schema, the current
// table of a grouped query or the retained rows of a bounded one, and `eos` if it ended.
// Nothing grows without bound: the log keeps its last `logMessagesMax` messages and at most
// `retainedBytesMax` bytes of them (a poller further behind starts over from the state);
// retained rows stop at `retainedRowsMax` rows or `retainedBytesMax` bytes of JSON,
// whichever comes first (rows alone did not bound memory).
//
// A channel ends (docs/query-language.md, "Outputs"): after `eos`, and when its query
// stops or its session goes, every subscriber is told to close, and one that comes later
// is given the state and closed at once, until the query starts again. The end of a
// stopped query is a log entry of its own, so the nodes that copy the channel end too.

import { randomUUID } from 'node:crypto';
import { stringifyJson } from '../lib/json.js';
import { type ChangeItem, RetainedTable } from './retained-table.js';

export type OutputMessage =
  | { readonly type: 'sos'; readonly schema: Record<string, unknown> }
  | { readonly type: 'increment'; readonly items: readonly ChangeItem[] }
  | { readonly type: 'eos' };

/** What a late subscriber is given of the rows: the table, the rows of a bounded query, or nothing. */
export type Retention = 'table' | 'rows' | 'none';

/** A log entry: a message, and with a `sos` the retention that follows it; or the end of a query that stopped. */
export type LogEntry = MessageEntry | EndEntry;

export interface MessageEntry {
  readonly message: OutputMessage;
  readonly retention?: Retention;
}

/** The query stopped without `eos` (stopped, or its session deleted): clients are not sent it, their responses end. */
export interface EndEntry {
  readonly end: 'stopped';
}

export interface ChannelCursor {
  readonly epoch: string;
  readonly seq: number;
}

export interface PollReply {
  readonly epoch: string;
  /** The cursor's next seq. */
  readonly seq: number;
  /** The entries start over from the state (the cursor was of another epoch or too far behind). */
  readonly reset: boolean;
  readonly entries: readonly LogEntry[];
}

export interface ChannelLimits {
  readonly logMessagesMax: number;
  readonly retainedRowsMax: number;
  /** Bytes of JSON the retained rows (or table) may hold, and the log too. */
  readonly retainedBytesMax: number;
}

/**
 * Told each message, its JSON text (made once for every listener) and its event id: the
 * channel's epoch and the position after it, which a client that reconnects sends back as
 * Last-Event-ID (isEndedAt).
 */
export type OutputListener = (message: OutputMessage, json: string, eventId: string) => void;

/** Told that the channel ended: after `eos`, or when its query stopped or its session went. */
export type EndListener = () => void;

export class OutputChannel {
  /** Names this channel object; a poller with another epoch's cursor starts over. */
  readonly epoch = randomUUID();
  private sos: MessageEntry | undefined;
  private ended = false;
  /** Ended by `eos` or a stop: subscribers are closed until the next `sos`. */
  private closed = false;
  private retention: Retention = 'none';
  private table: RetainedTable | undefined;
  private rows: Record<string, unknown>[] = [];
  /** Bytes of JSON of the retained rows. */
  private retainedBytes = 0;
  private readonly log: LogEntry[] = [];
  /** Bytes of JSON of each log entry, and their sum. */
  private readonly logSizes: number[] = [];
  private logBytes = 0;
  /** The seq the next entry gets; the log holds the entries just before it. */
  private seq = 0;
  /** The seq after the last message (not an end entry): what event ids count, as clients see messages only. */
  private messageSeq = 0;
  private readonly listeners = new Map<OutputListener, EndListener | undefined>();
  private waiters: Array<() => void> = [];

  constructor(
    readonly outputId: string,
    private readonly limits: ChannelLimits,
    /** Told how many rows the query writing here emitted (metrics; mirrors of other hosts' channels do not count). */
    private readonly onRows?: (count: number) => void,
  ) {}

  get subscriberCount(): number {
    return this.listeners.size;
  }

  /** A query (re)starts: a new schema, and nothing of the previous run is kept. */
  begin(schema: Record<string, unknown>, retention: Retention): void {
    this.apply({ message: { type: 'sos', schema }, retention });
  }

  increment(items: readonly ChangeItem[]): void {
    if (items.length === 0) return;
    this.onRows?.(items.length);
    this.apply({ message: { type: 'increment', items } });
  }

  end(): void {
    this.apply({ message: { type: 'eos' } });
  }

  /** The query stopped before its end, or its session went: subscribers close (a channel closed already stays as it is). */
  stop(): void {
    if (this.sos === undefined || this.closed) return;
    this.apply({ end: 'stopped' });
  }

  /** Whether a client whose last event was `eventId` has seen everything of a channel that ended: it need not come back. */
  isEndedAt(eventId: string): boolean {
    return this.closed && eventId === this.eventId();
  }

  /** Applies one entry from the query here, or from the host's log on a mirror. */
  apply(entry: LogEntry): void {
    if ('end' in entry) {
      this.append(entry, 0);
      this.closed = true;
      for (const onEnd of [...this.listeners.values()]) onEnd?.();
      this.wake();
      return;
    }
    const message = entry.message;
    let json: string;
    if (message.type === 'increment') {
      // Each row's JSON is made once: it measures what the table holds, and it is the
      // message's text for every listener.
      const rowJson = message.items.map((item) => stringifyJson(item.data));
      this.retain(message.items, rowJson);
      json = incrementJson(message.items, rowJson);
    } else {
      if (message.type === 'sos') this.reset(message.schema, entry.retention ?? 'none', entry);
      else this.ended = this.closed = true;
      json = stringifyJson(message);
    }
    this.append(entry, json.length);
    this.messageSeq = this.seq;
    const eventId = this.eventId();
    for (const listener of [...this.listeners.keys()]) listener(message, json, eventId);
    if (message.type === 'eos') for (const onEnd of [...this.listeners.values()]) onEnd?.();
    this.wake();
  }

  /**
   * Listens from now on, after being given the current state; `onEnd` is called when the
   * channel ends, and at once when it has ended already unless `current` is false (a copy
   * of another node's channel that could not be brought up to date: its end may be old).
   */
  subscribe(listener: OutputListener, onEnd?: EndListener, current = true): () => void {
    const eventId = this.eventId();
    for (const entry of this.stateEntries()) if ('message' in entry) listener(entry.message, stringifyJson(entry.message), eventId);
    this.listeners.set(listener, onEnd);
    if (this.closed && current) onEnd?.();
    return () => this.listeners.delete(listener);
  }

  /** The output is gone (its query or session was deleted): every subscriber is ended. */
  discard(): void {
    this.closed = true;
    for (const onEnd of [...this.listeners.values()]) onEnd?.();
    this.listeners.clear();
  }

  /** What a poller at `cursor` has not seen; the whole state when it cannot continue. */
  poll(cursor: ChannelCursor | undefined, entriesMax: number): PollReply {
    const next = this.nextSeq();
    if (cursor === undefined || cursor.epoch !== this.epoch || cursor.seq < this.logStartSeq || cursor.seq > next) {
      return { epoch: this.epoch, seq: next, reset: true, entries: this.stateEntries() };
    }
    const from = cursor.seq - this.logStartSeq;
    const entries = this.log.slice(from, from + entriesMax);
    return { epoch: this.epoch, seq: cursor.seq + entries.length, reset: false, entries };
  }

  /** Resolves when an entry past `cursor` exists, or after `waitMs`. */
  async waitPast(cursor: ChannelCursor | undefined, waitMs: number): Promise<void> {
    if (cursor === undefined || cursor.epoch !== this.epoch || cursor.seq < this.nextSeq()) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, waitMs);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private nextSeq(): number {
    return this.seq;
  }

  /** The id of the event that brings a client to the channel's current position: its last message. */
  private eventId(): string {
    return `${this.epoch}.${this.messageSeq}`;
  }

  /** Keeps an entry in the log, which stays within its bounds. */
  private append(entry: LogEntry, size: number): void {
    this.log.push(entry);
    this.logSizes.push(size);
    this.logBytes += size;
    this.seq += 1;
    let drop = Math.max(0, this.log.length - this.limits.logMessagesMax);
    for (let bytes = this.logBytes; bytes > this.limits.retainedBytesMax && drop < this.log.length - 1; drop++) bytes -= this.logSizes[drop]!;
    if (drop > 0) {
      this.log.splice(0, drop);
      for (const dropped of this.logSizes.splice(0, drop)) this.logBytes -= dropped;
    }
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private get logStartSeq(): number {
    return this.seq - this.log.length;
  }

  private stateEntries(): LogEntry[] {
    if (this.sos === undefined) return [];
    const entries: LogEntry[] = [this.sos];
    const held = this.table?.held() ?? this.rows;
    if (held.length > 0) entries.push({ message: { type: 'increment', items: held.map((data) => ({ action: 'add', data })) } });
    if (this.ended) entries.push({ message: { type: 'eos' } });
    else if (this.closed) entries.push({ end: 'stopped' });
    return entries;
  }

  private reset(schema: Record<string, unknown>, retention: Retention, entry: MessageEntry): void {
    this.sos = entry;
    this.ended = false;
    this.closed = false;
    this.retention = retention;
    const config = schema.config as { key?: unknown } | undefined;
    const keys = Array.isArray(config?.key) ? (config.key as string[]) : [];
    this.table = retention === 'table' ? new RetainedTable(keys, { rowsMax: this.limits.retainedRowsMax, bytesMax: this.limits.retainedBytesMax }) : undefined;
    this.rows = [];
    this.retainedBytes = 0;
  }

  /** Keeps what a late subscriber is given; a row's JSON text measures it. */
  private retain(items: readonly ChangeItem[], rowJson: readonly string[]): void {
    if (this.table !== undefined) {
      this.table.apply(items, rowJson);
      return;
    }
    if (this.retention !== 'rows') return;
    for (let index = 0; index < items.length; index++) {
      const item = items[index]!;
      if (item.action !== 'add' || this.rows.length >= this.limits.retainedRowsMax) continue;
      const bytes = rowJson[index]!.length;
      if (this.retainedBytes + bytes > this.limits.retainedBytesMax) continue;
      this.rows.push(item.data);
      this.retainedBytes += bytes;
    }
  }
}

/**
 * The JSON text of an increment of these items, from each row's JSON text: the same text
 * as stringifyJson of the message (`{"type":"increment","items":[{"action":…,"data":…},…]}`),
 * its rows not stringified again. Rows may hold longs beyond 2^53 as BigInt,
 * which stringifyJson writes as digits.
 */
export function incrementJson(items: readonly ChangeItem[], rowJson: readonly string[]): string {
  let json = '{"type":"increment","items":[';
  for (let index = 0; index < items.length; index++) {
    json += `${index === 0 ? '' : ','}{"action":${JSON.stringify(items[index]!.action)},"data":${rowJson[index]!}}`;
  }
  return `${json}]}`;
}
