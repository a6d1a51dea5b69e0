// Stream definitions and their parts (spec, "Streams" table). Each part is its own
// definition with its own version: schema, taxonomy, tags, repository mapping, policy.

import { DEFAULT_POLICY, type DistributionPolicy } from './policy.js';
import type { TenantService } from '../replicated-definitions/tenants.js';
import { ForbiddenError, NotFoundError, StateConflictError } from '../lib/errors.js';
import { checkName } from '../lib/names.js';
import { validate } from '../lib/validation.js';
import { definitionKey, type Definition, type Definitions } from '../storage/definition-store.js';
import type { SandboxLimits } from '../scripting/sandbox.js';
import { parsePolicy } from './policy.js';
import { parseRepositoryMapping, type RepositoryMapping } from './repository-mapping.js';
import type { MoveOrder } from './repository-move.js';
import { randomUUID } from 'node:crypto';
import { parseSchema } from './schema.js';
import { streamBodySchema } from './schema-document.js';
import { type StreamId, streamKey, SYSTEM_COLLECTION } from './stream-id.js';
import { parseTags, TagRunner, type TagDefinition } from './tags.js';
import { parseTaxonomy, type Taxonomy } from './taxonomy.js';

export type StreamPart = 'stream' | 'taxonomy' | 'tags' | 'repository' | 'policy';
export const STREAM_PARTS: readonly StreamPart[] = ['stream', 'taxonomy', 'tags', 'repository', 'policy'];

/** What GET returns and PUT stores: the body as the client sent it (validated). */
export interface StreamDocument {
  schema: unknown;
}

/** A definition, or a default for a part that was never set (no version then). */
export interface PartView<T> {
  value: T;
  version: string | undefined;
}

export function partKey(part: StreamPart, id: StreamId): string {
  return definitionKey(part, streamKey(id));
}

/** Whether a move of a stream's payloads to another repository may start now (repository-move.ts). */
export interface MoveGate {
  /** Throws StateConflictError naming why not: a move of the stream still runs, or the membership changes. */
  checkCanStart(streamKey: string): Promise<void>;
}

export class StreamDefinitions {
  constructor(
    private readonly store: Definitions,
    private readonly tenants: TenantService,
    /** Whether any node stores payloads of the stream (in either repository). */
    private readonly holdsData: (streamKey: string) => Promise<boolean>,
    private readonly sandboxLimits: SandboxLimits,
    private readonly moves: MoveGate = { checkCanStart: async () => undefined },
  ) {}

  collections(tenant: string): string[] {
    this.tenants.get(tenant);
    const names = this.store.list(definitionKey('stream', tenant, '')).map((d) => d.key.split('/')[2]!);
    return [...new Set(names)];
  }

  streams(tenant: string, collection: string): string[] {
    this.tenants.get(tenant);
    checkName('collection', collection);
    const names = this.store.list(definitionKey('stream', tenant, collection, '')).map((d) => d.key.split('/')[3]!);
    if (names.length === 0) throw new NotFoundError(`collection '${collection}' does not exist in tenant '${tenant}'`);
    return names;
  }

  getStream(id: StreamId): Definition<StreamDocument> {
    this.tenants.get(id.tenant);
    const definition = this.store.get<StreamDocument>(partKey('stream', id));
    if (definition === undefined) throw new NotFoundError(`stream /streams/${streamKey(id)} does not exist`);
    return definition;
  }

  putStream(id: StreamId, body: unknown, expectedVersion?: string): Promise<Definition<StreamDocument>> {
    this.checkWritable(id);
    this.tenants.get(id.tenant);
    const { schema } = validate(streamBodySchema, body);
    parseSchema(schema);
    // Stored as sent: the order of a record's properties decides the primary timestamp.
    return this.store.put(partKey('stream', id), { schema: (body as StreamDocument).schema }, expectedVersion);
  }

  getTaxonomy(id: StreamId): PartView<Taxonomy> {
    return this.partOrDefault<Taxonomy>('taxonomy', id, { nodes: [] });
  }

