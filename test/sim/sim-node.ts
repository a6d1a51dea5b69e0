// One node of the shell simulation: the real cluster core, shell and data plane
// (src/cluster/data-plane.ts: replica writer and router, hint keeper and replayer, hand-offs,
// repair), built by the functions that build them in a node (src/cluster/cluster-node.ts,
// prepareClusterNode and its start) from simulated ports: a virtual network, a simulated disk
// and virtual timers. Only the ports are the simulation's.

import { pino } from 'pino';
import type { ClusterShell } from '../../src/cluster/cluster-shell.js';
import { prepareClusterNode, type ClusterNode } from '../../src/cluster/cluster-node.js';
import { newestState, tableIdentity, tableLost } from '../../src/cluster/core-state-store.js';
import type { ClusterCore } from '../../src/cluster-core/core.js';
import { memberNamed } from '../../src/cluster-core/membership.js';
import type { CoreConfig, Member, Slot } from '../../src/protocol/cluster-types.js';
import type { DataPlane } from '../../src/cluster/data-plane.js';
import { ClusterEventBus } from '../../src/cluster/events.js';
import { acceptsKindFrom } from '../../src/cluster/peer-server.js';
import type { RepairStream } from '../../src/repair/repair-service.js';
import type { RepositoryName } from '../../src/storage/repository.js';
import type { Prng } from './prng.js';
import { SimDisk, SimDiskState, type DiskFaults } from './sim-disk.js';
import type { SimNetwork } from './sim-network.js';
import type { Incarnation, VirtualWorld } from './virtual-world.js';
import { ADMIT } from '../../src/cluster/core-messages.js';

export interface SimNodeConfig {
  core: Omit<CoreConfig, 'name'>;
  streams: RepairStream[];
  kvKeys: string[];
  writeDeadlineMs: number;
  peerDeadlineMs: number;
  hintReplayIntervalMs: number;
}


/** A running incarnation of a node. */
export interface SimProcess {
  core: ClusterCore;
  shell: ClusterShell;
  plane: DataPlane;
  node: ClusterNode;
  disk: SimDisk;
}

export class SimClusterNode implements Incarnation {
  alive = false;
  pausedUntil = 0;
  incarnation = 0;
  everStarted = false;
  port: number;
  readonly disk = new SimDiskState();
  process: SimProcess | undefined;

  constructor(
    readonly name: string,
    readonly lone: boolean,
    private readonly world: VirtualWorld,
    private readonly network: SimNetwork,
    private readonly prng: Prng,
    private readonly config: SimNodeConfig,
    private readonly faults: () => DiskFaults,
    private readonly onDrop: (node: string, repo: RepositoryName, stream: string, partition: number, held: readonly string[]) => void,
    private readonly onFatal: (node: string, error: unknown) => void,
    /** Where the node's own log lines go (a replay shows them; a run of many seeds drops them). */
    private readonly logLine?: (line: string) => void,
  ) {
    this.port = 9000;
    if (lone) for (const key of config.kvKeys) this.disk.kv.add(key);
  }

  member(lone = this.lone): Member {
    return { name: this.name, publicKey: simulatedPublicKey(this.name), address: '10.0.0.1', port: this.port, httpPort: 8000, zone: 'z', state: lone ? 'Joined' : 'Pending' };
  }

