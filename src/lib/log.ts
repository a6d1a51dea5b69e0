// The node's logger: pino, one JSON object a line, or readable lines through pino-pretty
// when asked or when stdout is a terminal (config logFormat). Every line carries the
// node's own name as `node`; a line about another node names it `peer`, never `node`.

import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export type LogFormat = 'auto' | 'pretty' | 'json';

export function createLogger(nodeName: string, level: string, format: LogFormat = 'json'): Logger {
  const options = { level, base: { node: nodeName } };
  if (!usePretty(format, process.stdout.isTTY === true)) return pino(options);
  return pino(
    options,
    pretty({
      colorize: process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'node',
      messageFormat: '{node}: {msg}',
      singleLine: true,
      sync: true,
    }),
  );
}

export function usePretty(format: LogFormat, stdoutIsTerminal: boolean): boolean {
  return format === 'pretty' || (format === 'auto' && stdoutIsTerminal);
}
