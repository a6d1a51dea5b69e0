// The cluster side of definition replication: which node coordinates a key, the peer
// calls that forward a write, push records and keep hints (replicated-definitions.ts), and
// the answers to them (definition-messages.ts).

import { StateConflictError } from '../lib/errors.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { PeerTransport } from '../peer/transport.js';
import type { DefinitionRecord } from '../storage/definition-store.js';
import type { GroupCommitter } from '../storage/group-commit.js';
import type { HintBuffer } from '../storage/hints.js';
import { preferenceList } from '../cluster-core/placement.js';
import type { Membership } from '../protocol/cluster-types.js';
import type { DefinitionPeers, DefinitionWrite, ReplicatedDefinitions } from './replicated-definitions.js';
import { DEFINITION_PUSH, DEFINITION_READ, DEFINITION_WRITE, type WireDefinitionRecord } from './definition-messages.js';
import { stringifyJson } from '../lib/json.js';
import { parsePeerJson } from '../peer/documents.js';

/** Definitions one DefinitionRead answers at most. */
const DEFINITIONS_PER_READ_MAX = 500;

export interface ClusterDefinitionPeersDeps {
  localName: string;
  membership(): Membership;
  available(node: string): boolean;
  transport: PeerTransport;
  hints: HintBuffer;
  committer: GroupCommitter;
  peerDeadlineMs: number;
}

export function toWireRecord(record: DefinitionRecord): WireDefinitionRecord {
  return { key: record.key, version: record.version, deleted: record.deleted, valueJson: record.deleted ? '' : stringifyJson(record.value ?? null) };
}

export function fromWireRecord(record: WireDefinitionRecord): DefinitionRecord {
  return { key: record.key, version: record.version, deleted: record.deleted, value: record.deleted ? undefined : parsePeerJson('valueJson', record.valueJson) };
}

export class ClusterDefinitionPeers implements DefinitionPeers {
  readonly localName: string;
  private joined: { epoch: number; names: string[] } = { epoch: -1, names: [] };

  constructor(private readonly deps: ClusterDefinitionPeersDeps) {
    this.localName = deps.localName;
  }

  /** The first available node of the key's ring range over Joined nodes (docs/cluster.md, "Definitions"). */
  coordinatorOf(key: string): string {
    const names = this.joinedNames();
    if (names.length === 0) throw new StateConflictError('this node has not joined a cluster yet: definitions cannot be written here');
    const candidates = preferenceList(names, key, names.length);
    return candidates.find((name) => this.deps.available(name)) ?? candidates[0]!;
  }

  replicaNodes(): string[] {
    return this.deps
      .membership()
      .members.filter((member) => member.name !== this.localName && ['Joining', 'Joined', 'Leaving'].includes(member.state))
      .map((member) => member.name);
  }

  async forwardWrite(node: string, write: DefinitionWrite): Promise<DefinitionRecord | undefined> {
    const reply = await this.deps.transport.call(
      node,
      DEFINITION_WRITE,
      { key: write.key, valueJson: write.delete ? '' : stringifyJson(write.value), expectedVersion: write.expectedVersion, delete: write.delete },
      { deadlineMs: this.deps.peerDeadlineMs },
    );
    if (reply.version === undefined) return undefined;
    return { key: write.key, version: Number(reply.version), value: write.delete ? undefined : write.value, deleted: write.delete };
  }

  async push(node: string, records: DefinitionRecord[]): Promise<void> {
    await this.deps.transport.call(node, DEFINITION_PUSH, { records: records.map(toWireRecord) }, { deadlineMs: this.deps.peerDeadlineMs });
  }

  async hint(node: string, records: DefinitionRecord[]): Promise<void> {
    await this.deps.committer.commit(this.deps.hints.add(node, { repository: 'KV', records }));
  }

  private joinedNames(): string[] {
    const membership = this.deps.membership();
    if (this.joined.epoch !== membership.epoch) {
      this.joined = { epoch: membership.epoch, names: membership.members.filter((member) => member.state === 'Joined').map((member) => member.name).sort() };
    }
    return this.joined.names;
  }
}

/** Answers the writes other nodes forward to this coordinator, and the records they push. */
export function serveDefinitions(endpoint: PeerEndpoint, definitions: Pick<ReplicatedDefinitions, 'coordinate' | 'apply'>): void {
  endpoint.handle(DEFINITION_WRITE, async (_sender, write) => {
    const value = write.delete ? undefined : parsePeerJson('valueJson', write.valueJson);
    const record = await definitions.coordinate({ key: write.key, value, expectedVersion: write.expectedVersion, delete: write.delete });
    return { version: record === undefined ? undefined : String(record.version) };
  });
  endpoint.handle(DEFINITION_PUSH, async (_sender, push) => {
    await definitions.apply(push.records.map(fromWireRecord));
    return {};
  });
}

/** Answers a refilling node's reads of every definition this node holds, a page at a time in key order. */
export function serveDefinitionReads(endpoint: PeerEndpoint, definitions: { records(): DefinitionRecord[] }): void {
  endpoint.handle(DEFINITION_READ, async (_sender, read) => {
    const limit = Math.min(Math.max(1, read.limit), DEFINITIONS_PER_READ_MAX);
    const records = definitions.records().filter((record) => record.key > read.after).sort((a, b) => (a.key < b.key ? -1 : 1)).slice(0, limit);
    return { records: records.map(toWireRecord) };
  });
}

/** Every definition read back from the first peer that answers, a page at a time (highest versions win). */
export async function readAllDefinitions(
  endpoint: PeerEndpoint,
  definitions: { apply(records: DefinitionRecord[]): Promise<void> },
  peers: readonly string[],
  deadlineMs: number,
): Promise<void> {
  // A cluster of one has nobody to read from: what it lost of its definitions is lost.
  if (peers.length === 0) return;
  let lastError: unknown = new Error('no other member answered');
  for (const peer of peers) {
    try {
      for (let after = ''; ; ) {
        const page: { records: WireDefinitionRecord[] } = await endpoint.call(peer, DEFINITION_READ, { after, limit: DEFINITIONS_PER_READ_MAX }, { deadlineMs });
        await definitions.apply(page.records.map(fromWireRecord));
        if (page.records.length < DEFINITIONS_PER_READ_MAX) return;
        after = page.records.at(-1)!.key;
      }
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
