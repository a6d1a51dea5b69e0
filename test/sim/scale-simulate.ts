// The shell simulation at the sizes users grow to (docs/cluster.md, "Sizes"): tens to
// hundreds of nodes, each the real core, shell and data plane (sim-node.ts) over the
// virtual network and disks, with no faults. The cluster starts already formed (every
// node's table and its share of a data set are laid down before the first start, as a
// cluster that grew there would hold them), then idles, then receives several joins and
// leaves at once: one starts, the others wait in the queue. What a run reports:
// - per change: virtual time from its start to its completion, messages sent meanwhile,
//   records and bytes its transfers moved against the minimum (the records of each slot
//   that a new owner did not hold);
// - background traffic per node per second while idle: heartbeats and tables;
// and it fails when a change does not complete, an invariant breaks, a record is missing
// from an owner, or a node holds a partition it does not own.
//
//   npx vitest run test/unit/cluster-scale.sim.test.ts         (a small size, in the suite)
//   node dist/test/sim/scale-main.js --nodes 256 --ring-size 4096   (one size, as the README table)

import { ringOwners } from '../../src/cluster-core/placement.js';
import { encodeBody } from '../../src/peer/codec.js';
import { ADMIT, CORE_MESSAGE } from '../../src/cluster/core-messages.js';
import type { PeerMessageKind } from '../../src/peer/kinds.js';
import type { AdminCommand, Membership } from '../../src/protocol/cluster-types.js';
import type { RepairStream } from '../../src/repair/repair-service.js';
import type { RepositoryName, StoredRecord } from '../../src/storage/repository.js';
import { Prng } from './prng.js';
import { SimClusterNode, type SimNodeConfig } from './sim-node.js';
import { SimNetwork } from './sim-network.js';
import { VirtualWorld } from './virtual-world.js';

export interface ScaleSimOptions {
  nodes: number;
  ringSize: number;
  replicas: number;
  /** Records of each stream (one ssr, one tsr) in each partition. */
  recordsPerPartition: number;
  joins: number;
  leaves: number;
  heartbeatIntervalMs: number;
  /** Virtual time the formed cluster idles before the changes are asked for (background traffic is measured here). */
  idleMs: number;
  /** Bound on the changes, virtual ms. */
  changesLimitMs: number;
  seed: number;
}

export interface ChangeCost {
  id: string;
  virtualMs: number;
  messages: number;
  messageBytes: number;
  /** Bytes by what was sent: tables, heartbeats, transfer chunks, and each other kind of call. */
  bytesByKind: Record<string, number>;
  recordsMoved: number;
  recordsMinimum: number;
  bytesMoved: number;
  bytesMinimum: number;
}

export interface Traffic {
  messagesPerNodePerSecond: number;
  bytesPerNodePerSecond: number;
}

export interface ScaleSimResult {
  options: ScaleSimOptions;
  ok: boolean;
  failures: string[];
  changes: ChangeCost[];
  idle: Traffic;
  /** Over the whole time changes ran (tables, progress, transfers included). */
  duringChanges: Traffic;
  realSeconds: number;
}

const STREAM_KINDS: readonly RepositoryName[] = ['ssr', 'tsr'];
const SAMPLE_MS = 50;

export async function simulateScale(options: ScaleSimOptions): Promise<ScaleSimResult> {
  const started = performance.now();
  const run = new ScaleRun(options);
  try {
    await run.play();
  } catch (error) {
    run.failures.push(`harness error: ${(error as Error).stack ?? String(error)}`);
  }
  return { options, ok: run.failures.length === 0, failures: run.failures, changes: run.changes, idle: run.idle, duringChanges: run.duringChanges, realSeconds: (performance.now() - started) / 1000 };
}

class ScaleRun {
  readonly world = new VirtualWorld();
  readonly network: SimNetwork;
  readonly failures: string[] = [];
  readonly changes: ChangeCost[] = [];
  idle: Traffic = { messagesPerNodePerSecond: 0, bytesPerNodePerSecond: 0 };
  duringChanges: Traffic = { messagesPerNodePerSecond: 0, bytesPerNodePerSecond: 0 };
  private readonly prng: Prng;
  private readonly config: SimNodeConfig;
  private readonly streams: RepairStream[];
  private readonly nodes = new Map<string, SimClusterNode>();
  private readonly names: string[];
  private messages = 0;
  private messageBytes = 0;
  private readonly bytesByKind = new Map<string, number>();
  readonly tableSends = new Map<string, number>();
  /** Encoded sizes of tables already counted once: a broadcast sends one table object to every peer. */
  private readonly tableBytes = new WeakMap<Membership, number>();
  private readonly recordBytes: number;

