// A Prometheus counter or gauge of /metrics, summed over its label sets and over nodes: what
// a bench reads of the nodes it runs (hinted records, transfer bytes).

import { client, type NodeProcess } from '../test/kit/node-process.js';

/** `name`'s samples whose labels include `labels` (e.g. 'direction="out"'), summed over the nodes. */
export async function metricTotal(nodes: readonly NodeProcess[], name: string, labels = ''): Promise<number> {
  let total = 0;
  for (const node of nodes) {
    const answer = await client(node).get('/metrics');
    if (answer.status !== 200) throw new Error(`metrics of ${node.name}: ${answer.status}`);
    for (const line of answer.text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      const labelText = line.slice(name.length, line.lastIndexOf(' '));
      if (labels !== '' && !labelText.includes(labels)) continue;
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}
