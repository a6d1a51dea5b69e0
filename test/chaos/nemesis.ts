// The chaos suite's nemesis: a seeded schedule of faults, drawn before the run starts so that
// `--seed n` replays the same schedule, and played against real processes by chaos-cluster.ts.
// Faults: kill -9 and restart after a while, SIGSTOP and SIGCONT, a restart on other ports, and
// (at most once a run, so at most one replica of a record is ever damaged) a kill -9 followed
// by truncating or corrupting the node's newest data file before it restarts. A disk-full run
// (disk-full.ts) starts with its one disk-full fault: the victim's disk fills during ingest and
// is grown when the fault ends. With the partition nemesis (scenarios partition-*, each node in
// a network namespace of its own: network.ts), also one partition at a time:
// - isolate: one node cut from every other node, clients still reach it;
// - majority: the nodes split into a majority and a minority that cannot reach each other;
// - bridge: one node reaches every other, the others are split in two halves that cannot;
// - clients: the clients cut from one node, the nodes still reach each other.

import type { Prng } from '../sim/prng.js';

export type FaultKind = 'kill' | 'pause' | 'move' | 'truncate' | 'corrupt' | 'diskfull' | 'partition';

export type PartitionKind = 'isolate' | 'majority' | 'bridge' | 'clients';

export const PARTITION_KINDS: readonly PartitionKind[] = ['isolate', 'majority', 'bridge', 'clients'];

export interface Fault {
  /** Milliseconds after the run starts. */
  atMs: number;
  kind: FaultKind;
  /** Picks the victim among the nodes not already under a fault: index modulo their count (diskfull: the node on the tmpfs). */
  victim: number;
  /** How long the node stays down or paused. */
  durationMs: number;
  /** For truncate/corrupt: where in the file and how much (fractions, resolved on the file). */
  damage: { offsetFraction: number; bytes: number };
  /** For partition: its shape; `victim` picks the node it centres on (isolated, bridging, cut from clients). */
  partition?: PartitionKind;
}

export interface NemesisOptions {
  durationMs: number;
  intervalMs: readonly [number, number];
  /** Drawn with equal chances; a kind listed twice comes twice as often. */
  kinds: readonly FaultKind[];
}

const DAMAGE_KINDS: readonly FaultKind[] = ['truncate', 'corrupt'];

/** How long a disk stays full, filling included. */
const DISK_FULL_MS: readonly [number, number] = [15_000, 25_000];

export function faultSchedule(prng: Prng, options: NemesisOptions): Fault[] {
  const faults: Fault[] = [];
  let damaged = false;
  let at = prng.int(options.intervalMs[0], options.intervalMs[1]);
  if (options.kinds.includes('diskfull') && at < options.durationMs) {
    faults.push({ atMs: at, kind: 'diskfull', victim: 0, durationMs: prng.int(DISK_FULL_MS[0], DISK_FULL_MS[1]), damage: { offsetFraction: 0, bytes: 0 } });
    at += prng.int(options.intervalMs[0], options.intervalMs[1]);
  }
  /** One partition at a time: the next may start only after this one heals. */
  let partitionedUntil = 0;
  for (; at < options.durationMs; at += prng.int(options.intervalMs[0], options.intervalMs[1])) {
    const kinds = options.kinds.filter((kind) => kind !== 'diskfull' && !(damaged && DAMAGE_KINDS.includes(kind)) && !(kind === 'partition' && at < partitionedUntil));
    if (kinds.length === 0) break;
    const kind = prng.pick(kinds);
    damaged ||= DAMAGE_KINDS.includes(kind);
    const fault: Fault = {
      atMs: at,
      kind,
      victim: prng.int(0, 1_000),
      durationMs: kind === 'pause' ? prng.int(2_000, 8_000) : prng.int(1_000, 5_000),
      damage: { offsetFraction: prng.next(), bytes: prng.int(16, 4_096) },
    };
    if (kind === 'partition') {
      // Drawn only for partitions, so the schedules of the other scenarios stay as they were.
      fault.partition = prng.pick(PARTITION_KINDS);
      fault.durationMs = prng.int(3_000, 10_000);
      partitionedUntil = at + fault.durationMs;
    }
    faults.push(fault);
  }
  return faults;
}

export function describeFault(fault: Fault, node: string): string {
  const seconds = (fault.atMs / 1000).toFixed(1);
  switch (fault.kind) {
    case 'kill':
      return `${seconds}s kill -9 ${node}, restart after ${fault.durationMs} ms`;
    case 'pause':
      return `${seconds}s SIGSTOP ${node} for ${fault.durationMs} ms`;
    case 'move':
      return `${seconds}s kill -9 ${node}, restart on new ports after ${fault.durationMs} ms`;
    case 'truncate':
      return `${seconds}s kill -9 ${node}, truncate its newest data file by ${fault.damage.bytes} bytes, restart`;
    case 'corrupt':
      return `${seconds}s kill -9 ${node}, overwrite ${fault.damage.bytes} bytes of its newest data file, restart`;
    case 'diskfull':
      return `${seconds}s fill ${node}'s disk during ingest, grow it after ${fault.durationMs} ms`;
    case 'partition':
      return `${seconds}s partition (${fault.partition}) around ${node} for ${fault.durationMs} ms`;
  }
}
