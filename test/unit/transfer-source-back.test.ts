// A target that hears again from a source it had taken for unavailable: the transfers from
// that source are asked for again only if no chunk arrives within a heartbeat interval. A
// source taken for unavailable by mistake (a saturated machine, a call that timed out) still
// has its chunks on the way, and a request at once made it send them all twice: the scale
// bench saw 1.5-2.5 times the bytes a join must move from 11 nodes on (docs/cluster.md,
// "Transfers").

import { describe, expect, it } from 'vitest';
import { withAddedMember, withJoiningMember } from '../../src/cluster-core/membership.js';
import { planChange } from '../../src/cluster-core/placement.js';
import { TargetTransfers, type TransferContext } from '../../src/cluster-core/transfers.js';
import type { CoreEffect, Member, Membership, PeerMessage } from '../../src/protocol/cluster-types.js';

const HEARTBEAT_MS = 1_000;

function member(name: string): Member {
  return { name, publicKey: `key-${name}`, address: '127.0.0.1', port: 9000, httpPort: 8000, zone: 'z1', state: 'Joined' };
}

/** a holds everything; b joins: one ssr transfer a → b (with KV and tsr beside it). */
function joiningB(): Membership {
  const base: Membership = { epoch: 3, members: [member('a')], change: undefined };
  const slots = Array.from({ length: 4 }, (_, partition) => ({ partition, replicas: 1 }));
  return withJoiningMember(withAddedMember(base, member('b'), slots, (draft) => planChange({ membership: draft, available: () => true, kvSource: 'a' })));
}

class Target {
  readonly transfers = new TargetTransfers('b', []);
  readonly membership = joiningB();
  readonly requests: string[] = [];
  now = 1_000_000;

  context(): TransferContext {
    return {
      config: { name: 'b', heartbeatIntervalMs: HEARTBEAT_MS, failureTimeoutMs: 3_000, transferStallMs: 10_000, transferWindowChunks: 4 },
      now: this.now,
      membership: this.membership,
      send: (to: string, message: PeerMessage) => {
        if (message.type === 'transfer-request') this.requests.push(`${to}:${message.transfer.repo}:${message.seq}`);
      },
      reportProgress: () => undefined,
    };
  }

  step(run: (context: TransferContext, effects: CoreEffect[]) => void): CoreEffect[] {
    const effects: CoreEffect[] = [];
    run(this.context(), effects);
    return effects;
  }

  /** Chunk 1 of the ssr transfer arrives, and its store completes. */
  chunkArrives(): void {
    const transferId = this.membership.change!.transfers.find((plan) => plan.repo === 'ssr')!.id;
    const chunk = { bytes: new Uint8Array(8), records: 1, cursor: 'k1' };
    this.step((context, effects) => this.transfers.onChunk('a', { type: 'transfer-chunk', transferId, seq: 1, chunk, last: false, totalEstimate: 10, fromCursor: undefined }, context, effects));
    this.step((context, effects) => this.transfers.onChunkStored(transferId, 1, context, effects));
  }

  tickAfter(ms: number): void {
    this.now += ms;
    this.step((context, effects) => this.transfers.onTick(context, effects));
  }
}

describe('transfers - a source heard from again', () => {
  it('asks again for a transfer that hears nothing within a heartbeat interval, from its last durable chunk', () => {
    const target = new Target();
    target.step((context, effects) => target.transfers.pursue(context, effects));
    const first = target.requests.splice(0);
    expect(first).toContain('a:ssr:1');
    target.chunkArrives();
    target.tickAfter(4_000);
    target.transfers.onSourceBack('a', target.context());
    target.tickAfter(HEARTBEAT_MS / 2);
    expect(target.requests).toEqual([]);
    target.tickAfter(HEARTBEAT_MS / 2);
    expect(target.requests).toContain('a:ssr:2');
    // Asked once: the next ticks wait for the stall timer.
    const asked = target.requests.length;
    target.tickAfter(HEARTBEAT_MS);
    expect(target.requests.length).toBe(asked);
  });

  it('does not ask again for a transfer whose chunks still arrive: the source was alive', () => {
    const target = new Target();
    target.step((context, effects) => target.transfers.pursue(context, effects));
    target.requests.splice(0);
    target.tickAfter(4_000);
    target.transfers.onSourceBack('a', target.context());
    target.tickAfter(100);
    target.chunkArrives();
    target.tickAfter(HEARTBEAT_MS);
    target.tickAfter(HEARTBEAT_MS);
    expect(target.requests.filter((request) => request.startsWith('a:ssr'))).toEqual([]);
  });
});
