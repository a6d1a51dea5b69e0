// Real node processes under the chaos suite's control: starting and growing the cluster as an
// operator would, carrying out the nemesis' faults, healing, and then gathering what every node
// holds and answers for the checker. Every process is a test/kit NodeProcess on 127.0.0.1 and
// ports picked here; cleanup() stops them by pid.

import { closeSync, openSync, readdirSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ownersOf } from '../../src/cluster-core/placement.js';
import type { Member, Membership, NodeState } from '../../src/protocol/cluster-types.js';
import { FAST_CLUSTER_ARGS, localNode } from '../kit/cluster.js';
import { freePort, http, NodeProcess, sleep, type HttpResult } from '../kit/node-process.js';
import { SseClient } from '../kit/sse-client.js';
import type { Prng } from '../sim/prng.js';
import type { StoredRecordRef } from './checker.js';
import type { ChaosDisk } from './disk-full.js';
import { describeFault, type Fault, type PartitionKind } from './nemesis.js';
import { CLIENTS, type ChaosNetwork, type Endpoint } from './network.js';
import type { WriterTarget } from './writers.js';

export const TENANT = 'chaos';

export interface ChaosStream {
  path: string;
  key: string;
  repo: 'ssr' | 'tsr';
}

export const CHAOS_STREAMS: readonly ChaosStream[] = [
  { path: '/streams/chaos/data/events', key: 'chaos/data/events', repo: 'ssr' },
  { path: '/streams/chaos/data/metrics', key: 'chaos/data/metrics', repo: 'tsr' },
];

type ProcessState = 'up' | 'down' | 'paused';

interface ChaosNode {
  process: NodeProcess;
  state: ProcessState;
  /** A fault is being carried out on it: the nemesis picks another. */
  busy: boolean;
  /** Removed from the cluster (Left): it stays running, and must hold nothing. */
  removed: boolean;
}

export interface ClusterStatus {
  epoch: number;
  change: string | null;
  /** Ids of the membership changes queued behind the one in flight. */
  queue: string[];
  members: Array<{ name: string; state: NodeState }>;
}

const REQUEST_TIMEOUT_MS = 10_000;
const STATUS_POLL_TIMEOUT_MS = 2_000;
/** The admin secret of nodes in network namespaces: beyond loopback a node requires one (docs/security.md). */
const NETWORK_ADMIN_SECRET = 'chaos-admin-secret-0123456789abcdef';

export class ChaosCluster {
  readonly log: string[] = [];
  private readonly nodes = new Map<string, ChaosNode>();
  private readonly faultsRunning = new Set<Promise<void>>();
  private readonly startedAt = Date.now();
  /** When the last partition healed (epoch ms), or undefined when none was made. */
  lastHealAt: number | undefined;
  /** When the last fault of any kind ended (a node restarted or resumed, a partition healed), epoch ms. */
  lastFaultEndAt: number | undefined;
  /** The partition in place, if any: its end is awaited by heal(). */
  private partitionRunning: Promise<void> | undefined;

  /**
   * With `network`, every node runs in a network namespace of its own and listens on its
   * address there (beyond loopback: an admin secret, join tokens, tokens off for clients);
   * without, on 127.0.0.1.
   */
  constructor(
    private readonly prng: Prng,
    private readonly extraArgs: readonly string[] = [],
    private readonly nemeses: {
      /** The disk-full nemesis, in runs that have one: its victim starts on its own filesystem. */
      readonly disk?: ChaosDisk;
      /** The partition nemesis, in runs that have one: every node in a namespace of its own. */
      readonly network?: ChaosNetwork;
    } = {},
  ) {}

  private get disk(): ChaosDisk | undefined {
    return this.nemeses.disk;
  }

  private get network(): ChaosNetwork | undefined {
    return this.nemeses.network;
  }

  /** Headers of membership requests: the admin secret of nodes beyond loopback. */
  private get adminHeaders(): Record<string, string> {
    return this.network === undefined ? {} : { authorization: `Bearer ${NETWORK_ADMIN_SECRET}` };
  }

  note(line: string): void {
    const seconds = ((Date.now() - this.startedAt) / 1000).toFixed(1).padStart(6);
    this.log.push(`${seconds}s ${line}`);
    if (process.env.CHAOS_VERBOSE === '1') console.log(`${seconds}s ${line}`);
  }

