// Tables a person reads, in the manner of Elasticsearch's _cat APIs: aligned text columns,
// headers with `?v`, columns chosen with `?h=a,b`, sorted with `?s=col[:desc]`, the column
// list with `?help`, and the same rows as JSON with `?format=json`. Pure: rows in, text out.

import { BadRequestError } from '../lib/errors.js';

export type CellKind = 'text' | 'number' | 'bytes' | 'percent' | 'rate' | 'duration';
export type Cell = string | number | boolean | null;

export interface CatColumn {
  name: string;
  kind: CellKind;
  description: string;
}

export interface CatRequest {
  format: 'text' | 'json';
  headers: boolean;
  help: boolean;
  columns: CatColumn[];
  sort: Array<{ column: string; descending: boolean }>;
}

const PARAMETERS = new Set(['v', 'h', 's', 'format', 'help']);

/** Reads the query string of a _cat request; anything unknown or malformed is a 400 naming it. */
export function parseCatRequest(query: Record<string, string | string[] | undefined>, columns: readonly CatColumn[]): CatRequest {
  for (const key of Object.keys(query)) {
    if (!PARAMETERS.has(key)) throw new BadRequestError(`unknown parameter '${key}' (known: ${[...PARAMETERS].join(', ')})`);
  }
  const single = (key: string): string | undefined => {
    const value = query[key];
    if (Array.isArray(value)) throw new BadRequestError(`parameter '${key}' given more than once`);
    return value;
  };
  const format = single('format') ?? 'text';
  if (format !== 'text' && format !== 'json') throw new BadRequestError(`format must be text or json, not '${format}'`);
  const byName = new Map(columns.map((column) => [column.name, column]));
  const named = (name: string): CatColumn => {
    const column = byName.get(name);
    if (column === undefined) throw new BadRequestError(`unknown column '${name}' (columns: ${columns.map((each) => each.name).join(', ')})`);
    return column;
  };
  const h = single('h');
  const chosen = h === undefined || h === '' ? [...columns] : h.split(',').map((name) => named(name.trim()));
  const s = single('s');
  const sort = s === undefined || s === '' ? [] : s.split(',').map((entry) => {
    const [name, order = 'asc'] = entry.trim().split(':');
    if (order !== 'asc' && order !== 'desc') throw new BadRequestError(`sort order must be asc or desc, not '${order}'`);
    return { column: named(name!).name, descending: order === 'desc' };
  });
  return { format, headers: flag(single('v')), help: flag(single('help')), columns: chosen, sort };
}

/** `?v` and `?v=true` are on, `?v=false` off, absent off. */
function flag(value: string | undefined): boolean {
  return value !== undefined && value !== 'false';
}

/** The answer to a _cat request: its body and content type. */
export function renderCat(request: CatRequest, rows: ReadonlyArray<Record<string, Cell>>): { body: string | object; type: string } {
  if (request.help) return { body: helpText(request.columns), type: 'text/plain; charset=utf-8' };
  const sorted = sortRows(rows, request.sort);
  if (request.format === 'json') {
    return { body: sorted.map((row) => Object.fromEntries(request.columns.map((column) => [column.name, row[column.name] ?? null]))), type: 'application/json' };
  }
  return { body: formatTable(request.columns, sorted, request.headers), type: 'text/plain; charset=utf-8' };
}

export function sortRows(rows: ReadonlyArray<Record<string, Cell>>, sort: CatRequest['sort']): Array<Record<string, Cell>> {
  const sorted = [...rows];
  if (sort.length === 0) return sorted;
  return sorted.sort((a, b) => {
    for (const { column, descending } of sort) {
      const order = compareCells(a[column] ?? null, b[column] ?? null);
      if (order !== 0) return descending ? -order : order;
    }
    return 0;
  });
}

function compareCells(a: Cell, b: Cell): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b));
}

/** Aligned columns separated by two spaces; numbers to the right, text to the left; one row a line. */
export function formatTable(columns: readonly CatColumn[], rows: ReadonlyArray<Record<string, Cell>>, headers: boolean): string {
  const lines: string[][] = rows.map((row) => columns.map((column) => formatCell(row[column.name] ?? null, column.kind)));
  if (headers) lines.unshift(columns.map((column) => column.name));
  const widths = columns.map((_, index) => Math.max(0, ...lines.map((line) => line[index]!.length)));
  const rightAligned = columns.map((column) => column.kind !== 'text');
  return lines
    .map((line) =>
      line
        .map((cell, index) => (rightAligned[index] ? cell.padStart(widths[index]!) : cell.padEnd(widths[index]!)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

export function formatCell(value: Cell, kind: CellKind): string {
  if (value === null) return '-';
  if (typeof value !== 'number') return String(value);
  switch (kind) {
    case 'bytes':
      return formatBytes(value);
    case 'percent':
      return `${value.toFixed(1)}%`;
    case 'rate':
      return `${formatBytes(value)}/s`;
    case 'duration':
      return formatDuration(value);
    default:
      return String(value);
  }
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value}B` : `${value.toFixed(1)}${UNITS[unit]}`;
}

/** Seconds as `45s`, `3m05s`, `2h03m`. */
export function formatDuration(seconds: number): string {
  const whole = Math.max(0, Math.round(seconds));
  if (whole < 60) return `${whole}s`;
  if (whole < 3600) return `${Math.floor(whole / 60)}m${String(whole % 60).padStart(2, '0')}s`;
  return `${Math.floor(whole / 3600)}h${String(Math.floor((whole % 3600) / 60)).padStart(2, '0')}m`;
}

function helpText(columns: readonly CatColumn[]): string {
  return formatTable(
    [
      { name: 'column', kind: 'text', description: '' },
      { name: 'description', kind: 'text', description: '' },
    ],
    columns.map((column) => ({ column: column.name, description: column.description })),
    false,
  );
}
