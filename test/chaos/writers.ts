// The chaos suite's clients: concurrent writers that post batches of payloads with unique ids
// to every node in turn and record, per payload, what they were told (checker.ts). A batch
// whose outcome is uncertain (no answer, or a 500 listing some of its payloads) is retried with
// the same Idempotency-Key on another node, as a client that wants exactly-once would; a retry
// that answers 200 acknowledges the payloads.

import type { Prng } from '../sim/prng.js';

export interface WriterTarget {
  name: string;
  url: string;
}

export interface StreamOutcomes {
  acknowledged: Set<string>;
  unknown: Set<string>;
  refused: Set<string>;
}

export interface WriterStats {
  batches: number;
  batchesAcknowledged: number;
  status5xx: number;
  status503: number;
  /** 507 Insufficient Storage: the node stored nothing of the batch (its disk is full). */
  status507: number;
  timeouts: number;
  retries: number;
  /** Wall-clock seconds (since the writers started) in which no batch was acknowledged. */
  unavailableSeconds: number;
  /** Which seconds those were. */
  silentSeconds: number[];
  /** Acknowledgement latency of batches, ms. */
  latenciesMs: number[];
  /** The first few distinct reasons 5xx answers gave, with how often each came. */
  failureReasons: Record<string, number>;
}

export interface WritersOptions {
  writers: number;
  /** Stream paths to write, e.g. /streams/chaos/data/events; each batch goes to one. */
  streams: readonly string[];
  batchPayloadsMin: number;
  batchPayloadsMax: number;
  requestTimeoutMs: number;
  /** Attempts of one uncertain batch (the first included). */
  attemptsMax: number;
  /** A node that did not answer is avoided this long, as client drivers do with a host that times out. */
  avoidMs: number;
  targets(): readonly WriterTarget[];
}

export class ChaosWriters {
  readonly outcomes = new Map<string, StreamOutcomes>();
  readonly stats: WriterStats = { batches: 0, batchesAcknowledged: 0, status5xx: 0, status503: 0, status507: 0, timeouts: 0, retries: 0, unavailableSeconds: 0, silentSeconds: [], latenciesMs: [], failureReasons: {} };
  private stopped = false;
  private running: Promise<void>[] = [];
  /** When start() was called (epoch ms): `silentSeconds` count from here. */
  startedAt = 0;
  private readonly acknowledgedSeconds = new Set<number>();
  /** Nodes that timed out or refused the connection, until when they are avoided. */
  private readonly avoidedUntil = new Map<string, number>();
  private endedAt = 0;

  constructor(
    private readonly options: WritersOptions,
    private readonly prng: Prng,
  ) {
    for (const stream of options.streams) this.outcomes.set(stream, { acknowledged: new Set(), unknown: new Set(), refused: new Set() });
  }

