// Writes stay available while one node of three is paused: a paused owner is hinted after the
// short write deadline instead of holding every batch for the whole peer deadline, so no second
// passes without an acknowledged batch; and the node, once resumed, does not answer its queued
// requests with 500 from a view in which everyone seemed to have gone.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineStream, startJoinedCluster } from '../kit/cluster.js';
import { cleanup, client, sleep, type NodeProcess } from '../kit/node-process.js';
import { Prng } from '../sim/prng.js';
import { CHAOS_SCHEMA, ChaosWriters } from '../chaos/writers.js';

const STREAM = '/streams/demo/avail/events';
const PAUSE_MS = 8_000;
let nodes: NodeProcess[];

beforeAll(async () => {
  nodes = await startJoinedCluster(3);
  await defineStream(nodes[0]!, STREAM, { schema: CHAOS_SCHEMA, repo: 'tsr', policy: { replicas: 2, ring_size: 32, hash_payload: { bytes: 128 } } });
  await sleep(500);
}, 120_000);
afterAll(cleanup);

describe('write availability - one node of three paused', () => {
  it('acknowledges batches every second while node-2 is SIGSTOPped, and node-2 answers no 500 once resumed', async () => {
    const paused = nodes[1]!;
    // Clients write through the two live nodes (as behind a load balancer): each batch
    // has records that node-2 owns, so each is held up if node-2 holds the write up.
    const live = nodes.filter((node) => node !== paused);
    const writers = new ChaosWriters(
      { writers: 4, streams: [STREAM], batchPayloadsMin: 10, batchPayloadsMax: 100, requestTimeoutMs: 3_000, attemptsMax: 2, avoidMs: 2_000, targets: () => live.map((node) => ({ name: node.name, url: node.url })) },
      new Prng(12),
    );
    writers.start();
    await sleep(2_000);
    const pausedAt = Date.now();
    paused.pause();
    await sleep(PAUSE_MS);
    paused.resume();
    const resumedAt = Date.now();
    // What the resumed node answers to fresh batches sent to it right away.
    const statuses: number[] = [];
    for (let index = 0; index < 20; index += 1) {
      const response = await client(paused).post(STREAM, [{ id: `after-${index}`, ts: new Date().toISOString(), host: 'h', value: index, text: 'after resume' }]);
      statuses.push(response.status);
    }
    await sleep(2_000);
    await writers.stop();
    const [first, last] = [Math.floor((pausedAt - writers.startedAt) / 1000), Math.floor((resumedAt - writers.startedAt) / 1000)];
    const pauseSeconds = writers.stats.silentSeconds.filter((second) => second >= first && second <= last);
    expect(pauseSeconds, `seconds without an acknowledged batch during the pause: ${writers.stats.silentSeconds.join(',')}`).toEqual([]);
    expect(statuses.filter((status) => status >= 500), `answers of node-2 after resuming: ${statuses.join(',')}`).toEqual([]);
    expect(writers.outcomes.get(STREAM)!.acknowledged.size).toBeGreaterThan(500);
  }, 60_000);
});