  constructor(private readonly options: ScaleSimOptions) {
    this.prng = new Prng(options.seed);
    this.streams = STREAM_KINDS.map((repo) => ({ key: `sim/${repo}/r${options.replicas}`, repo, replicas: options.replicas, ringSize: options.ringSize }));
    const heartbeat = options.heartbeatIntervalMs;
    this.config = {
      core: { heartbeatIntervalMs: heartbeat, failureTimeoutMs: 3 * heartbeat, transferStallMs: 10 * heartbeat, transferWindowChunks: 4 },
      streams: this.streams,
      kvKeys: ['kv/streams/s1', 'kv/tenants/t1'],
      writeDeadlineMs: heartbeat,
      peerDeadlineMs: 5 * heartbeat,
      hintReplayIntervalMs: 2 * heartbeat,
    };
    this.network = new SimNetwork(this.world, this.prng.fork(), { dropRate: 0, delayMs: [1, 3] });
    this.network.observe = (from, to, kind, body) => {
      this.count(kind, body);
      if (process.env.SCALE_TABLES !== undefined && kind !== 'TransferChunk' && kind.name === CORE_MESSAGE.name && (body as { type: string }).type === 'membership') {
        const key = `${from}>${to}`;
        this.tableSends.set(key, (this.tableSends.get(key) ?? 0) + 1);
      }
    };
    this.names = Array.from({ length: options.nodes }, (_, index) => `n${String(index).padStart(4, '0')}`);
    this.recordBytes = JSON.stringify(this.record(this.streams[0]!, 0, 0)).length + 1;
  }

  async play(): Promise<void> {
    this.form();
    const joiners = Array.from({ length: this.options.joins }, (_, index) => this.node(`m${String(index).padStart(4, '0')}`, false));
    for (const node of joiners) node.start();
    // Idle: tables confirmed, then background traffic measured over the rest.
    const warmUp = 3 * this.options.heartbeatIntervalMs;
    await this.world.runUntil(warmUp);
    const idleFrom = this.mark();
    await this.world.runUntil(warmUp + this.options.idleMs);
    this.idle = this.traffic(idleFrom);
    const changesFrom = this.mark();
    const answers = this.askForChanges(joiners);
    await this.followChanges();
    this.duringChanges = this.traffic(changesFrom);
    await answers;
    if (this.failures.length === 0) this.checkFinal();
  }

  /** Every node's table (epoch 1, all Joined) and its share of the data, laid down before the first start. */
  private form(): void {
    const membership: Membership = { epoch: 1, members: [], change: undefined };
    for (const name of this.names) membership.members.push({ ...this.node(name, name === this.names[0]).member(true), state: 'Joined' });
    for (const name of this.names) {
      const disk = this.nodes.get(name)!.disk;
      disk.coreState = { membership: structuredClone(membership), incoming: [] };
      disk.tableCopy = structuredClone(membership);
      disk.member = true;
      for (const key of this.config.kvKeys) disk.kv.add(key);
    }
    const ring = Object.freeze([...this.names]);
    for (const stream of this.streams) {
      for (let partition = 0; partition < this.options.ringSize; partition += 1) {
        const owners = ringOwners(ring, { partition, replicas: stream.replicas });
        for (let index = 0; index < this.options.recordsPerPartition; index += 1) {
          for (const owner of owners) this.nodes.get(owner)!.disk.keep(stream.repo, this.record(stream, partition, index));
        }
      }
    }
    for (const name of this.names) this.nodes.get(name)!.start();
  }

  private record(stream: RepairStream, partition: number, index: number): StoredRecord {
    return { stream: stream.key, partition, timestamp: index, writeId: `w${partition}.${index}`, value: '{"v":1}' };
  }