  names(): string[] {
    return [...this.nodes.keys()];
  }

  node(name: string): NodeProcess {
    const node = this.nodes.get(name);
    if (node === undefined) throw new Error(`chaos: no node ${name}`);
    return node.process;
  }

  /** Nodes the writers post to: every process that is a member, up or not (clients do not know). */
  targets(): WriterTarget[] {
    return [...this.nodes.values()].filter((node) => !node.removed).map((node) => ({ name: node.process.name, url: node.process.url }));
  }

  // -------------------------------------------------------------------------------------
  // Starting and growing.

  async startNode(name: string, join: boolean): Promise<NodeProcess> {
    const onDisk = this.disk?.plan.victim === name ? this.disk : undefined;
    const dataDir = onDisk === undefined ? {} : { dataDir: await onDisk.prepare() };
    const args = [...FAST_CLUSTER_ARGS, ...this.extraArgs, ...(onDisk?.args() ?? []), ...(await this.networkArgs(name, join))];
    // CHAOS_NODE_LOGS (`npm run chaos -- --node-logs DIR`): each node's own log at info, kept in DIR/<name>.log.
    const logs = globalThis.process.env.CHAOS_NODE_LOGS;
    const logging = logs === undefined ? {} : { logFile: `${logs}/${name}.log` };
    if (logs !== undefined) args.push('--log-level', 'info');
    const process = await NodeProcess.start({ name, join, ...dataDir, args, ...logging, ...(await this.networkPlace(name)) });
    this.nodes.set(name, { process, state: 'up', busy: false, removed: false });
    this.note(`started ${name}${join ? ' (--join)' : ''} on http ${process.httpPort}, peer ${process.peerPort}`);
    return process;
  }

  /** Where a node runs in network mode: its namespace and address, and the admin secret. */
  private async networkPlace(name: string): Promise<{ host?: string; launcher?: string[]; env?: Record<string, string> }> {
    if (this.network === undefined) return {};
    const host = await this.network.host(name);
    return { host: host.address, launcher: this.network.launcher(name), env: { TRIBUTARY_ADMIN_SECRET: NETWORK_ADMIN_SECRET } };
  }

  /** A node beyond loopback takes tokens off for clients, and joins with a join token from a member. */
  private async networkArgs(name: string, join: boolean): Promise<string[]> {
    if (this.network === undefined) return [];
    const args = ['--auth', 'off'];
    if (!join) return args;
    for (let attempt = 1; ; attempt += 1) {
      const via = this.someUpMember(name);
      const answer = via === undefined ? undefined : await request(via, 'GET', '/cluster/join-token', undefined, REQUEST_TIMEOUT_MS, this.adminHeaders).catch(() => undefined);
      if (answer?.status === 200) return [...args, '--join-token', answer.json.joinToken as string];
      if (attempt >= 30) throw new Error(`no member gave a join token for ${name}: ${answer?.status} ${answer?.text.slice(0, 200)}`);
      await sleep(1_000);
    }
  }

  /** The address other nodes reach a node's peer port at. */
  private peerAddress(node: NodeProcess): string {
    return node.host;
  }

