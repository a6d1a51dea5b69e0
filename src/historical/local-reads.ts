// This node's answers to reads of the partitions it owns: pages of payloads, pages of tsr
// blocks and the last values per key, as its own queries and other nodes (ScanRead, BlockRead,
// LatestRead) ask them. Two rules hold for every one of them:
// - a node refilling damaged data answers none: what it lost would be missing, and another
//   owner answers instead (docs/cluster.md, "Damaged data");
// - while a stream moves to another repository, a page comes from the one complete here, and
//   blocks and last values (read from the tsr) are refused while the tsr is still being filled
//   (streams/repository-move.ts).

import { TributaryError } from '../lib/errors.js';
import type { Repository, RepositoryName } from '../storage/repository.js';
import { isRepositoryName } from '../storage/repository.js';
import type { BlockPage, TimeSeriesRepository } from '../storage/tsr.js';
import type { RepositoryMover } from '../streams/repository-mover.js';
import { BLOCK_PAGE_CHARS_MAX, type BlockPageRequest } from './historical-blocks.js';
import { scanPage, type ScanPage, type ScanRequest } from './historical-reader.js';
import type { LatestEntry, LatestRequest, LatestValues } from './latest-values.js';

export interface LocalReadPorts {
  repositories: Record<RepositoryName, Repository> & { tsr: TimeSeriesRepository };
  /** The repair service: whether this node serves reads, or why not (a refill under way). */
  serving: { serving(): boolean; checkServing(what: string): void };
  mover: Pick<RepositoryMover, 'readRepository' | 'copyingInto'>;
  latestValues: Pick<LatestValues, 'kept' | 'latest'>;
  /** config execution.historicalPageRecords */
  pageRecordsMax: number;
}

export interface LocalReads {
  scanLocal(request: ScanRequest): Promise<ScanPage>;
  blocksLocal(request: BlockPageRequest): Promise<BlockPage>;
  /** The last values kept in memory, if any (undefined: read them). */
  latestKept(request: LatestRequest): LatestEntry[] | undefined;
  latestLocal(request: LatestRequest): Promise<LatestEntry[]>;
}

export function localReads(ports: LocalReadPorts): LocalReads {
  const { repositories, serving, mover, latestValues } = ports;
  const partitionOf = (request: { stream: string; partition: number }) => `partition ${request.partition} of ${request.stream}`;
  // Blocks and latest values are read from the tsr, which a node still copying a stream into it does not hold whole.
  const checkTsrWhole = (stream: string) => {
    if (mover.copyingInto(stream, 'tsr')) throw new TributaryError(409, 'REPOSITORY_MOVING', `this node is still copying ${stream} into the tsr`);
  };
  return {
    scanLocal: async (request) => {
      serving.checkServing(partitionOf(request));
      // While the stream moves to another repository, the page comes from the one complete here (repository-move.ts).
      const served = mover.readRepository(request.stream, request.repo, request.after === undefined);
      if (!isRepositoryName(served)) throw new TributaryError(409, 'REPOSITORY_MOVING', served);
      const page = await scanPage((stream, options) => repositories[served].scan(stream, options), request, ports.pageRecordsMax);
      return { ...page, repo: served };
    },
    blocksLocal: async (request) => {
      serving.checkServing(partitionOf(request));
      checkTsrWhole(request.stream);
      return repositories.tsr.blockPage(request.stream, request.partition, { ...request, charsMax: Math.min(request.charsMax, BLOCK_PAGE_CHARS_MAX) });
    },
    latestKept: (request) => (serving.serving() && !mover.copyingInto(request.stream, 'tsr') ? latestValues.kept(request) : undefined),
    latestLocal: (request) => {
      serving.checkServing(partitionOf(request));
      checkTsrWhole(request.stream);
      return latestValues.latest(request);
    },
  };
}