  putTaxonomy(id: StreamId, body: unknown, expectedVersion?: string): Promise<Definition<Taxonomy>> {
    this.checkWritable(id);
    const schema = parseSchema(this.getStream(id).value.schema);
    return this.store.put(partKey('taxonomy', id), parseTaxonomy(body, schema), expectedVersion);
  }

  getTags(id: StreamId): PartView<TagDefinition[]> {
    return this.partOrDefault<TagDefinition[]>('tags', id, []);
  }

  async putTags(id: StreamId, body: unknown, expectedVersion?: string): Promise<Definition<TagDefinition[]>> {
    this.checkWritable(id);
    this.getStream(id);
    const tags = parseTags(body);
    // Compile now so that a script that cannot run is a 400 here, not a failure per payload.
    (await TagRunner.compile(tags, this.sandboxLimits)).dispose();
    return this.store.put(partKey('tags', id), tags, expectedVersion);
  }

  /** The mapping as clients set it (the move it carries is the mover's, repositoryMove). */
  getRepository(id: StreamId): Definition<RepositoryMapping> {
    const definition = this.storedMapping(id);
    return { ...definition, value: { name: definition.value.name, config: definition.value.config } };
  }

  /** The move of the stream's payloads its last change of repository started; undefined: none. */
  repositoryMove(id: StreamId): MoveOrder | undefined {
    return this.storedMapping(id).value.move;
  }

  private storedMapping(id: StreamId): Definition<RepositoryMapping> {
    this.getStream(id);
    const definition = this.store.get<RepositoryMapping>(partKey('repository', id));
    if (definition === undefined) throw new NotFoundError(`stream /streams/${streamKey(id)} has no repository mapping`);
    return definition;
  }

  async putRepository(id: StreamId, body: unknown, expectedVersion?: string): Promise<Definition<RepositoryMapping>> {
    this.checkWritable(id);
    this.getStream(id);
    const mapping = parseRepositoryMapping(body);
    const current = this.store.get<RepositoryMapping>(partKey('repository', id))?.value;
    let stored: RepositoryMapping = mapping;
    if (current !== undefined && current.name !== mapping.name && (await this.holdsData(streamKey(id)))) {
      // The stored payloads move to the new repository in the background, on every owner,
      // and are read from whichever holds them meanwhile (docs/storage.md).
      await this.moves.checkCanStart(streamKey(id));
      stored = { ...mapping, move: { id: randomUUID(), from: current.name, to: mapping.name } };
    } else if (current?.move !== undefined && current.name === mapping.name) {
      // The same repository with other settings: a move under way goes on.
      stored = { ...mapping, move: current.move };
    }
    const definition = await this.store.put(partKey('repository', id), stored, expectedVersion);
    return { ...definition, value: mapping };
  }

  getPolicy(id: StreamId): PartView<DistributionPolicy> {
    return this.partOrDefault<DistributionPolicy>('policy', id, DEFAULT_POLICY);
  }

  async putPolicy(id: StreamId, body: unknown, expectedVersion?: string): Promise<Definition<DistributionPolicy>> {
    this.checkWritable(id);
    this.getStream(id);
    const policy = parsePolicy(body);
    const current = this.getPolicy(id).value;
    const changesPlacement =
      policy.ring_size !== current.ring_size || policy.hash_payload.bytes !== current.hash_payload.bytes;
    // Stored payloads are keyed by their partition: a new ring_size or hash width would
    // strand them, so placement is fixed once a stream holds data.
    if (changesPlacement && (await this.holdsData(streamKey(id)))) {
      throw new StateConflictError('ring_size and hash_payload cannot change once the stream holds data');
    }
    return this.store.put(partKey('policy', id), policy, expectedVersion);
  }

  private partOrDefault<T>(part: StreamPart, id: StreamId, fallback: T): PartView<T> {
    this.getStream(id);
    const definition = this.store.get<T>(partKey(part, id));
    return definition === undefined ? { value: fallback, version: undefined } : definition;
  }

  private checkWritable(id: StreamId): void {
    if (id.collection === SYSTEM_COLLECTION) {
      throw new ForbiddenError(`the '${SYSTEM_COLLECTION}' collection is reserved: only GET is allowed`);
    }
  }
}
