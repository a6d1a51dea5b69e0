// GET /output/cluster over SSE, read with the standard eventsource client.

import { EventSource } from 'eventsource';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, client, NodeProcess } from '../kit/node-process.js';

let node: NodeProcess;

beforeAll(async () => {
  node = await NodeProcess.start({ name: 'events', args: ['--limits-sse-keep-alive-ms', '300'] });
});
afterAll(cleanup);

/** Collects the messages of one client until closed. */
function follow(url: string) {
  const messages: any[] = [];
  const source = new EventSource(url);
  const opened = new Promise<void>((resolve, reject) => {
    source.onopen = () => resolve();
    source.onerror = (error) => reject(error);
  });
  source.onmessage = (event) => messages.push(JSON.parse(event.data));
  return { messages, opened, close: () => source.close() };
}

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('cluster events - SSE', () => {
  it('sends CLUSTER_STATE on connect, to every client when one connects, and TENANT_ADDED', async () => {
    const first = follow(`${node.url}/output/cluster`);
    await first.opened;
    await until(() => first.messages.length >= 1);
    expect(first.messages[0].type).toBe('CLUSTER_STATE');
    expect(first.messages[0].state.nodes[0]).toMatchObject({ name: 'events', state: 'Joined' });
    expect(first.messages[0].state.tenants).toContainEqual({ name: 'demo' });

    // The node's own start may still announce its state (NODE_STATE_UPDATED) between the two:
    // only the CLUSTER_STATE messages are counted.
    const states = (messages: any[]) => messages.filter((m) => m.type === 'CLUSTER_STATE');
    const second = follow(`${node.url}/output/cluster`);
    await second.opened;
    await until(() => states(first.messages).length >= 2 && second.messages.length >= 1);
    expect(states(first.messages)).toHaveLength(2);
    expect(second.messages[0].type).toBe('CLUSTER_STATE');

    await client(node).put('/cluster/tenants/evented', {});
    await until(() => first.messages.some((m) => m.type === 'TENANT_ADDED') && second.messages.some((m) => m.type === 'TENANT_ADDED'));
    expect(first.messages.find((m) => m.type === 'TENANT_ADDED')).toEqual({ type: 'TENANT_ADDED', tenant: { name: 'evented' } });
    // A second PUT of the same tenant adds nothing.
    await client(node).put('/cluster/tenants/evented', {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(first.messages.filter((m) => m.type === 'TENANT_ADDED')).toHaveLength(1);
    first.close();
    second.close();
  });

  it('opens with a comment line and keeps idle connections alive with comments', async () => {
    const controller = new AbortController();
    const response = await fetch(`${node.url}/output/cluster`, { signal: controller.signal });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body!.getReader();
    let text = '';
    const started = Date.now();
    while (!/: keep-alive/.test(text) && Date.now() - started < 5_000) {
      const { value } = await reader.read();
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    expect(text.startsWith(': connected\n\n')).toBe(true);
    expect(text).toMatch(/: keep-alive\n\n/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });
});
