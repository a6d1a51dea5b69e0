// The simulated network of the shell simulation: a PeerEndpoint per node incarnation, as the
// real gRPC transport offers it, over virtual time. A call is carried after a delay, answered
// by the handler the receiver registered, and its reply carried back; it is lost when the link
// is cut, the message dropped, or either end is not running, and then the caller's deadline
// passes (PeerUnavailableError), as over gRPC. Bodies are copied both ways (nothing is shared
// between nodes). A message goes where the sender believes the receiver listens: a node that
// moved is out of reach until the sender learns its new port. A receiver refuses a call from a
// sender its table does not know (PeerAuthError). Transfer streams keep their order; a lost
// chunk breaks the stream.

import { TributaryError } from '../../src/lib/errors.js';
import type { CallHandler, CallOptions, PeerEndpoint, TransferHandler, TransferSender } from '../../src/peer/endpoint.js';
import { PeerAuthError, PeerUnavailableError } from '../../src/peer/errors.js';
import type { TransferChunk } from '../../src/peer/codec.js';
import type { PeerMessageKind } from '../../src/peer/kinds.js';
import type { TransferStreamHandlers } from '../../src/peer/transfer-stream.js';
import { RemotePeerError, toErrorReply } from '../../src/peer/wire.js';
import type { Prng } from './prng.js';
import type { Incarnation, VirtualWorld } from './virtual-world.js';

export interface LinkFaults {
  dropRate: number;
  delayMs: readonly [number, number];
}

/** What the network needs to know of each node. */
export interface NetworkHost {
  readonly name: string;
  /** The port the node listens on now. */
  readonly port: number;
  /** The port `from` believes `to` listens on (its table), or undefined when it does not know `to`. */
  portOf(to: string): number | undefined;
  /**
   * Whether it takes a call of `kind` from `sender`, as the real transport decides: a sender
   * in its table (a Left one only for the kinds acceptsKindFrom allows), or an Admit while it has no table. A
   * refused call fails with PeerAuthError, as UNAUTHENTICATED does over gRPC.
   */
  admits(sender: string, kind: string): boolean;
}

/** Told of every call and transfer chunk sent (the scale simulation counts them and their bytes). */
export type NetworkObserver = (from: string, to: string, kind: PeerMessageKind<unknown, unknown> | 'TransferChunk', body: unknown) => void;

export class SimNetwork {
  readonly cuts = new Set<string>();
  faults: LinkFaults;
  private readonly endpoints = new Map<string, SimEndpoint>();
  private readonly hosts = new Map<string, NetworkHost>();
  messages = 0;
  observe: NetworkObserver | undefined;

  constructor(
    readonly world: VirtualWorld,
    private readonly prng: Prng,
    faults: LinkFaults,
  ) {
    this.faults = faults;
  }

  /** A fresh endpoint for a node's new incarnation (a restart forgets handlers and streams). */
  attach(host: NetworkHost, owner: Incarnation): SimEndpoint {
    const endpoint = new SimEndpoint(this, host.name, owner);
    this.endpoints.set(host.name, endpoint);
    this.hosts.set(host.name, host);
    return endpoint;
  }

  /** Whether a message from `from` would reach `to` now, and after how long. */
  route(from: string, to: string): number | undefined {
    this.messages += 1;
    if (this.cuts.has(`${from}>${to}`)) return undefined;
    const sender = this.hosts.get(from);
    const receiver = this.hosts.get(to);
    if (sender === undefined || receiver === undefined) return undefined;
    const believed = sender.portOf(to);
    if (believed !== undefined && believed !== receiver.port) return undefined;
    if (this.prng.chance(this.faults.dropRate)) return undefined;
    return this.prng.int(this.faults.delayMs[0], this.faults.delayMs[1]);
  }

  /** Whether `to` takes a call of `kind` from `from`. */
  admits(to: string, from: string, kind: string): boolean {
    return this.hosts.get(to)?.admits(from, kind) ?? false;
  }

  /** The endpoint of `name`'s current incarnation, if it runs. */
  endpointOf(name: string): SimEndpoint | undefined {
    const endpoint = this.endpoints.get(name);
    return endpoint?.owner.alive === true ? endpoint : undefined;
  }
}

export class SimEndpoint implements PeerEndpoint {
  private readonly handlers = new Map<string, (sender: string, body: unknown) => Promise<unknown>>();
  private transferHandler: TransferHandler | undefined;
  /**
   * A notice here is a call whose reply is dropped, failing after this long when unanswered:
   * the simulation has no streams, and a lost notice shows as the failed call it replaces.
   */
  noticeDeadlineMs = 1_000;

  constructor(
    private readonly network: SimNetwork,
    readonly name: string,
    readonly owner: Incarnation,
  ) {}

  handle<Req, Res>(kind: PeerMessageKind<Req, Res>, handler: CallHandler<Req, Res>): void {
    this.handlers.set(kind.name, handler as (sender: string, body: unknown) => Promise<unknown>);
  }

  handleTransfer(handler: TransferHandler): void {
    this.transferHandler = handler;
  }

