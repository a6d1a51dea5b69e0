// A deterministic fixture for search tests: weather observations and log lines with
// taxonomies, posted to ssr streams. Tests compute their expected answers from these
// arrays with plain JavaScript.

import { Prng } from '../sim/prng.js';
import { client, type NodeProcess } from './node-process.js';

export const WORDS = ['storm', 'sunny', 'rain', 'ruin', 'stream', 'strum', 'cloudy', 'windy', 'snow', 'fog', 'clear', 'storms'];
export const CITIES: Array<[string, string]> = [['FR', 'Paris'], ['FR', 'Lyon'], ['DE', 'Berlin'], ['DE', 'Munich'], ['NO', 'Oslo'], ['IT', 'Parma']];
export const LEVELS = ['info', 'warn', 'error'];

export interface Weather {
  station: string;
  country: string;
  city: string;
  observed: string;
  temperature: number;
  summary: string;
}

export interface LogLine {
  host: string;
  level: string;
  msg: string;
  at: string;
}

export function weather(count: number, seed = 7): Weather[] {
  const prng = new Prng(seed);
  const random = () => prng.next();
  const pick = <T>(items: readonly T[]) => prng.pick(items);
  return Array.from({ length: count }, (_, i) => {
    const [country, city] = pick(CITIES);
    return {
      station: `ST-${String(i % 50).padStart(3, '0')}`,
      country,
      city,
      observed: new Date(Date.UTC(2024, 0, 1) + Math.floor(random() * 120 * 86_400_000)).toISOString(),
      temperature: Math.round((random() * 45 - 10) * 10) / 10,
      summary: `${pick(WORDS)} then ${pick(WORDS)}, ${pick(WORDS)}`,
    };
  });
}

export function logs(count: number, seed = 11): LogLine[] {
  const prng = new Prng(seed);
  const random = () => prng.next();
  const pick = <T>(items: readonly T[]) => prng.pick(items);
  return Array.from({ length: count }, (_, i) => ({
    host: `web-${i % 9}`,
    level: pick(LEVELS),
    msg: `request ${i} ${pick(WORDS)} took ${Math.floor(random() * 900)}ms`,
    at: new Date(Date.UTC(2024, 1, 1) + i * 60_000).toISOString(),
  }));
}

export const WEATHER_SCHEMA = {
  version: '1',
  topDef: {
    type: 'record',
    properties: {
      station: { type: 'string' },
      country: { type: 'string' },
      city: { type: 'string' },
      observed: { type: 'datetime' },
      temperature: { type: 'double' },
      summary: { type: 'string' },
    },
  },
};

export const LOG_SCHEMA = {
  version: '1',
  topDef: { type: 'record', properties: { host: { type: 'string' }, level: { type: 'string' }, msg: { type: 'string' }, at: { type: 'datetime', annotations: ['urn:itrs:default-timestamp'] } } },
};

/** Defines both streams on `node` (ssr, with taxonomies and the policy given) and posts the data. */
export async function loadFixture(node: NodeProcess, data: { weather: Weather[]; logs: LogLine[] }, policy?: object): Promise<void> {
  const api = client(node);
  const define = async (path: string, schema: object, taxonomy: object) => {
    for (const [suffix, body] of [['', { schema }], ['/repository', { name: 'ssr', config: { defaultStringAnalyzer: 'standard' } }], ['/taxonomy', { taxonomy }], ...(policy ? [['/policy', policy]] : [])] as Array<[string, object]>) {
      const response = await api.put(path + suffix, body);
      if (response.status !== 200) throw new Error(`PUT ${path}${suffix}: ${response.status} ${response.text}`);
    }
  };
  await define('/streams/demo/fixture/weather', WEATHER_SCHEMA, {
    nodes: [{ name: 'place', expression: ['country', 'city'] }, { name: 'when', expression: ['year(observed)', 'month(observed)'] }],
  });
  await define('/streams/demo/fixture/logs', LOG_SCHEMA, { nodes: [{ name: 'severity', expression: ['level'] }] });
  for (const [path, rows] of [['/streams/demo/fixture/weather', data.weather], ['/streams/demo/fixture/logs', data.logs]] as const) {
    for (let i = 0; i < rows.length; i += 1000) {
      const response = await api.post(path, rows.slice(i, i + 1000));
      if (response.status !== 200) throw new Error(`POST ${path}: ${response.status} ${response.text.slice(0, 300)}`);
    }
  }
}

/** Lowercased runs of letters and digits: how the standard analyzer tokenizes. */
export function tokens(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? [];
}

export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j += 1) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}
