// Prometheus metrics of one node: one prom-client registry per node, the
// instruments every part records into, and the gauges read from live state when scraped.
// Parts receive this object (or one of its small observer functions) from node.ts; none
// imports prom-client. Every label has a bounded set of values: label values that come
// from clients (streams, methods, peer message kinds) are cut to a fixed set or collapse
// into `_other`, so a scrape never grows with what clients send.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Streams that get their own label value; later ones are counted under `_other`. */
export const STREAM_LABELS_MAX = 100;
export const OTHER_LABEL = '_other';
export const METRIC_PREFIX = 'tributary_';

const HTTP_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Seconds: from a cached GET (~0.5 ms) to a long search or a large synced batch. */
const LATENCY_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Keeps the first `max` distinct values of a label; any later value is `_other`. */
export class BoundedLabel {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  value(raw: string): string {
    if (this.seen.has(raw)) return raw;
    if (this.seen.size >= this.max) return OTHER_LABEL;
    this.seen.add(raw);
    return raw;
  }
}

/**
 * The route family of a request, from the pattern of the route that matched (never the
 * raw path): `/streams/:tenant/...` → `streams`, `/api/v1/brains` → `api/v1`,
 * `/_cat/nodes` → `_cat`, `/` → `root`; no route matched → `unmatched`.
 */
export function routeFamily(pattern: string | RegExp | undefined): string {
  if (typeof pattern !== 'string') return 'unmatched';
  const segments = pattern.split('/').filter((segment) => segment !== '');
  if (segments.length === 0) return 'root';
  const first = segments[0]!;
  if (first.startsWith(':') || !/^[A-Za-z0-9_.-]+$/.test(first)) return 'other';
  if (first === 'api' && segments[1] !== undefined && /^v[0-9]+$/.test(segments[1])) return `api/${segments[1]}`;
  return first;
}

/** An HTTP method as a label: the standard ones, else `OTHER`. */
export function methodLabel(method: string): string {
  return HTTP_METHODS.has(method) ? method : 'OTHER';
}

/** A metric's full name: the `tributary_` prefix and a snake_case name with its unit last. */
export function metricName(name: string): string {
  if (!/^[a-z][a-z0-9_]*[a-z0-9]$/.test(name)) throw new Error(`metric name '${name}' is not snake_case`);
  return METRIC_PREFIX + name;
}

/** Reasons a peer message is refused (transport.ts): a fixed set, so they can be labels. */
export const PEER_REFUSAL_REASONS = ['malformed', 'stale', 'unknown_sender', 'bad_signature', 'replay', 'busy', 'bad_reply', 'bad_chunk'] as const;
export type PeerRefusalReason = (typeof PEER_REFUSAL_REASONS)[number];

/** What the peer transport reports (peer/transport.ts takes this as an option). */
export interface PeerObserver {
  message(direction: 'in' | 'out', kind: string, bytes: number): void;
  refused(reason: PeerRefusalReason): void;
}

/** Live state read at each scrape. */
export interface MetricSources {
  hints(): ReadonlyArray<{ target: string; records: number; bytes: number }>;
  transfers(): ReadonlyArray<{ repo: string; from: string; to: string; bytes: number; percentComplete: number; complete: boolean }>;
  members(): ReadonlyArray<{ name: string; state: string; available: boolean }>;
  /** The data folder's filesystem and whether the node takes writes (storage/disk-watch.ts). */
  disk(): { freeBytes: number | null; totalBytes: number | null; floorBytes: number; writable: boolean };
}

export class Metrics {
  readonly registry = new Registry();
  private readonly streams = new BoundedLabel(STREAM_LABELS_MAX);
  private readonly peerKinds = new BoundedLabel(64);
  private readonly httpRequests: Counter<'family' | 'method' | 'status'>;
  private readonly httpSeconds: Histogram<'family' | 'method'>;
  private readonly ingestPayloads: Counter<'stream'>;
  private readonly ingestBytes: Counter<'stream'>;
  private readonly ingestRefused: Counter<'stream'>;
  private readonly ingestBatches: Counter<'packed_by'>;
  private readonly fsyncSeconds: Histogram;
  private readonly groupCommitSeconds: Histogram;
  private readonly peerMessages: Counter<'direction' | 'kind'>;
  private readonly peerBytes: Counter<'direction'>;
  private readonly peerRefusals: Counter<'reason'>;
  private readonly transferChunkBytes: Counter<'direction'>;
  private readonly sseClients: Gauge<'channel'>;
  private readonly queryRows: Counter;
  private readonly searchSeconds: Histogram;

