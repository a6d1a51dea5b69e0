// One chaos run: a scenario and a seed. The cluster is started, the writers and the nemesis run
// for the fault phase while the scenario's membership changes happen, then every fault heals,
// the cluster settles (no change in flight, no hints), what every node holds is checked once
// (nothing may be lost or under-replicated before any repair: hints and hand-offs must have
// made it whole), anti-entropy repair runs until a round finds nothing to repair, and the
// checker judges what every node holds and answers. Everything started is stopped, and every
// tmpfs unmounted, before it returns.

import { Prng } from '../sim/prng.js';
import { cleanup, client, sleep, type NodeProcess } from '../kit/node-process.js';
import { unmountAll } from '../kit/tmpfs.js';
import { checkChaos, type AnswerEvidence, type ChaosVerdict, type StreamEvidence } from './checker.js';
import { ChaosCluster, CHAOS_STREAMS, ownersFunction, TENANT } from './chaos-cluster.js';
import { ChaosDisk } from './disk-full.js';
import { faultSchedule } from './nemesis.js';
import { ChaosNetwork } from './network.js';
import type { Scenario } from './scenarios.js';
import { CHAOS_SCHEMA, ChaosWriters } from './writers.js';

export interface ChaosRunOptions {
  /** Length of the fault phase. */
  durationMs: number;
  /** Bound on healing, settling and repair together. */
  settleTimeoutMs: number;
  writers: number;
}

export interface ChaosRunResult {
  scenario: string;
  seed: number;
  verdict: ChaosVerdict;
  /** Membership changes the scenario asked for that completed. */
  changesCompleted: number;
  changesPlanned: number;
  /** Why the cluster did not settle, when it did not. */
  unsettled: string | undefined;
  /** What the checker found once settled, before any repair run (the verdict above is after it): nothing may be missing then. */
  beforeRepair: { lost: number; underReplicated: number; answerMismatches: number; examples: string[] };
  /**
   * Seconds from the last partition's heal to the last change's completion (negative: the
   * changes were done before it healed); null without partitions or changes.
   */
  changesDoneAfterHealSeconds: number | null;
  /** The same from the end of the last fault of any kind (a restart, a resume, a heal): what the changes waited for once nothing was failing. */
  changesDoneAfterFaultsSeconds: number | null;
  /** Of the changes asked for before the last fault ended: seconds from that end to the last one's completion (negative: done before). */
  inFlightDoneAfterFaultsSeconds?: number | null;
  /** Of the changes asked for after every fault ended: the longest one's own seconds, request to done. */
  startedAfterFaultsSeconds?: number | null;
  repair: { rounds: number; records: number; converged: boolean; available: boolean };
  writes: { batches: number; acknowledgedBatches: number; status5xx: number; status503: number; status507: number; timeouts: number; retries: number; unavailableSeconds: number; p50Ms: number; p99Ms: number; failureReasons: Record<string, number> };
  faults: number;
  seconds: number;
  log: string[];
}

const RING_SIZE = 64;
const DEFINE_ATTEMPTS = 5;

