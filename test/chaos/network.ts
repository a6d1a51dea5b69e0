// The chaos suite's network (docs/cluster.md, "The chaos suite"): each node in a network
// namespace of its own with one address, all joined by a bridge this run creates, and the
// test process (the clients) on the bridge's own address in the root namespace. A partition
// is a set of silent drops, made with nftables inside the nodes' namespaces only: nothing of
// the machine's own network (its tables, routes, addresses) is touched. Every namespace,
// link and address is named after this process and removed by cleanup(), also after a
// failure or a signal; leftovers of a run that was killed outright (its pid gone) are
// removed when the next run starts. Needs root, `ip` (iproute2) and `nft` (nftables).

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Bound on one `ip` or `nft` command: a hung one must not hang the run. */
const COMMAND_TIMEOUT_MS = 10_000;
/** The benchmarking range (RFC 2544), one /24 per run: never a real host's address. */
const SUBNET_PREFIX = '198.18';
const NAMESPACE_PREFIX = 'tbchaos-';
const BRIDGE_PREFIX = 'tbc';
const VETH_PREFIX = 'tbv';
const TABLE = 'tributary_chaos';
/** Hosts one run may have (addresses .10 to .250 of its /24). */
const HOSTS_MAX = 240;

export interface NetworkHost {
  name: string;
  namespace: string;
  address: string;
}

/** One side of a cut: a node by name, or the clients (the test process). */
export type Endpoint = string;
export const CLIENTS: Endpoint = '(clients)';

const active = new Set<ChaosNetwork>();

export class ChaosNetwork {
  private readonly hosts = new Map<string, NetworkHost>();
  /** Pairs cut now, as "a\nb" with a < b. */
  private cuts = new Set<string>();
  private removed = false;

  private constructor(
    private readonly bridge: string,
    private readonly subnet: string,
  ) {}

  /** The clients' address: the bridge's, in the root namespace. */
  get clientAddress(): string {
    return `${this.subnet}.1`;
  }

  /** Checks the tools, removes what dead runs left, and creates this run's bridge. */
  static async create(): Promise<ChaosNetwork> {
    await checkTools();
    await removeLeftovers();
    const subnet = await freeSubnet();
    const bridge = `${BRIDGE_PREFIX}${process.pid}`;
    const network = new ChaosNetwork(bridge, subnet);
    active.add(network);
    await ip('link', 'add', bridge, 'type', 'bridge');
    await ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
    await ip('link', 'set', bridge, 'up');
    return network;
  }

  /** The host of a node, created on first use: its namespace, a veth on the bridge, an address, the drop table. */
  async host(name: string): Promise<NetworkHost> {
    const known = this.hosts.get(name);
    if (known !== undefined) return known;
    if (this.hosts.size >= HOSTS_MAX) throw new Error(`chaos network: at most ${HOSTS_MAX} hosts`);
    const index = this.hosts.size + 1;
    const host: NetworkHost = { name, namespace: `${NAMESPACE_PREFIX}${process.pid}-${index}`, address: `${this.subnet}.${9 + index}` };
    const veth = `${VETH_PREFIX}${process.pid}-${index}`;
    this.hosts.set(name, host);
    await ip('netns', 'add', host.namespace);
    await ip('link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', host.namespace);
    await ip('link', 'set', veth, 'master', this.bridge, 'up');
    await ip('-n', host.namespace, 'link', 'set', 'lo', 'up');
    await ip('-n', host.namespace, 'addr', 'add', `${host.address}/24`, 'dev', 'eth0');
    await ip('-n', host.namespace, 'link', 'set', 'eth0', 'up');
    await nftIn(host.namespace, [
      `table inet ${TABLE} {`,
      '  set cut { type ipv4_addr; }',
      '  chain input { type filter hook input priority 0; policy accept; ip saddr @cut drop; }',
      '  chain output { type filter hook output priority 0; policy accept; ip daddr @cut drop; }',
      '}',
    ]);
    return host;
  }

  /** The command line that runs `command` inside the node's namespace. */
  launcher(name: string): string[] {
    const host = this.hosts.get(name);
    if (host === undefined) throw new Error(`chaos network: no host ${name}`);
    return ['ip', 'netns', 'exec', host.namespace];
  }

