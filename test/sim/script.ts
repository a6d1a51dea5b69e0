// Scripted scenarios for the cluster core (they read like a script: `add c`, `tick 10`,
// `deliver a→c`, `crash b`, `expect c Joining`). The same SimCluster as the random simulation,
// with a manual network: messages wait until the script delivers them (or `settle` delivers
// everything that is not held), storage I/O completes on settle, and time moves only on `tick`.

import type { AdminResult, CoreEffect, NodeState, PeerMessage, Slot } from '../../src/protocol/cluster-types.js';
import { SimCluster, type AckedRecord, type PendingMessage, type SimConfig } from './cluster.js';
import { Prng } from './prng.js';
import type { DataRepo } from './storage.js';

export interface ScriptOptions {
  slots?: Slot[];
  heartbeatIntervalMs?: number;
  failureTimeoutMs?: number;
  transferStallMs?: number;
  transferWindowChunks?: number;
  chunkRecords?: number;
  uncountedChunks?: number;
  tickMs?: number;
}

type MessageType = PeerMessage['type'];
type Filter = (message: PendingMessage) => boolean;

/** Matches messages by link and type: `link('a', 'c', 'transfer-chunk')`; '*' for any node. */
export function link(from: string, to: string, type?: MessageType): Filter {
  return (waiting) => (from === '*' || waiting.from === from) && (to === '*' || waiting.to === to) && (type === undefined || waiting.message.type === type);
}

export class ScriptedCluster {
  readonly sim: SimCluster;
  private readonly held: Filter[] = [];
  private readonly lost: Filter[] = [];
  private requests = 0;
  private records = 0;

  constructor(options: ScriptOptions = {}) {
    const slots = options.slots ?? Array.from({ length: 4 }, (_, partition) => ({ partition, replicas: 2 }));
    const config: SimConfig = {
      core: {
        heartbeatIntervalMs: options.heartbeatIntervalMs ?? 50,
        failureTimeoutMs: options.failureTimeoutMs ?? 200,
        transferStallMs: options.transferStallMs ?? 300,
        transferWindowChunks: options.transferWindowChunks ?? 2,
      },
      tickMs: options.tickMs ?? 10,
      chunkRecords: options.chunkRecords ?? 2,
      uncountedChunks: options.uncountedChunks ?? 0,
      ioDelayMs: [0, 0],
      hintReplayMs: 100,
      slots,
      kvKeys: ['kv/streams/s1'],
      network: 'manual',
      faults: { dropRate: 0, duplicateRate: 0, delayMs: [0, 0] },
    };
    this.sim = new SimCluster(new Prng(1), config);
  }

  get now(): number {
    return this.sim.now;
  }

  get slots(): Slot[] {
    return this.sim.config.slots;
  }

  /** `start a`: the first node, a cluster of one. */
  lone(name: string): this {
    this.sim.addNode(name, true);
    this.sim.start(name);
    return this;
  }

  /** `start c --join`: a Pending node that waits to be added. */
  spawn(name: string): this {
    this.sim.addNode(name, false);
    this.sim.start(name);
    return this;
  }

  /** `POST /cluster/nodes` answered by `on` (the coordinator, unless the test says otherwise). */
  add(name: string, on = 'a'): AdminResult {
    const member = this.sim.node(name).member;
    const { state: _state, ...withoutState } = member;
    return this.admin(on, { type: 'add', member: withoutState });
  }

  /** `DELETE /cluster/nodes/:name` answered by `on`. */
  remove(name: string, on = 'a'): AdminResult {
    return this.admin(on, { type: 'remove', name });
  }

  private admin(on: string, command: Parameters<SimCluster['admin']>[2]): AdminResult {
    const result = this.sim.admin(on, `request-${this.requests++}`, command);
    if (result === undefined) throw new Error(`script: ${on} gave no admin result`);
    return result;
  }

  /** Client writes through `via`: `count` records into `slot`; returns the acknowledged ones. */
  write(via: string, slot: Slot, count: number, repo: DataRepo = 'ssr'): AckedRecord[] {
    const acked: AckedRecord[] = [];
    for (let index = 0; index < count; index += 1) {
      const id = `w${String(this.records++).padStart(4, '0')}`;
      if (this.sim.clientWrite(via, { id, repo, slot })) acked.push(this.sim.acked[this.sim.acked.length - 1]!);
    }
    return acked;
  }

