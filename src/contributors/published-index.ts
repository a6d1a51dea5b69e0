// The published-to index: which streams each contributor has published to, learnt at ingest
// from the payload fields of type `contributor`. A (contributor, stream) pair is one definition
// key, written once, the first time any node sees the pair; definitions replicate to every
// node, so every node answers the whole list (the lists of all nodes, merged). The pairs
// already recorded are kept in memory from the store's changes, so ingest looks each payload's
// pair up there and writes only new ones.

import type { Logger } from '../lib/log.js';
import type { Definitions } from '../storage/definition-store.js';
import { parseSchema } from '../streams/schema.js';
import { partKey, type StreamDocument } from '../streams/stream-definitions.js';
import { streamUri, type StreamId } from '../streams/stream-id.js';
import { pathReader } from '../lib/json.js';
import { forEachLimited } from '../lib/limited-concurrency.js';
import { contributorFieldTargets, isContributorId } from './contributor-schema.js';
import { parseKey, PUBLISHED_PREFIX, PUBLISHED_UNTYPED_PREFIX, publishedKey } from './keys.js';

export interface PublishedLimits {
  /** Pairs recorded per tenant; ingest records no more beyond (and logs it). */
  pairsPerTenantMax: number;
  /** New pairs one ingest batch writes at a time. */
  writesInFlightMax: number;
}

export const DEFAULT_PUBLISHED_LIMITS: PublishedLimits = { pairsPerTenantMax: 100_000, writesInFlightMax: 16 };

/** What the index needs of a stream: CompiledStream has it. */
export interface PublishingStream {
  id: StreamId;
  /** "tenant/collection/name" */
  key: string;
}

interface FieldReader {
  read: (payload: Record<string, unknown>) => unknown;
  target: { tenant: string; type: string } | undefined;
}

interface NewPair {
  tenant: string;
  contributor: string;
}

const LIMIT_LOG_INTERVAL_MS = 60_000;

export class PublishedIndex {
  /** contributorKey → stream keys. */
  private readonly streamsByContributor = new Map<string, Set<string>>();
  private readonly pairsPerTenant = new Map<string, number>();
  /** Contributor fields of each stream, per version of its schema. */
  private readonly fieldsByStream = new Map<string, { version: string; fields: FieldReader[] }>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Writes under way per tenant: they count against the limit before they land. */
  private readonly inFlightPerTenant = new Map<string, number>();
  private readonly limitLoggedAt = new Map<string, number>();

  constructor(
    private readonly store: Definitions,
    private readonly log: Logger,
    private readonly limits: PublishedLimits = DEFAULT_PUBLISHED_LIMITS,
  ) {
    store.onChange((key, definition) => this.observe(key, definition !== undefined));
    for (const prefix of [PUBLISHED_PREFIX, PUBLISHED_UNTYPED_PREFIX]) {
      for (const definition of store.list(prefix)) this.observe(definition.key, true);
    }
  }

  /**
   * The ingest listener: records the pairs of these payloads not recorded yet, and resolves
   * once they are durable (or failed, which is logged: a later batch tries again).
   */
  /** Whether the stream's payloads name contributors (record() has something to learn from them). */
  watches(stream: PublishingStream): boolean {
    return this.fieldsOf(stream).length > 0;
  }

  async record(stream: PublishingStream, payloads: readonly Record<string, unknown>[]): Promise<void> {
    const fields = this.fieldsOf(stream);
    if (fields.length === 0) return;
    const fresh = new Map<string, NewPair>();
    for (const payload of payloads) {
      for (const field of fields) {
        const id = field.read(payload);
        if (!isContributorId(id)) continue;
        const tenant = field.target?.tenant ?? stream.id.tenant;
        const contributor = contributorKey(tenant, field.target?.type, id);
        if (this.streamsByContributor.get(contributor)?.has(stream.key)) continue;
        fresh.set(publishedKey(tenant, field.target?.type, id, stream.key), { tenant, contributor });
      }
    }
    await forEachLimited([...fresh], this.limits.writesInFlightMax, ([key, pair]) => this.recordOnce(key, pair, stream));
  }

