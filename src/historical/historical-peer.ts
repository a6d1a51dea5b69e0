// Historical reads' part of the peer protocol, each answered by an owner of the partition read:
// - ScanRead: a historical query reads a page of a partition;
// - BlockRead: one that reads a tsr stream's columns reads a page of its blocks;
// - LatestRead: one that asks for the last values per key reads a partition's answer.
// Each kind's codec has checked every request and reply (historical-messages.ts).

import { BLOCK_READ, LATEST_READ, SCAN_READ } from './historical-messages.js';
import type { PeerEndpoint } from '../peer/endpoint.js';
import type { BlockPage } from '../storage/tsr.js';
import type { BlockPageRequest } from './historical-blocks.js';
import type { ScanPage, ScanRequest } from './historical-reader.js';
import type { LatestEntry, LatestRequest } from './latest-values.js';
import type { LocalReads } from './local-reads.js';

/** Answers other nodes' pages of the partitions this node owns. */
export function serveScans(endpoint: PeerEndpoint, scanLocal: (request: ScanRequest) => Promise<ScanPage>): void {
  endpoint.handle(SCAN_READ, (_sender, request) => scanLocal(request));
}

export function remoteScan(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: ScanRequest) => Promise<ScanPage> {
  return (node, request) => endpoint.call(node, SCAN_READ, request, { deadlineMs });
}

/** Answers other nodes' pages of the tsr blocks of the partitions this node owns. */
function serveBlocks(endpoint: PeerEndpoint, blocksLocal: (request: BlockPageRequest) => Promise<BlockPage>): void {
  endpoint.handle(BLOCK_READ, (_sender, request) => blocksLocal(request));
}

export function remoteBlocks(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: BlockPageRequest) => Promise<BlockPage> {
  return (node, request) => endpoint.call(node, BLOCK_READ, request, { deadlineMs });
}

/** Answers other nodes' last values per key of the tsr partitions this node owns. */
function serveLatest(endpoint: PeerEndpoint, latestLocal: (request: LatestRequest) => Promise<LatestEntry[]>): void {
  endpoint.handle(LATEST_READ, async (_sender, request) => ({ entries: await latestLocal(request) }));
}

export function remoteLatest(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: LatestRequest) => Promise<LatestEntry[]> {
  return async (node, request) => (await endpoint.call(node, LATEST_READ, request, { deadlineMs })).entries;
}

/** Every historical read this node answers for the partitions it owns: pages, tsr blocks, last values. */
export function serveHistoricalReads(endpoint: PeerEndpoint, reads: Pick<LocalReads, 'scanLocal' | 'blocksLocal' | 'latestLocal'>): void {
  serveScans(endpoint, reads.scanLocal);
  serveBlocks(endpoint, reads.blocksLocal);
  serveLatest(endpoint, reads.latestLocal);
}
