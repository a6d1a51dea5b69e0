// The peer port's gate: who may make this node read a message, checked from the call's metadata
// before a byte of its body is read. A peer message can be 16 MiB and was decoded before its
// sender was checked, with no bound on how many at once; now every call carries a signed caller
// header (sender, time, nonce, kind), and the gate refuses, before the body is buffered:
// - a call with no header, or one outside the replay window;
// - a known sender whose header signature does not hold;
// - a stranger (a sender not in the node table), except for the kinds a stranger may send
//   (gate classes `anyone` and `admitted-stranger` in kinds.ts: Ping, and Admit to a node with
//   no cluster yet), at most STRANGER_CALLS_MAX of them at once (their bodies are small, and
//   bounded by the message size);
// - any call beyond `callsInFlightMax` in flight (RESOURCE_EXHAUSTED: the caller retries).
// The envelope inside is still checked in full (signature over the body, nonce, recipient);
// its nonce must be the header's, so a header cannot be lifted onto another message.

import { randomBytes, type KeyObject } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../lib/log.js';
import type { PeerRefusalReason } from '../metrics/metrics.js';
import { strangersMayCall } from './kinds.js';
import { digestOf, NONCE_BYTES, signBytes, verifyBytes, verifyingKeyOf } from './signing.js';

export const CALLER_METADATA_KEY = 'tributary-caller-bin';
/** Strangers' calls (Ping, Admit) served at once. */
export const STRANGER_CALLS_MAX = 4;
const EMPTY = new Uint8Array(0);
const HEADER_BYTES_MAX = 1_024;

export interface CallerClaim {
  sender: string;
  sentAtMs: number;
  nonce: Uint8Array;
  kind: string;
  signature: Uint8Array;
}

/** The signed header a caller attaches to a call (or a transfer stream) of `kind`. */
export function callerMetadata(signingKey: KeyObject, sender: string, kind: string, sentAtMs: number, nonce: Uint8Array = randomBytes(NONCE_BYTES)): grpc.Metadata {
  const signature = signBytes(signingKey, claimDigest({ sender, sentAtMs, nonce, kind }));
  const metadata = new grpc.Metadata();
  const header = { sender, sentAtMs, kind, nonce: Buffer.from(nonce).toString('base64'), signature: Buffer.from(signature).toString('base64') };
  metadata.set(CALLER_METADATA_KEY, Buffer.from(JSON.stringify(header), 'utf8'));
  return metadata;
}

/** The claim in a call's metadata, or undefined when there is none or it is malformed. */
export function callerClaim(metadata: grpc.Metadata): CallerClaim | undefined {
  const [value] = metadata.get(CALLER_METADATA_KEY);
  if (!Buffer.isBuffer(value) || value.length > HEADER_BYTES_MAX) return undefined;
  try {
    const header = JSON.parse(value.toString('utf8')) as Record<string, unknown>;
    const { sender, sentAtMs, kind, nonce, signature } = header;
    if (typeof sender !== 'string' || typeof kind !== 'string' || typeof nonce !== 'string' || typeof signature !== 'string') return undefined;
    if (typeof sentAtMs !== 'number' || !Number.isSafeInteger(sentAtMs)) return undefined;
    const nonceBytes = Buffer.from(nonce, 'base64');
    if (nonceBytes.length !== NONCE_BYTES) return undefined;
    return { sender, sentAtMs, kind, nonce: nonceBytes, signature: Buffer.from(signature, 'base64') };
  } catch {
    return undefined;
  }
}

function claimDigest(claim: Omit<CallerClaim, 'signature'>): Buffer {
  return digestOf({ kind: `caller/${claim.kind}`, sender: claim.sender, sentAtMs: claim.sentAtMs, nonce: claim.nonce, replyTo: EMPTY }, EMPTY, undefined);
}

