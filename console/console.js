// The Tributary console (docs/operating.md): plain JavaScript, served by the node, no other
// origin. GET /output/cluster (server-sent events) drives the nodes and tenants; on each
// event, and every second while a membership change runs, the console reads the transfers
// and the ring again (neither has events of its own). Stored payloads per stream are read
// from GET /_cat/streams?format=json every 5 s, node availability every 3 s, and each
// node's free disk and whether it takes writes from GET /_cat/nodes every 5 s, while
// anything changes; an idle cluster is read every 10 s, and a hidden tab reads nothing (each
// read is a line of the node's access log). Until its first answer, each part says it is
// loading. Every node's figures over the last 15 minutes (ingest payloads/s, request latency
// p50/p99, transfer bytes/s, disk used) and its readiness come from GET /console/data/history
// (every 5 s while anything changes, like the disks) and are drawn with uPlot (served by the
// node from the uplot package).
// Search and the live query use the platform interface. A node with authentication on answers 401: the
// page then asks for a bearer token, keeps it for the tab (sessionStorage), sends it as
// Authorization on every read and as ?access_token= on the event streams (EventSource
// cannot set headers).
'use strict';

(() => {
  const STREAMS_REFRESH_MS = 5_000;
  const NODES_REFRESH_MS = 3_000;
  const DISKS_REFRESH_MS = 5_000;
  const CHANGE_REFRESH_MS = 1_000;
  const IDLE_REFRESH_MS = 10_000;
  const HISTORY_REFRESH_MS = 5_000;
  const CHART_HEIGHT_PX = 200;
  const CHART_SPAN_SECONDS_MIN = 60;
  const LIVE_ROWS_MAX = 200;
  const PALETTE = ['#3b82c4', '#e0812d', '#4a9d5b', '#c94f4f', '#8a62b8', '#8c6d4f', '#d46fb0', '#6b7b8c', '#b5b133', '#33adb5'];

  const state = {
    nodes: new Map(),
    /** name → { free, writable } from /_cat/nodes. */
    disks: new Map(),
    tenants: [],
    tenant: undefined,
    transfers: [],
    queue: [],
    ring: undefined,
    streams: [],
    live: undefined,
    events: undefined,
    /** The last answer of /console/data/history, and one uPlot per chart. */
    history: undefined,
    charts: new Map(),
  };
  const TOKEN_KEY = 'tributary.console.token';

  const $ = (id) => document.getElementById(id);

  /** An element with attributes (data-*, class, text) and children. */
  function el(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
      if (value === undefined) continue;
      if (name === 'text') element.textContent = value;
      else if (name === 'className') element.className = value;
      else element.setAttribute(name, value);
    }
    for (const child of children) element.append(child);
    return element;
  }

  // ---- Authentication ------------------------------------------------------------------

  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
  const authorization = () => (token() === '' ? {} : { authorization: `Bearer ${token()}` });
  /** An event stream's URL, with the token where EventSource can carry it. */
  const streamUrl = (path) => (token() === '' ? path : `${path}${path.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(token())}`);

  /** The node answered 401: ask for a token (again, when the one given was refused). */
  function needToken() {
    $('token-form').hidden = false;
    $('token-note').textContent = token() === '' ? 'This node needs a bearer token: the admin secret or an account\'s token.' : 'The token was refused (unknown, revoked, or without read on system).';
    showConnection('needs a token');
  }

  function useToken(event) {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $('token').value.trim());
    $('token').value = '';
    $('token-form').hidden = true;
    follow();
    void refreshNodes();
    void refreshCluster();
    void refreshStreams();
    void refreshHistory();
  }

  async function getJson(path, init) {
    const response = await fetch(path, { ...init, headers: { 'content-type': 'application/json', ...authorization(), ...(init && init.headers) } });
    if (response.status === 401) needToken();
    const text = await response.text();
    const body = text === '' ? undefined : JSON.parse(text);
    if (!response.ok) {
      const message = (body && body.error && body.error.message) || `${response.status} ${response.statusText}`;
      // Query errors come as a list: say each, with its place in the text when it has one.
      const details = body && Array.isArray(body.errors) ? body.errors.map((error) => JSON.stringify(error)).join('; ') : '';
      throw new Error(details === '' ? message : `${message}: ${details}`);
    }
    return body;
  }

  const post = (path, body) => getJson(path, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  const put = (path, body) => getJson(path, { method: 'PUT', body: body === undefined ? undefined : JSON.stringify(body) });

  function colourOf(name) {
    const names = [...state.nodes.keys()].sort();
    const index = names.indexOf(name);
    return PALETTE[(index < 0 ? names.length : index) % PALETTE.length];
  }

  // ---- Nodes ---------------------------------------------------------------------------

  function renderNodes() {
    $('nodes-loading').hidden = true;
    const rows = [...state.nodes.values()].sort((a, b) => a.name.localeCompare(b.name)).map((node) =>
      el('tr', { 'data-node': node.name, 'data-state': node.state, 'data-available': node.available },
        el('td', {}, el('span', { className: 'swatch' }), node.name),
        el('td', {}, el('span', { className: `badge state-${node.state}`, text: node.state })),
        el('td', { className: node.available === 'false' ? 'unavailable' : '', text: node.available === undefined ? '…' : node.available === 'true' ? 'yes' : 'no' }),
        el('td', { text: node.address === undefined ? '' : `${node.address}:${node.port}` }),
        el('td', {}, node.httpPort === undefined ? '' : el('a', { href: `http://${node.address}:${node.httpPort}/console`, text: String(node.httpPort) })),
        el('td', { text: node.zone || '' }),
        el('td', { text: node.version ? `${node.version.number} (${node.version.revision})` : '' }),
        diskCell(state.disks.get(node.name)),
      ),
    );
    for (const row of rows) row.querySelector('.swatch').style.background = colourOf(row.dataset.node);
    $('node-rows').replaceChildren(...rows);
  }

  /** Free bytes of the node's data folder; "no writes" while it refuses them (its disk is full or below the floor). */
  function diskCell(disk) {
    if (disk === undefined || disk.free === null) return el('td', { className: 'number', text: '–' });
    const text = `${formatBytes(disk.free)}${disk.writable === false ? ' — no writes' : ''}`;
    return el('td', { className: disk.writable === false ? 'number unavailable' : 'number', 'data-disk-free': String(disk.free), 'data-writable': String(disk.writable), text });
  }

  function formatBytes(bytes) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
  }

  async function refreshDisks() {
    try {
      const rows = await getJson('/_cat/nodes?format=json&h=name,disk_free,writable');
      state.disks = new Map(rows.map((row) => [row.name, { free: row.disk_free, writable: row.writable }]));
      renderNodes();
    } catch (error) {
      // The nodes table keeps what it showed; the connection line says when the node is gone.
    }
  }

  async function refreshNodes() {
    try {
      const { nodes } = await getJson('/cluster/nodes');
      state.nodes = new Map(nodes.map((node) => [node.name, node]));
      renderNodes();
    } catch (error) {
      showConnection('reconnecting');
    }
  }

  // ---- The cluster over time -------------------------------------------------------------

  const perSecond = (format) => (value) => `${format(value)}/s`;
  const count = (value) => (value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)}k` : String(Math.round(value * 10) / 10));
  const millis = (value) => `${value < 10 ? Math.round(value * 100) / 100 : Math.round(value)} ms`;

  /** One chart per metric; a series per node (the latency chart: p50 and p99 per node). */
  const CHARTS = [
    { metric: 'ingest', columns: [{ column: 'ingestPayloadsPerSecond', suffix: '' }], format: perSecond(count) },
    { metric: 'latency', columns: [{ column: 'latencyP50Ms', suffix: ' p50' }, { column: 'latencyP99Ms', suffix: ' p99', dash: [6, 4] }], format: millis },
    { metric: 'transfer', columns: [{ column: 'transferBytesPerSecond', suffix: '' }], format: perSecond(formatBytes) },
    { metric: 'disk', columns: [{ column: 'diskUsedBytes', suffix: '' }], format: formatBytes },
  ];

  /** Each node's readiness now: ready, the reasons it is not (as GET /ready says), or why it did not answer. */
  function renderReadiness(nodes) {
    const items = nodes.map((node) => {
      const swatch = el('span', { className: 'swatch' });
      swatch.style.background = colourOf(node.node);
      if (node.error !== undefined) {
        return el('li', { 'data-ready-node': node.node, 'data-ready': 'unknown' }, swatch, `${node.node} `, el('span', { className: 'badge not-ready', text: 'no answer' }), el('span', { className: 'reasons', text: node.error }));
      }
      const badge = el('span', { className: node.ready ? 'badge ready' : 'badge not-ready', text: node.ready ? 'ready' : 'not ready' });
      const reasons = node.reasons.length === 0 ? '' : el('span', { className: 'reasons', text: node.reasons.join('; ') });
      return el('li', { 'data-ready-node': node.node, 'data-ready': String(node.ready) }, swatch, `${node.node} `, badge, reasons);
    });
    $('readiness').replaceChildren(...items);
  }

  /** The chart's data for uPlot: one time axis (seconds) joined across the nodes, a series per node and column. */
  function chartData(chart, nodes) {
    const tables = nodes.map((node) => [node.samples.atMs.map((ms) => ms / 1000), ...chart.columns.map(({ column }) => node.samples[column])]);
    if (tables.length === 0) return [[]];
    return tables.length === 1 ? tables[0] : uPlot.join(tables);
  }

  /** From the oldest sample kept (at most the window back) to the newest; a minute at least, up to now before any sample. */
  function xRange(min, max, windowSeconds) {
    if (max === null || max === undefined || !Number.isFinite(max)) {
      const now = Date.now() / 1000;
      return [now - CHART_SPAN_SECONDS_MIN, now];
    }
    return [Math.min(max - CHART_SPAN_SECONDS_MIN, Math.max(min, max - windowSeconds)), max];
  }

  /** A series' colour: uPlot keeps a stroke given as a value as a function of the plot and the series. */
  function strokeOf(u, index) {
    const stroke = u.series[index].stroke;
    return typeof stroke === 'function' ? stroke(u, index) : stroke;
  }

  function chartOptions(chart, nodes, width, windowSeconds) {
    const series = [{}];
    for (const node of nodes) {
      for (const { suffix, dash } of chart.columns) {
        series.push({ label: `${node.node}${suffix}`, stroke: colourOf(node.node), width: 1.5, dash, points: { show: false }, value: (u, value) => (value === null || value === undefined ? '–' : chart.format(value)) });
      }
    }
    return {
      width,
      height: CHART_HEIGHT_PX,
      series,
      // Filled markers in each node's colour (uPlot draws them hollow without a fill).
      legend: { live: false, markers: { fill: (u, index) => strokeOf(u, index) } },
      cursor: { drag: { x: false, y: false } },
      scales: {
        // From the oldest sample kept (at most 15 minutes back) to the newest; a minute at least.
        x: { time: true, range: (u, min, max) => xRange(min, max, windowSeconds) },
        // From 0: a rate is never negative, and a disk's use reads against its size.
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [{}, { size: 88, values: (u, splits) => splits.map((value) => chart.format(value)) }],
    };
  }

  /** Draws (or redraws) one chart; a new uPlot only when the series change (a node came or went). */
  function renderChart(chart, nodes, windowSeconds) {
    const figure = document.querySelector(`.chart[data-metric="${chart.metric}"]`);
    const target = figure.querySelector('.plot');
    const data = chartData(chart, nodes);
    // Colours follow the nodes table: a chart drawn before it loaded is drawn again.
    const key = nodes.map((node) => `${node.node}=${colourOf(node.node)}`).join(',');
    const existing = state.charts.get(chart.metric);
    if (existing !== undefined && existing.key === key) existing.plot.setData(data);
    else {
      if (existing !== undefined) existing.plot.destroy();
      const plot = new uPlot(chartOptions(chart, nodes, Math.max(target.clientWidth, 300), windowSeconds), data, target);
      state.charts.set(chart.metric, { key, plot });
    }
    // What a reader (and the browser test) can check without reading the canvas.
    const values = data.slice(1).flat().filter((value) => value !== null && value !== undefined);
    figure.dataset.nodes = nodes.map((node) => node.node).join(',');
    figure.dataset.points = String(values.length);
    figure.dataset.peak = String(values.length === 0 ? 0 : Math.max(...values));
  }

  function renderHistory() {
    const answer = state.history;
    if (answer === undefined) return;
    const nodes = [...answer.nodes].sort((a, b) => a.node.localeCompare(b.node));
    renderReadiness(nodes);
    $('history-loading').hidden = true;
    $('charts').hidden = false;
    const charted = nodes.filter((node) => node.error === undefined);
    for (const chart of CHARTS) renderChart(chart, charted, answer.windowMs / 1000);
  }

  async function refreshHistory() {
    if (typeof uPlot !== 'function') {
      $('history-loading').textContent = 'The charting library (uPlot) did not load: charts cannot be drawn.';
      return;
    }
    try {
      state.history = await getJson('/console/data/history');
      renderHistory();
    } catch (error) {
      // Until the first answer, say why nothing is drawn; later, the charts keep what they showed.
      if (state.history === undefined) $('history-loading').textContent = `Each node's figures could not be read (${error.message}); trying again.`;
    }
  }

  /** Charts follow the page's width. */
  function followWidth() {
    new ResizeObserver(() => {
      for (const [metric, { plot }] of state.charts) {
        const width = document.querySelector(`.chart[data-metric="${metric}"] .plot`).clientWidth;
        if (width > 0 && width !== plot.width) plot.setSize({ width, height: CHART_HEIGHT_PX });
      }
    }).observe($('charts'));
  }

  // ---- Transfers and the ring -----------------------------------------------------------

  function renderTransfers() {
    // Newest first: the change in flight on top, history below.
    const rows = [...state.transfers].reverse().map((action) =>
      el('tr', { 'data-transfer': action.info.id, 'data-to': action.to, 'data-percent': String(action.percentComplete), 'data-complete': String(action.complete) },
        // A stream's payloads moving to another repository on one node: which stream, from which to which.
        el('td', { text: action.info.kind === 'repository-move' ? `${action.info.stream}: ${action.info.fromRepository} → ${action.info.toRepository}` : action.repo }),
        el('td', { className: 'name', text: action.from }),
        el('td', { className: 'name', text: action.to }),
        el('td', {}, el('progress', { max: '100', value: String(action.percentComplete) }), ` ${action.percentComplete}%${action.complete ? ' done' : ''}`),
        el('td', { className: 'number', text: action.info.bytes.toLocaleString() }),
        el('td', { className: 'number', text: action.info.payloads.toLocaleString() }),
        el('td', { className: 'number', text: String(action.info.partitions) }),
      ),
    );
    $('transfer-rows').replaceChildren(...rows);
    $('no-transfers').hidden = rows.length > 0;
    // Membership changes waiting behind the one in flight, in the order they start.
    const queued = state.queue.map((entry, index) => el('li', { 'data-queued': entry.node, text: `${index + 1}. ${entry.kind} of ${entry.node}` }));
    $('queue').replaceChildren(...queued);
    $('queue-title').hidden = queued.length === 0;
    $('change').classList.remove('loading');
  }

  function renderRing() {
    const view = state.ring;
    if (view === undefined) return;
    $('change').textContent = view.change === null ? `No membership change in flight (epoch ${view.epoch}).` : `${view.change.kind} of ${view.change.node} in flight (epoch ${view.epoch}).`;
    const rings = view.rings.map((ring) => {
      const total = ring.partitions.length;
      const legend = Object.entries(ring.holdings)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, holding]) => {
          const swatch = el('span', { className: 'swatch' });
          swatch.style.background = colourOf(name);
          return el('span', { 'data-holder': name, 'data-first': String(holding.first), 'data-held': String(holding.held) },
            swatch, `${name}: first owner of ${holding.first}, holds ${holding.held} (${total === 0 ? 0 : Math.round((100 * holding.first) / total)}%)`);
        });
      const cells = ring.partitions.map((partition) => {
        const moving = partition.next.join() !== partition.owners.join();
        const cell = el('div', {
          className: moving ? 'cell moving' : 'cell',
          'data-partition': String(partition.partition),
          title: `partition ${partition.partition}: ${partition.owners.join(', ') || 'no owner'}${moving ? ` → ${partition.next.join(', ')}` : ''}`,
        });
        cell.style.background = partition.owners.length === 0 ? '#ccc' : colourOf(partition.owners[0]);
        return cell;
      });
      const shown = total < ring.ringSize ? ` (first ${total} shown)` : '';
      return el('div', { className: 'ring', 'data-ring-size': String(ring.ringSize), 'data-replicas': String(ring.replicas) },
        el('h3', { text: `ring_size ${ring.ringSize}, replicas ${ring.replicas}${shown}` }),
        el('div', { className: 'legend' }, ...legend),
        el('div', { className: 'cells' }, ...cells),
      );
    });
    $('rings').replaceChildren(...rings);
  }

  async function refreshCluster() {
    try {
      const [transfers, ring] = await Promise.all([getJson('/cluster/transfers'), getJson('/console/data/ring')]);
      state.transfers = transfers.actions;
      state.queue = transfers.queue ?? [];
      state.ring = ring;
      renderTransfers();
      renderRing();
    } catch (error) {
      showConnection('reconnecting');
    }
  }

  /** While a node joins or leaves, transfers move: read them every second. */
  function changing() {
    if (state.ring !== undefined && state.ring.change !== null) return true;
    if (state.queue.length > 0) return true;
    if (state.transfers.some((action) => !action.complete)) return true;
    return [...state.nodes.values()].some((node) => node.state === 'Joining' || node.state === 'Leaving' || node.state === 'Pending');
  }

  let pending;
  /** Many events at once (a CLUSTER_STATE per new client) make one read. */
  function soon() {
    clearTimeout(pending);
    pending = setTimeout(refreshCluster, 150);
  }

  // ---- The event channel ---------------------------------------------------------------

  function showConnection(status) {
    // Until a token is given, failures are that: not a connection coming and going.
    if (!$('token-form').hidden && status !== 'live') status = 'needs a token';
    $('connection').textContent = status;
    $('connection').dataset.connection = status;
  }

  function apply(event) {
    if (event.type === 'CLUSTER_STATE') {
      state.nodes = new Map(event.state.nodes.map((node) => [node.name, node]));
      state.tenants = event.state.tenants.map((tenant) => tenant.name);
      renderTenants();
    } else if (event.type === 'NODE_STATE_UPDATED') {
      const known = state.nodes.get(event.node);
      if (known === undefined) void refreshNodes();
      state.nodes.set(event.node, { ...(known || { name: event.node }), state: event.state });
    } else if (event.type === 'TENANT_ADDED') {
      if (!state.tenants.includes(event.tenant.name)) state.tenants.push(event.tenant.name);
      renderTenants();
    }
    renderNodes();
  }

  function follow() {
    if (state.events !== undefined) state.events.close();
    const source = new EventSource(streamUrl('/output/cluster'));
    state.events = source;
    source.onopen = () => showConnection('live');
    // EventSource reconnects by itself; the next CLUSTER_STATE brings the table back.
    source.onerror = () => showConnection('reconnecting');
    source.onmessage = (message) => {
      apply(JSON.parse(message.data));
      soon();
    };
  }

  // ---- Streams and search --------------------------------------------------------------

  function renderTenants() {
    const select = $('tenant');
    const tenants = [...state.tenants].sort();
    const before = state.tenant;
    if (state.tenant === undefined || !tenants.includes(state.tenant)) state.tenant = tenants.includes('demo') ? 'demo' : tenants[0];
    select.replaceChildren(...tenants.map((name) => el('option', { value: name, text: name })));
    if (state.tenant !== undefined) select.value = state.tenant;
    if (state.tenant !== before) void refreshStreams();
  }

  function renderStreams() {
    const rows = state.streams.map((stream) =>
      el('tr', { 'data-stream': stream.uri, 'data-payloads': stream.payloads === null ? '' : String(stream.payloads) },
        el('td', {}, el('code', { text: stream.uri })),
        el('td', { text: stream.repository }),
        // null: no node answered its count.
        el('td', { className: 'number', text: stream.payloads === null ? '–' : stream.payloads.toLocaleString() }),
      ),
    );
    $('stream-rows').replaceChildren(...rows);
    $('streams-loading').hidden = true;
    $('no-streams').hidden = rows.length > 0;
    const searchable = state.streams.filter((stream) => stream.repository === 'ssr').map((stream) => stream.uri);
    const select = $('search-stream');
    const chosen = select.value;
    select.replaceChildren(...searchable.map((uri) => el('option', { value: uri, text: uri })));
    if (searchable.includes(chosen)) select.value = chosen;
    const query = $('live-query');
    if (query.value === '' && state.streams.length > 0) query.value = `from ${state.streams[0].uri}`;
  }

  /** The tenant's persisted streams: the rows of /_cat/streams (every tenant's) whose key is `<tenant>/…`. */
  async function refreshStreams() {
    const tenant = state.tenant;
    if (tenant === undefined) return;
    try {
      const rows = await getJson('/_cat/streams?format=json&h=stream,repo,records');
      if (state.tenant !== tenant) return;
      state.streams = rows
        .filter((row) => row.stream.startsWith(`${tenant}/`))
        .map((row) => ({ uri: `/streams/${row.stream}`, repository: row.repo, payloads: row.records }));
      renderStreams();
    } catch (error) {
      // A failed read is not an empty tenant: say so while nothing was read yet.
      if (!$('streams-loading').hidden) $('streams-loading').textContent = `The tenant's streams could not be read (${error.message}); trying again.`;
      else {
        state.streams = [];
        renderStreams();
      }
    }
  }

  async function search(event) {
    event.preventDefault();
    const uri = $('search-stream').value;
    const summary = $('search-summary');
    summary.className = 'note';
    if (uri === '') {
      summary.textContent = 'No ssr stream in this tenant to search.';
      return;
    }
    try {
      const result = await post(`/ssr/${encodeURIComponent(state.tenant)}/_search`, { uris: [uri], query: { base: $('search-query').value }, count: 20 });
      summary.textContent = `${result.total.toLocaleString()} match${result.total === 1 ? '' : 'es'}${result.total > result.values.length ? `, the best ${result.values.length} shown` : ''}.`;
      summary.dataset.total = String(result.total);
      $('search-rows').replaceChildren(...result.values.map((hit) => el('tr', {}, el('td', { className: 'number', text: hit.score.toFixed(3) }), el('td', { className: 'json', text: JSON.stringify(hit.data) }))));
    } catch (error) {
      summary.className = 'note error';
      summary.textContent = error.message;
      $('search-rows').replaceChildren();
    }
  }

  // ---- The live query ------------------------------------------------------------------

  function liveStatus(text, isError) {
    const status = $('live-status');
    status.textContent = text;
    status.className = isError ? 'note error' : 'note';
  }

  /** Rows by key when the query groups (schema config.key), else in arrival order. */
  function applyItems(live, items) {
    for (const item of items) {
      const key = live.key.length === 0 ? undefined : JSON.stringify(live.key.map((field) => item.data[field]));
      if (item.action === 'add' || key === undefined) {
        if (item.action !== 'remove') live.rows.push({ key, data: item.data });
      } else {
        const index = live.rows.findIndex((row) => row.key === key);
        if (item.action === 'remove' && index >= 0) live.rows.splice(index, 1);
        else if (item.action === 'update' && index >= 0) live.rows[index] = { key, data: item.data };
        else if (item.action === 'update') live.rows.push({ key, data: item.data });
      }
    }
    while (live.rows.length > LIVE_ROWS_MAX) live.rows.shift();
    live.received += items.length;
  }

  function renderLive(live) {
    $('live-head').replaceChildren(el('tr', {}, ...live.columns.map((column) => el('th', { text: column }))));
    $('live-rows').replaceChildren(...live.rows.map((row) => el('tr', { 'data-live-row': '' }, ...live.columns.map((column) => el('td', { text: format(row.data[column]) })))));
    $('live-rows').dataset.rows = String(live.rows.length);
  }

  const format = (value) => (value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value));

  async function runLive(event) {
    event.preventDefault();
    await stopLive();
    const tenant = state.tenant;
    const text = $('live-query').value.trim();
    if (tenant === undefined || text === '') return;
    liveStatus('Starting…');
    try {
      const { session } = await post(`/execution/${encodeURIComponent(tenant)}/sessions`);
      const live = { session, source: undefined, columns: [], key: [], rows: [], received: 0 };
      state.live = live;
      $('live-stop').disabled = false;
      const entries = await put(`${session}/queries`, { id: 'console', body: text });
      const output = entries[0].query.outputs[0];
      // Subscribed before the start, so no row is missed.
      live.source = new EventSource(streamUrl(output.outputUri));
      live.source.onmessage = (message) => onLiveMessage(live, JSON.parse(message.data));
      live.source.onerror = () => liveStatus('Output channel interrupted; reconnecting…');
      await put(`${session}/queries/console/_start`);
      liveStatus(`Running in ${session}; ${output.outputType === 'BOUNDED' ? 'it ends when the stored data is read' : 'rows arrive as payloads are posted'}.`);
    } catch (error) {
      liveStatus(error.message, true);
      await stopLive(true);
    }
  }

  function onLiveMessage(live, message) {
    if (state.live !== live) return;
    if (message.type === 'sos') {
      const topDef = message.schema && message.schema.topDef;
      live.columns = topDef && topDef.properties ? Object.keys(topDef.properties) : [];
      live.key = (message.schema && message.schema.config && message.schema.config.key) || [];
      live.rows = [];
    } else if (message.type === 'increment') {
      if (live.columns.length === 0 && message.items.length > 0) live.columns = Object.keys(message.items[0].data);
      applyItems(live, message.items);
    } else if (message.type === 'eos') {
      liveStatus(`Completed: ${live.received} row change(s).`);
      live.source.close();
    }
    renderLive(live);
  }

  async function stopLive(keepStatus) {
    const live = state.live;
    state.live = undefined;
    $('live-stop').disabled = true;
    if (live === undefined) return;
    if (live.source !== undefined) live.source.close();
    try {
      await fetch(live.session, { method: 'DELETE', headers: authorization() });
    } catch (error) {
      // The session stays; it can be deleted with DELETE on its URI.
    }
    if (!keepStatus) liveStatus('Stopped.');
  }

  // ---- Start ---------------------------------------------------------------------------

  async function start() {
    $('search-form').addEventListener('submit', search);
    $('live-form').addEventListener('submit', runLive);
    $('live-stop').addEventListener('click', () => void stopLive());
    $('token-form').addEventListener('submit', useToken);
    $('tenant').addEventListener('change', () => {
      state.tenant = $('tenant').value;
      void refreshStreams();
    });
    // A session made here is deleted when the page goes away (best effort).
    window.addEventListener('pagehide', () => state.live && fetch(state.live.session, { method: 'DELETE', headers: authorization(), keepalive: true }));
    try {
      const { node } = await getJson('/cluster/localNode');
      $('node-name').textContent = node.name;
      document.title = `Tributary console: ${node.name}`;
    } catch (error) {
      $('node-name').textContent = '(not answering)';
    }
    follow();
    followWidth();
    await Promise.all([refreshCluster(), refreshNodes(), refreshDisks(), refreshHistory()]);
    keepReading();
  }

  /**
   * Reads again on a timer: fast while a membership change runs (transfers every second,
   * nodes every 3 s, streams, disks and charts every 5 s), every 10 s when nothing changes, and not at all
   * while the tab is hidden; a tab shown again reads everything at once.
   */
  function keepReading() {
    const reads = [
      { read: refreshCluster, busyMs: CHANGE_REFRESH_MS, last: Date.now() },
      { read: refreshNodes, busyMs: NODES_REFRESH_MS, last: Date.now() },
      { read: refreshStreams, busyMs: STREAMS_REFRESH_MS, last: Date.now() },
      { read: refreshDisks, busyMs: DISKS_REFRESH_MS, last: Date.now() },
      { read: refreshHistory, busyMs: HISTORY_REFRESH_MS, last: Date.now() },
    ];
    setInterval(() => {
      if (document.hidden) return;
      const now = Date.now();
      const busy = changing();
      for (const entry of reads) {
        if (now - entry.last < (busy ? entry.busyMs : IDLE_REFRESH_MS)) continue;
        entry.last = now;
        void entry.read();
      }
    }, CHANGE_REFRESH_MS);
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) return;
      for (const entry of reads) {
        entry.last = Date.now();
        void entry.read();
      }
    });
  }

  void start();
})();
