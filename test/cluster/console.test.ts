// The live console in headless Chromium: three nodes, the console of
// the first, a fourth node added through POST /cluster/nodes; the page must show the
// transfers to it with their progress and the new node Joined, from what it reads itself
// (the SSE channel and the console's views), then count the streams, search, and run a live
// query whose rows arrive over SSE; and on a node with authentication on, the page asks for
// a token and then works with it. The charts of the last 15 minutes (uPlot, served by the
// node) show a loading state until their first answer, then per metric a canvas whose legend
// names every node, series that count what was done (ingest, latency, transfers to a new
// node, disk), and each node's readiness, which turns to "no answer" while a node is paused.
// Screenshots go to test/artifacts/.
//
// Chromium is the Debian package (`apt-get install -y chromium`), driven by playwright-core;
// .ci/run installs it. Without it this test is skipped, saying so, unless
// TRIBUTARY_REQUIRE_CHROMIUM=1 (CI sets it), when a missing browser fails the test.

import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addNodes, startClusterNode, startJoinedCluster, waitState } from '../kit/cluster.js';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';
import { packageRoot } from '../../src/lib/package-root.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REQUIRED = process.env.TRIBUTARY_REQUIRE_CHROMIUM === '1';
const FOUND = existsSync(CHROMIUM);
const ARTIFACTS = join(packageRoot(), 'test', 'artifacts');
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

if (!FOUND && !REQUIRED) {
  console.warn(`console test skipped: no Chromium at ${CHROMIUM}. Install it with \`apt-get install -y chromium\` (CI does), or set CHROMIUM_PATH.`);
}

const STREAM = '/streams/demo/console/metrics';
const SEARCHABLE = '/streams/demo/console/events';
const schema = { version: '1', topDef: { type: 'record', properties: { host: { type: 'string' }, cpu: { type: 'double' }, at: { type: 'datetime' } } } };
const metric = (index: number) => ({ host: `host-${index % 50}`, cpu: index % 100, at: new Date(Date.UTC(2024, 0, 1) + index * 1000).toISOString() });

let nodes: NodeProcess[] = [];
let context: BrowserContext | undefined;
let page: Page;
let profile: string | undefined;
const pageErrors: string[] = [];

// Functions run in the page reach its document as (globalThis as any).document: the test is
// compiled without the DOM's types, and the console's Content-Security-Policy forbids
// evaluating strings.

async function screenshot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `console-${name}.png`), fullPage: true });
}