  /** Messages matching `filter` wait (settle skips them) until released. */
  hold(filter: Filter): () => void {
    this.held.push(filter);
    return () => this.held.splice(this.held.indexOf(filter), 1);
  }

  /** Messages matching `filter` are lost from now on, until restored. */
  lose(filter: Filter): () => void {
    this.lost.push(filter);
    return () => this.lost.splice(this.lost.indexOf(filter), 1);
  }

  /** `deliver a→c`: delivers the waiting messages of that link (optionally one type), in order. */
  deliver(from: string, to: string, type?: MessageType): number {
    return this.sim.deliverPending(link(from, to, type));
  }

  /** Delivers the first waiting message that matches, held or not; false if there is none. */
  deliverFirst(filter: Filter): boolean {
    let first = true;
    return this.sim.deliverPending((waiting) => first && filter(waiting) && !(first = false)) === 1;
  }

  /** Delivers every message that is not held, and completes storage I/O, until nothing moves. */
  settle(roundsMax = 10_000): this {
    for (let round = 0; round < roundsMax; round += 1) {
      this.discardLost();
      const delivered = this.sim.deliverPending((waiting) => !this.held.some((filter) => filter(waiting)));
      const ran = this.sim.flushIo();
      if (delivered === 0 && ran === 0) return this;
    }
    throw new Error(`script: still moving after ${roundsMax} rounds`);
  }

  /** `tick 10`: time moves by `ms`, in steps of tickMs; every live node ticks, then the cluster settles. */
  tick(ms: number): this {
    const until = this.sim.now + ms;
    while (this.sim.now < until) {
      this.sim.now = Math.min(until, this.sim.now + this.sim.config.tickMs);
      for (const node of this.sim.nodes.values()) if (node.alive) this.sim.stepNode(node, { type: 'tick', now: this.sim.now });
      // The shell's part of a leave: a leaving node with no hints left says it handed off.
      for (const node of this.sim.nodes.values()) if (node.alive) this.sim.reportHandOff(node);
      this.settle();
    }
    return this;
  }

  crash(name: string): this {
    this.sim.crash(name);
    // What was on the wire to it is lost with the process, and its streams break.
    for (const waiting of this.sim.pending) if (waiting.to === name) this.sim.chunkLost(waiting.from, waiting.to, waiting.message);
    this.sim.pending.splice(0, this.sim.pending.length, ...this.sim.pending.filter((waiting) => waiting.to !== name));
    return this;
  }

  restart(name: string): this {
    this.sim.start(name);
    return this;
  }

  /** `expect c Joining` as seen by `observer`. */
  stateOf(subject: string, observer = subject): NodeState | undefined {
    return this.sim.node(observer).core?.membership().members.find((member) => member.name === subject)?.state;
  }

  /** Effects `name` produced in this incarnation, optionally of one type. */
  effects<T extends CoreEffect['type']>(name: string, type: T): Array<Extract<CoreEffect, { type: T }>> {
    return this.sim.node(name).effects.map((entry) => entry.effect).filter((effect): effect is Extract<CoreEffect, { type: T }> => effect.type === type);
  }

  /** Messages `name` sent in this incarnation, optionally of one type. */
  sent<T extends MessageType>(name: string, type: T): Array<{ to: string; message: Extract<PeerMessage, { type: T }> }> {
    return this.effects(name, 'send')
      .filter((effect) => effect.message.type === type)
      .map((effect) => ({ to: effect.to, message: effect.message as Extract<PeerMessage, { type: T }> }));
  }

  /** Forgets the effects recorded so far, so the next expectations see only what follows. */
  mark(): this {
    for (const node of this.sim.nodes.values()) node.effects = [];
    return this;
  }

  failures(): string[] {
    return this.sim.failures;
  }

  private discardLost(): void {
    if (this.lost.length === 0) return;
    const kept = this.sim.pending.filter((waiting) => !this.lost.some((filter) => filter(waiting)));
    for (const waiting of this.sim.pending) if (!kept.includes(waiting)) this.sim.chunkLost(waiting.from, waiting.to, waiting.message);
    this.sim.pending.splice(0, this.sim.pending.length, ...kept);
  }
}