  /** POST /cluster/nodes through any member until it is accepted, then waits for Joined. */
  async join(name: string, timeoutMs: number): Promise<void> {
    const joining = this.node(name);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const status = await this.anyStatus();
      if (status?.members.some((member) => member.name === name)) break;
      const via = this.someUpMember(name);
      if (via !== undefined && this.nodes.get(name)!.state === 'up') {
        try {
          const { publicKey } = await localNode(joining);
          const answer = await request(via, 'POST', '/cluster/nodes', { nodes: [{ name, publicKey, address: this.peerAddress(joining), port: joining.peerPort }] }, REQUEST_TIMEOUT_MS, this.adminHeaders);
          this.note(`POST /cluster/nodes ${name} via ${via.name}: ${answer.status}${answer.status === 200 ? '' : ` ${answer.text.slice(0, 160)}`}`);
          if (answer.status === 200) break;
        } catch (error) {
          this.note(`POST /cluster/nodes ${name} via ${via.name}: ${(error as Error).message}`);
        }
      }
      await sleep(1_000);
    }
    await this.waitMemberState(name, 'Joined', deadline);
  }

  /**
   * One POST /cluster/nodes of every named (started, --join) node through `via`, as an
   * operator adding several at once; returns what the answer said of each (`changes`:
   * started or queued) once every one of them is Joined.
   */
  async joinAll(via: NodeProcess, names: readonly string[], timeoutMs: number): Promise<unknown[]> {
    const deadline = Date.now() + timeoutMs;
    const entries = await Promise.all(names.map(async (name) => ({ name, publicKey: (await localNode(this.node(name))).publicKey, address: this.peerAddress(this.node(name)), port: this.node(name).peerPort })));
    const answer = await request(via, 'POST', '/cluster/nodes', { nodes: entries }, 60_000, this.adminHeaders);
    this.note(`POST /cluster/nodes ${names.join(',')} via ${via.name}: ${answer.status} ${answer.text.slice(0, 300)}`);
    if (answer.status !== 200) throw new Error(`POST /cluster/nodes of ${names.length}: ${answer.status} ${answer.text.slice(0, 300)}`);
    for (const name of names) await this.waitMemberState(name, 'Joined', deadline);
    return answer.json.changes as unknown[];
  }

  /** DELETE /cluster/nodes/:name of each, in a row through `via`; returns each answer's `changes` once all are Left. */
  async removeAll(via: NodeProcess, names: readonly string[], timeoutMs: number): Promise<unknown[]> {
    const deadline = Date.now() + timeoutMs;
    const changes: unknown[] = [];
    for (const name of names) {
      const answer = await request(via, 'DELETE', `/cluster/nodes/${name}`, undefined, REQUEST_TIMEOUT_MS, this.adminHeaders);
      this.note(`DELETE /cluster/nodes/${name} via ${via.name}: ${answer.status} ${answer.text.slice(0, 300)}`);
      if (answer.status !== 200) throw new Error(`DELETE /cluster/nodes/${name}: ${answer.status} ${answer.text.slice(0, 300)}`);
      changes.push(...(answer.json.changes as unknown[]));
    }
    for (const name of names) {
      await this.waitMemberState(name, 'Left', deadline);
      this.nodes.get(name)!.removed = true;
    }
    return changes;
  }

  /** DELETE /cluster/nodes/:name through any other member until accepted, then waits for Left. */
  async leave(name: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const state = (await this.anyStatus())?.members.find((member) => member.name === name)?.state;
      if (state === 'Leaving' || state === 'Left') break;
      const via = this.someUpMember(name);
      if (via !== undefined) {
        try {
          const answer = await request(via, 'DELETE', `/cluster/nodes/${name}`, undefined, REQUEST_TIMEOUT_MS, this.adminHeaders);
          this.note(`DELETE /cluster/nodes/${name} via ${via.name}: ${answer.status}${answer.status === 200 ? '' : ` ${answer.text.slice(0, 160)}`}`);
          if (answer.status === 200) break;
        } catch (error) {
          this.note(`DELETE /cluster/nodes/${name} via ${via.name}: ${(error as Error).message}`);
        }
      }
      await sleep(1_000);
    }
    await this.waitMemberState(name, 'Left', deadline);
    this.nodes.get(name)!.removed = true;
  }

  private async waitMemberState(name: string, state: NodeState, deadline: number): Promise<void> {
    while (Date.now() < deadline) {
      const status = await this.anyStatus();
      if (status !== undefined && status.members.find((member) => member.name === name)?.state === state) {
        this.note(`${name} is ${state} (epoch ${status.epoch})`);
        return;
      }
      await sleep(500);
    }
    throw new Error(`chaos: ${name} did not become ${state} in time`);
  }

  private someUpMember(except: string): NodeProcess | undefined {
    const up = [...this.nodes.values()].filter((node) => node.state === 'up' && !node.removed && node.process.name !== except);
    return up.length === 0 ? undefined : this.prng.pick(up).process;
  }

  /**
   * The cluster table as the first member that answers sees it. Each is asked briefly: a
   * node cut from the clients would hold every poll for the whole request timeout, and
   * the time a change is seen done with it.
   */
  async anyStatus(): Promise<ClusterStatus | undefined> {
    for (const node of this.nodes.values()) {
      if (node.state !== 'up' || node.removed) continue;
      const status = await this.status(node.process, STATUS_POLL_TIMEOUT_MS).catch(() => undefined);
      if (status !== undefined && status.epoch > 0) return status;
    }
    return undefined;
  }

  async status(node: NodeProcess, timeoutMs = REQUEST_TIMEOUT_MS): Promise<ClusterStatus> {
    const answer = await request(node, 'GET', `/monitoring/system/cluster?node=local`, undefined, timeoutMs);
    const details = answer.json?.nodes?.[0]?.details;
    if (answer.status !== 200 || details === undefined) throw new Error(`cluster monitoring of ${node.name}: ${answer.status} ${answer.text.slice(0, 200)}`);
    return { epoch: details.epoch, change: details.change?.id ?? null, queue: (details.queue ?? []).map((entry: { id: string }) => entry.id), members: details.members };
  }

  // -------------------------------------------------------------------------------------
  // Faults.

  /** Carries out the fault on a node not already under one; returns at once. */
  inflict(fault: Fault): void {
    if (fault.kind === 'partition') return this.partitionFor(fault);
    const candidates = [...this.nodes.values()].filter((node) => !node.busy && !node.removed && node.state === 'up');
    if (candidates.length === 0) return;
    const victim = fault.kind === 'diskfull' ? candidates.find((node) => node.process.name === this.disk?.plan.victim) : candidates[fault.victim % candidates.length]!;
    if (victim === undefined) return this.note(`${describeFault(fault, this.disk?.plan.victim ?? '?')}: skipped, the node is not up or under another fault`);
    victim.busy = true;
    // A node moves only while every other node runs, as in the simulation: nodes that moved
    // while the others could not hear it may know no current address of one another, and
    // nothing but an operator can join them again (docs/cluster.md, "Moving a node").
    // So too while a partition is in place: peers cut from it would not learn its new address.
    const othersRun = this.network?.partitioned !== true && [...this.nodes.values()].every((node) => node === victim || node.removed || (node.state === 'up' && !node.busy));
    const played: Fault = fault.kind === 'move' && !othersRun ? { ...fault, kind: 'kill' } : fault;
    this.note(`${describeFault(played, victim.process.name)}${played === fault ? '' : ' (a move while another node is down: a plain restart instead)'}`);
    const running = this.carryOut(victim, played)
      .catch((error: unknown) => this.note(`fault on ${victim.process.name} failed: ${(error as Error).message}`))
      .finally(() => {
        victim.busy = false;
        this.faultsRunning.delete(running);
      });
    this.faultsRunning.add(running);
  }

  /**
   * A partition of the nodes that are members or joining (network.ts), whatever else they
   * undergo, healed after the fault's duration. Nodes are taken in name order, turned so
   * that the fault's victim comes first: the same schedule cuts the same way.
   */
  private partitionFor(fault: Fault): void {
    const network = this.network;
    if (network === undefined || this.partitionRunning !== undefined) return this.note(`partition skipped: ${network === undefined ? 'no network namespaces in this run' : 'one is in place'}`);
    const names = [...this.nodes.values()].filter((node) => !node.removed).map((node) => node.process.name).sort();
    const start = fault.victim % names.length;
    const turned = [...names.slice(start), ...names.slice(0, start)];
    const pairs = partitionPairs(fault.partition!, turned);
    this.note(`${describeFault(fault, turned[0]!)}: cut ${pairs.map(([a, b]) => `${a}|${b}`).join(' ') || 'nothing (too few nodes)'}`);
    const running = (async () => {
      await network.partition(pairs);
      await sleep(fault.durationMs);
      await network.heal();
      this.lastHealAt = Date.now();
      this.lastFaultEndAt = this.lastHealAt;
      this.note('partition healed');
    })()
      .catch((error: unknown) => this.note(`partition failed: ${(error as Error).message}`))
      .finally(() => {
        this.faultsRunning.delete(running);
        this.partitionRunning = undefined;
      });
    this.partitionRunning = running;
    this.faultsRunning.add(running);
  }

  private async carryOut(node: ChaosNode, fault: Fault): Promise<void> {
    const process = node.process;
    if (fault.kind === 'diskfull') {
      // The node stays up: it must refuse what it cannot store, and write again by itself.
      this.note(await this.disk!.fill());
      try {
        await sleep(fault.durationMs);
      } finally {
        this.note(await this.disk!.grow());
      }
      return;
    }
    if (fault.kind === 'pause') {
      process.pause();
      node.state = 'paused';
      await sleep(fault.durationMs);
      process.resume();
      node.state = 'up';
      this.lastFaultEndAt = Date.now();
      return;
    }
    node.state = 'down';
    await process.kill('SIGKILL');
    if (fault.kind === 'truncate' || fault.kind === 'corrupt') this.note(damageNewestDataFile(process.dataDir, fault));
    await sleep(fault.durationMs);
    await this.relaunch(node, fault.kind === 'move');
  }

  private async relaunch(node: ChaosNode, move: boolean): Promise<void> {
    const process = node.process;
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (move) {
          const [httpPort, peerPort] = [await freePort(), await freePort()];
          await process.launchOn(httpPort, peerPort);
          this.note(`${process.name} restarted on http ${httpPort}, peer ${peerPort}`);
        } else {
          await process.launch();
          this.note(`${process.name} restarted`);
        }
        node.state = 'up';
        this.lastFaultEndAt = Date.now();
        return;
      } catch (error) {
        this.note(`${process.name} failed to restart (attempt ${attempt}): ${(error as Error).message.split('\n').slice(0, 6).join(' | ')}`);
        await process.kill('SIGKILL');
        if (attempt >= 3) throw error;
        await sleep(1_000);
      }
    }
  }

  /** Waits for faults in progress, then resumes every paused node and restarts every stopped one. */
  async heal(): Promise<void> {
    await Promise.all([...this.faultsRunning]);
    if (this.network?.partitioned === true) {
      await this.network.heal();
      this.lastHealAt = Date.now();
      this.lastFaultEndAt = this.lastHealAt;
    }
    for (const node of this.nodes.values()) {
      if (node.state === 'paused') {
        node.process.resume();
        node.state = 'up';
        this.lastFaultEndAt = Date.now();
      }
      if (node.state === 'down' || !node.process.running) await this.relaunch(node, false);
    }
    this.note('healed: every node is up');
  }

  // -------------------------------------------------------------------------------------
  // Settling and reading.

  members(): NodeProcess[] {
    return [...this.nodes.values()].filter((node) => !node.removed).map((node) => node.process);
  }

  everyone(): NodeProcess[] {
    return [...this.nodes.values()].map((node) => node.process);
  }

  /**
   * Waits until every member answers the same table with no change in flight and no node
   * holds hints. Returns what was still off at the deadline, or undefined once settled.
   */
  async settle(timeoutMs: number): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    let why = 'not checked';
    while (Date.now() < deadline) {
      why = (await this.unsettled().catch((error: unknown) => (error as Error).message)) ?? '';
      if (why === '') return undefined;
      await sleep(500);
    }
    return why;
  }

  private async unsettled(): Promise<string | undefined> {
    const statuses = await Promise.all(this.members().map((node) => this.status(node)));
    const epochs = new Set(statuses.map((status) => status.epoch));
    if (epochs.size > 1) return `tables differ: epochs ${this.members().map((node, at) => `${node.name} ${statuses[at]!.epoch}`).join(', ')}`;
    if (statuses[0]!.change !== null) return `change ${statuses[0]!.change} in flight`;
    if (statuses[0]!.queue.length > 0) return `changes queued: ${statuses[0]!.queue.join(',')}`;
    for (const node of this.everyone()) {
      const answer = await request(node, 'GET', `/monitoring/system/handoff?node=local`);
      const details = answer.json?.nodes?.[0]?.details;
      if (details?.records !== 0) return `${node.name} holds ${details?.records} hinted records`;
      if (details.pendingDrops > 0) return `${node.name} has ${details.pendingDrops} partitions to hand off before it drops them`;
      if (details.pendingSyncs > 0) return `${node.name} has ${details.pendingSyncs} partitions whose owners it makes whole after failed writes`;
      if (details.damaged) return `${node.name} is refilling damaged data (${details.damaged.reason})`;
    }
    return undefined;
  }

  /** Anti-entropy on demand until a round repairs nothing; skipped (with a note) on a build without it. */
  async repair(timeoutMs: number): Promise<{ rounds: number; records: number; converged: boolean; available: boolean }> {
    const deadline = Date.now() + timeoutMs;
    let records = 0;
    for (let round = 1; Date.now() < deadline; round += 1) {
      const via = this.members()[0]!;
      const started = await request(via, 'POST', '/cluster/repair', {});
      if (started.status === 404) return { rounds: 0, records: 0, converged: false, available: false };
      if (started.status !== 200 && started.status !== 202) throw new Error(`POST /cluster/repair: ${started.status} ${started.text.slice(0, 200)}`);
      const id = started.json.repair.id as string;
      let run;
      for (;;) {
        run = (await request(via, 'GET', `/cluster/repair/${encodeURIComponent(id)}`)).json?.repair;
        if (run?.complete === true || Date.now() > deadline) break;
        await sleep(250);
      }
      const repaired = (run?.recordsSent ?? 0) + (run?.recordsReceived ?? 0);
      records += repaired;
      this.note(`repair round ${round} (${id}): ${run?.complete ? 'complete' : 'unfinished'}, ${repaired} records moved, ${run?.partitionsCompared ?? '?'} partitions compared`);
      if (run?.complete === true && repaired === 0) return { rounds: round, records, converged: true, available: true };
    }
    return { rounds: 0, records, converged: false, available: true };
  }

  /** The healed cluster's table: owners of a partition, as every member computes them. */
  async membership(): Promise<Membership> {
    const answer = await request(this.members()[0]!, 'GET', '/cluster/nodes');
    const members: Member[] = answer.json.nodes.map((node: { name: string; state: NodeState }) => ({
      name: node.name, publicKey: '', address: '', port: 0, httpPort: 0, zone: '', state: node.state,
    }));
    members.sort((a, b) => (a.name < b.name ? -1 : 1));
    return { epoch: 0, members, change: undefined };
  }

  /** Every record of the stream each node holds (partition and payload id). */
  async stored(stream: ChaosStream): Promise<Map<string, StoredRecordRef[]>> {
    const result = new Map<string, StoredRecordRef[]>();
    for (const node of this.everyone()) {
      const answer = await request(node, 'GET', `/_internal/repos/${stream.repo}/${stream.key}/ids?field=id`, undefined, 60_000);
      if (answer.status !== 200) throw new Error(`stored ${stream.key} on ${node.name}: ${answer.status} ${answer.text.slice(0, 200)}`);
      const records: StoredRecordRef[] = [];
      for (const [partition, ids] of Object.entries(answer.json.partitions as Record<string, string[]>)) {
        for (const id of ids) records.push({ partition: Number(partition), id });
      }
      result.set(node.name, records);
    }
    return result;
  }

  async searchTotal(node: NodeProcess, stream: ChaosStream): Promise<number | undefined> {
    const answer = await request(node, 'POST', `/ssr/${TENANT}/_search`, { uris: [stream.path], query: {}, count: 1, from: 0 });
    return answer.status === 200 ? answer.json.total : this.noteRefusal(node, 'search', answer);
  }

  async histogramSum(node: NodeProcess, stream: ChaosStream, range: { start: string; end: string }): Promise<number | undefined> {
    const answer = await request(node, 'POST', `/ssr/${TENANT}/_timeRangeHistogram`, { uris: [stream.path], query: {}, range, frequency: 'HOUR' });
    if (answer.status !== 200) return this.noteRefusal(node, 'histogram', answer);
    return (answer.json.histogram.buckets as number[]).reduce((sum, count) => sum + count, 0);
  }

  /** Notes why a read the checker makes was not answered (the verdict says only "nothing"). */
  private noteRefusal(node: NodeProcess, what: string, answer: HttpResult): undefined {
    this.note(`${what} through ${node.name} answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    return undefined;
  }

  /** A historical `count()` over the stream, run in a session created through `node`. */
  async historicalCount(node: NodeProcess, stream: ChaosStream): Promise<number | undefined> {
    return this.countInSession(node, stream).catch((error: unknown) => {
      this.note(`historical count through ${node.name} failed: ${(error as Error).message.slice(0, 300)}`);
      return undefined;
    });
  }

  private async countInSession(node: NodeProcess, stream: ChaosStream): Promise<number | undefined> {
    const created = await request(node, 'POST', `/execution/${TENANT}/sessions`);
    if (created.status !== 200) return this.noteRefusal(node, 'a new session', created);
    const session = created.json.session as string;
    const put = await request(node, 'PUT', session, { queries: [{ id: 'count', body: `from historical ${stream.path} select count() as n` }] });
    if (put.status !== 200) return this.noteRefusal(node, 'the count query', put);
    const output = put.json[0].query.outputs[0].outputUri as string;
    const sse = await SseClient.connect(`${node.url}${output}`);
    try {
      await request(node, 'PUT', `${session}/queries/count/_start`);
      await sse.waitFor('eos', (reader) => reader.messages.some((message) => message.type === 'eos'), 60_000);
      const last = sse.items().at(-1);
      return typeof last?.data.n === 'number' ? last.data.n : undefined;
    } finally {
      sse.close();
      await request(node, 'DELETE', session).catch(() => undefined);
    }
  }
}

/**
 * The pairs a partition cuts, `nodes` turned so that the one it centres on comes first:
 * isolate cuts it from every other node; majority cuts the first half (rounded down, at
 * least one) from the rest; bridge leaves the first node reaching all and cuts the others'
 * two halves apart; clients cuts the clients from the first node.
 */
export function partitionPairs(kind: PartitionKind, nodes: readonly string[]): Array<[Endpoint, Endpoint]> {
  const [centre, ...others] = nodes;
  if (centre === undefined) return [];
  const across = (a: readonly string[], b: readonly string[]) => a.flatMap((x) => b.map((y): [Endpoint, Endpoint] => [x, y]));
  switch (kind) {
    case 'isolate':
      return across([centre], others);
    case 'majority': {
      const minority = Math.max(1, Math.floor((nodes.length - 1) / 2));
      return across(nodes.slice(0, minority), nodes.slice(minority));
    }
    case 'bridge': {
      const half = Math.ceil(others.length / 2);
      return across(others.slice(0, half), others.slice(half));
    }
    case 'clients':
      return [[CLIENTS, centre]];
  }
}

export function ownersFunction(membership: Membership, replicas: number): (partition: number) => readonly string[] {
  return (partition) => ownersOf(membership, { partition, replicas });
}

/**
 * Truncates or overwrites bytes of the newest file LevelDB writes (its write-ahead log or a
 * table), as a torn or damaged disk would. Returns what it did.
 */
export function damageNewestDataFile(dataDir: string, fault: Fault): string {
  const folder = join(dataDir, 'db');
  const files = readdirSync(folder)
    .filter((file) => /\.(log|ldb)$/.test(file))
    .map((file) => ({ file, stat: statSync(join(folder, file)) }))
    .filter((entry) => entry.stat.size > 0)
    .sort((a, b) => b.stat.mtimeMs - a.stat.mtimeMs);
  const newest = files[0];
  if (newest === undefined) return 'no data file to damage';
  const path = join(folder, newest.file);
  const size = newest.stat.size;
  const bytes = Math.min(fault.damage.bytes, size);
  if (fault.kind === 'truncate') {
    truncateSync(path, size - bytes);
    return `truncated ${newest.file} from ${size} to ${size - bytes} bytes`;
  }
  // Somewhere in the last 64 KiB, where the newest writes are.
  const windowStart = Math.max(0, size - 65_536);
  const offset = Math.min(size - bytes, windowStart + Math.floor(fault.damage.offsetFraction * (size - windowStart)));
  const noise = Buffer.alloc(bytes);
  for (let index = 0; index < bytes; index += 1) noise[index] = (index * 151 + 89 + Math.floor(fault.damage.offsetFraction * 255)) & 0xff;
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, noise, 0, bytes, offset);
  } finally {
    closeSync(fd);
  }
  return `overwrote ${bytes} bytes of ${newest.file} (${size} bytes) at ${offset}`;
}

function request(node: NodeProcess, method: string, path: string, body?: unknown, timeoutMs = REQUEST_TIMEOUT_MS, headers: Record<string, string> = {}): Promise<HttpResult> {
  return http(node.url + path, method, body, headers, timeoutMs);
}
