import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(nodeName: string, level: string): Logger {
  return pino({ level, base: { node: nodeName } });
}
