// Where each persisted stream's payloads live, read from the stream definitions: its
// repository, its ring size and its replicas. The cluster places partitions, repair walks
// streams, the _cat tables and the console show them, and ingest and execution route by
// them; all of them ask here instead of reading `policy/` and `repository/` keys.

import { DEFAULT_POLICY, type DistributionPolicy } from './policy.js';
import type { RepositoryName } from '../storage/repository.js';
import type { RepositoryMapping } from './repository-mapping.js';

/** The part of the definitions store placement reads. */
export interface PlacementDefinitions {
  get<T>(key: string): { value: T } | undefined;
  list<T>(prefix: string): Array<{ key: string; value: T }>;
}

/** One persisted stream (with a repository mapping) and where its partitions go. */
export interface StreamPlacement {
  key: string;
  repo: RepositoryName;
  replicas: number;
  ringSize: number;
}

/** A (partition, replicas) pair the ring must place. */
export interface PartitionSlot {
  partition: number;
  replicas: number;
}

export class StreamPlacements {
  constructor(private readonly definitions: PlacementDefinitions) {}

  /** The stream's distribution policy, or the default while it has none. */
  policyOf(streamKey: string): DistributionPolicy {
    return this.definitions.get<DistributionPolicy>(`policy/${streamKey}`)?.value ?? DEFAULT_POLICY;
  }

  replicasOf(streamKey: string): number {
    return this.policyOf(streamKey).replicas;
  }

  /** The stream's repository (undefined while it has no mapping), ring size and replicas. */
  placementOf(streamKey: string): { repo: RepositoryName | undefined; ringSize: number; replicas: number } {
    const policy = this.policyOf(streamKey);
    return { repo: this.mappingOf(streamKey)?.name, ringSize: policy.ring_size, replicas: policy.replicas };
  }

  /** The analyzer the stream's ssr index uses for strings. */
  analyzerOf(streamKey: string): 'keyword' | 'standard' {
    return this.mappingOf(streamKey)?.config.defaultStringAnalyzer === 'keyword' ? 'keyword' : 'standard';
  }

  /** Every stream mapped to ssr or tsr, with its placement. */
  persisted(): StreamPlacement[] {
    return this.definitions.list<RepositoryMapping>('repository/').flatMap((mapping) => {
      const repo = mapping.value.name;
      if (repo !== 'ssr' && repo !== 'tsr') return [];
      const key = mapping.key.slice('repository/'.length);
      const policy = this.policyOf(key);
      return [{ key, repo, replicas: policy.replicas, ringSize: policy.ring_size }];
    });
  }

  /** Every defined stream (mapped or not) with its replicas: what a transfer moves. */
  defined(): Array<{ key: string; replicas: number }> {
    return this.definitions.list('stream/').map((stream) => {
      const key = stream.key.slice('stream/'.length);
      return { key, replicas: this.replicasOf(key) };
    });
  }

  /** The distinct (partition, replicas) pairs of the persisted streams: the slots the ring must place. */
  slotsInUse(): PartitionSlot[] {
    const seen = new Set<string>();
    const slots: PartitionSlot[] = [];
    for (const stream of this.persisted()) {
      for (let partition = 0; partition < stream.ringSize; partition += 1) {
        const key = `${partition}/${stream.replicas}`;
        if (seen.has(key)) continue;
        seen.add(key);
        slots.push({ partition, replicas: stream.replicas });
      }
    }
    return slots;
  }

  /** The slots in use, or while no stream is persisted those of the default policy (the ring still exists). */
  slotsForOwnership(): PartitionSlot[] {
    const slots = this.slotsInUse();
    if (slots.length > 0) return slots;
    return Array.from({ length: DEFAULT_POLICY.ring_size }, (_, partition) => ({ partition, replicas: DEFAULT_POLICY.replicas }));
  }

  /** The partitionings in use; the default when there are none. */
  policiesInUse(): Array<Pick<DistributionPolicy, 'ring_size' | 'replicas'>> {
    const policies = this.persisted().map((stream) => ({ ring_size: stream.ringSize, replicas: stream.replicas }));
    return policies.length > 0 ? policies : [DEFAULT_POLICY];
  }

  private mappingOf(streamKey: string): RepositoryMapping | undefined {
    return this.definitions.get<RepositoryMapping>(`repository/${streamKey}`)?.value;
  }
}
