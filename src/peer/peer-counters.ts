// Per-peer traffic counters of the peer transport, for the `transport` monitoring service.
// The transport updates them as messages go and come; nothing here does
// I/O. A peer is named as its messages name it (a refused sender's claimed name included),
// so the number of peers kept is bounded.

export interface PeerTraffic {
  peer: string;
  /** gRPC channels this node opened to the peer. */
  channelsOpened: number;
  sent: { messages: number; bytes: number };
  received: { messages: number; bytes: number };
  /** Calls to the peer that failed (unreachable, deadline, an error reply). */
  errors: number;
  /** Messages from the peer this node refused, by reason. */
  refused: Record<string, number>;
}

const PEERS_MAX = 1_024;

export class PeerCounters {
  private readonly peers = new Map<string, PeerTraffic>();

  sent(peer: string, bytes: number): void {
    const traffic = this.of(peer);
    traffic.sent.messages += 1;
    traffic.sent.bytes += bytes;
  }

  received(peer: string, bytes: number): void {
    const traffic = this.of(peer);
    traffic.received.messages += 1;
    traffic.received.bytes += bytes;
  }

  error(peer: string): void {
    this.of(peer).errors += 1;
  }

  refused(peer: string, reason: string): void {
    const refused = this.of(peer).refused;
    refused[reason] = (refused[reason] ?? 0) + 1;
  }

  channelOpened(peer: string): void {
    this.of(peer).channelsOpened += 1;
  }

  snapshot(): PeerTraffic[] {
    return [...this.peers.values()].map((traffic) => structuredClone(traffic)).sort((a, b) => a.peer.localeCompare(b.peer));
  }

  private of(peer: string): PeerTraffic {
    let traffic = this.peers.get(peer);
    if (traffic === undefined) {
      // Names come from the wire: a flood of made-up senders shares one entry past the bound.
      const name = this.peers.size >= PEERS_MAX ? '(other)' : peer.slice(0, 128);
      traffic = this.peers.get(name) ?? { peer: name, channelsOpened: 0, sent: { messages: 0, bytes: 0 }, received: { messages: 0, bytes: 0 }, errors: 0, refused: {} };
      this.peers.set(name, traffic);
    }
    return traffic;
  }
}
