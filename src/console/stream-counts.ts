// Payloads stored per stream, over the cluster, for the console (issue 14, item 4). Each
// live node counts the records it holds per partition (one local read of its keys, the
// peer Read `streamCounts` for the others); a partition's count is the largest any of its
// current owners reports, since an owner still receiving the partition holds fewer. A
// partition none of whose owners answered makes the stream's count a lower bound.

import { BadRequestError } from '../errors.js';
import { REPOSITORY_NAMES, type Repository, type RepositoryName } from '../storage/repository.js';
import { streamKey, streamUri, type StreamId } from '../streams/stream-id.js';

export interface CountRequest {
  streams: Array<{ key: string; repo: RepositoryName }>;
}

/** Stream key → partition → records this node holds. */
export type LocalCounts = Record<string, Record<string, number>>;

export interface CountedStream {
  uri: string;
  repository: RepositoryName | null;
  /** Stored payloads; null for a stream that is not persisted. */
  payloads: number | null;
  /** False when some partition had no owner that answered: payloads is then a lower bound. */
  complete: boolean;
}

export interface StreamCountDeps {
  /** The tenant's streams with their mapping and policy. */
  streams(tenant: string): Array<{ id: StreamId; repository: RepositoryName | undefined; ringSize: number; replicas: number }>;
  owners(partition: number, replicas: number): readonly string[];
  /** Names of the nodes to ask: this one and every live member holding data. */
  nodes(): readonly string[];
  localName: string;
  countLocal(request: CountRequest): Promise<LocalCounts>;
  countRemote(node: string, request: CountRequest): Promise<LocalCounts>;
}

/** At most this many streams are counted per answer: the console shows a tenant's streams. */
export const COUNTED_STREAMS_MAX = 200;
const CACHE_MS = 2_000;

export class StreamCounter {
  private readonly cache = new Map<string, { atMs: number; answer: Promise<CountedStream[]> }>();

  constructor(
    private readonly deps: StreamCountDeps,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The tenant's streams and their stored payloads; answers within 2 s are shared. */
  count(tenant: string): Promise<CountedStream[]> {
    const cached = this.cache.get(tenant);
    if (cached !== undefined && this.nowMs() - cached.atMs < CACHE_MS) return cached.answer;
    const answer = this.countNow(tenant);
    this.cache.set(tenant, { atMs: this.nowMs(), answer });
    answer.catch(() => this.cache.delete(tenant));
    return answer;
  }

  private async countNow(tenant: string): Promise<CountedStream[]> {
    const streams = this.deps.streams(tenant).slice(0, COUNTED_STREAMS_MAX);
    const persisted = streams.filter((stream) => stream.repository !== undefined);
    const request: CountRequest = { streams: persisted.map((stream) => ({ key: streamKey(stream.id), repo: stream.repository! })) };
    const answers = new Map<string, LocalCounts>();
    if (request.streams.length > 0) {
      await Promise.all(
        this.deps.nodes().map(async (node) => {
          try {
            answers.set(node, node === this.deps.localName ? await this.deps.countLocal(request) : await this.deps.countRemote(node, request));
          } catch {
            // A node that does not answer counts for nothing; its partitions may have other owners.
          }
        }),
      );
    }
    return streams.map((stream) => {
      if (stream.repository === undefined) return { uri: streamUri(stream.id), repository: null, payloads: null, complete: true };
      return { uri: streamUri(stream.id), repository: stream.repository, ...this.total(streamKey(stream.id), stream, answers) };
    });
  }

  private total(key: string, stream: { ringSize: number; replicas: number }, answers: Map<string, LocalCounts>): { payloads: number; complete: boolean } {
    let payloads = 0;
    let complete = true;
    for (let partition = 0; partition < stream.ringSize; partition += 1) {
      let best: number | undefined;
      for (const owner of this.deps.owners(partition, stream.replicas)) {
        const answer = answers.get(owner);
        if (answer === undefined) continue;
        best = Math.max(best ?? 0, answer[key]?.[String(partition)] ?? 0);
      }
      if (best === undefined) complete = false;
      else payloads += best;
    }
    return { payloads, complete };
  }
}

/** This node's records per partition of each stream asked (the peer Read `streamCounts`). */
export async function countLocally(repositories: Record<RepositoryName, Repository>, request: CountRequest): Promise<LocalCounts> {
  if (!Array.isArray(request.streams) || request.streams.length > COUNTED_STREAMS_MAX) throw new BadRequestError(`streamCounts: 0 to ${COUNTED_STREAMS_MAX} streams`);
  const counts: LocalCounts = {};
  for (const { key, repo } of request.streams) {
    if (!REPOSITORY_NAMES.includes(repo)) throw new BadRequestError(`streamCounts: unknown repository '${String(repo)}'`);
    counts[key] = Object.fromEntries([...(await repositories[repo].countByPartition(key))].map(([partition, count]) => [String(partition), count]));
  }
  return counts;
}