  /** Starts a new incarnation from what the disk holds. */
  start(): void {
    if (this.alive) return;
    // The newest of the database's table and its copy, and the copy brought up to it
    // (core-state-store.ts, loadCoreState).
    const persisted = newestState(this.disk.coreState, this.disk.tableCopy);
    if (persisted !== undefined && (this.disk.tableCopy === undefined || tableIdentity(this.disk.tableCopy) !== tableIdentity(persisted.membership))) {
      this.disk.tableCopy = structuredClone(persisted.membership);
    }
    // A first node that once had a table and holds none lost it: it waits to be admitted
    // again rather than start a cluster of its own (core-state-store.ts, joinIfTableLost).
    const lone = this.lone && !tableLost({ wasMember: this.disk.member, hasTable: persisted !== undefined });
    this.alive = true;
    this.pausedUntil = 0;
    this.incarnation += 1;
    this.everStarted = true;
    // Each incarnation is its own Incarnation object: the old one's events stay dead.
    const owner = new ProcessHandle(this);
    const log = this.logLine === undefined
      ? pino({ level: 'silent' })
      : pino({ level: 'debug', base: { node: this.name } }, { write: (line: string) => this.logLine!(compactLogLine(line)) });
    const timers = this.world.timersOf(owner);
    const disk = new SimDisk(this.disk, this.world, owner, this.prng.fork(), this.faults, (repo, stream, partition, held) => this.onDrop(this.name, repo, stream, partition, held));
    const prepared = prepareClusterNode({ config: { ...this.config.core, name: this.name }, persisted: structuredClone(persisted), self: this.member(lone), lone, run: this.incarnation });
    const { core } = prepared;
    const memberOf = (name: string) => memberNamed(core.membership(), name);
    const endpoint = this.network.attach(
      {
        name: this.name,
        port: this.port,
        portOf: (to) => memberOf(to)?.port,
        admits: (sender, kind) => (kind === ADMIT.name && prepared.awaitingAdmission()) || (memberOf(sender) !== undefined && acceptsKindFrom(memberOf(sender)!.state, kind)),
      },
      owner,
    );
    endpoint.noticeDeadlineMs = this.config.peerDeadlineMs;
    const node = prepared.start({
      localName: this.name, endpoint, events: new ClusterEventBus(), log, timers, wallClock: () => this.world.now,
      chunks: disk.chunks,
      saveCoreState: (state) => disk.saveCoreState(state),
      onMembership: () => {},
      onFatal: (error) => this.onFatal(this.name, error),
      status: () => {
        const self = core.membership().members.find((member) => member.name === this.name)!;
        return { name: this.name, publicKey: self.publicKey, state: self.state, zone: self.zone, httpPort: self.httpPort, address: self.address, port: self.port };
      },
      replica: disk.replica,
      partitions: disk.partitions,
      hints: disk.hints,
      committer: disk.committer,
      followUps: { storage: disk.followUps, stored: disk.storedFollowUps() },
      // The simulated partitions key every record by its writeId.
      recordKey: (_repo, record) => record.writeId,
      definitions: { records: () => [], apply: async () => {} },
      persistDamage: async (damage) => void (this.disk.damage = damage),
      streams: () => this.config.streams,
      replicasOf: (stream) => this.config.streams.find((each) => each.key === stream)?.replicas ?? 1,
      limits: {
        heartbeatIntervalMs: this.config.core.heartbeatIntervalMs,
        ackWaitMs: Math.max(50, Math.floor(this.config.core.transferStallMs / 2)),
        writeDeadlineMs: this.config.writeDeadlineMs,
        peerDeadlineMs: this.config.peerDeadlineMs,
        hintReplayIntervalMs: this.config.hintReplayIntervalMs,
        repairIntervalMs: 0,
        repairPacingMs: 0,
      },
    });
    node.reportSlots(slotsOf(this.config.streams));
    node.start(this.disk.damage);
    const { shell, plane } = node;
    this.process = { core, shell, plane, node, disk };
  }

  crash(loseUnsynced: boolean): void {
    if (!this.alive) return;
    this.alive = false;
    this.process?.node.stop();
    this.process = undefined;
    this.disk.crash(loseUnsynced);
  }

  pause(untilMs: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
  }
}

/** The incarnation a process's events belong to: alive until that process ends. */
class ProcessHandle implements Incarnation {
  private readonly incarnation: number;

  constructor(private readonly node: SimClusterNode) {
    this.incarnation = node.incarnation;
  }

  get alive(): boolean {
    return this.node.alive && this.node.incarnation === this.incarnation;
  }

  get pausedUntil(): number {
    return this.node.pausedUntil;
  }
}

/** Every (partition, replicas) pair the streams use. */
export function slotsOf(streams: readonly RepairStream[]): Slot[] {
  const seen = new Map<string, Slot>();
  for (const stream of streams) {
    for (let partition = 0; partition < stream.ringSize; partition += 1) seen.set(`${partition}/${stream.replicas}`, { partition, replicas: stream.replicas });
  }
  return [...seen.values()];
}

/** A pino JSON line as "node: msg {fields}". */
function compactLogLine(line: string): string {
  const { level: _level, time: _time, pid: _pid, hostname: _hostname, node, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
  const fields = Object.keys(rest).length === 0 ? '' : ` ${JSON.stringify(rest).slice(0, 300)}`;
  return `${String(node)}: ${String(msg)}${fields}`;
}

/** A well-formed ed25519 public key (base64 of 32 bytes) made from the node's name: peers check the form. */
function simulatedPublicKey(name: string): string {
  return Buffer.from(name.padEnd(32, '.').slice(0, 32)).toString('base64');
}