export interface InboundGateOptions {
  /** Base64 public key of a sender whose requests are taken; undefined for strangers. */
  publicKeyOf(sender: string): string | undefined;
  replayWindowMs: number;
  callsInFlightMax: number;
  /**
   * Methods whose streams live as long as their connection (Notify): not counted against
   * `callsInFlightMax` (the transport bounds them: one per sender), and never a stranger's.
   */
  longLivedPaths?: ReadonlySet<string>;
  clock: () => number;
  log: Logger;
  /**
   * Told of each refusal, with the sender the header claims (undefined without a header):
   * the transport counts them with its own refusals (metrics, per-peer counters).
   */
  onRefused?(sender: string | undefined, reason: PeerRefusalReason): void;
}

/** The counts the gate keeps (tests and monitoring). */
export interface GateCounts {
  inFlight: number;
  strangersInFlight: number;
  refused: number;
}

export function inboundGate(options: InboundGateOptions): { interceptor: grpc.ServerInterceptor; counts: GateCounts } {
  const counts: GateCounts = { inFlight: 0, strangersInFlight: 0, refused: 0 };
  const interceptor: grpc.ServerInterceptor = (method, call) => {
    const longLived = options.longLivedPaths?.has(method.path) === true;
    let admitted: 'known' | 'stranger' | undefined;
    const release = () => {
      if (admitted === undefined) return;
      counts.inFlight -= 1;
      if (admitted === 'stranger') counts.strangersInFlight -= 1;
      admitted = undefined;
    };
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, nextMetadata) => {
            const verdict = judge(callerClaim(metadata), options, counts, longLived);
            if ('refusal' in verdict) {
              counts.refused += 1;
              const { sender, ...context } = verdict.context;
              options.log.warn({ peer: sender, ...context, address: call.getPeer(), reason: verdict.refusal }, 'peer message refused');
              options.onRefused?.(sender, verdict.reason);
              call.sendStatus({ code: verdict.code, details: verdict.refusal });
              return;
            }
            if (longLived) {
              nextMetadata(metadata);
              return;
            }
            admitted = verdict.admitted;
            counts.inFlight += 1;
            if (admitted === 'stranger') counts.strangersInFlight += 1;
            nextMetadata(metadata);
          },
          onCancel: release,
        }),
      sendStatus: (status, next) => {
        release();
        next(status);
      },
    });
  };
  return { interceptor, counts };
}

type Verdict =
  | { admitted: 'known' | 'stranger' }
  | { refusal: string; reason: PeerRefusalReason; code: grpc.status; context: { sender?: string; kind?: string; sentAtMs?: number } };

function judge(claim: CallerClaim | undefined, options: InboundGateOptions, counts: GateCounts, longLived: boolean): Verdict {
  if (claim === undefined) return { refusal: 'no caller header', reason: 'malformed', code: grpc.status.UNAUTHENTICATED, context: {} };
  const context = { sender: claim.sender, kind: claim.kind, sentAtMs: claim.sentAtMs };
  const now = options.clock();
  if (Math.abs(now - claim.sentAtMs) > options.replayWindowMs) {
    return { refusal: `timestamp ${claim.sentAtMs} outside ±${options.replayWindowMs} ms of ${now}`, reason: 'stale', code: grpc.status.UNAUTHENTICATED, context };
  }
  if (!longLived && counts.inFlight >= options.callsInFlightMax) {
    return { refusal: `busy: ${counts.inFlight} peer calls in flight`, reason: 'busy', code: grpc.status.RESOURCE_EXHAUSTED, context };
  }
  const key = options.publicKeyOf(claim.sender);
  if (key !== undefined) {
    if (!verifyBytes(verifyingKeyOf(key), claimDigest(claim), claim.signature)) {
      return { refusal: `bad caller signature (not by ${claim.sender}'s key)`, reason: 'bad_signature', code: grpc.status.UNAUTHENTICATED, context };
    }
    return { admitted: 'known' };
  }
  if (longLived || !strangersMayCall(claim.kind)) return { refusal: `unknown sender '${claim.sender}'`, reason: 'unknown_sender', code: grpc.status.UNAUTHENTICATED, context };
  if (counts.strangersInFlight >= STRANGER_CALLS_MAX) {
    return { refusal: `busy: ${counts.strangersInFlight} calls from unknown senders in flight`, reason: 'busy', code: grpc.status.RESOURCE_EXHAUSTED, context };
  }
  return { admitted: 'stranger' };
}