  /** Stream keys a contributor published to: through fields naming its type, and fields naming none. */
  streamsOf(tenant: string, type: string, id: string): string[] {
    const typed = this.streamsByContributor.get(contributorKey(tenant, type, id));
    const untyped = this.streamsByContributor.get(contributorKey(tenant, undefined, id));
    return [...new Set([...(typed ?? []), ...(untyped ?? [])])].sort();
  }

  private recordOnce(key: string, pair: NewPair, stream: PublishingStream): Promise<void> {
    const running = this.inFlight.get(key);
    if (running !== undefined) return running;
    const underWay = this.inFlightPerTenant.get(pair.tenant) ?? 0;
    if ((this.pairsPerTenant.get(pair.tenant) ?? 0) + underWay >= this.limits.pairsPerTenantMax) {
      this.logLimit(pair.tenant);
      return Promise.resolve();
    }
    this.inFlightPerTenant.set(pair.tenant, underWay + 1);
    const write = this.store
      .put(key, { stream: streamUri(stream.id) })
      .then(
        () => undefined,
        (error: unknown) => this.log.warn({ err: error, key }, 'could not record a contributor stream; a later payload tries again'),
      )
      .finally(() => {
        this.inFlight.delete(key);
        const left = (this.inFlightPerTenant.get(pair.tenant) ?? 1) - 1;
        if (left > 0) this.inFlightPerTenant.set(pair.tenant, left);
        else this.inFlightPerTenant.delete(pair.tenant);
      });
    this.inFlight.set(key, write);
    return write;
  }

  private fieldsOf(stream: PublishingStream): FieldReader[] {
    const definition = this.store.get<StreamDocument>(partKey('stream', stream.id));
    if (definition === undefined) return [];
    const cached = this.fieldsByStream.get(stream.key);
    if (cached?.version === definition.version) return cached.fields;
    const schema = parseSchema(definition.value.schema);
    const fields = contributorFieldTargets(stream.id.tenant, schema).map(({ path, target }) => ({ read: pathReader(path), target }));
    this.fieldsByStream.set(stream.key, { version: definition.version, fields });
    return fields;
  }

  private observe(key: string, exists: boolean): void {
    const parsed = parseKey(key);
    if (parsed?.kind !== 'published') return;
    const contributor = contributorKey(parsed.tenant, parsed.type, parsed.id);
    let streams = this.streamsByContributor.get(contributor);
    if (exists) {
      if (streams === undefined) this.streamsByContributor.set(contributor, (streams = new Set()));
      if (streams.has(parsed.stream)) return;
      streams.add(parsed.stream);
      this.pairsPerTenant.set(parsed.tenant, (this.pairsPerTenant.get(parsed.tenant) ?? 0) + 1);
    } else if (streams?.delete(parsed.stream)) {
      if (streams.size === 0) this.streamsByContributor.delete(contributor);
      this.pairsPerTenant.set(parsed.tenant, (this.pairsPerTenant.get(parsed.tenant) ?? 1) - 1);
    }
  }

  private logLimit(tenant: string): void {
    const now = Date.now();
    if (now - (this.limitLoggedAt.get(tenant) ?? 0) < LIMIT_LOG_INTERVAL_MS) return;
    this.limitLoggedAt.set(tenant, now);
    this.log.warn({ tenant, pairsPerTenantMax: this.limits.pairsPerTenantMax }, 'contributor stream index is full for this tenant; new pairs are not recorded');
  }
}

/** Names never contain '/' or control characters: a typed key has '/', an untyped one '\0'. */
function contributorKey(tenant: string, type: string | undefined, id: string): string {
  return type === undefined ? `${tenant}\u0000${id}` : `${tenant}/${type}/${id}`;
}
