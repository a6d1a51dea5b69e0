import { describe, expect, it } from 'vitest';
import { BoundedLabel, methodLabel, metricName, Metrics, OTHER_LABEL, routeFamily, STREAM_LABELS_MAX } from '../../src/metrics/metrics.js';

describe('metrics - naming and labels', () => {
  it('names metrics tributary_<snake_case> and refuses anything else', () => {
    expect(metricName('ingest_payloads_total')).toBe('tributary_ingest_payloads_total');
    expect(() => metricName('IngestPayloads')).toThrow(/snake_case/);
    expect(() => metricName('ingest payloads')).toThrow(/snake_case/);
  });

  it('route families come from the matched route pattern, never the raw path', () => {
    expect(routeFamily('/streams/:tenant/:collection/:name')).toBe('streams');
    expect(routeFamily('/api/v1/brains/:brainId')).toBe('api/v1');
    expect(routeFamily('/_cat/nodes')).toBe('_cat');
    expect(routeFamily('/')).toBe('root');
    expect(routeFamily(undefined)).toBe('unmatched');
    expect(routeFamily(/x/)).toBe('unmatched');
    expect(routeFamily('/:tenant/x')).toBe('other');
    expect([methodLabel('GET'), methodLabel('BREW')]).toEqual(['GET', 'OTHER']);
  });

  it('a bounded label keeps its first values and folds the rest into _other', () => {
    const label = new BoundedLabel(2);
    expect(['a', 'b', 'c', 'a', 'd'].map((value) => label.value(value))).toEqual(['a', 'b', OTHER_LABEL, 'a', OTHER_LABEL]);
  });

  it('ingest of many streams stays at STREAM_LABELS_MAX + 1 series', async () => {
    const metrics = new Metrics({ name: 'n', version: '1', revision: 'r' }, { processMetrics: false });
    for (let index = 0; index < STREAM_LABELS_MAX + 50; index += 1) metrics.ingest(`t/c/s${index}`, { accepted: 2, refused: 1, bytes: 10, packedApart: false });
    const text = await metrics.text();
    const series = text.split('\n').filter((line) => line.startsWith('tributary_ingest_payloads_total{'));
    expect(series).toHaveLength(STREAM_LABELS_MAX + 1);
    expect(text).toContain(`tributary_ingest_payloads_total{stream="${OTHER_LABEL}"} 100`);
    expect(text).toContain('tributary_ingest_refused_payloads_total{stream="t/c/s0"} 1');
  });

  it('renders every family of the text format with its help, type and live gauges', async () => {
    const metrics = new Metrics({ name: 'n', version: '1.2.3', revision: 'abc' }, { processMetrics: false });
    metrics.readFrom({
      hints: () => [{ target: 'b', records: 3, bytes: 300 }],
      transfers: () => [{ repo: 'tsr', from: 'a', to: 'c', bytes: 1_000, percentComplete: 40, complete: false }],
      members: () => [{ name: 'a', state: 'Joined', available: true }, { name: 'b', state: 'Joined', available: false }],
      disk: () => ({ freeBytes: 5_000_000, totalBytes: 8_000_000, floorBytes: 1_000_000, writable: false }),
    });
    metrics.httpRequest('streams', 'POST', 200, 0.004);
    metrics.peer.message('out', 'WriteRecords', 512);
    metrics.peer.refused('bad_signature');
    const cluster = metrics.sseChannel('cluster');
    cluster.opened();
    cluster.opened();
    cluster.closed();
    metrics.queryOutputRows(7);
    metrics.syncedBatch(0.002);
    metrics.groupCommit(0.003);
    metrics.searchLocal(0.001);
    const text = await metrics.text();
    for (const line of [
      'tributary_node_info{node="n",version="1.2.3",revision="abc"} 1',
      'tributary_http_requests_total{family="streams",method="POST",status="200"} 1',
      'tributary_http_request_duration_seconds_bucket{le="0.005",family="streams",method="POST"} 1',
      'tributary_hint_records{target="b"} 3',
      'tributary_hint_bytes{target="b"} 300',
      'tributary_transfer_bytes{repo="tsr",from="a",to="c"} 1000',
      'tributary_transfer_percent{repo="tsr",from="a",to="c"} 40',
      'tributary_cluster_members{state="Joined",available="true"} 1',
      'tributary_peer_messages_total{direction="out",kind="WriteRecords"} 1',
      'tributary_peer_bytes_total{direction="out"} 512',
      'tributary_peer_refusals_total{reason="bad_signature"} 1',
      'tributary_peer_refusals_total{reason="replay"} 0',
      'tributary_sse_clients{channel="cluster"} 1',
      'tributary_query_output_rows_total 7',
      'tributary_storage_fsync_duration_seconds_count 1',
      'tributary_group_commit_duration_seconds_count 1',
      'tributary_search_local_duration_seconds_count 1',
      'tributary_storage_disk_free_bytes 5000000',
      'tributary_storage_disk_size_bytes 8000000',
      'tributary_storage_disk_free_min_bytes 1000000',
      'tributary_storage_writable 0',
      '# TYPE tributary_storage_disk_free_bytes gauge',
      '# TYPE tributary_http_request_duration_seconds histogram',
    ]) {
      expect(text).toContain(line);
    }
  });

  it('the console history reads the payloads of every stream, request latency without SSE, and transfer chunk bytes', async () => {
    const metrics = new Metrics({ name: 'n', version: '1', revision: 'r' }, { processMetrics: false });
    metrics.ingest('t/c/a', { accepted: 3, refused: 1, bytes: 10, packedApart: false });
    metrics.ingest('t/c/b', { accepted: 4, refused: 0, bytes: 10, packedApart: true });
    metrics.httpRequest('streams', 'POST', 200, 0.003);
    metrics.httpRequest('_cat', 'GET', 200, 0.0002);
    // An SSE connection that lasted a minute is not a slow request.
    metrics.httpRequest('output', 'GET', 200, 60);
    metrics.peer.message('in', 'TransferChunk', 1_000);
    metrics.peer.message('out', 'TransferChunk', 500);
    metrics.peer.message('out', 'WriteRecords', 9_999);
    const figures = await metrics.historyFigures();
    expect(figures.ingestPayloads).toBe(7);
    expect(figures.transferBytes).toBe(1_500);
    expect(figures.latencyCounts).toHaveLength(figures.latencyBoundsSeconds.length + 1);
    expect(figures.latencyCounts.at(-1)).toBe(2);
    // Cumulative: the 0.2 ms request in the first bucket (0.5 ms), both by 5 ms.
    expect(figures.latencyCounts[0]).toBe(1);
    expect(figures.latencyCounts[figures.latencyBoundsSeconds.indexOf(0.005)]).toBe(2);
    expect(await metrics.text()).toContain('tributary_transfer_chunk_bytes_total{direction="in"} 1000');
  });
});