  start(): void {
    this.startedAt = Date.now();
    this.running = Array.from({ length: this.options.writers }, (_, writer) => this.loop(writer, this.prng.fork()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
    this.endedAt = Date.now();
    const seconds = Math.max(1, Math.floor((this.endedAt - this.startedAt) / 1000));
    for (let second = 0; second < seconds; second += 1) if (!this.acknowledgedSeconds.has(second)) this.stats.silentSeconds.push(second);
    this.stats.unavailableSeconds = this.stats.silentSeconds.length;
  }

  private async loop(writer: number, prng: Prng): Promise<void> {
    let sequence = 0;
    let round = writer;
    while (!this.stopped) {
      const stream = prng.pick(this.options.streams);
      const size = prng.int(this.options.batchPayloadsMin, this.options.batchPayloadsMax);
      const batch = Array.from({ length: size }, () => payload(`w${writer}-${(sequence++).toString(36)}`, prng));
      const key = `w${writer}-b${round}`;
      round = await this.writeBatch(stream, batch, key, round);
    }
  }

  /** Posts one batch, retrying an uncertain outcome on the next node; returns the next round. */
  private async writeBatch(stream: string, batch: ChaosPayload[], idempotencyKey: string, round: number): Promise<number> {
    const outcomes = this.outcomes.get(stream)!;
    let pending = batch.map((each) => each.id);
    let everUncertain = false;
    this.stats.batches += 1;
    for (let attempt = 1; attempt <= this.options.attemptsMax && pending.length > 0; attempt += 1) {
      const target = this.pickTarget(round);
      round += 1;
      if (attempt > 1) this.stats.retries += 1;
      const started = Date.now();
      const answer = await post(`${target.url}${stream}`, batch, idempotencyKey, this.options.requestTimeoutMs);
      if (answer.kind === 'ok') {
        for (const id of pending) outcomes.acknowledged.add(id);
        for (const id of pending) outcomes.unknown.delete(id);
        this.acknowledge(started);
        return round;
      }
      if (answer.kind === 'partial') {
        this.stats.status5xx += 1;
        this.noteReason(answer.reason);
        // Payloads the 500 did not list are written; the listed ones are uncertain.
        const failed = new Set(answer.failedIndexes.map((index) => batch[index]!.id));
        for (const id of pending) if (!failed.has(id)) outcomes.acknowledged.add(id);
        pending = pending.filter((id) => failed.has(id));
        everUncertain = true;
      } else if (answer.kind === 'refused') {
        if (answer.status === 0) this.avoidedUntil.set(target.name, Date.now() + this.options.avoidMs);
        if (answer.status === 503) this.stats.status503 += 1;
        else if (answer.status === 507) this.stats.status507 += 1;
        else if (answer.status >= 500) this.stats.status5xx += 1;
        // Definitely not written this time; an earlier uncertain attempt may have been.
      } else {
        this.stats.timeouts += 1;
        this.avoidedUntil.set(target.name, Date.now() + this.options.avoidMs);
        everUncertain = true;
      }
      await sleep(answer.kind === 'refused' ? 200 : 50);
    }
    for (const id of pending) {
      outcomes.acknowledged.delete(id);
      (everUncertain ? outcomes.unknown : outcomes.refused).add(id);
    }
    return round;
  }

  /** The next node in turn that is not avoided (any node when all are). */
  private pickTarget(round: number): WriterTarget {
    const targets = this.options.targets();
    const now = Date.now();
    for (let offset = 0; offset < targets.length; offset += 1) {
      const target = targets[(round + offset) % targets.length]!;
      if ((this.avoidedUntil.get(target.name) ?? 0) <= now) return target;
    }
    return targets[round % targets.length]!;
  }

  private noteReason(reason: string): void {
    // Node names and numbers vary; the rest says why.
    const shape = reason.replace(/\bn\d+\b/g, 'nX').replace(/\d+/g, '#').slice(0, 160);
    if (shape in this.stats.failureReasons || Object.keys(this.stats.failureReasons).length < 8) this.stats.failureReasons[shape] = (this.stats.failureReasons[shape] ?? 0) + 1;
  }

  private acknowledge(started: number): void {
    const now = Date.now();
    this.stats.batchesAcknowledged += 1;
    this.stats.latenciesMs.push(now - started);
    this.acknowledgedSeconds.add(Math.floor((now - this.startedAt) / 1000));
  }
}

export interface ChaosPayload {
  id: string;
  ts: string;
  host: string;
  value: number;
  text: string;
}

const HOSTS = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf'];
const WORDS = ['storm', 'river', 'delta', 'flood', 'bridge', 'stone', 'cloud', 'field'];

/** A payload with an event time (so a retry lands under the same key in tsr as well). */
function payload(id: string, prng: Prng): ChaosPayload {
  return {
    id,
    ts: new Date().toISOString(),
    host: prng.pick(HOSTS),
    value: prng.int(0, 1_000),
    text: `${prng.pick(WORDS)} ${prng.pick(WORDS)} ${id}`,
  };
}

export const CHAOS_SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      id: { type: 'string' },
      ts: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] },
      host: { type: 'string' },
      value: { type: 'int' },
      text: { type: 'string' },
    },
  },
};

type PostAnswer =
  | { kind: 'ok' }
  | { kind: 'partial'; failedIndexes: number[]; reason: string }
  | { kind: 'refused'; status: number }
  | { kind: 'uncertain'; why: string };

async function post(url: string, batch: readonly ChaosPayload[], idempotencyKey: string, timeoutMs: number): Promise<PostAnswer> {
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(batch),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    if (response.status === 200) return { kind: 'ok' };
    if (response.status === 500) {
      const failures = parseFailures(text);
      return failures === undefined ? { kind: 'uncertain', why: `500 ${text.slice(0, 200)}` } : { kind: 'partial', failedIndexes: failures, reason: firstMessage(text) };
    }
    // 4xx, 503 and 507 (a node whose disk is full: docs/storage.md) are answered before
    // anything is written.
    if (response.status < 500 || response.status === 503 || response.status === 507) return { kind: 'refused', status: response.status };
    return { kind: 'uncertain', why: `${response.status}` };
  } catch (error) {
    // A refused connection sent nothing: the batch was definitely not written.
    if ((error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED') return { kind: 'refused', status: 0 };
    return { kind: 'uncertain', why: (error as Error).message };
  }
}

function firstMessage(text: string): string {
  try {
    const body = JSON.parse(text) as Record<string, { msg?: string }>;
    return Object.values(body)[0]?.msg ?? text.slice(0, 160);
  } catch {
    return text.slice(0, 160);
  }
}

/** The indexes a 500 lists (`{ "<index>": { msg } }`), or undefined when it is not that body. */
function parseFailures(text: string): number[] | undefined {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
    const indexes = Object.keys(body).map(Number);
    return indexes.every((index) => Number.isInteger(index) && index >= 0) ? indexes : undefined;
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
