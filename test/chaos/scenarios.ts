// The chaos suite's scenarios: steady faults, a join under faults, a leave under faults, and a
// join then a leave, each at replicas 2 and 3. Every run writes to one ssr and one tsr stream,
// and every run's nemesis may kill, pause, move and damage. The disk-full scenarios
// (disk-full.ts; root only) fill one node's disk during ingest and grow it again, steady and
// with a join and a leave, amid kills and pauses of the others.

import type { FaultKind } from './nemesis.js';

export interface Scenario {
  name: string;
  /** Nodes started (and joined) before the writers start. */
  nodes: number;
  replicas: number;
  /** Membership changes made one after another during the fault phase. */
  changes: ReadonlyArray<'join' | 'leave'>;
  faults: readonly FaultKind[];
  /** One node's data folder on a tmpfs that fills and grows (needs root). */
  diskFull?: boolean;
  /** Each node in a network namespace of its own (network.ts): needed by the partition nemesis. */
  network?: boolean;
}

const ALL_FAULTS: readonly FaultKind[] = ['kill', 'pause', 'move', 'truncate', 'corrupt'];
/** Every fault, partitions three times as often as each other kind (one at a time: nemesis.ts). */
const PARTITION_FAULTS: readonly FaultKind[] = [...ALL_FAULTS, 'partition', 'partition', 'partition'];

const SHAPES: ReadonlyArray<Omit<Scenario, 'name' | 'replicas' | 'faults'> & { shape: string }> = [
  { shape: 'steady', nodes: 3, changes: [] },
  { shape: 'join', nodes: 3, changes: ['join'] },
  { shape: 'leave', nodes: 4, changes: ['leave'] },
  { shape: 'join-leave', nodes: 3, changes: ['join', 'leave'] },
];

const DISK_FULL_FAULTS: readonly FaultKind[] = ['diskfull', 'kill', 'pause'];
const DISK_FULL_SHAPES = SHAPES.filter(({ shape }) => shape === 'steady' || shape === 'join-leave');

export const SCENARIOS: readonly Scenario[] = [
  ...SHAPES.flatMap(({ shape, nodes, changes }) => [2, 3].map((replicas) => ({ name: `${shape}-r${replicas}`, nodes, replicas, changes, faults: ALL_FAULTS }))),
  ...DISK_FULL_SHAPES.flatMap(({ shape, nodes, changes }) =>
    [2, 3].map((replicas) => ({ name: `diskfull${shape === 'steady' ? '' : `-${shape}`}-r${replicas}`, nodes, replicas, changes, faults: DISK_FULL_FAULTS, diskFull: true })),
  ),
  // A cluster past the sizes above, where the ring's point counts once broke a join
  // (docs/cluster.md, "Sizes"): eight nodes, a ninth joins, one leaves, under every fault.
  { name: 'scale-r3', nodes: 8, replicas: 3, changes: ['join', 'leave'], faults: ALL_FAULTS },
  // The partition nemesis (docs/cluster.md, "The chaos suite"): silent drops between chosen
  // nodes, or between the clients and a node, among every other fault; root only.
  ...(['steady', 'join-leave'] as const).flatMap((shape) =>
    [2, 3].map((replicas): Scenario => ({
      name: shape === 'steady' ? `partition-r${replicas}` : `partition-${shape}-r${replicas}`,
      nodes: 3,
      replicas,
      changes: shape === 'steady' ? [] : ['join', 'leave'],
      faults: PARTITION_FAULTS,
      network: true,
    })),
  ),
];

export function scenarioNamed(name: string): Scenario {
  const scenario = SCENARIOS.find((each) => each.name === name);
  if (scenario === undefined) throw new Error(`no chaos scenario '${name}' (have: ${SCENARIOS.map((each) => each.name).join(', ')})`);
  return scenario;
}