  /** Replaces the cuts: packets between each pair are dropped silently, both ways; all others flow. */
  async partition(pairs: ReadonlyArray<readonly [Endpoint, Endpoint]>): Promise<void> {
    const cuts = new Set<string>();
    for (const [a, b] of pairs) {
      if (a === b) throw new Error(`chaos network: ${a} cut from itself`);
      if (a === CLIENTS && b === CLIENTS) continue;
      cuts.add(a < b ? `${a}\n${b}` : `${b}\n${a}`);
    }
    this.cuts = cuts;
    await this.apply();
  }

  async heal(): Promise<void> {
    await this.partition([]);
  }

  /** Whether any pair is cut now. */
  get partitioned(): boolean {
    return this.cuts.size > 0;
  }

  /** Each host's drop set, written whole in one nft transaction. */
  private async apply(): Promise<void> {
    const addressOf = (endpoint: Endpoint) => (endpoint === CLIENTS ? this.clientAddress : this.hosts.get(endpoint)?.address);
    await Promise.all(
      [...this.hosts.values()].map(async (host) => {
        const dropped: string[] = [];
        for (const pair of this.cuts) {
          const [a, b] = pair.split('\n') as [string, string];
          const other = a === host.name ? b : b === host.name ? a : undefined;
          const address = other === undefined ? undefined : addressOf(other);
          if (address !== undefined) dropped.push(address);
        }
        const lines = [`flush set inet ${TABLE} cut`];
        if (dropped.length > 0) lines.push(`add element inet ${TABLE} cut { ${dropped.join(', ')} }`);
        await nftIn(host.namespace, lines);
      }),
    );
  }

  /** Removes every namespace and link this run made. Nodes inside must be stopped first. */
  async cleanup(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    active.delete(this);
    for (const host of this.hosts.values()) await ip('netns', 'del', host.namespace).catch(() => undefined);
    await ip('link', 'del', this.bridge).catch(() => undefined);
  }
}

/** Removes every network of this process (signal handlers; the nodes are stopped first). */
export async function cleanupNetworks(): Promise<void> {
  await Promise.all([...active].map((network) => network.cleanup()));
}

/** Why the partition nemesis cannot run here, or undefined when it can. */
export async function networkUnsupported(): Promise<string | undefined> {
  try {
    await checkTools();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

async function checkTools(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the partition nemesis needs root (network namespaces and nftables)');
  for (const [tool, args, pkg] of [['ip', ['-V'], 'iproute2'], ['nft', ['--version'], 'nftables']] as const) {
    try {
      await run(tool, [...args], { timeout: COMMAND_TIMEOUT_MS });
    } catch {
      throw new Error(`the partition nemesis needs '${tool}' (apt-get install -y ${pkg})`);
    }
  }
}

/** Namespaces and bridges named after a process that no longer runs: a run killed outright. */
async function removeLeftovers(): Promise<void> {
  const { stdout: namespaces } = await ip('netns', 'list');
  for (const line of namespaces.split('\n')) {
    const match = new RegExp(`^(${NAMESPACE_PREFIX}(\\d+)-\\d+)`).exec(line);
    if (match !== null && !alive(Number(match[2]))) await ip('netns', 'del', match[1]!).catch(() => undefined);
  }
  const { stdout: links } = await ip('-o', 'link', 'show', 'type', 'bridge');
  for (const line of links.split('\n')) {
    const match = new RegExp(`^\\d+: (${BRIDGE_PREFIX}(\\d+))[:@]`).exec(line);
    if (match !== null && !alive(Number(match[2]))) await ip('link', 'del', match[1]!).catch(() => undefined);
  }
}

/** A /24 of the benchmarking range no route of this machine uses yet. */
async function freeSubnet(): Promise<string> {
  const { stdout } = await ip('-4', 'route', 'show');
  for (let attempt = 0; attempt < 250; attempt += 1) {
    const subnet = `${SUBNET_PREFIX}.${1 + ((process.pid + attempt) % 250)}`;
    if (!stdout.includes(`${subnet}.0/24`)) return subnet;
  }
  throw new Error(`chaos network: every ${SUBNET_PREFIX}.x.0/24 is in use`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function ip(...args: string[]): Promise<{ stdout: string }> {
  return command('ip', args);
}

async function nftIn(namespace: string, lines: readonly string[]): Promise<void> {
  await command('ip', ['netns', 'exec', namespace, 'nft', '-f', '-'], lines.join('\n'));
}

function command(file: string, args: readonly string[], input?: string): Promise<{ stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, [...args], { timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve({ stdout });
    });
    // A command that reads nothing may be gone before its input is written.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input);
  });
}
