// Definitions in a cluster (docs/cluster.md, "Definitions"): a write goes to the
// key's coordinator, which serialises writes to that key, checks Service-Config-Version,
// assigns the next version, stores it and pushes it to every other node before answering;
// a node that cannot be reached gets a durable hint. Every node applies the highest
// version it sees, so all converge. Reads are local.

import type {
  Definition,
  DefinitionListener,
  DefinitionRecord,
  Definitions,
  DefinitionStore,
} from '../storage/definition-store.js';
import { DefinitionQuota, type DefinitionQuotaLimits } from './definition-quota.js';

export interface DefinitionWrite {
  key: string;
  value: unknown;
  expectedVersion: string | undefined;
  delete: boolean;
}

/** What replication needs of the cluster; the shell implements it over the peer transport. */
export interface DefinitionPeers {
  readonly localName: string;
  /** The node that serialises writes to `key`. */
  coordinatorOf(key: string): string;
  /** Every other node that holds definitions (Joined, Joining, Leaving). */
  replicaNodes(): string[];
  /** Asks `node` to perform the write as coordinator; resolves with the record it stored. */
  forwardWrite(node: string, write: DefinitionWrite): Promise<DefinitionRecord | undefined>;
  push(node: string, records: DefinitionRecord[]): Promise<void>;
  /** Keeps the records durably for `node`, to push when it is back. */
  hint(node: string, records: DefinitionRecord[]): Promise<void>;
}

export class ReplicatedDefinitions implements Definitions {
  private quota: DefinitionQuota | undefined;

  constructor(
    private readonly local: DefinitionStore,
    private readonly peers: DefinitionPeers,
  ) {}

  /** Byte quotas every write from this node must keep: checked before it is sent anywhere. */
  limitBytes(limits: DefinitionQuotaLimits): void {
    this.quota = new DefinitionQuota(this.local, limits);
  }

  get<T>(key: string): Definition<T> | undefined {
    return this.local.get<T>(key);
  }

  list<T>(prefix: string): Array<Definition<T>> {
    return this.local.list<T>(prefix);
  }

  onChange(listener: DefinitionListener): () => void {
    return this.local.onChange(listener);
  }

  async put<T>(key: string, value: T, expectedVersion?: string): Promise<Definition<T>> {
    this.quota?.check(key, value);
    const record = await this.write({ key, value, expectedVersion, delete: false });
    return { key, version: String(record!.version), value };
  }

  async delete(key: string, expectedVersion?: string): Promise<string | undefined> {
    const record = await this.write({ key, value: undefined, expectedVersion, delete: true });
    return record === undefined ? undefined : String(record.version);
  }

  /** Performs a write as this key's coordinator (a peer forwarded it, or it is ours). */
  async coordinate(write: DefinitionWrite): Promise<DefinitionRecord | undefined> {
    if (write.delete) {
      const version = await this.local.delete(write.key, write.expectedVersion);
      if (version === undefined) return undefined;
    } else {
      await this.local.put(write.key, write.value, write.expectedVersion);
    }
    const record = this.local.record(write.key)!;
    await this.replicate([record]);
    return record;
  }

  /** Records pushed by a coordinator, or sent in a KV transfer. */
  async apply(records: readonly DefinitionRecord[]): Promise<void> {
    for (const record of records) await this.local.applyRemote(record);
  }

  private async write(write: DefinitionWrite): Promise<DefinitionRecord | undefined> {
    const coordinator = this.peers.coordinatorOf(write.key);
    if (coordinator === this.peers.localName) return this.coordinate(write);
    const record = await this.peers.forwardWrite(coordinator, write);
    // Read-your-writes on the node that was asked, even before the coordinator's push lands.
    if (record !== undefined) await this.local.applyRemote(record);
    return record;
  }

  private async replicate(records: DefinitionRecord[]): Promise<void> {
    await Promise.all(
      this.peers.replicaNodes().map((node) =>
        this.peers.push(node, records).catch(() => this.peers.hint(node, records)),
      ),
    );
  }
}
