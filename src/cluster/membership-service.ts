// Adding and removing nodes (spec, "Cluster"; docs/cluster.md). Any node takes the
// request; the membership coordinator runs it. Before a node is added, its identity is
// proved: it must answer at the given address with a reply signed by the given key that
// names that address. Who may ask is the HTTP layer's business (auth/access-rules.ts).

import { z } from 'zod';
import { BadRequestError, NotFoundError, StateConflictError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import { checkName, nameSchema } from '../lib/names.js';
import type { PeerTransport } from '../peer/transport.js';
import type { ClusterShell } from './cluster-shell.js';
import { ADMIN_COMMAND, PING } from './core-messages.js';
import type { ClusterCore } from '../cluster-core/core.js';
import { coordinatorOf, NODE_NAME_FORBIDDEN } from '../cluster-core/placement.js';
import { commandNode, queuedCommands } from '../cluster-core/membership.js';
import { assert } from '../lib/assert.js';
import type { AdminCommand, AdminResult, Member, Membership, TransferAction, TransferPlan } from '../protocol/cluster-types.js';
import { validate } from '../lib/validation.js';
import { identityProofFailure } from './identity-proof.js';
import { makeJoinToken } from './join-token.js';

export interface NodeEntry {
  name: string;
  publicKey: string;
  address: string;
  port: number;
}

const ENTRIES_MAX = 16;
const TRANSFER_HISTORY_MAX = 256;

/**
 * What became of one membership command: started (it is the change in flight) or queued
 * behind the change in flight, at `position` (1 = next) under the queue entry `id`.
 */
export interface ChangeOutcome {
  kind: 'join' | 'leave';
  node: string;
  status: 'started' | 'queued';
  position?: number;
  id?: string;
}

/** The change in flight and the commands waiting behind it, for GET /cluster/transfers and the console. */
export interface ChangeQueueView {
  change: { id: string; kind: 'join' | 'leave'; node: string } | null;
  queue: Array<{ id: string; kind: 'join' | 'leave'; node: string }>;
}

export class MembershipService {
  /** Every transfer seen in a membership, latest progress kept after its change completes. */
  private readonly history = new Map<string, TransferPlan>();

  constructor(
    private readonly deps: {
      core: ClusterCore;
      shell: ClusterShell;
      transport: PeerTransport;
      peerDeadlineMs: number;
      log: Logger;
      /**
       * Why the membership may not change now, or undefined: a stream's payloads moving to
       * another repository (its transfers would move one repository only).
       */
      blockedBy?: () => string | undefined;
    },
  ) {}

  /**
   * Checks every entry, then asks the admin authority to add each in turn: the first starts
   * at once when no change is in flight, the others wait in the cluster's queue and start
   * one after the other (docs/cluster.md, "Several changes"). An entry refused on the way
   * (a name already taken) ends the request with that error; the entries before it stay.
   */
  async addNodes(body: unknown): Promise<ChangeOutcome[]> {
    const entries = parseEntries(body);
    this.checkNotBlocked();
    const members = [];
    for (const entry of entries) members.push(await this.proveIdentity(entry));
    const outcomes: ChangeOutcome[] = [];
    for (const member of members) outcomes.push(outcomeOf(await this.runAdmin({ type: 'add', member }), 'join', member.name));
    assert(outcomes.length === entries.length, `${entries.length} nodes asked, ${outcomes.length} answered`);
    return outcomes;
  }

  async removeNode(name: string): Promise<ChangeOutcome> {
    checkName('node', name);
    this.checkNotBlocked();
    return outcomeOf(await this.runAdmin({ type: 'remove', name }), 'leave', name);
  }

  /** The change in flight and the queue behind it, as this node's table has them. */
  changeQueue(): ChangeQueueView {
    const membership = this.deps.core.membership();
    const change = membership.change;
    return {
      change: change === undefined ? null : { id: change.id, kind: change.kind, node: change.node },
      queue: queuedCommands(membership).map((entry) => ({ id: entry.id, kind: entry.command.type === 'add' ? 'join' : 'leave', node: commandNode(entry.command) })),
    };
  }

  private checkNotBlocked(): void {
    const blocked = this.deps.blockedBy?.();
    if (blocked !== undefined) throw new StateConflictError(blocked);
  }

  /** Transfers of the current change and of earlier ones this node has seen. */
  transfers(): TransferAction[] {
    this.observe(this.deps.core.membership());
    return [...this.history.values()].map((plan) => ({
      type: 'repo_data_transfer',
      repo: plan.repo,
      from: plan.from,
      to: plan.to,
      complete: plan.complete,
      percentComplete: plan.percentComplete,
      info: { id: plan.id, bytes: plan.bytes, payloads: plan.records, partitions: plan.slots.length },
    }));
  }

  /** Called on every membership change: a completed change's transfers are complete. */
  observe(membership: Membership): void {
    const current = new Set(membership.change?.transfers.map((plan) => plan.id) ?? []);
    // A change names each transfer once (peer-input.ts refuses a table that does not): one history entry each.
    assert(current.size === (membership.change?.transfers.length ?? 0), () => `change ${membership.change?.id} names a transfer twice`);
    for (const plan of membership.change?.transfers ?? []) this.history.set(plan.id, { ...plan });
    for (const [id, plan] of this.history) {
      if (!current.has(id) && !plan.complete && membership.change === undefined) {
        this.history.set(id, { ...plan, complete: true, percentComplete: 100 });
      }
    }
    while (this.history.size > TRANSFER_HISTORY_MAX) this.history.delete(this.history.keys().next().value!);
  }

  /**
   * A token naming the keys of the nodes that may admit a new node (every member that is
   * not Pending or Left): a node started with it trusts only this cluster (join-token.ts).
   */
  joinToken(): string {
    const keys = this.deps.core
      .membership()
      .members.filter((member) => member.state !== 'Pending' && member.state !== 'Left')
      .map((member) => member.publicKey);
    return makeJoinToken(keys);
  }

  /**
   * The node at the entry's address must answer a Ping with a reply signed by the entry's
   * key, and say in that signed reply that it is reached at that very address and port: a
   * relay in front of a real Pending node is refused. A failure names its cause (connection
   * refused, not a peer port, another key, timed out: identity-proof.ts) to the caller, whom
   * the membership authority admitted; the log gets one line, the stack only at debug.
   */
  private async proveIdentity(entry: NodeEntry): Promise<Omit<Member, 'state'>> {
    const where = `${entry.address}:${entry.port}`;
    let reply;
    try {
      reply = await this.deps.transport.callUnknown({ address: entry.address, port: entry.port }, entry.publicKey, PING, {}, {
        deadlineMs: this.deps.peerDeadlineMs,
      });
    } catch (error) {
      const failure = identityProofFailure(error, { name: entry.name, publicKey: entry.publicKey, where, deadlineMs: this.deps.peerDeadlineMs });
      this.deps.log.info({ peer: entry.name, address: where, cause: failure.cause }, `identity proof failed: ${failure.message}`);
      this.deps.log.debug({ err: error, peer: entry.name, address: where }, 'identity proof failed: the peer call');
      throw new BadRequestError(failure.message);
    }
    if (reply.address !== entry.address || reply.port !== entry.port) {
      throw new BadRequestError(`the node holding that key says it is reached at ${reply.address}:${reply.port}, not ${where} (start it with --advertise-address, or add it at its own address)`);
    }
    if (reply.name !== entry.name) throw new BadRequestError(`the node at ${where} is named '${reply.name}', not '${entry.name}'`);
    if (reply.state !== 'Pending') {
      throw new StateConflictError(`node '${entry.name}' is ${reply.state}, not Pending: start it with --join to add it`);
    }
    return { name: entry.name, publicKey: entry.publicKey, address: entry.address, port: entry.port, httpPort: reply.httpPort, zone: reply.zone };
  }

  /** Runs the command on the coordinator: this node's core, or the coordinator's over gRPC. */
  private async runAdmin(command: AdminCommand): Promise<Membership> {
    const membership = this.deps.core.membership();
    const coordinator = coordinatorOf(membership, (name) => this.deps.core.available(name));
    if (coordinator === undefined) throw new StateConflictError('this node is not part of a cluster yet');
    const result: AdminResult =
      coordinator === this.deps.transport.name
        ? await this.deps.shell.admin(command)
        : await this.deps.transport.call(coordinator, ADMIN_COMMAND, command, { deadlineMs: this.deps.peerDeadlineMs });
    if (result.ok) return result.membership;
    if (result.status === 404) throw new NotFoundError(result.message);
    if (result.status === 409) throw new StateConflictError(result.message);
    assert(result.status === 400, `an admin command refused with status ${result.status}`);
    throw new BadRequestError(result.message);
  }
}

/** Started when the table's change is this command's; queued when the queue holds it. */
function outcomeOf(membership: Membership, kind: 'join' | 'leave', node: string): ChangeOutcome {
  const change = membership.change;
  if (change !== undefined && change.node === node && change.kind === kind) return { kind, node, status: 'started' };
  const queue = queuedCommands(membership);
  const place = queue.findIndex((entry) => commandNode(entry.command) === node && (entry.command.type === 'add') === (kind === 'join'));
  // The authority answered ok: the command either started or waits.
  assert(place >= 0, `the ${kind} of ${node} neither started nor queued at epoch ${membership.epoch}`);
  return { kind, node, status: 'queued', position: place + 1, id: queue[place]!.id };
}

const PUBLIC_KEY_BYTES = 32;
const ADDRESS_CHARS_MAX = 255;
const addressSchema = z.string().min(1).max(ADDRESS_CHARS_MAX);

const nodeEntrySchema = z
  .object({
    name: nameSchema('node').refine((name) => !NODE_NAME_FORBIDDEN.test(name), "must not contain '>', '~' or white space"),
    publicKey: z
      .string()
      .refine((key) => Buffer.from(key, 'base64').length === PUBLIC_KEY_BYTES, 'must be the base64 of a 32-byte ed25519 public key')
      .describe("The node's ed25519 public key, base64: `publicKey` of its GET /cluster/localNode."),
    // Clients of the interface send `host` or `address` (spec, "Cluster"): both are accepted.
    address: addressSchema.optional().describe('Host name or IP address of its peer port.'),
    host: addressSchema.optional().describe('Accepted in place of address.'),
    port: z.int().min(1).max(65535).describe("The node's peer (gRPC) port."),
  })
  .refine((entry) => entry.address !== undefined || entry.host !== undefined, { path: ['address'], message: 'address (or host) is required: a host name or IP address' })
  .transform(({ name, publicKey, address, host, port }): NodeEntry => ({ name, publicKey, address: (address ?? host)!, port }))
  .meta({ id: 'NodeEntry', description: 'A node started with --join (state Pending), as its GET /cluster/localNode shows it.' });

/** The body of POST /cluster/nodes. */
export const addNodesBodySchema = z
  .object({ nodes: z.array(nodeEntrySchema).min(1).max(ENTRIES_MAX) })
  .meta({
    id: 'AddNodes',
    examples: [{ nodes: [{ name: 'node-2', publicKey: 'M1jc6k0nxbIzEjQ1OVaw3QYTPjMTxFIV07U0Ir0ATwI=', address: '127.0.0.1', port: 18083 }] }],
  });

function parseEntries(body: unknown): NodeEntry[] {
  return validate(addNodesBodySchema, body).nodes;
}