export async function runChaos(scenario: Scenario, seed: number, options: ChaosRunOptions): Promise<ChaosRunResult> {
  const started = Date.now();
  const prng = new Prng(seed);
  const schedule = faultSchedule(prng.fork(), { durationMs: options.durationMs, intervalMs: [3_000, 5_000], kinds: scenario.faults });
  const writerPrng = prng.fork();
  const clusterPrng = prng.fork();
  const disk = scenario.diskFull === true ? diskFullNemesis(prng.fork(), scenario) : undefined;
  const network = scenario.network === true ? await ChaosNetwork.create() : undefined;
  const cluster = new ChaosCluster(clusterPrng, [], { disk, network });
  let changesCompleted = 0;
  const changeTimes: ChangeTimes[] = [];
  try {
    await startCluster(cluster, scenario);
    const writers = new ChaosWriters(
      {
        writers: options.writers,
        streams: CHAOS_STREAMS.map((stream) => stream.path),
        batchPayloadsMin: 10,
        batchPayloadsMax: 200,
        requestTimeoutMs: 5_000,
        attemptsMax: 3,
        avoidMs: 5_000,
        targets: () => cluster.targets(),
      },
      writerPrng,
    );
    const phaseStart = Date.now();
    writers.start();
    const nemesis = playSchedule(cluster, schedule, phaseStart);
    const changes = runChanges(cluster, scenario, options.durationMs, phaseStart, changeTimes).then((count) => (changesCompleted = count));
    await sleep(options.durationMs);
    await nemesis;
    await writers.stop();
    cluster.note(`writers stopped: ${writers.stats.batches} batches; seconds without an acknowledged batch: ${writers.stats.silentSeconds.join(',') || 'none'}; 5xx reasons: ${JSON.stringify(writers.stats.failureReasons)}`);
    await cluster.heal();
    const settleDeadline = Date.now() + options.settleTimeoutMs;
    await Promise.race([changes, sleep(options.settleTimeoutMs)]);
    const unsettled = await cluster.settle(Math.max(5_000, settleDeadline - Date.now()));
    if (unsettled !== undefined) {
      cluster.note(`not settled: ${unsettled}`);
      noteNodeLogs(cluster);
    }
    // Once settled (hints drained, changes done) every copy must be there already, and every
    // node must answer the same counts: repair is for damage, not for what a write left behind.
    const settledVerdict = await judge(cluster, scenario.replicas, writers, phaseStart);
    cluster.note(`before repair: lost ${settledVerdict.lost}, under-replicated ${settledVerdict.underReplicated}, answer mismatches ${settledVerdict.answerMismatches}${settledVerdict.examples.length > 0 ? `; ${settledVerdict.examples.slice(0, 3).join('; ')}` : ''}`);
    const repair = await cluster.repair(Math.max(10_000, settleDeadline - Date.now()));
    const verdict = await judge(cluster, scenario.replicas, writers, phaseStart);
    const allDone = changeTimes.length === scenario.changes.length && changeTimes.length > 0;
    const lastDone = allDone ? Math.max(...changeTimes.map((change) => change.doneAt)) : undefined;
    const faultsEnd = cluster.lastFaultEndAt;
    const inFlight = changeTimes.filter((change) => faultsEnd !== undefined && change.startedAt < faultsEnd);
    const startedAfter = changeTimes.filter((change) => faultsEnd !== undefined && change.startedAt >= faultsEnd);
    return {
      scenario: scenario.name,
      seed,
      verdict,
      changesCompleted,
      changesPlanned: scenario.changes.length,
      unsettled,
      beforeRepair: { lost: settledVerdict.lost, underReplicated: settledVerdict.underReplicated, answerMismatches: settledVerdict.answerMismatches, examples: settledVerdict.examples },
      changesDoneAfterHealSeconds: lastDone === undefined || cluster.lastHealAt === undefined ? null : Math.round((lastDone - cluster.lastHealAt) / 100) / 10,
      changesDoneAfterFaultsSeconds: lastDone === undefined || cluster.lastFaultEndAt === undefined ? null : Math.round((lastDone - cluster.lastFaultEndAt) / 100) / 10,
      inFlightDoneAfterFaultsSeconds: !allDone || inFlight.length === 0 ? null : Math.round((Math.max(...inFlight.map((change) => change.doneAt)) - faultsEnd!) / 100) / 10,
      startedAfterFaultsSeconds: !allDone || startedAfter.length === 0 ? null : Math.round(Math.max(...startedAfter.map((change) => change.doneAt - change.startedAt)) / 100) / 10,
      repair,
      writes: writeSummary(writers),
      faults: schedule.length,
      seconds: Math.round((Date.now() - started) / 1000),
      log: cluster.log,
    };
  } finally {
    await cleanup();
    for (const problem of await unmountAll()) cluster.note(problem);
    await network?.cleanup();
  }
}

/** The disk-full nemesis of a run: which first node's disk fills, and whether a floor refuses ingest before LevelDB runs out of room. */
function diskFullNemesis(prng: Prng, scenario: Scenario): ChaosDisk {
  const unavailable = ChaosDisk.unavailable();
  if (unavailable !== undefined) throw new Error(`chaos: scenario ${scenario.name} cannot run here: ${unavailable}`);
  return new ChaosDisk({ victim: `n${prng.int(1, scenario.nodes)}`, floorBytes: prng.pick([0, 2 * 1024 * 1024]) });
}

/** Lines of each node's own log kept in the run's log when it did not settle. */
const NODE_LOG_LINES = 40;

/**
 * What each node said since its last start, for a run that did not settle: its warnings
 * and errors, and its membership and transfer lines, the newest last (printed with
 * `--verbose` when the run fails).
 */
function noteNodeLogs(cluster: ChaosCluster): void {
  for (const node of cluster.everyone()) {
    const lines = node.output.split('\n').filter((line) => /"level":(40|50|60)|membership|transfer|Admit|join|left/i.test(line));
    cluster.note(`${node.name}, last ${Math.min(NODE_LOG_LINES, lines.length)} of ${lines.length} warning, membership and transfer lines since its last start:`);
    for (const line of lines.slice(-NODE_LOG_LINES)) cluster.note(`  ${node.name} ${line.slice(0, 400)}`);
  }
}

async function startCluster(cluster: ChaosCluster, scenario: Scenario): Promise<void> {
  const first = await cluster.startNode('n1', false);
  for (let index = 2; index <= scenario.nodes; index += 1) {
    await cluster.startNode(`n${index}`, true);
    await cluster.join(`n${index}`, 60_000);
  }
  await defineChaosStreams(first, scenario.replicas);
}

