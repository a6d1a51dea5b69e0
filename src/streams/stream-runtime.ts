// What ingest needs of a stream, compiled once per version of its definitions, not per
// payload: the payload validator, the tag runner (each script compiled once), the repository
// and policy, and the timestamp field.

import type { DistributionPolicy } from './policy.js';
import type { SandboxLimits } from '../scripting/sandbox.js';
import type { Definitions } from '../storage/definition-store.js';
import type { RepositoryName } from '../storage/repository.js';
import type { PayloadValidator } from './payload-validator.js';
import { compilePayloadChecks, type SchemaSource } from './payload-checks.js';
import { partKey, STREAM_PARTS, type StreamDefinitions } from './stream-definitions.js';
import type { RepositoryMapping } from './repository-mapping.js';
import { type StreamId, streamKey } from './stream-id.js';
import { TagRunner } from './tags.js';

export interface CompiledStream {
  id: StreamId;
  key: string;
  validate: PayloadValidator;
  tags: TagRunner | undefined;
  repository: RepositoryName | undefined;
  policy: DistributionPolicy;
  /** Event time of a valid payload in epoch ms, or undefined when it has none. */
  timestampOf: (payload: Record<string, unknown>) => number | undefined;
  /** What an ingest worker compiles its own checks from. */
  schema: SchemaSource;
}

interface CacheEntry {
  signature: string;
  compiled: Promise<CompiledStream>;
}

// A replaced tag runner may still be running a call for an in-flight request; it is
// disposed only after every such call has had its time limit many times over.
const RETIRED_RUNNER_GRACE_MS = 30_000;

export class StreamRuntime {
  private readonly cache = new Map<string, CacheEntry>();

  constructor(
    private readonly store: Definitions,
    private readonly definitions: StreamDefinitions,
    private readonly sandboxLimits: SandboxLimits,
  ) {}

  /** The compiled stream; 404 for an unknown tenant or stream. */
  resolve(id: StreamId): Promise<CompiledStream> {
    this.definitions.getStream(id);
    const signature = STREAM_PARTS.map((part) => this.store.get(partKey(part, id))?.version ?? '-').join('.');
    const key = streamKey(id);
    const cached = this.cache.get(key);
    if (cached?.signature === signature) return cached.compiled;
    if (cached !== undefined) retire(cached);
    const compiled = this.compile(id, signature);
    this.cache.set(key, { signature, compiled });
    compiled.catch(() => this.cache.get(key)?.compiled === compiled && this.cache.delete(key));
    return compiled;
  }

  dispose(): void {
    for (const entry of this.cache.values()) {
      void entry.compiled.then((stream) => stream.tags?.dispose(), () => undefined);
    }
    this.cache.clear();
  }

  private async compile(id: StreamId, signature: string): Promise<CompiledStream> {
    const definition = this.definitions.getStream(id).value.schema;
    const checks = compilePayloadChecks(definition);
    const tagDefinitions = this.definitions.getTags(id).value;
    const tags = tagDefinitions.some((tag) => tag.enabled)
      ? await TagRunner.compile(tagDefinitions, this.sandboxLimits)
      : undefined;
    const mapping = this.store.get<RepositoryMapping>(partKey('repository', id))?.value;
    return {
      id,
      key: streamKey(id),
      validate: checks.validate,
      tags,
      repository: mapping?.name,
      policy: this.definitions.getPolicy(id).value,
      timestampOf: checks.timestampOf,
      schema: { definition, signature },
    };
  }
}

function retire(entry: CacheEntry): void {
  void entry.compiled.then(
    (stream) => {
      if (stream.tags !== undefined) setTimeout(() => stream.tags?.dispose(), RETIRED_RUNNER_GRACE_MS).unref();
    },
    () => undefined,
  );
}
