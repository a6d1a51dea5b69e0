// The chaos suite's referee, in the style of Jepsen's checkers: given what the writers were
// told and what every node holds once every fault has healed, it counts what went wrong. Pure:
// no I/O, so it has unit tests of its own (test/unit/chaos-checker.test.ts) and the harness
// only gathers its inputs.
//
// A payload is known by its `id`. What the writers were told of it:
// - acknowledged: a 200 (or a 500 that did not list it) answered a request carrying it;
// - unknown: no answer (timeout, connection error) or a 500 that listed it; it may or
//   may not be stored, and both are right;
// - refused: a 4xx or 503 answered every attempt; it must be stored nowhere.
// The checks, per stream:
// - lost: acknowledged and stored on no node at all;
// - under-replicated: acknowledged and held by fewer than min(replicas, Joined nodes) of
//   its partition's current owners;
// - duplicates: one id stored twice on one node (a retried batch stored twice);
// - misplaced: a record on a node that does not own its partition;
// - phantoms: refused and stored somewhere;
// - answer mismatches: a count a node answered (search total, histogram sum, historical
//   count) that differs from the distinct ids stored on the stream's owners.

export interface StoredRecordRef {
  partition: number;
  id: string;
}

export interface StreamEvidence {
  /** The stream's key, "tenant/collection/name". */
  stream: string;
  /** Copies each partition must have: the policy's replicas, capped by the Joined nodes. */
  copies: number;
  acknowledged: ReadonlySet<string>;
  unknown: ReadonlySet<string>;
  refused: ReadonlySet<string>;
  /** What each node stores of the stream, by node name. */
  stored: ReadonlyMap<string, readonly StoredRecordRef[]>;
  /** The current owners of a partition, in the healed cluster's table. */
  ownersOf(partition: number): readonly string[];
}

export interface AnswerEvidence {
  node: string;
  stream: string;
  kind: 'search total' | 'histogram sum' | 'historical count';
  value: number | undefined;
}

export interface ChaosCounts {
  acknowledged: number;
  unknown: number;
  refused: number;
  lost: number;
  underReplicated: number;
  duplicates: number;
  misplaced: number;
  phantoms: number;
  answerMismatches: number;
}

export interface ChaosVerdict extends ChaosCounts {
  ok: boolean;
  /** The first few examples of each kind of failure, for the report. */
  examples: string[];
}

const EXAMPLES_PER_KIND_MAX = 5;

export function checkChaos(streams: readonly StreamEvidence[], answers: readonly AnswerEvidence[]): ChaosVerdict {
  const counts: ChaosCounts = { acknowledged: 0, unknown: 0, refused: 0, lost: 0, underReplicated: 0, duplicates: 0, misplaced: 0, phantoms: 0, answerMismatches: 0 };
  const examples = new Examples();
  const distinctStored = new Map<string, number>();
  for (const evidence of streams) {
    counts.acknowledged += evidence.acknowledged.size;
    counts.unknown += evidence.unknown.size;
    counts.refused += evidence.refused.size;
    const holders = checkNodes(evidence, counts, examples);
    distinctStored.set(evidence.stream, holders.size);
    for (const id of evidence.acknowledged) {
      const where = holders.get(id);
      if (where === undefined) {
        counts.lost += 1;
        examples.add('lost', `${evidence.stream}: acknowledged ${id} is stored nowhere`);
        continue;
      }
      const owners = evidence.ownersOf(where.partition);
      const onOwners = owners.filter((owner) => where.nodes.has(owner)).length;
      if (onOwners < evidence.copies) {
        counts.underReplicated += 1;
        examples.add('under-replicated', `${evidence.stream}: ${id} (partition ${where.partition}) on ${onOwners} of owners ${owners.join(',')}, held by ${[...where.nodes].join(',')}`);
      }
    }
    for (const id of evidence.refused) {
      if (!holders.has(id)) continue;
      counts.phantoms += 1;
      examples.add('phantom', `${evidence.stream}: refused ${id} is stored on ${[...holders.get(id)!.nodes].join(',')}`);
    }
  }
  for (const answer of answers) {
    const expected = distinctStored.get(answer.stream);
    if (expected !== undefined && answer.value === expected) continue;
    counts.answerMismatches += 1;
    examples.add('answer', `${answer.node} answered ${answer.kind} ${answer.value ?? 'nothing'} for ${answer.stream}, which stores ${expected ?? 'nothing known'}`);
  }
  const failures = counts.lost + counts.underReplicated + counts.duplicates + counts.misplaced + counts.phantoms + counts.answerMismatches;
  return { ...counts, ok: failures === 0, examples: examples.list() };
}

interface Holders {
  partition: number;
  nodes: Set<string>;
}

/** Duplicates and misplaced records per node; returns where each id is held. */
function checkNodes(evidence: StreamEvidence, counts: ChaosCounts, examples: Examples): Map<string, Holders> {
  const holders = new Map<string, Holders>();
  for (const [node, records] of evidence.stored) {
    const seen = new Set<string>();
    for (const record of records) {
      if (seen.has(record.id)) {
        counts.duplicates += 1;
        examples.add('duplicate', `${evidence.stream}: ${record.id} is stored twice on ${node}`);
        continue;
      }
      seen.add(record.id);
      if (!evidence.ownersOf(record.partition).includes(node)) {
        counts.misplaced += 1;
        examples.add('misplaced', `${evidence.stream}: ${node} holds ${record.id} of partition ${record.partition}, owned by ${evidence.ownersOf(record.partition).join(',')}`);
      }
      const known = holders.get(record.id);
      if (known === undefined) holders.set(record.id, { partition: record.partition, nodes: new Set([node]) });
      else known.nodes.add(node);
    }
  }
  return holders;
}

class Examples {
  private readonly byKind = new Map<string, string[]>();

  add(kind: string, example: string): void {
    const list = this.byKind.get(kind) ?? [];
    if (list.length < EXAMPLES_PER_KIND_MAX) list.push(example);
    this.byKind.set(kind, list);
  }

  list(): string[] {
    return [...this.byKind].flatMap(([kind, list]) => list.map((example) => `${kind}: ${example}`));
  }
}
