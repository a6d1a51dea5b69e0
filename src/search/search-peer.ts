// The search's part of the peer protocol: a node asked for its share of a search
// (SearchRead) answers it from its own partitions; the node that merges asks the others.
// The kind's codec has checked the request and the answer (search-messages.ts).

import type { PeerEndpoint } from '../peer/endpoint.js';
import { searchLocally, type LocalSearchRequest, type LocalSearchResult } from './local-search.js';
import type { SsrIndex } from './ssr-index.js';
import { SEARCH_READ } from './search-messages.js';

type LocalSearch = (request: LocalSearchRequest) => Promise<LocalSearchResult>;

/** Answers other nodes' SearchReads with this node's share. */
export function serveSearchReads(endpoint: PeerEndpoint, searchLocal: LocalSearch): void {
  endpoint.handle(SEARCH_READ, (_sender, request) => searchLocal(request));
}

/** Asks `node` for its share of a search. */
export function remoteSearch(endpoint: PeerEndpoint, deadlineMs: number): (node: string, request: LocalSearchRequest) => Promise<LocalSearchResult> {
  return (node, request) => endpoint.call(node, SEARCH_READ, request, { deadlineMs });
}

/**
 * This node's share of a search, from its own index: what SearchRead answers and what this
 * node runs itself. A node refilling damaged data answers none (another owner does).
 */
export function servingLocalSearch(index: SsrIndex, serving: { checkServing(what: string): void }, observeSeconds: (seconds: number) => void): LocalSearch {
  return async (request) => {
    serving.checkServing('this search');
    const started = performance.now();
    const result = await searchLocally(index, request);
    observeSeconds((performance.now() - started) / 1000);
    return result;
  };
}
