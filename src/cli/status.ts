// `tributary status --url URL`: the cluster as one node sees it, like `nodetool status`:
// every node with its state, availability, ownership, records and bytes, then the
// transfers still running with their percentage, rate and ETA. It reads the node's
// /_cat/nodes and /_cat/transfers as JSON and prints them with the same table format.

import { StartupError } from '../lib/errors.js';
import { formatTable, type CatColumn, type Cell } from '../ops/cat-table.js';
import { NODE_COLUMNS, TRANSFER_COLUMNS } from '../ops/cat-views.js';

const REQUEST_TIMEOUT_MS = 10_000;

/** The _cat columns status prints, in its order; `--` is nodetool's two-letter status. */
const NODE_STATUS_COLUMNS: CatColumn[] = [
  { name: '--', kind: 'text', description: 'U up / D down, then N Joined, J Joining, L Leaving, P Pending' },
  ...pick(NODE_COLUMNS, ['name', 'address', 'state', 'available', 'owns', 'records', 'bytes', 'zone']),
];
const TRANSFER_STATUS_COLUMNS = pick(TRANSFER_COLUMNS, ['repo', 'from', 'to', 'state', 'percent', 'bytes', 'rate', 'eta', 'reason']);

function pick(columns: readonly CatColumn[], names: readonly string[]): CatColumn[] {
  return names.map((name) => columns.find((column) => column.name === name)!);
}

const STATE_LETTERS: Record<string, string> = { Joined: 'N', Joining: 'J', Leaving: 'L', Pending: 'P', Left: 'X' };

/** U up, D down; a Left node is neither (nobody watches it any more): '-'. */
function statusLetter(node: Record<string, Cell>): string {
  if (node.state === 'Left') return '-';
  return node.available === true ? 'U' : 'D';
}

/** The _cat tables of the node at `url`; `token` for a node with authentication on. */
export async function fetchStatus(url: string, token?: string): Promise<{ nodes: Array<Record<string, Cell>>; transfers: Array<Record<string, Cell>> }> {
  const base = url.replace(/\/+$/, '');
  const [nodes, transfers] = await Promise.all([getJson(`${base}/_cat/nodes?format=json`, token), getJson(`${base}/_cat/transfers?format=json`, token)]);
  return { nodes, transfers };
}

async function getJson(url: string, token: string | undefined): Promise<Array<Record<string, Cell>>> {
  let response: Response;
  try {
    const headers: Record<string, string> = token === undefined || token === '' ? {} : { authorization: `Bearer ${token}` };
    response = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    throw new StartupError(`cannot reach ${url}: ${cause}`);
  }
  if (response.status === 401) throw new StartupError(`${url} answered 401: the node has authentication on; pass --token (or TRIBUTARY_TOKEN) with read on system`);
  if (!response.ok) throw new StartupError(`${url} answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as Array<Record<string, Cell>>;
}

/** One GET for `tributary health`: whether it answered 2xx, and its body (or why it could not). */
export async function probe(url: string): Promise<{ ok: boolean; body: string }> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return { ok: response.ok, body: (await response.text()).slice(0, 2_000) };
  } catch (error) {
    const cause = (error as { cause?: { message?: string } }).cause?.message ?? (error as Error).message;
    return { ok: false, body: `cannot reach ${url}: ${cause}` };
  }
}

/** The text `tributary status` prints. Running transfers only; finished ones are left out. */
export function renderStatus(url: string, nodes: ReadonlyArray<Record<string, Cell>>, transfers: ReadonlyArray<Record<string, Cell>>): string {
  const joined = nodes.filter((node) => node.state === 'Joined').length;
  const rows = nodes.map((node) => ({
    ...node,
    '--': `${statusLetter(node)}${STATE_LETTERS[String(node.state)] ?? '?'}`,
    address: `${String(node.address)}:${String(node.http)}`,
  }));
  const running = transfers.filter((transfer) => transfer.state !== 'done');
  const lines = [
    `Cluster seen from ${url}: ${nodes.length} node(s), ${joined} Joined`,
    'Status: U up, D down (this node does not hear from it), - left / State: N Joined, J Joining, L Leaving, P Pending, X Left',
    '',
    formatTable(NODE_STATUS_COLUMNS, rows, true).trimEnd(),
    '',
    running.length === 0 ? 'No transfers running.' : `Transfers running (${running.length}):\n${formatTable(TRANSFER_STATUS_COLUMNS, running, true).trimEnd()}`,
  ];
  return `${lines.join('\n')}\n`;
}
