// The node table (spec, "Cluster node"): the documents of the members of the membership
// this node acts on, with each peer's availability as this node's failure detector sees it.

import { assert } from '../lib/assert.js';
import { NotFoundError } from '../lib/errors.js';
import type { Tenant } from '../replicated-definitions/tenants.js';

export type NodeState = 'Pending' | 'Joining' | 'Joined' | 'Leaving' | 'Left';

export interface NodeDocument {
  name: string;
  zone: string;
  /** Base64 of the 32-byte ed25519 public key. */
  publicKey: string;
  address: string;
  /** The peer (gRPC) port: what POST /cluster/nodes uses to reach the node. */
  port: number;
  /** The HTTP port, where clients reach the node (an addition to the spec's fields). */
  httpPort: number;
  version: { number: string; revision: string };
  state: NodeState;
  available: 'true' | 'false';
}

export interface ClusterDocument {
  nodes: NodeDocument[];
  tenants: Tenant[];
}

export class NodeTable {
  private readonly nodes = new Map<string, NodeDocument>();

  constructor(readonly localName: string) {
    assert(localName.length > 0, 'a node table of a node with no name');
  }

  upsert(node: NodeDocument): void {
    this.nodes.set(node.name, node);
  }

  /** Replaces the whole table (a new membership was applied). */
  replaceAll(nodes: readonly NodeDocument[]): void {
    this.nodes.clear();
    for (const node of nodes) this.nodes.set(node.name, node);
    // A membership names each member once.
    assert(this.nodes.size === nodes.length, `${nodes.length} node documents for ${this.nodes.size} names`);
  }

  local(): NodeDocument {
    return this.get(this.localName);
  }

  get(name: string): NodeDocument {
    const node = this.nodes.get(name);
    if (node === undefined) throw new NotFoundError(`node '${name}' is not in the cluster`);
    return node;
  }

  list(): NodeDocument[] {
    return [...this.nodes.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Names of the nodes that own data: the ring is built from these. */
  joinedNames(): string[] {
    return this.list()
      .filter((node) => node.state === 'Joined')
      .map((node) => node.name);
  }
}
