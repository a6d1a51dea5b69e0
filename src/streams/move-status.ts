// How far the moves of streams' payloads to another repository have got over the cluster
// (docs/storage.md, "Changing a stream's repository"), read from what every node reports
// in the definitions (repository-mover.ts): one key per stream and node. A move is over
// when every member has reported it done; until then it runs.

import { StateConflictError } from '../lib/errors.js';
import type { Membership } from '../protocol/cluster-types.js';
import type { RepositoryName } from '../storage/repository.js';
import type { RepositoryMapping } from './repository-mapping.js';
import type { MoveOrder } from './repository-move.js';
import type { MoveProgress } from './repository-mover.js';

/** The part of the definitions store this reads. */
export interface MoveDefinitions {
  get<T>(key: string): { value: T } | undefined;
  list<T>(prefix: string): Array<{ key: string; value: T }>;
}

/** A move over the cluster: each member's progress (none yet: 0%). */
export interface MoveStatus {
  readonly stream: string;
  readonly id: string;
  readonly from: RepositoryName;
  readonly to: RepositoryName;
  readonly complete: boolean;
  readonly percentComplete: number;
  readonly nodes: ReadonlyArray<{ readonly node: string } & Omit<MoveProgress, 'id' | 'from' | 'to'>>;
}

const REPORT_PREFIX = 'repository-move/';

/** Where a node reports its progress in a stream's move. */
export function moveReportKey(stream: string, node: string): string {
  return `${REPORT_PREFIX}${stream}/${node}`;
}

/** The move the stream's mapping carries, over `members`; undefined when it carries none. */
export function moveStatus(definitions: MoveDefinitions, stream: string, members: readonly string[]): MoveStatus | undefined {
  const move = definitions.get<RepositoryMapping>(`repository/${stream}`)?.value.move;
  return move === undefined ? undefined : statusOf(definitions, stream, move, members);
}

/** Every move the mappings carry, over `members`. */
export function moveStatuses(definitions: MoveDefinitions, members: readonly string[]): MoveStatus[] {
  return definitions.list<RepositoryMapping>('repository/').flatMap((mapping) => {
    const move = mapping.value.move;
    return move === undefined ? [] : [statusOf(definitions, mapping.key.slice('repository/'.length), move, members)];
  });
}

function statusOf(definitions: MoveDefinitions, stream: string, move: MoveOrder, members: readonly string[]): MoveStatus {
  const nodes = members.map((node) => {
    const report = definitions.get<MoveProgress>(moveReportKey(stream, node))?.value;
    const current = report?.id === move.id ? report : undefined;
    return { node, phase: current?.phase ?? 'copying', percentComplete: current?.percentComplete ?? 0, copied: current?.copied ?? 0, total: current?.total ?? 0 };
  });
  const complete = nodes.every((node) => node.phase === 'done');
  const percentComplete = nodes.length === 0 ? 100 : Math.floor(nodes.reduce((sum, node) => sum + node.percentComplete, 0) / nodes.length);
  return { stream, id: move.id, from: move.from, to: move.to, complete, percentComplete: complete ? 100 : Math.min(99, percentComplete), nodes };
}

/** The moves as the rest of the node asks about them: the gate of a new one, and whether one runs. */
export class RepositoryMoves {
  constructor(
    private readonly definitions: MoveDefinitions,
    /** The Joined members: each moves what it holds. */
    private readonly members: () => string[],
    /** Whether a membership change is under way. */
    private readonly membershipChanging: () => boolean,
  ) {}

  /** A move may not start while another of the stream runs, nor during a membership change (its transfers move one repository). */
  async checkCanStart(stream: string): Promise<void> {
    if (this.membershipChanging()) throw new StateConflictError('a membership change is under way: the repository can change once it is complete');
    const status = this.status(stream);
    if (status !== undefined && !status.complete) {
      throw new StateConflictError(`the stream's payloads are moving to ${status.to} (${status.percentComplete}% done): its repository can change again once that move is complete`);
    }
  }

  status(stream: string): MoveStatus | undefined {
    return moveStatus(this.definitions, stream, this.members());
  }

  statuses(): MoveStatus[] {
    return moveStatuses(this.definitions, this.members());
  }

  /** Whether a move of the stream runs somewhere. */
  running(stream: string): boolean {
    const status = this.status(stream);
    return status !== undefined && !status.complete;
  }

  /** Why the membership may not change now (a move runs), or undefined. */
  membershipBlockedBy(): string | undefined {
    const running = this.statuses().find((status) => !status.complete);
    return running === undefined ? undefined : `the payloads of /streams/${running.stream} are moving to ${running.to} (${running.percentComplete}% done): the membership can change once the move is complete`;
  }

  /** Every stream whose mapping carries a move (over or not). */
  streamsWithMoves(): string[] {
    return this.definitions.list<RepositoryMapping>('repository/').filter((mapping) => mapping.value.move !== undefined).map((mapping) => mapping.key.slice('repository/'.length));
  }
}

/**
 * The moves as rows of GET /cluster/transfers (spec, "Data transfer action"): one per
 * member, from and to that member (it moves what it holds between its repositories).
 */
export function moveActions(statuses: readonly MoveStatus[]) {
  return statuses.flatMap((status) =>
    status.nodes.map((node) => ({
      type: 'repo_data_transfer' as const,
      repo: status.to,
      from: node.node,
      to: node.node,
      complete: node.phase === 'done',
      percentComplete: node.percentComplete,
      info: {
        id: `${status.id}/${node.node}`,
        kind: 'repository-move',
        stream: `/streams/${status.stream}`,
        fromRepository: status.from,
        toRepository: status.to,
        phase: node.phase,
        bytes: 0,
        payloads: node.copied,
        partitions: 0,
        total: node.total,
      },
    })),
  );
}

/**
 * The members that take part in moves: the Joined ones this node hears from, and itself. A
 * member that is down moves when it is back; it does not hold the others' moves, nor the
 * membership, meanwhile.
 */
export function movingMembers(membership: Membership, localName: string, available: (name: string) => boolean): string[] {
  return membership.members.filter((member) => member.state === 'Joined' && (member.name === localName || available(member.name))).map((member) => member.name);
}