describe.skipIf(!FOUND && !REQUIRED)('console - live view in headless Chromium', () => {
  beforeAll(async () => {
    expect(FOUND, `Chromium at ${CHROMIUM} (apt-get install -y chromium)`).toBe(true);
    mkdirSync(ARTIFACTS, { recursive: true });
    nodes = await startJoinedCluster(3);
    const api = client(nodes[0]!);
    for (const uri of [STREAM, SEARCHABLE]) expect((await api.put(uri, { schema })).status).toBe(200);
    expect((await api.put(`${STREAM}/repository`, { name: 'tsr', config: {} })).status).toBe(200);
    expect((await api.put(`${STREAM}/policy`, { replicas: 2, ring_size: 32, hash_payload: { bytes: 64 } })).status).toBe(200);
    expect((await api.put(`${SEARCHABLE}/repository`, { name: 'ssr', config: {} })).status).toBe(200);
    for (let batch = 0; batch < 10; batch += 1) {
      const response = await client(nodes[batch % 3]!).post(STREAM, Array.from({ length: 1_000 }, (_, index) => metric(batch * 1_000 + index)));
      expect(response.status, response.text).toBe(200);
    }
    expect((await api.post(SEARCHABLE, Array.from({ length: 30 }, (_, index) => metric(index)))).status).toBe(200);

    profile = mkdtempSync(join(tmpdir(), 'tributary-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1400, height: 1000 } });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    if (profile !== undefined) rmSync(profile, { recursive: true, force: true });
    await cleanup();
  });

  it('shows the nodes, the ring and the streams of the cluster, from the node itself', async () => {
    await page.goto(`${nodes[0]!.url}/console`);
    await page.waitForSelector('#connection[data-connection="live"]');
    for (const node of nodes) await page.waitForSelector(`#node-rows tr[data-node="${node.name}"][data-state="Joined"][data-available="true"]`);
    expect(await page.textContent('#node-name')).toBe('node-1');
    // Every node's free disk, from _cat/nodes (docs/storage.md).
    for (const node of nodes) await page.waitForSelector(`#node-rows tr[data-node="${node.name}"] td[data-disk-free][data-writable="true"]`);
    const free = await page.$eval('#node-rows tr[data-node="node-1"] td[data-disk-free]', (cell) => Number(cell.getAttribute('data-disk-free')));
    expect(free).toBeGreaterThan(0);
    // Two rings: the default policy of the ssr stream (128, 3) and the tsr stream's (32, 2).
    await page.waitForSelector('.ring[data-ring-size="32"][data-replicas="2"] .cell[data-partition="31"]');
    const held = await page.$$eval('.ring[data-ring-size="32"] [data-holder]', (holders) => holders.map((holder) => Number(holder.getAttribute('data-held'))));
    expect(held.reduce((sum, count) => sum + count, 0)).toBe(64);
    await page.waitForSelector(`#stream-rows tr[data-stream="${STREAM}"][data-payloads="10000"]`);
    await page.waitForSelector(`#stream-rows tr[data-stream="${SEARCHABLE}"][data-payloads="30"]`);
    await screenshot('1-three-nodes');
  });

  it('charts every node over time: a loading state first, then ingest, latency and disk with a legend naming each node, and each node ready', async () => {
    // A tab whose history read waits: the first paint says it is loading, and draws no chart.
    const tab = await context!.newPage();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await tab.route('**/console/data/history', async (route) => {
      await held;
      await route.continue();
    });
    try {
      await tab.goto(`${nodes[0]!.url}/console`);
      await tab.waitForSelector('#node-rows tr[data-node="node-3"]');
      expect(await tab.isVisible('#history-loading')).toBe(true);
      expect(await tab.textContent('#history-loading')).toMatch(/^Reading each node's figures/);
      expect(await tab.isHidden('#charts')).toBe(true);
      expect(await tab.$$('#charts canvas')).toHaveLength(0);
      await tab.screenshot({ path: join(ARTIFACTS, 'console-1b-charts-loading.png'), fullPage: true });
      release();
      await tab.waitForSelector('#history-loading', { state: 'hidden' });
      await tab.waitForSelector('.chart[data-metric="ingest"] canvas');
    } finally {
      release();
      await tab.close();
    }

    const names = nodes.map((node) => node.name);
    const legend = (metric: string) => page.$$eval(`.chart[data-metric="${metric}"] .u-legend .u-series .u-label`, (labels) => labels.map((label) => label.textContent));
    const figure = (metric: string, name: string) => page.$eval(`.chart[data-metric="${metric}"]`, (element, key) => element.getAttribute(`data-${key}`), name);
    for (const metric of ['ingest', 'latency', 'transfer', 'disk']) {
      await page.waitForSelector(`.chart[data-metric="${metric}"] .uplot canvas`);
      expect(await figure(metric, 'nodes')).toBe(names.join(','));
    }
    expect(await legend('ingest')).toEqual(names);
    expect(await legend('transfer')).toEqual(names);
    expect(await legend('disk')).toEqual(names);
    expect(await legend('latency')).toEqual(names.flatMap((name) => [`${name} p50`, `${name} p99`]));
    // Every node took a third of the 10,000 payloads: a sample counted them (one every 5 s).
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('.chart[data-metric="ingest"]').dataset.peak) > 0, undefined, { timeout: 20_000 });
    // The page's own reads are requests of node-1; every node's disk is read (a point each at least).
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('.chart[data-metric="latency"]').dataset.points) > 0, undefined, { timeout: 20_000 });
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('.chart[data-metric="disk"]').dataset.points) >= 3, undefined, { timeout: 20_000 });
    expect(Number(await figure('disk', 'peak'))).toBeGreaterThan(0);
    // Every node says it is ready (GET /ready of each).
    for (const name of names) await page.waitForSelector(`#readiness li[data-ready-node="${name}"][data-ready="true"] .badge.ready`);
    expect(await page.textContent('#readiness li[data-ready-node="node-2"]')).toBe('node-2 ready');
    await page.locator('#history').screenshot({ path: join(ARTIFACTS, 'console-1c-charts.png') });
  });

  it('two nodes added in one POST /cluster/nodes: the second waits in the queue, node-4 appears, its transfers progress to 100%, and both are Joined', async () => {
    const joining = await startClusterNode('node-4', { join: true });
    const queued = await startClusterNode('node-5', { join: true });
    nodes.push(joining, queued);
    const percents = new Set<string>();
    let watching = true;
    const sample = async () => {
      const seen = await page.$$eval('#transfer-rows tr[data-to="node-4"]', (rows) => rows.map((row) => row.getAttribute('data-percent')!)).catch(() => []);
      for (const percent of seen) percents.add(percent);
    };
    const watch = (async () => {
      while (watching) {
        await sample();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      // The loop may stop between two samples, after the page showed the last state.
      await sample();
    })();
    try {
      const added = await addNodes(nodes[0]!, [joining, queued]);
      // node-4 held still (SIGSTOP) until the page shows the queue: its join cannot end, and
      // node-5 leave the queue, before the page's next read of it (a join of these 10,000
      // payloads can take less than that read's 150 ms).
      joining.pause();
      try {
        expect(added.status, added.text).toBe(200);
        expect(added.json.changes.map((change: { node: string; status: string }) => `${change.node} ${change.status}`)).toEqual(['node-4 started', 'node-5 queued']);
        // The page lists what waits behind the change in flight.
        await page.waitForSelector('#queue li[data-queued="node-5"]', { timeout: 20_000 });
      } finally {
        joining.resume();
      }
      await page.waitForSelector('#node-rows tr[data-node="node-4"]', { timeout: 20_000 });
      await page.waitForSelector('#transfer-rows tr[data-to="node-4"] progress', { timeout: 20_000 });
      await screenshot('2-transfers-to-node-4');
      await waitState(joining, 'Joined');
      await page.waitForSelector('#node-rows tr[data-node="node-4"][data-state="Joined"]', { timeout: 20_000 });
      await waitState(queued, 'Joined');
      await page.waitForSelector('#node-rows tr[data-node="node-5"][data-state="Joined"]', { timeout: 20_000 });
      await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#queue li').length === 0, undefined, { timeout: 20_000 });
      await page.waitForFunction(() => {
        const rows: any[] = [...(globalThis as any).document.querySelectorAll('#transfer-rows tr[data-to="node-4"]')];
        return rows.length >= 3 && rows.every((row) => row.dataset.complete === 'true' && row.dataset.percent === '100');
      }, undefined, { timeout: 20_000 });
    } finally {
      watching = false;
      await watch;
    }

    const repos = await page.$$eval('#transfer-rows tr[data-to="node-4"] td:first-child', (cells) => cells.map((cell) => cell.textContent));
    expect(new Set(repos)).toEqual(new Set(['KV', 'ssr', 'tsr']));
    const bars = await page.$$eval('#transfer-rows tr[data-to="node-4"] progress', (bars) => bars.map((bar) => Number(bar.getAttribute('value'))));
    expect(bars.every((value) => value === 100)).toBe(true);
    // The tsr transfer moved payloads: its row counts them.
    const moved = await page.$eval('#transfer-rows tr[data-to="node-4"]:has(td:first-child:text-is("tsr")) td:nth-child(6)', (cell) => Number(cell.textContent!.replace(/\D/g, '')));
    expect(moved).toBeGreaterThan(0);
    console.log(`console test: transfer percents seen in the page for node-4: ${[...percents].sort((a, b) => Number(a) - Number(b)).join(', ')}`);
    expect(percents.has('100')).toBe(true);
    // The ring now has node-4 as an owner, and the stream still counts every payload once.
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('.ring[data-ring-size="32"] [data-holder="node-4"]')?.dataset.held ?? 0) > 0, undefined, { timeout: 20_000 });
    await page.waitForSelector(`#stream-rows tr[data-stream="${STREAM}"][data-payloads="10000"]`, { timeout: 20_000 });
    // The charts now have node-4 and node-5, and the transfers to node-4 moved bytes in a sample.
    await page.waitForSelector('.chart[data-metric="transfer"][data-nodes="node-1,node-2,node-3,node-4,node-5"]', { timeout: 20_000 });
    await page.waitForFunction(() => Number((globalThis as any).document.querySelector('.chart[data-metric="transfer"]').dataset.peak) > 0, undefined, { timeout: 20_000 });
    expect(await page.$$eval('.chart[data-metric="transfer"] .u-legend .u-label', (labels) => labels.map((label) => label.textContent))).toContain('node-4');
    await page.waitForSelector('#readiness li[data-ready-node="node-5"][data-ready="true"]', { timeout: 20_000 });
    await screenshot('3-node-4-joined');
  });

  it('the search box finds payloads, and a live query shows rows as they are posted', async () => {
    await page.selectOption('#search-stream', SEARCHABLE);
    await page.fill('#search-query', 'cpu >= 25');
    await page.click('#search-run');
    await page.waitForSelector('#search-summary[data-total="5"]');
    expect(await page.$$eval('#search-rows tr', (rows) => rows.length)).toBe(5);

    await page.fill('#live-query', `from ${STREAM} where cpu > 90 select host, cpu`);
    await page.click('#live-run');
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#live-status').textContent.startsWith('Running'));
    // Posted through another node: the rows reach the query's host and its output channel.
    const posted = [{ host: 'live-a', cpu: 95, at: '2024-06-01T00:00:00Z' }, { host: 'live-b', cpu: 10, at: '2024-06-01T00:00:01Z' }, { host: 'live-c', cpu: 99.5, at: '2024-06-01T00:00:02Z' }];
    expect((await client(nodes[1]!).post(STREAM, posted)).status).toBe(200);
    await page.waitForSelector('#live-rows[data-rows="2"]', { timeout: 20_000 });
    const rows = await page.$$eval('#live-rows tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows).toEqual([['live-a', '95'], ['live-c', '99.5']]);
    expect(await page.$$eval('#live-head th', (ths) => ths.map((th) => th.textContent))).toEqual(['host', 'cpu']);
    await screenshot('4-search-and-live-query');
    await page.click('#live-stop');
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#live-status').textContent === 'Stopped.');
    expect(pageErrors).toEqual([]);
  });

  it("a paused node shows as not answering in the readiness line, and ready again once it resumes", async () => {
    const paused = nodes[4]!;
    paused.pause();
    try {
      await page.waitForSelector(`#readiness li[data-ready-node="${paused.name}"][data-ready="unknown"]`, { timeout: 30_000 });
      expect(await page.textContent(`#readiness li[data-ready-node="${paused.name}"] .reasons`)).toMatch(/^(unavailable|did not answer)/);
      await page.locator('#history').screenshot({ path: join(ARTIFACTS, 'console-5-paused-node.png') });
    } finally {
      paused.resume();
    }
    await page.waitForSelector(`#readiness li[data-ready-node="${paused.name}"][data-ready="true"]`, { timeout: 30_000 });
    expect(pageErrors).toEqual([]);
  });

  it('on a node with authentication on, asks for a token, then shows the cluster and follows its events', async () => {
    const secret = 'console-test-admin-secret-0123456789';
    const guarded = await NodeProcess.start({ name: 'guarded', args: ['--auth', 'on', '--admin-secret', secret] });
    const tab = await context!.newPage();
    try {
      await tab.goto(`${guarded.url}/console`);
      // The page itself is public; every read of the cluster answers 401 without a token.
      await tab.waitForSelector('#token-form:not([hidden])');
      await tab.waitForSelector('#connection[data-connection="needs a token"]');
      expect(await tab.textContent('#node-name')).toBe('guarded');
      await tab.fill('#token', secret);
      await tab.click('#token-use');
      await tab.waitForSelector('#connection[data-connection="live"]');
      await tab.waitForSelector('#node-rows tr[data-node="guarded"][data-state="Joined"]');
      await tab.waitForSelector('.ring .cell[data-partition="0"]');
      // The charts' read carries the token too.
      await tab.waitForSelector('#readiness li[data-ready-node="guarded"][data-ready="true"]');
      await tab.waitForSelector('.chart[data-metric="disk"] .uplot canvas');
      expect(await tab.isHidden('#token-form')).toBe(true);
    } finally {
      await tab.close();
    }
  });
});