  constructor(node: { name: string; version: string; revision: string }, options: { processMetrics: boolean } = { processMetrics: true }) {
    const registers = [this.registry];
    if (options.processMetrics) {
      // Event-loop delay, GC pauses, RSS, heap, open files and more, as prom-client names them.
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 20 });
    }
    new Gauge({ name: metricName('node_info'), help: 'This node: its name, version and revision (always 1).', labelNames: ['node', 'version', 'revision'], registers })
      .set({ node: node.name, version: node.version, revision: node.revision }, 1);
    this.httpRequests = new Counter({ name: metricName('http_requests_total'), help: 'HTTP requests answered, by route family, method and status.', labelNames: ['family', 'method', 'status'], registers });
    this.httpSeconds = new Histogram({ name: metricName('http_request_duration_seconds'), help: 'HTTP request latency (to the last byte; an SSE request lasts as long as its connection).', labelNames: ['family', 'method'], buckets: LATENCY_BUCKETS_SECONDS, registers });
    this.ingestPayloads = new Counter({ name: metricName('ingest_payloads_total'), help: `Payloads accepted by ingest on this node, per stream (the first ${STREAM_LABELS_MAX} streams seen; later ones as ${OTHER_LABEL}).`, labelNames: ['stream'], registers });
    this.ingestBytes = new Counter({ name: metricName('ingest_bytes_total'), help: 'Bytes of accepted payloads as stored (canonical JSON in ssr, the blocks\' text in tsr), per stream.', labelNames: ['stream'], registers });
    this.ingestRefused = new Counter({ name: metricName('ingest_refused_payloads_total'), help: 'Payloads refused by ingest (schema, tags, or no owner stored them), per stream.', labelNames: ['stream'], registers });
    this.ingestBatches = new Counter({ name: metricName('ingest_batches_total'), help: 'Ingest batches written, by where their payloads were parsed, checked and packed: an ingest worker thread (tsr streams without tags or live readers) or the main thread.', labelNames: ['packed_by'], registers });
    for (const packedBy of ['worker', 'main_thread']) this.ingestBatches.inc({ packed_by: packedBy }, 0);
    this.fsyncSeconds = new Histogram({ name: metricName('storage_fsync_duration_seconds'), help: 'Synced LevelDB batches: write and fsync.', buckets: LATENCY_BUCKETS_SECONDS, registers });
    this.groupCommitSeconds = new Histogram({ name: metricName('group_commit_duration_seconds'), help: 'Group commit, from a write being queued to its batch being durable.', buckets: LATENCY_BUCKETS_SECONDS, registers });
    this.peerMessages = new Counter({ name: metricName('peer_messages_total'), help: 'Signed peer messages sent (out) and received (in), by kind.', labelNames: ['direction', 'kind'], registers });
    this.peerBytes = new Counter({ name: metricName('peer_bytes_total'), help: 'Bytes of peer envelopes sent (out) and received (in).', labelNames: ['direction'], registers });
    this.peerRefusals = new Counter({ name: metricName('peer_refusals_total'), help: 'Peer messages and replies refused, by reason.', labelNames: ['reason'], registers });
    for (const reason of PEER_REFUSAL_REASONS) this.peerRefusals.inc({ reason }, 0);
    this.transferChunkBytes = new Counter({ name: metricName('transfer_chunk_bytes_total'), help: 'Bytes of transfer chunks (data moving in a membership change) sent (out) and received (in).', labelNames: ['direction'], registers });
    for (const direction of ['in', 'out']) this.transferChunkBytes.inc({ direction }, 0);
    this.sseClients = new Gauge({ name: metricName('sse_clients'), help: 'Open server-sent-event connections, by channel (cluster events, query outputs).', labelNames: ['channel'], registers });
    this.queryRows = new Counter({ name: metricName('query_output_rows_total'), help: 'Rows emitted by the queries this node hosts (live and historical).', registers });
    this.searchSeconds = new Histogram({ name: metricName('search_local_duration_seconds'), help: "Time this node takes to answer its share of a search (its partitions).", buckets: LATENCY_BUCKETS_SECONDS, registers });
  }

  /** Gauges computed from the node's state at each scrape. */
  readFrom(sources: MetricSources): void {
    const transferLabels = (transfer: ReturnType<MetricSources['transfers']>[number]) => ({ repo: transfer.repo, from: transfer.from, to: transfer.to });
    this.collected('hint_records', 'Hinted records held for a target node that did not take them yet.', ['target'], () =>
      sources.hints().map((target) => [{ target: target.target }, target.records]));
    this.collected('hint_bytes', 'Bytes of hinted records held per target node.', ['target'], () =>
      sources.hints().map((target) => [{ target: target.target }, target.bytes]));
    this.collected('transfer_bytes', 'Bytes a transfer of the membership change in flight has moved so far.', ['repo', 'from', 'to'], () =>
      sources.transfers().map((transfer) => [transferLabels(transfer), transfer.bytes]));
    this.collected('transfer_percent', 'Percent complete of each transfer of the membership change in flight.', ['repo', 'from', 'to'], () =>
      sources.transfers().map((transfer) => [transferLabels(transfer), transfer.percentComplete]));
    this.collected('cluster_members', 'Members of the cluster as this node sees them, by state and availability.', ['state', 'available'], () => {
      const series = new Map<string, [{ state: string; available: string }, number]>();
      for (const member of sources.members()) {
        const labels = { state: member.state, available: String(member.available) };
        const key = `${labels.state} ${labels.available}`;
        series.set(key, [labels, (series.get(key)?.[1] ?? 0) + 1]);
      }
      return [...series.values()];
    });
    const disk = (read: (state: ReturnType<MetricSources['disk']>) => number | null) => (): Array<[Record<never, string>, number]> => {
      const value = read(sources.disk());
      return value === null ? [] : [[{}, value]];
    };
    this.collected('storage_disk_free_bytes', "Bytes the node may still write on its data folder's filesystem.", [], disk((state) => state.freeBytes));
    this.collected('storage_disk_size_bytes', "Size of the data folder's filesystem.", [], disk((state) => state.totalBytes));
    this.collected('storage_disk_free_min_bytes', 'The free-space floor (storage.diskFreeMinBytes): below it, ingest is refused with 507.', [], disk((state) => state.floorBytes));
    this.collected('storage_writable', '1 while the node takes writes; 0 while it refuses them (disk below the floor, or a failed write until the database is reopened).', [], disk((state) => (state.writable ? 1 : 0)));
  }

  /** A gauge whose series are recomputed from `read` at each scrape (series that vanished go). */
  private collected<L extends string>(name: string, help: string, labelNames: L[], read: () => Array<[Record<L, string>, number]>): void {
    new Gauge({
      name: metricName(name), help, labelNames, registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, value] of read()) this.set(labels as never, value);
      },
    });
  }

  httpRequest(family: string, method: string, status: number, seconds: number): void {
    const label = methodLabel(method);
    this.httpRequests.inc({ family, method: label, status: String(status) });
    this.httpSeconds.observe({ family, method: label }, seconds);
  }

  ingest(stream: string, outcome: { accepted: number; refused: number; bytes: number; packedApart: boolean }): void {
    this.ingestBatches.inc({ packed_by: outcome.packedApart ? 'worker' : 'main_thread' });
    const label = { stream: this.streams.value(stream) };
    if (outcome.accepted > 0) this.ingestPayloads.inc(label, outcome.accepted);
    if (outcome.bytes > 0) this.ingestBytes.inc(label, outcome.bytes);
    if (outcome.refused > 0) this.ingestRefused.inc(label, outcome.refused);
  }

  syncedBatch(seconds: number): void {
    this.fsyncSeconds.observe(seconds);
  }

  groupCommit(seconds: number): void {
    this.groupCommitSeconds.observe(seconds);
  }

  readonly peer: PeerObserver = {
    message: (direction, kind, bytes) => {
      this.peerMessages.inc({ direction, kind: this.peerKinds.value(kind) });
      this.peerBytes.inc({ direction }, bytes);
      if (kind === 'TransferChunk') this.transferChunkBytes.inc({ direction }, bytes);
    },
    refused: (reason) => this.peerRefusals.inc({ reason }),
  };

  /** Counts one SSE channel's open connections. */
  sseChannel(channel: 'cluster' | 'output'): { opened(): void; closed(): void } {
    this.sseClients.set({ channel }, 0);
    return { opened: () => this.sseClients.inc({ channel }), closed: () => this.sseClients.dec({ channel }) };
  }

  queryOutputRows(count: number): void {
    this.queryRows.inc(count);
  }

  searchLocal(seconds: number): void {
    this.searchSeconds.observe(seconds);
  }

  /**
   * The cumulative figures the console's history samples (src/node-history/history.ts), read from
   * the instruments /metrics shows: accepted payloads of every stream, the request duration
   * histogram of every family but `output` (an SSE request lasts as long as its connection,
   * and would be every p99), transfer chunk bytes both ways.
   */
  async historyFigures(): Promise<{ ingestPayloads: number; latencyBoundsSeconds: number[]; latencyCounts: number[]; transferBytes: number }> {
    const [ingest, latency, transfer] = await Promise.all([this.ingestPayloads.get(), this.httpSeconds.get(), this.transferChunkBytes.get()]);
    const counts = new Map<number, number>();
    for (const value of latency.values) {
      if (value.metricName !== `${METRIC_PREFIX}http_request_duration_seconds_bucket` || value.labels.family === 'output') continue;
      // prom-client adds `le` to the bucket series' labels; its types list only ours.
      const le = (value.labels as Record<string, string | number | undefined>).le;
      const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
      counts.set(bound, (counts.get(bound) ?? 0) + value.value);
    }
    return {
      ingestPayloads: ingest.values.reduce((sum, value) => sum + value.value, 0),
      latencyBoundsSeconds: [...LATENCY_BUCKETS_SECONDS],
      latencyCounts: [...LATENCY_BUCKETS_SECONDS, Number.POSITIVE_INFINITY].map((bound) => counts.get(bound) ?? 0),
      transferBytes: transfer.values.reduce((sum, value) => sum + value.value, 0),
    };
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