/** The chaos tenant and its ssr and tsr streams at `replicas`, defined through `first`. */
export async function defineChaosStreams(first: NodeProcess, replicas: number): Promise<void> {
  const api = client(first);
  // A definition write that meets a peer it cannot reach (a node just joined, a busy
  // machine) answers 503: retried a few times, as an operator's script would.
  const ok = async (what: string, send: () => Promise<{ status: number; text: string }>) => {
    for (let attempt = 1; ; attempt += 1) {
      const done = await send();
      if (done.status === 200) return;
      if (done.status !== 503 || attempt === DEFINE_ATTEMPTS) throw new Error(`${what}: ${done.status} ${done.text.slice(0, 300)}`);
      await sleep(1_000);
    }
  };
  await ok('tenant', () => api.put(`/cluster/tenants/${TENANT}`));
  for (const stream of CHAOS_STREAMS) {
    await ok(stream.path, () => api.put(stream.path, { schema: CHAOS_SCHEMA }));
    await ok(`${stream.path} repository`, () => api.put(`${stream.path}/repository`, { name: stream.repo, config: {} }));
    await ok(`${stream.path} policy`, () => api.put(`${stream.path}/policy`, { replicas, ring_size: RING_SIZE, hash_payload: { bytes: 128 } }));
  }
  // Definitions reach every node before writes start.
  await sleep(1_000);
}

async function playSchedule(cluster: ChaosCluster, schedule: ReturnType<typeof faultSchedule>, phaseStart: number): Promise<void> {
  for (const fault of schedule) {
    const wait = phaseStart + fault.atMs - Date.now();
    if (wait > 0) await sleep(wait);
    cluster.inflict(fault);
  }
}

/** The scenario's joins and leaves, one after another, starting a fifth into the fault phase. */
/** When a membership change was asked for and when the harness saw it done, epoch ms. */
interface ChangeTimes {
  startedAt: number;
  doneAt: number;
}

async function runChanges(cluster: ChaosCluster, scenario: Scenario, durationMs: number, phaseStart: number, times: ChangeTimes[]): Promise<number> {
  let completed = 0;
  let next = scenario.nodes + 1;
  await sleep(Math.max(0, phaseStart + durationMs / 5 - Date.now()));
  for (const change of scenario.changes) {
    const startedAt = Date.now();
    try {
      if (change === 'join') {
        const name = `n${next++}`;
        await cluster.startNode(name, true);
        await cluster.join(name, 240_000);
      } else {
        const members = cluster.members().map((node) => node.name);
        // Leave the most recently started member that is not the first node.
        const name = members.filter((each) => each !== 'n1').at(-1)!;
        await cluster.leave(name, 240_000);
      }
      completed += 1;
      times.push({ startedAt, doneAt: Date.now() });
    } catch (error) {
      cluster.note(`change ${change} failed: ${(error as Error).message}`);
      return completed;
    }
  }
  return completed;
}

/** What the writers were told and what each node stores, per stream, for the checker, with `replicas` copies wanted. */
async function storedEvidence(cluster: ChaosCluster, replicas: number, writers: ChaosWriters): Promise<StreamEvidence[]> {
  const membership = await cluster.membership();
  const joined = membership.members.filter((member) => member.state === 'Joined').length;
  const evidence: StreamEvidence[] = [];
  for (const stream of CHAOS_STREAMS) {
    const outcomes = writers.outcomes.get(stream.path)!;
    evidence.push({
      stream: stream.key,
      copies: Math.min(replicas, joined),
      acknowledged: outcomes.acknowledged,
      unknown: outcomes.unknown,
      refused: outcomes.refused,
      stored: await cluster.stored(stream),
      ownersOf: ownersFunction(membership, replicas),
    });
  }
  return evidence;
}

/**
 * The checker's verdict on what every node holds and answers against what the writers were
 * told since `phaseStart`, with `replicas` copies wanted (capped by the Joined nodes).
 */
export async function judge(cluster: ChaosCluster, replicas: number, writers: ChaosWriters, phaseStart: number): Promise<ChaosVerdict> {
  const evidence = await storedEvidence(cluster, replicas, writers);
  const range = { start: new Date(phaseStart - 3_600_000).toISOString(), end: new Date(Date.now() + 3_600_000).toISOString() };
  const answers: AnswerEvidence[] = [];
  for (const node of cluster.members()) {
    const [ssr, tsr] = CHAOS_STREAMS as [typeof CHAOS_STREAMS[0], typeof CHAOS_STREAMS[1]];
    answers.push({ node: node.name, stream: ssr.key, kind: 'search total', value: await cluster.searchTotal(node, ssr) });
    answers.push({ node: node.name, stream: ssr.key, kind: 'histogram sum', value: await cluster.histogramSum(node, ssr, range) });
    answers.push({ node: node.name, stream: tsr.key, kind: 'historical count', value: await cluster.historicalCount(node, tsr) });
  }
  return checkChaos(evidence, answers);
}

function writeSummary(writers: ChaosWriters): ChaosRunResult['writes'] {
  const stats = writers.stats;
  const sorted = [...stats.latenciesMs].sort((a, b) => a - b);
  const quantile = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return {
    batches: stats.batches,
    acknowledgedBatches: stats.batchesAcknowledged,
    status5xx: stats.status5xx,
    status503: stats.status503,
    status507: stats.status507,
    timeouts: stats.timeouts,
    retries: stats.retries,
    unavailableSeconds: stats.unavailableSeconds,
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    failureReasons: stats.failureReasons,
  };
}
