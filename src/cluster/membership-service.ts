// Adding and removing nodes (spec, "Cluster"; DESIGN.md, "Cluster"). Any node takes the
// request; the membership coordinator runs it. Before a node is added, its identity is
// proved: it must answer at the given address with a reply signed by the given key that
// names that address. Who may ask is the HTTP layer's business (auth/access-rules.ts).

import { z } from 'zod';
import { BadRequestError, NotFoundError, StateConflictError } from '../errors.js';
import type { Logger } from '../log.js';
import { checkName, nameSchema } from '../names.js';
import type { PeerTransport } from '../peer/transport.js';
import type { ClusterShell } from './cluster-shell.js';
import type { ClusterCore } from './core/core.js';
import { coordinatorOf, NODE_NAME_FORBIDDEN } from './core/placement.js';
import type { AdminCommand, AdminResult, Member, Membership, TransferPlan } from '../protocol/cluster-types.js';
import { validate } from '../validation.js';
import { makeJoinToken } from './join-token.js';

export interface NodeEntry {
  name: string;
  publicKey: string;
  address: string;
  port: number;
}

/** One row of GET /cluster/transfers (spec, "Data transfer action"). */
export interface TransferAction {
  type: 'repo_data_transfer';
  repo: string;
  from: string;
  to: string;
  complete: boolean;
  percentComplete: number;
  /** Repair runs (src/repair) add their own counts beside these. */
  info: { id: string; bytes: number; payloads: number; partitions: number } & Record<string, unknown>;
}

const ENTRIES_MAX = 16;
const TRANSFER_HISTORY_MAX = 256;

export class MembershipService {
  /** Every transfer seen in a membership, latest progress kept after its change completes. */
  private readonly history = new Map<string, TransferPlan>();
  private queued: Promise<void> = Promise.resolve();

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
   * Checks every entry, asks the coordinator to add the first, and adds the others in the
   * background, each once the change before it is complete (one change at a time).
   */
  async addNodes(body: unknown): Promise<Membership> {
    const entries = parseEntries(body);
    this.checkNotBlocked();
    const members = [];
    for (const entry of entries) members.push(await this.proveIdentity(entry));
    const first = await this.runAdmin({ type: 'add', member: members[0]! });
    for (const member of members.slice(1)) {
      this.queued = this.queued.then(() => this.addWhenIdle(member));
    }
    return first;
  }

  removeNode(name: string): Promise<Membership> {
    checkName('node', name);
    this.checkNotBlocked();
    return this.runAdmin({ type: 'remove', name });
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
   * relay in front of a real Pending node is refused. Until the proof holds, every failure
   * (nothing listening, something else listening, another key) answers the same 400 after
   * the same time (the peer deadline), so the endpoint cannot be used to scan ports.
   */
  private async proveIdentity(entry: NodeEntry): Promise<Omit<Member, 'state'>> {
    const where = `${entry.address}:${entry.port}`;
    const started = Date.now();
    let reply;
    try {
      reply = await this.deps.transport.callUnknown({ address: entry.address, port: entry.port }, entry.publicKey, 'Ping', {}, {
        deadlineMs: this.deps.peerDeadlineMs,
      });
    } catch (error) {
      this.deps.log.info({ err: error, peer: entry.name, address: where }, 'identity proof failed');
      await sleepUntil(started + this.deps.peerDeadlineMs);
      throw new BadRequestError(`no node holding the private key of publicKey ${entry.publicKey} answered at ${where} within ${this.deps.peerDeadlineMs} ms`);
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

  private async addWhenIdle(member: Omit<Member, 'state'>): Promise<void> {
    for (;;) {
      try {
        await this.runAdmin({ type: 'add', member });
        return;
      } catch (error) {
        if (!(error instanceof StateConflictError)) {
          this.deps.log.error({ err: error, peer: member.name }, 'queued add failed');
          return;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** Runs the command on the coordinator: this node's core, or the coordinator's over gRPC. */
  private async runAdmin(command: AdminCommand): Promise<Membership> {
    const membership = this.deps.core.membership();
    const coordinator = coordinatorOf(membership, (name) => this.deps.core.available(name));
    if (coordinator === undefined) throw new StateConflictError('this node is not part of a cluster yet');
    const result: AdminResult =
      coordinator === this.deps.transport.name
        ? await this.deps.shell.admin(command)
        : await this.deps.transport.call(coordinator, 'AdminCommand', command, { deadlineMs: this.deps.peerDeadlineMs });
    if (result.ok) return result.membership;
    if (result.status === 404) throw new NotFoundError(result.message);
    if (result.status === 409) throw new StateConflictError(result.message);
    throw new BadRequestError(result.message);
  }
}

function sleepUntil(timeMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, timeMs - Date.now())));
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
