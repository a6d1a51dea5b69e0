// Execution's part of the peer protocol, each answered where its state lives:
// - OutputPoll: a node serving an output's SSE clients long-polls the output's host;
// - ExecutionStatusRead: the queries response asks the session's host how its queries run;
// - LivePayloads: the node that accepted payloads hands them to the hosts of live queries.
// Each kind's codec has checked every request and reply (execution-messages.ts).

import { z } from 'zod';
import { readDocument } from '../peer/documents.js';
import { stringifyJson } from '../lib/json.js';
import { EXECUTION_STATUS_READ, LIVE_PAYLOADS, OUTPUT_POLL } from './execution-messages.js';
import { payloadSchema } from '../historical/historical-messages.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { LiveFeed } from './live-feed.js';
import type { PollReply } from './output-channel.js';
import type { OutputPollRequest, OutputRegistry } from './output-registry.js';
import type { RunStatus, SessionHost } from './session-host.js';
import { sessionKey } from './session-model.js';

/** Answers other nodes' polls of the outputs hosted here. */
export function serveOutputPolls(endpoint: PeerEndpoint, outputs: OutputRegistry): void {
  endpoint.handle(OUTPUT_POLL, (_sender, request) => outputs.poll(request));
}

export function remoteOutputPoll(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: OutputPollRequest) => Promise<PollReply> {
  return (node, request) => endpoint.call(node, OUTPUT_POLL, request, { deadlineMs });
}

/**
 * Answers how the queries of a session hosted here run (none when it is not hosted here),
 * after making the session run as stored when asked to settle.
 */
export function serveExecutionStatuses(endpoint: PeerEndpoint, sessions: Pick<SessionHost, 'statuses' | 'reconcile'>): void {
  endpoint.handle(EXECUTION_STATUS_READ, async (_sender, request) => {
    const key = sessionKey(request.tenant, request.sessionId);
    if (request.settle) await sessions.reconcile(key);
    return { queries: [...(sessions.statuses(key) ?? [])].map(([queryId, status]) => ({ queryId, status })) };
  });
}

/** The run statuses of a session's queries, as its host `node` reports them; with `settle`, once it runs as stored there. */
export function remoteExecutionStatuses(endpoint: PeerEndpoint, deadlineMs: number): (node: string, tenant: string, sessionId: string, settle?: boolean) => Promise<Map<string, RunStatus>> {
  return async (node, tenant, sessionId, settle = false) => {
    const reply = await endpoint.call(node, EXECUTION_STATUS_READ, { tenant, sessionId, settle }, { deadlineMs });
    return new Map(reply.queries.map(({ queryId, status }) => [queryId, status]));
  };
}

const livePayloadsSchema = z.array(payloadSchema);

/** Takes payloads another node accepted into the live queries hosted here. */
function serveLivePayloads(endpoint: PeerEndpoint, feed: Pick<LiveFeed, 'deliver'>): void {
  endpoint.handle(LIVE_PAYLOADS, async (_sender, live) => {
    feed.deliver(live.stream, readDocument('payloadsJson', live.payloadsJson, livePayloadsSchema));
    return {};
  });
}

/** Hands payloads this node accepted to `node`, which hosts live queries reading the stream. */
export function remoteLivePayloads(endpoint: PeerEndpoint, deadlineMs: number): (node: string, stream: string, payloads: readonly unknown[]) => Promise<void> {
  return async (node, stream, payloads) => void (await endpoint.call(node, LIVE_PAYLOADS, { stream, payloadsJson: stringifyJson(payloads) }, { deadlineMs }));
}

/** Every peer call execution answers on this node: output polls, run statuses, live payloads. */
export function serveExecutionPeers(
  endpoint: PeerEndpoint,
  parts: {
    outputs: OutputRegistry;
    feed: Pick<LiveFeed, 'deliver'>;
    sessionHost: Pick<SessionHost, 'statuses' | 'reconcile'>;
  },
): void {
  serveOutputPolls(endpoint, parts.outputs);
  serveExecutionStatuses(endpoint, parts.sessionHost);
  serveLivePayloads(endpoint, parts.feed);
}
