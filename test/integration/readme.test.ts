// The README's quickstart, run as a reader would: every command of the
// section between <!-- quickstart --> and <!-- /quickstart -->, in order, in one bash
// shell (so SESSION, OUTPUT and KEY carry from one command to the next), against nodes on
// free ports. The README's ports become the test's; `npm start [-- flags]` starts the built
// node with those flags through the test kit (what `npm start` runs after building), and
// `curl -N` runs in the background as a second terminal would.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { until } from '../kit/cluster.js';
import { cleanup, freePort, NodeProcess, temporaryDataDir } from '../kit/node-process.js';
import { packageRoot } from '../../src/lib/package-root.js';

const ROOT = packageRoot();
const README_PORTS = [8888, 8889, 8890, 8891] as const;
const COMMAND_TIMEOUT_MS = 30_000;

/** The commands of the quickstart, continuation lines joined. */
function quickstartCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = /<!-- quickstart -->([\s\S]*?)<!-- \/quickstart -->/.exec(readme)?.[1];
  expect(section, 'README has a quickstart section').toBeDefined();
  const blocks = [...section!.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
}

/** One bash process fed command after command; each answers its output and exit status. */
class Shell {
  private readonly child: ChildProcessWithoutNullStreams;
  private buffer = '';

  constructor(cwd: string) {
    this.child = spawn('bash', ['--noprofile', '--norc'], { cwd, env: { ...process.env, NODE_NO_WARNINGS: '1' } });
    this.child.stdout.on('data', (chunk: Buffer) => (this.buffer += chunk.toString()));
    this.child.stderr.on('data', (chunk: Buffer) => (this.buffer += chunk.toString()));
  }

  async run(command: string): Promise<{ status: number; output: string }> {
    const marker = `__done_${Math.random().toString(36).slice(2)}__`;
    this.buffer = '';
    this.child.stdin.write(`{ ${command}\n} 2>&1; echo "${marker} $?"\n`);
    const deadline = Date.now() + COMMAND_TIMEOUT_MS;
    for (;;) {
      const match = new RegExp(`${marker} (\\d+)\\n`).exec(this.buffer);
      if (match !== null) return { status: Number(match[1]), output: this.buffer.slice(0, match.index) };
      if (Date.now() > deadline) throw new Error(`'${command}' did not finish in ${COMMAND_TIMEOUT_MS} ms; output: ${this.buffer.slice(0, 500)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  close(): void {
    this.child.stdin.end('kill $(jobs -p) 2>/dev/null; exit\n');
  }
}

/** `npm start [-- flags]` as the kit's start options, on the test's ports. */
function startOptions(command: string, ports: Map<number, number>) {
  const flags = command.replace(/^npm start( --)?/, '').trim().split(/\s+/).filter((flag) => flag !== '');
  const value = (flag: string) => (flags.includes(flag) ? flags[flags.indexOf(flag) + 1] : undefined);
  const httpPort = Number(value('--http-port') ?? 8888);
  const peerPort = Number(value('--peer-port') ?? 8889);
  return {
    name: value('--name') ?? 'node-1',
    join: flags.includes('--join'),
    httpPort: ports.get(httpPort) ?? httpPort,
    peerPort: ports.get(peerPort) ?? peerPort,
    dataDir: temporaryDataDir(),
  };
}

let shell: Shell | undefined;
afterAll(async () => {
  shell?.close();
  await cleanup();
});

describe('readme - quickstart', () => {
  it('every command of the quickstart runs and answers what the README says', async () => {
    const commands = quickstartCommands();
    const ports = new Map<number, number>();
    for (const port of README_PORTS) ports.set(port, await freePort());
    const localize = (command: string) => command.replace(/\b(8888|8889|8890|8891)\b/g, (port) => String(ports.get(Number(port))));
    const sseLog = join(temporaryDataDir(), 'sse.log');
    shell = new Shell(ROOT);
    const outputs: string[] = [];
    const nodes: NodeProcess[] = [];

    for (const command of commands) {
      if (command.startsWith('npm start')) {
        nodes.push(await NodeProcess.start(startOptions(command, ports)));
        outputs.push('');
        continue;
      }
      if (command.startsWith('curl -N')) {
        // A second terminal: it keeps reading while the next commands run.
        expect((await shell.run(`${localize(command)} > ${sseLog} 2>&1 &`)).status).toBe(0);
        await until('the output channel to open', async () => readFileSync(sseLog, 'utf8').includes('"type":"sos"'), 20_000);
        outputs.push('');
        continue;
      }
      const result = await shell.run(localize(command));
      expect(result.status, `${command}\n${result.output}`).toBe(0);
      outputs.push(result.output);
    }

    // What each command answers, in README order (a reader sees the same).
    const expected: Array<RegExp | undefined> = [
      undefined, // npm start
      /"schema":\{"version":"1"/, // PUT stream
      /^\{"name":"ssr","config":\{\}\}$/, // PUT repository
      /^$/, // POST: 200 with an empty body
      /^\{"total":1,"values":\[\{"score":0,"data":\{"at":"2024-03-01T12:00:00Z","cpu":91.5,"host":"web-1"\}\}\]\}$/, // _search
      /^$/, // SESSION=…
      /"id":"hot".*"state":"initialised".*"type":"OUTPUT_CHANNEL"/, // PUT query
      /^$/, // OUTPUT=…
      undefined, // curl -N
      /^$/, // POST more
      undefined, // npm start node-2 --join
      /^$/, // KEY=…
      /"name":"node-2".*"state":"Pending"/, // POST /cluster/nodes
      /"repo_data_transfer".*"to":"node-2"/, // GET /cluster/transfers
      /"name":"node-2"/, // GET localNode of node-2
    ];
    expect(outputs).toHaveLength(expected.length);
    outputs.forEach((output, index) => {
      if (expected[index] !== undefined) expect(output.trim(), commands[index]).toMatch(expected[index]!);
    });

    // The live query's row arrived over SSE, and only the row its where clause keeps.
    await until('the row of web-3 on the output channel', async () => readFileSync(sseLog, 'utf8').includes('{"action":"add","data":{"host":"web-3","cpu":77}}'), 20_000);
    expect(readFileSync(sseLog, 'utf8')).not.toContain('web-4');

    // The last command, run again until node-2 has its share of the data, as a reader would.
    const last = localize(commands.at(-1)!);
    await until('node-2 to be Joined', async () => (await shell!.run(last)).output.includes('"state":"Joined"'), 60_000);
    expect(nodes.map((node) => node.name)).toEqual(['node-1', 'node-2']);
  });
});
