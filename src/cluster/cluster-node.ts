// The cluster part of a node, built from ports: the core (cluster-core/), the shell around it
// (cluster-shell.ts), the data plane (data-plane.ts) and the peer calls they answer. The node
// (src/node.ts) passes the gRPC peer port, LevelDB and real timers; the shell simulation
// (test/sim/sim-node.ts) a virtual network, a simulated disk and virtual timers. Both call
// prepareClusterNode and then its start, so the wiring the simulation checks is the wiring
// nodes run (docs/architecture.md).
//
// It is built in two phases because the peer port needs the core before it opens (who may
// send an Admit, the keys of the members of the core's table), and the shell and data plane
// need the open port: prepareClusterNode builds the core from what the node persisted; the
// caller opens its peer port with it; start builds the rest on that port.

import { assert } from '../lib/assert.js';
import { ClusterCore } from '../cluster-core/core.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { CoreConfig, Member, Membership, PersistedCoreState, Slot } from '../protocol/cluster-types.js';
import type { Damage } from '../repair/repair-service.js';
import type { RepositoryName } from '../storage/repository.js';
import { ClusterShell, type ChunkStore } from './cluster-shell.js';
import { ADMIN_COMMAND, ADMIT, CORE_MESSAGE, type NodeStatusReply } from './core-messages.js';
import { guardedChunks, startDataPlane, type DataPlane, type DataPlaneLimits, type DataPlanePorts } from './data-plane.js';
import type { ClusterEventBus } from './events.js';

export interface ClusterNodeLimits extends DataPlaneLimits {
  heartbeatIntervalMs: number;
  /** How long an inbound chunk waits for its ack before the durable point is sent instead. */
  ackWaitMs: number;
}

/** What the core starts from. */
export interface ClusterCoreStart {
  config: CoreConfig;
  /** The table and change this node persisted, if any (core-state-store.ts). */
  persisted: PersistedCoreState | undefined;
  /** This node as a member of a table. */
  self: Member;
  /** Starts a cluster of its own (no --join, and no table lost: core-state-store.ts, joinIfTableLost). */
  lone: boolean;
  /** This process's run, new at each start (CoreBootstrap.run). */
  run: number;
}

export interface ClusterNodePorts extends Omit<DataPlanePorts, 'core' | 'shell' | 'dropPartition' | 'limits'> {
  /** Transfer chunks read and stored, and partitions dropped once handed off. */
  chunks: ChunkStore & { dropPartition(repo: RepositoryName, stream: string, partition: number): Promise<void> };
  events: ClusterEventBus;
  saveCoreState(state: PersistedCoreState): Promise<void>;
  /** The membership (or a member's availability) changed. */
  onMembership(membership: Membership): void;
  /** The core broke an invariant or a persist failed: the node must stop (cluster-shell.ts). */
  onFatal(error: unknown): void;
  /** What Ping and Admit answer: what this node shows anyone. */
  status(): NodeStatusReply;
  limits: ClusterNodeLimits;
}

export interface ClusterNode {
  core: ClusterCore;
  shell: ClusterShell;
  plane: DataPlane;
  /** The (partition, replicas) pairs the streams use: the core plans ownership of these. */
  reportSlots(slots: Slot[]): void;
  /** Starts the shell, then the data plane (with the damage found at open or stored before). */
  start(damage: Damage | undefined): void;
  stop(): void;
}

/** The first phase: the core, and what the peer port asks of it before the rest is built. */
export interface PreparedClusterNode {
  core: ClusterCore;
  /** Whether a stranger's Admit may be taken: only while this node has no table (epoch 0). */
  awaitingAdmission(): boolean;
  /** The key of a member of the core's table that has not left (peer-server.ts, memberKey). */
  memberKey(name: string): string | undefined;
  /** The second phase, once the peer port is open: the shell, the data plane and their peer calls. */
  start(ports: ClusterNodePorts): ClusterNode;
}

export function prepareClusterNode(start: ClusterCoreStart): PreparedClusterNode {
  const core = new ClusterCore(start.config, start.persisted, { self: start.self, lone: start.lone, run: start.run });
  let started = false;
  return {
    core,
    awaitingAdmission: () => core.membership().epoch === 0,
    memberKey: (name) => core.membership().members.find((member) => member.name === name && member.state !== 'Left')?.publicKey,
    start(ports) {
      // One shell and one data plane per core: a second would run the same core twice.
      assert(!started, `the cluster node ${start.config.name} is started twice`);
      started = true;
      return startClusterNode(core, ports);
    },
  };
}

function startClusterNode(core: ClusterCore, ports: ClusterNodePorts): ClusterNode {
  const { endpoint, limits } = ports;
  // The shell ticks every quarter heartbeat and answers an unacked chunk after ackWaitMs: neither may be zero.
  assert(limits.heartbeatIntervalMs > 0 && limits.ackWaitMs > 0, `heartbeat ${limits.heartbeatIntervalMs} ms, ack wait ${limits.ackWaitMs} ms`);
  // The shell is built first and the plane reads it; the shell reaches the plane only through
  // these two closures, which run once the node has started.
  let plane: DataPlane | undefined;
  const shell = new ClusterShell({
    core, transport: endpoint, events: ports.events, log: ports.log, timers: ports.timers,
    chunks: guardedChunks(ports.chunks, () => plane),
    saveCoreState: (state) => ports.saveCoreState(state),
    onMembership: (membership) => ports.onMembership(membership),
    onDrop: (repo, slots) => plane?.handOff.schedule(repo, slots),
    onAvailability: (node, available) => {
      if (!available) plane?.followUps.writerUnavailable(node);
    },
    onRestart: (node) => plane?.followUps.writerUnavailable(node),
    onFatal: (error) => ports.onFatal(error),
    heartbeatIntervalMs: limits.heartbeatIntervalMs,
    peerDeadlineMs: limits.peerDeadlineMs,
    ackWaitMs: limits.ackWaitMs,
  });
  const started = startDataPlane({
    ...ports,
    core,
    shell: {
      adopt: (from, membership) => shell.adopt(from, membership),
      suspect: (node) => shell.submit({ type: 'unreachable', node }),
      finalSynced: (changeId) => shell.submit({ type: 'final-sync-done', changeId }),
      damaged: (damaged) => shell.submit({ type: 'damage', damaged }),
    },
    dropPartition: (repo, stream, partition) => ports.chunks.dropPartition(repo, stream, partition),
  });
  plane = started;
  serveShell(endpoint, shell, ports.status);
  return {
    core, shell, plane: started,
    reportSlots: (slots) => shell.submit({ type: 'slots', slots }),
    start(damage) {
      shell.start();
      started.start(damage);
    },
    stop() {
      shell.stop();
      started.stop();
    },
  };
}

/** The peer calls the shell answers: the core's messages, an Admit, admin commands, transfer chunks. */
function serveShell(endpoint: PeerEndpoint, shell: ClusterShell, status: () => NodeStatusReply): void {
  endpoint.handle(CORE_MESSAGE, async (sender, message) => {
    shell.submit({ type: 'receive', from: sender, message });
    return {};
  });
  endpoint.handle(ADMIT, async (sender, admit) => {
    shell.submit({ type: 'receive', from: sender, message: { type: 'membership', membership: admit.membership } });
    return status();
  });
  endpoint.handle(ADMIN_COMMAND, (_sender, command) => shell.admin(command));
  endpoint.handleTransfer((sender, chunk) => shell.receiveChunk(sender, chunk));
}