  /** Every join and leave asked of the admin authority at once, interleaved: one starts, the rest queue. */
  private async askForChanges(joiners: readonly SimClusterNode[]): Promise<void> {
    const authority = this.nodes.get(this.names[0]!)!.process!;
    const leaving = this.prng.shuffle(this.names.slice(1)).slice(0, this.options.leaves);
    const commands: AdminCommand[] = [];
    for (let index = 0; index < Math.max(joiners.length, leaving.length); index += 1) {
      const joiner = joiners[index];
      if (joiner !== undefined) {
        const { state: _state, ...member } = joiner.member();
        commands.push({ type: 'add', member });
      }
      if (leaving[index] !== undefined) commands.push({ type: 'remove', name: leaving[index]! });
    }
    // Answered as the world runs (followChanges).
    const answers = commands.map((command) => authority.shell.admin(command));
    for (const [index, answer] of (await Promise.all(answers)).entries()) {
      if (!answer.ok) this.failures.push(`${JSON.stringify(commands[index]).slice(0, 80)} refused: ${answer.status} ${answer.message}`);
    }
  }

  /**
   * Runs until no change is in flight or queued, noting each change's start, end and costs
   * as the admin authority's table shows them after every event (a change's transfers may
   * take less than a sampling period).
   */
  private async followChanges(): Promise<void> {
    const limit = this.world.now + this.options.changesLimitMs;
    let current: { id: string; from: ReturnType<ScaleRun['mark']>; minimum: { records: number; bytes: number } } | undefined;
    let traced = '';
    this.world.afterEvent = () => {
      const table = this.authorityTable();
      const id = table.change?.id;
      if (process.env.SCALE_TRACE !== undefined) {
        const transfers = table.change?.transfers ?? [];
        const line = `e${table.epoch} ${id ?? '-'} ${transfers.filter((transfer) => transfer.complete).length}/${transfers.length} synced=${table.change?.finalSynced === true} queue=${(table.queue ?? []).length}`;
        if (line !== traced) console.log(`${this.world.now} ${line}`);
        traced = line;
      }
      if (current !== undefined && current.id !== id) {
        if (process.env.SCALE_TABLES !== undefined) {
          const bySender = new Map<string, number>();
          const byReceiver = new Map<string, number>();
          for (const [key, count] of this.tableSends) { const [from, to] = key.split('>'); bySender.set(from!, (bySender.get(from!) ?? 0) + count); byReceiver.set(to!, (byReceiver.get(to!) ?? 0) + count); }
          const top = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([name, count]) => `${name}:${count}`).join(' ');
          console.log(`${current.id}: tables ${[...this.tableSends.values()].reduce((a, b) => a + b, 0)}; senders ${top(bySender)}; receivers ${top(byReceiver)}; pairs ${top(this.tableSends)}`);
          this.tableSends.clear();
        }
        this.changes.push(this.costOf(current.id, current.from, current.minimum));
        current = undefined;
      }
      if (current === undefined && id !== undefined) current = { id, from: this.mark(), minimum: this.minimumOf(table) };
    };
    try {
      while (this.world.now < limit) {
        const table = this.authorityTable();
        if (table.change === undefined && (table.queue ?? []).length === 0 && this.settled()) return;
        await this.world.runUntil(this.world.now + SAMPLE_MS);
      }
    } finally {
      this.world.afterEvent = undefined;
    }
    this.failures.push(`changes not done after ${this.options.changesLimitMs} ms: ${this.authorityTable().change?.id ?? 'none in flight'}, queued ${(this.authorityTable().queue ?? []).map((entry) => entry.id).join(',')}`);
  }

  /** The table of the lowest-named node still a data member (the admin authority). */
  private authorityTable(): Membership {
    for (const node of this.nodes.values()) {
      const table = node.process?.core.membership();
      const self = table?.members.find((member) => member.name === node.name);
      if (table !== undefined && self?.state === 'Joined') return table;
    }
    throw new Error('no Joined node');
  }

  private settled(): boolean {
    const tables = [...this.nodes.values()].map((node) => node.process?.core.membership());
    const epoch = tables[0]?.epoch;
    // Every shell idle too: a table is adopted before the drops it orders are scheduled.
    const handedOff = [...this.nodes.values()].every((node) => node.disk.hints.size === 0 && node.process!.shell.idle() && node.process!.plane.handOff.pendingDrops() === 0);
    return tables.every((table) => table !== undefined && table.epoch === epoch) && handedOff;
  }

  /** Records (and their bytes) that the new owners of each slot do not hold: what must move at least. */
  private minimumOf(table: Membership): { records: number; bytes: number } {
    const change = table.change!;
    const before = table.members.filter((member) => member.state === 'Joined' || member.state === 'Leaving').map((member) => member.name);
    const after = change.kind === 'join' ? [...before, change.node].sort() : before.filter((name) => name !== change.node);
    const [ringBefore, ringAfter] = [Object.freeze(before), Object.freeze(after)];
    let records = 0;
    for (const slot of change.slots) {
      const owners = ringOwners(ringBefore, slot);
      const gaining = ringOwners(ringAfter, slot).filter((name) => !owners.includes(name)).length;
      records += gaining * this.options.recordsPerPartition * this.streams.filter((stream) => stream.replicas === slot.replicas).length;
    }
    return { records, bytes: records * this.recordBytes };
  }

  private mark(): { at: number; messages: number; bytes: number; records: number; transferred: number; byKind: Map<string, number> } {
    let records = 0;
    let transferred = 0;
    for (const node of this.nodes.values()) {
      records += node.disk.transferredRecords;
      transferred += node.disk.transferredBytes;
    }
    return { at: this.world.now, messages: this.messages, bytes: this.messageBytes, records, transferred, byKind: new Map(this.bytesByKind) };
  }

  private costOf(id: string, from: ReturnType<ScaleRun['mark']>, minimum: { records: number; bytes: number }): ChangeCost {
    const to = this.mark();
    return {
      id,
      virtualMs: to.at - from.at,
      messages: to.messages - from.messages,
      messageBytes: to.bytes - from.bytes,
      recordsMoved: to.records - from.records,
      recordsMinimum: minimum.records,
      bytesMoved: to.transferred - from.transferred,
      bytesMinimum: minimum.bytes,
      bytesByKind: Object.fromEntries([...to.byKind].map(([kind, bytes]) => [kind, bytes - (from.byKind.get(kind) ?? 0)]).filter(([, bytes]) => (bytes as number) > 0)),
    };
  }

  private traffic(from: ReturnType<ScaleRun['mark']>): Traffic {
    const to = this.mark();
    const seconds = Math.max(1, to.at - from.at) / 1000;
    const nodes = this.nodes.size;
    return { messagesPerNodePerSecond: (to.messages - from.messages) / nodes / seconds, bytesPerNodePerSecond: (to.bytes - from.bytes) / nodes / seconds };
  }

  /** One message sent, and its encoded body's bytes (the envelope adds about 150 bytes, not counted). */
  private count(kind: PeerMessageKind<unknown, unknown> | 'TransferChunk', body: unknown): void {
    this.messages += 1;
    const [what, bytes] = this.sizeOf(kind, body);
    this.messageBytes += bytes;
    this.bytesByKind.set(what, (this.bytesByKind.get(what) ?? 0) + bytes);
  }

  private sizeOf(kind: PeerMessageKind<unknown, unknown> | 'TransferChunk', body: unknown): [string, number] {
    if (kind === 'TransferChunk') return ['chunks', (body as { chunk: { bytes: Uint8Array } }).chunk.bytes.length];
    const type = kind.name === CORE_MESSAGE.name ? (body as { type: string }).type : undefined;
    if (type === 'membership' || kind.name === ADMIT.name) {
      const table = (body as { membership: Membership }).membership;
      let bytes = this.tableBytes.get(table);
      if (bytes === undefined) this.tableBytes.set(table, (bytes = encodeBody(kind.request, body).length));
      return ['tables', bytes];
    }
    return [type ?? kind.name, encodeBody(kind.request, body).length];
  }

  /** Every record on each owner of its partition under the final table, and on no other node. */
  private checkFinal(): void {
    const table = this.authorityTable();
    const ring = Object.freeze(table.members.filter((member) => member.state === 'Joined').map((member) => member.name));
    for (const stream of this.streams) {
      for (let partition = 0; partition < this.options.ringSize; partition += 1) {
        const owners = ringOwners(ring, { partition, replicas: stream.replicas });
        for (const node of this.nodes.values()) {
          const held = node.disk.partitionOf(stream.repo, stream.key, partition).size;
          const wanted = owners.includes(node.name) ? this.options.recordsPerPartition : 0;
          if (held !== wanted) this.failures.push(`${node.name} holds ${held} records of ${stream.key} partition ${partition}, wanted ${wanted}`);
          if (this.failures.length > 20) return;
        }
      }
    }
  }

  private node(name: string, lone: boolean): SimClusterNode {
    const node = new SimClusterNode(
      name, lone, this.world, this.network, this.prng.fork(), this.config,
      () => ({ ioFailRate: 0, ioDelayMs: [1, 2], unsyncedLossRate: 0 }),
      () => {},
      (dead, error) => this.failures.push(`${dead} stopped: ${(error as Error).stack ?? String(error)}`),
    );
    this.nodes.set(name, node);
    return node;
  }
}