  notify<Req>(to: string, kind: PeerMessageKind<Req, unknown>, body: Req, onError: (error: Error) => void): boolean {
    this.call(to, kind, body, { deadlineMs: this.noticeDeadlineMs }).catch(onError);
    return true;
  }

  callEach<Req, Res>(to: readonly string[], kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Array<Promise<Res>> {
    return to.map((node) => this.call(node, kind, body, options));
  }

  call<Req, Res>(to: string, kind: PeerMessageKind<Req, Res>, body: Req, options: CallOptions): Promise<Res> {
    const world = this.network.world;
    return new Promise<Res>((resolve, reject) => {
      let settled = false;
      const finish = (outcome: () => void): void => {
        if (settled) return;
        settled = true;
        outcome();
      };
      world.timersOf(this.owner).setTimeout(() => finish(() => reject(new PeerUnavailableError(to, `${to} unreachable: deadline of ${options.deadlineMs} ms passed`))), options.deadlineMs);
      this.network.observe?.(this.name, to, kind as PeerMessageKind<unknown, unknown>, body);
      const there = this.network.route(this.name, to);
      if (there === undefined) return;
      const request = structuredClone(body);
      world.schedule(world.now + there, () => {
        const receiver = this.network.endpointOf(to);
        if (receiver === undefined) return;
        const refused = !this.network.admits(to, this.name, kind.name);
        const answering = refused ? Promise.resolve(undefined) : receiver.answer(this.name, kind.name, request);
        void answering.then((answer) => {
          if (!receiver.owner.alive) return;
          const back = this.network.route(to, this.name);
          if (back === undefined) return;
          const outcome = (): void => {
            if (answer === undefined) reject(new PeerAuthError(`${to} refused the call: unknown sender '${this.name}'`));
            else if (answer.ok) resolve(structuredClone(answer.reply) as Res);
            else reject(new RemotePeerError(to, answer.error));
          };
          world.schedule(world.now + back, () => finish(outcome), this.owner);
        });
      }, this.network.endpointOf(to)?.owner);
    });
  }

  /** Runs this node's handler; errors become the ErrorReply the caller sees. */
  async answer(sender: string, kind: string, body: unknown): Promise<{ ok: true; reply: unknown } | { ok: false; error: ReturnType<typeof toErrorReply> }> {
    const handler = this.handlers.get(kind);
    if (handler === undefined) return { ok: false, error: toErrorReply(new TributaryError(400, 'BAD_PEER_MESSAGE', `no handler for kind '${kind}' on ${this.name}`)) };
    try {
      return { ok: true, reply: await handler(sender, body) };
    } catch (error) {
      return { ok: false, error: toErrorReply(error) };
    }
  }

  openTransferStream(to: string, handlers: TransferStreamHandlers, _options: CallOptions): TransferSender {
    return new SimTransferStream(this.network, this, to, handlers);
  }

  transferHandlerOf(): TransferHandler | undefined {
    return this.transferHandler;
  }
}

/** One ordered stream of chunks; acks come back in order; any loss closes it. */
class SimTransferStream implements TransferSender {
  private open = true;
  private lastArrival = 0;
  private lastAck = 0;

  constructor(
    private readonly network: SimNetwork,
    private readonly from: SimEndpoint,
    private readonly to: string,
    private readonly handlers: TransferStreamHandlers,
  ) {}

  send(chunk: TransferChunk): boolean {
    if (!this.open) return false;
    const world = this.network.world;
    this.network.observe?.(this.from.name, this.to, 'TransferChunk', chunk);
    const delay = this.network.route(this.from.name, this.to);
    if (delay === undefined) {
      this.close(new PeerUnavailableError(this.to, `transfer stream to ${this.to} broke`));
      return true;
    }
    this.lastArrival = Math.max(this.lastArrival, world.now + delay);
    const copy = structuredClone(chunk);
    world.schedule(this.lastArrival, () => {
      const receiver = this.network.endpointOf(this.to);
      const handler = receiver?.transferHandlerOf();
      if (!this.open) return;
      if (receiver === undefined || handler === undefined) return this.close(new PeerUnavailableError(this.to, `${this.to} is not running`));
      void handler(this.from.name, copy).then(
        (ack) => this.carryAck(receiver, ack),
        (error: unknown) => this.close(error instanceof TributaryError ? error : new PeerUnavailableError(this.to, String(error))),
      );
    }, this.network.endpointOf(this.to)?.owner);
    return true;
  }

  cancel(): void {
    this.open = false;
  }

  private carryAck(receiver: SimEndpoint, ack: Parameters<TransferStreamHandlers['onAck']>[0]): void {
    if (!receiver.owner.alive || !this.open) return;
    const world = this.network.world;
    const delay = this.network.route(this.to, this.from.name);
    if (delay === undefined) return this.close(new PeerUnavailableError(this.to, `ack from ${this.to} lost`));
    this.lastAck = Math.max(this.lastAck, world.now + delay);
    world.schedule(this.lastAck, () => this.open && this.handlers.onAck(structuredClone(ack)), this.from.owner);
  }

  private close(error: TributaryError): void {
    if (!this.open) return;
    this.open = false;
    this.network.world.schedule(this.network.world.now, () => this.handlers.onClose(error), this.from.owner);
  }
}
