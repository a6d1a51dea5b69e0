// Execution's part of the peer protocol, each answered where its state lives:
// - OutputPoll: a node serving an output's SSE clients long-polls the output's host;
// - ScanRead: a historical query reads a page of a partition from one of its owners;
// - BlockRead: one that reads a tsr stream's columns reads a page of its blocks;
// - LatestRead: one that asks for the last values per key reads a partition's answer;
// - ExecutionStatusRead: the queries response asks the session's host how its queries run;
// - LivePayloads: the node that accepted payloads hands them to the hosts of live queries.
// The codec has checked every request and reply (src/peer/codec.ts, documents.ts).

import { z } from 'zod';
import { payloadSchema, readDocument } from '../peer/documents.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { LiveFeed } from './live-feed.js';
import type { ScanPage, ScanRequest } from './historical-reader.js';
import type { BlockPageRequest } from './historical-blocks.js';
import type { BlockPage } from '../storage/tsr.js';
import type { LatestEntry, LatestRequest } from './latest-values.js';
import type { PollReply } from './output-channel.js';
import type { OutputPollRequest, OutputRegistry } from './output-registry.js';
import type { RunStatus, SessionHost } from './session-host.js';
import { sessionKey } from './session-model.js';

/** Answers other nodes' polls of the outputs hosted here. */
export function serveOutputPolls(endpoint: PeerEndpoint, outputs: OutputRegistry): void {
  endpoint.handle('OutputPoll', (_sender, request) => outputs.poll(request));
}

export function remoteOutputPoll(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: OutputPollRequest) => Promise<PollReply> {
  return (node, request) => endpoint.call(node, 'OutputPoll', request, { deadlineMs });
}

/** Answers other nodes' pages of the partitions this node owns. */
export function serveScans(endpoint: PeerEndpoint, scanLocal: (request: ScanRequest) => Promise<ScanPage>): void {
  endpoint.handle('ScanRead', (_sender, request) => scanLocal(request));
}

export function remoteScan(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: ScanRequest) => Promise<ScanPage> {
  return (node, request) => endpoint.call(node, 'ScanRead', request, { deadlineMs });
}

/** Answers other nodes' pages of the tsr blocks of the partitions this node owns. */
export function serveBlocks(endpoint: PeerEndpoint, blocksLocal: (request: BlockPageRequest) => Promise<BlockPage>): void {
  endpoint.handle('BlockRead', (_sender, request) => blocksLocal(request));
}

export function remoteBlocks(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: BlockPageRequest) => Promise<BlockPage> {
  return (node, request) => endpoint.call(node, 'BlockRead', request, { deadlineMs });
}

/** Answers other nodes' last values per key of the tsr partitions this node owns. */
export function serveLatest(endpoint: PeerEndpoint, latestLocal: (request: LatestRequest) => Promise<LatestEntry[]>): void {
  endpoint.handle('LatestRead', async (_sender, request) => ({ entries: await latestLocal(request) }));
}

export function remoteLatest(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: LatestRequest) => Promise<LatestEntry[]> {
  return async (node, request) => (await endpoint.call(node, 'LatestRead', request, { deadlineMs })).entries;
}

/**
 * Answers how the queries of a session hosted here run (none when it is not hosted here),
 * after making the session run as stored when asked to settle.
 */
export function serveExecutionStatuses(endpoint: PeerEndpoint, sessions: Pick<SessionHost, 'statuses' | 'reconcile'>): void {
  endpoint.handle('ExecutionStatusRead', async (_sender, request) => {
    const key = sessionKey(request.tenant, request.sessionId);
    if (request.settle) await sessions.reconcile(key);
    return { queries: [...(sessions.statuses(key) ?? [])].map(([queryId, status]) => ({ queryId, status })) };
  });
}

/** The run statuses of a session's queries, as its host `node` reports them; with `settle`, once it runs as stored there. */
export function remoteExecutionStatuses(endpoint: PeerEndpoint, deadlineMs: number): (node: string, tenant: string, sessionId: string, settle?: boolean) => Promise<Map<string, RunStatus>> {
  return async (node, tenant, sessionId, settle = false) => {
    const reply = await endpoint.call(node, 'ExecutionStatusRead', { tenant, sessionId, settle }, { deadlineMs });
    return new Map(reply.queries.map(({ queryId, status }) => [queryId, status]));
  };
}

const livePayloadsSchema = z.array(payloadSchema);

/** Takes payloads another node accepted into the live queries hosted here. */
export function serveLivePayloads(endpoint: PeerEndpoint, feed: Pick<LiveFeed, 'deliver'>): void {
  endpoint.handle('LivePayloads', async (_sender, live) => {
    feed.deliver(live.stream, readDocument('payloadsJson', live.payloadsJson, livePayloadsSchema));
    return {};
  });
}
